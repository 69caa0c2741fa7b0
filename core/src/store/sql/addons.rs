//! Addons in SQL ([`AddonStore`]): the catalog operators define, and the addons KQueen
//! manages in each cluster, whose toggles are queued as operations in the same transaction.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::applications::claim_ready_cluster;
use super::catalog::{json, to_json};
use super::operations::{insert_events, insert_op};
use super::{Pool, SqlStore, INSERT_AUDIT};
use crate::audit::AuditEvent;
use crate::cluster::{ClusterEvent, Operation};
use crate::store::AddonStore;
use crate::workloads::addons::installed::{AddonOutcome, FleetAddon, InstallState, InstalledAddon};
use crate::workloads::addons::AddonDefinition;
use crate::workloads::refs::ObjectRef;
use crate::{Error, Result};

#[derive(FromRow)]
struct DefinitionRow {
    id: Uuid,
    name: String,
    version: String,
    description: String,
    namespace: String,
    manifests: String,
    parameters: String,
    health: String,
    requires: String,
    detect: String,
}

impl TryFrom<DefinitionRow> for AddonDefinition {
    type Error = Error;
    fn try_from(r: DefinitionRow) -> Result<Self> {
        Ok(AddonDefinition {
            parameters: json("addon", r.id, &r.parameters)?,
            health: json("addon", r.id, &r.health)?,
            requires: json("addon", r.id, &r.requires)?,
            detect: json("addon", r.id, &r.detect)?,
            name: r.name,
            version: r.version,
            description: r.description,
            namespace: r.namespace,
            manifests: r.manifests,
            builtin: false,
        })
    }
}

const INSTALLED_COLS: &str = "a.cluster_id, a.name, a.version, a.parameters, a.state, a.error, \
     a.objects, a.requested_by, a.updated_at, a.installed_at";

#[derive(FromRow)]
struct InstalledRow {
    cluster_id: Uuid,
    name: String,
    version: String,
    parameters: String,
    state: String,
    error: Option<String>,
    objects: String,
    requested_by: String,
    updated_at: DateTime<Utc>,
    installed_at: Option<DateTime<Utc>>,
}

impl TryFrom<InstalledRow> for InstalledAddon {
    type Error = Error;
    fn try_from(r: InstalledRow) -> Result<Self> {
        Ok(InstalledAddon {
            parameters: json::<BTreeMap<String, String>>("addon", r.cluster_id, &r.parameters)?,
            state: InstallState::parse(&r.state)
                .ok_or_else(|| Error::Corrupt(format!("addon {}: state", r.name)))?,
            objects: json::<Vec<ObjectRef>>("addon", r.cluster_id, &r.objects)?,
            cluster_id: r.cluster_id,
            name: r.name,
            version: r.version,
            error: r.error,
            requested_by: r.requested_by,
            updated_at: r.updated_at,
            installed_at: r.installed_at,
        })
    }
}

#[derive(FromRow)]
struct FleetRow {
    #[sqlx(flatten)]
    addon: InstalledRow,
    tenant_id: Uuid,
    cluster_name: String,
    tenant_slug: String,
}

#[async_trait]
impl AddonStore for SqlStore {
    async fn define_addon(
        &self,
        def: &AddonDefinition,
        by: &str,
        audit: &AuditEvent,
    ) -> Result<()> {
        let (parameters, health, requires, detect) = (
            to_json(&def.parameters)?,
            to_json(&def.health)?,
            to_json(&def.requires)?,
            to_json(&def.detect)?,
        );
        audited_tx!(self, audit, |tx| {
            let done = sqlx::query(
                "INSERT INTO addon_catalog (id, name, version, description, namespace, manifests, \
                 parameters, health, requires, detect, created_by, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            )
            .bind(Uuid::now_v7())
            .bind(&def.name)
            .bind(&def.version)
            .bind(&def.description)
            .bind(&def.namespace)
            .bind(&def.manifests)
            .bind(&parameters)
            .bind(&health)
            .bind(&requires)
            .bind(&detect)
            .bind(by)
            .bind(audit.occurred_at)
            .execute(&mut *tx)
            .await;
            match done {
                Ok(_) => {}
                Err(e) => {
                    return Err(match Error::from(e) {
                        Error::Conflict(_) => Error::Conflict(format!(
                            "{} {} is in the catalog already",
                            def.name, def.version
                        )),
                        other => other,
                    })
                }
            }
        });
        Ok(())
    }

    async fn undefine_addon(&self, name: &str, version: &str, audit: &AuditEvent) -> Result<bool> {
        audited_tx!(self, audit, |tx| {
            let used: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM cluster_addons a JOIN clusters c ON c.id = a.cluster_id \
                 WHERE c.deleted_at IS NULL AND a.name = $1 AND a.version = $2",
            )
            .bind(name)
            .bind(version)
            .fetch_one(&mut *tx)
            .await?;
            if used > 0 {
                return Err(Error::Conflict(format!(
                    "{name} {version} runs on {used} cluster(s); upgrade or remove it there first"
                )));
            }
            let done = sqlx::query("DELETE FROM addon_catalog WHERE name = $1 AND version = $2")
                .bind(name)
                .bind(version)
                .execute(&mut *tx)
                .await?;
            if done.rows_affected() == 0 {
                return Ok(false);
            }
        });
        Ok(true)
    }

    async fn defined_addons(&self) -> Result<Vec<AddonDefinition>> {
        const SQL: &str = "SELECT id, name, version, description, namespace, manifests, \
             parameters, health, requires, detect FROM addon_catalog ORDER BY name, created_at";
        let rows: Vec<DefinitionRow> = on_pool!(self, p => {
            sqlx::query_as(SQL).fetch_all(p).await?
        });
        rows.into_iter().map(TryInto::try_into).collect()
    }

    async fn installed_addons(&self, cluster_id: Uuid) -> Result<Vec<InstalledAddon>> {
        let sql = format!(
            "SELECT {INSTALLED_COLS} FROM cluster_addons a WHERE a.cluster_id = $1 ORDER BY a.name"
        );
        let rows: Vec<InstalledRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(cluster_id).fetch_all(p).await?
        });
        rows.into_iter().map(TryInto::try_into).collect()
    }

    async fn fleet_addons(&self) -> Result<Vec<FleetAddon>> {
        let sql = format!(
            "SELECT {INSTALLED_COLS}, c.tenant_id AS tenant_id, c.name AS cluster_name, t.slug AS tenant_slug \
             FROM cluster_addons a JOIN clusters c ON c.id = a.cluster_id \
             JOIN tenants t ON t.id = c.tenant_id WHERE c.deleted_at IS NULL \
             ORDER BY a.name, t.slug, c.name"
        );
        let rows: Vec<FleetRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).fetch_all(p).await?
        });
        rows.into_iter()
            .map(|r| {
                Ok(FleetAddon {
                    addon: r.addon.try_into()?,
                    tenant_id: r.tenant_id,
                    cluster_name: r.cluster_name,
                    tenant_slug: r.tenant_slug,
                })
            })
            .collect()
    }

    async fn queue_addon_apply(
        &self,
        addon: &InstalledAddon,
        op: &Operation,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<()> {
        let checkpoint = to_json(&op.checkpoint)?;
        let parameters = to_json(&addon.parameters)?;
        audited_tx!(self, audit, |tx| {
            claim_ready_cluster!(tx, addon.cluster_id, op.created_at);
            let busy: Option<String> = sqlx::query_scalar(
                "SELECT state FROM cluster_addons WHERE cluster_id = $1 AND name = $2 \
                 AND state IN ('installing', 'removing')",
            )
            .bind(addon.cluster_id)
            .bind(&addon.name)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(state) = busy {
                return Err(Error::Conflict(format!(
                    "{} is {state} already; wait for it to finish",
                    addon.name
                )));
            }
            sqlx::query(
                "INSERT INTO cluster_addons (cluster_id, name, version, parameters, state, \
                 objects, requested_by, updated_at) \
                 VALUES ($1, $2, $3, $4, 'installing', '[]', $5, $6) \
                 ON CONFLICT (cluster_id, name) DO UPDATE SET version = excluded.version, \
                 parameters = excluded.parameters, state = 'installing', error = NULL, \
                 requested_by = excluded.requested_by, updated_at = excluded.updated_at",
            )
            .bind(addon.cluster_id)
            .bind(&addon.name)
            .bind(&addon.version)
            .bind(&parameters)
            .bind(&addon.requested_by)
            .bind(addon.updated_at)
            .execute(&mut *tx)
            .await?;
            insert_op!(tx, op, &checkpoint);
            insert_events!(tx, [event]);
        });
        Ok(())
    }

    async fn queue_addon_remove(
        &self,
        cluster_id: Uuid,
        name: &str,
        op: &Operation,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<()> {
        let checkpoint = to_json(&op.checkpoint)?;
        audited_tx!(self, audit, |tx| {
            claim_ready_cluster!(tx, cluster_id, op.created_at);
            let done = sqlx::query(
                "UPDATE cluster_addons SET state = 'removing', error = NULL, updated_at = $3 \
                 WHERE cluster_id = $1 AND name = $2 AND state IN ('installed', 'failed')",
            )
            .bind(cluster_id)
            .bind(name)
            .bind(op.created_at)
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() == 0 {
                return Err(Error::Conflict(format!(
                    "{name} is not installed by KQueen here, or is being changed already"
                )));
            }
            insert_op!(tx, op, &checkpoint);
            insert_events!(tx, [event]);
        });
        Ok(())
    }

    async fn finish_addon(
        &self,
        cluster_id: Uuid,
        name: &str,
        outcome: AddonOutcome<'_>,
        now: DateTime<Utc>,
    ) -> Result<()> {
        match outcome {
            AddonOutcome::Applied(objects) => {
                let objects = to_json(&objects)?;
                on_pool!(self, p => sqlx::query(
                    "UPDATE cluster_addons SET state = 'installed', error = NULL, objects = $3, \
                     installed_at = $4, updated_at = $4 WHERE cluster_id = $1 AND name = $2",
                ).bind(cluster_id).bind(name).bind(objects).bind(now).execute(p).await.map(|_| ())?);
            }
            AddonOutcome::Removed => {
                on_pool!(self, p => sqlx::query(
                    "DELETE FROM cluster_addons WHERE cluster_id = $1 AND name = $2",
                ).bind(cluster_id).bind(name).execute(p).await.map(|_| ())?);
            }
            AddonOutcome::Failed(reason) => {
                on_pool!(self, p => sqlx::query(
                    "UPDATE cluster_addons SET state = 'failed', error = $3, updated_at = $4 \
                     WHERE cluster_id = $1 AND name = $2",
                ).bind(cluster_id).bind(name).bind(reason).bind(now).execute(p).await.map(|_| ())?);
            }
        }
        Ok(())
    }
}
