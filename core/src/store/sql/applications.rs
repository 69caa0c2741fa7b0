//! Applications in SQL ([`ApplicationStore`]): versions, and their deploys and deletes
//! queued as operations in the same transaction.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::catalog::{json, to_json};
use super::operations::{insert_events, insert_op};
use super::{Pool, SqlStore, INSERT_AUDIT};
use crate::audit::AuditEvent;
use crate::cluster::{ClusterEvent, Operation};
use crate::store::ApplicationStore;
use crate::workloads::application::{AppState, Application};
use crate::workloads::refs::ObjectRef;
use crate::{Error, Result};

const APP_COLS: &str = "id, tenant_id, cluster_id, name, version, namespace, state, error, \
     objects, user_id, requested_by, created_at, updated_at, deployed_at";

#[derive(FromRow)]
struct AppRow {
    id: Uuid,
    tenant_id: Uuid,
    cluster_id: Uuid,
    name: String,
    version: String,
    namespace: String,
    state: String,
    error: Option<String>,
    objects: String,
    user_id: Option<Uuid>,
    requested_by: String,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    deployed_at: Option<DateTime<Utc>>,
}

impl TryFrom<AppRow> for Application {
    type Error = Error;
    fn try_from(r: AppRow) -> Result<Self> {
        Ok(Application {
            state: AppState::parse(&r.state)
                .ok_or_else(|| Error::Corrupt(format!("application {}: state", r.id)))?,
            objects: json::<Vec<ObjectRef>>("application", r.id, &r.objects)?,
            id: r.id,
            tenant_id: r.tenant_id,
            cluster_id: r.cluster_id,
            name: r.name,
            version: r.version,
            namespace: r.namespace,
            error: r.error,
            user_id: r.user_id,
            requested_by: r.requested_by,
            created_at: r.created_at,
            updated_at: r.updated_at,
            deployed_at: r.deployed_at,
        })
    }
}

/// `$1` when it names a live application, else NULL: looked up by the primary key alone, as
/// [`super::clusters::LIVE_CLUSTER_ID`] (beside the id, `deleted_at IS NULL` lets the planner
/// scan a partial index of every live application when the statistics are stale).
const LIVE_APPLICATION_ID: &str = "(SELECT x.id FROM (SELECT id, deleted_at FROM \
     applications WHERE id = $1 LIMIT 1) x WHERE x.deleted_at IS NULL)";

/// One live application by id.
pub(super) fn application_by_id_sql() -> String {
    format!("SELECT {APP_COLS} FROM applications WHERE id = {LIVE_APPLICATION_ID}")
}

/// Marks a live, deployed or failed application as being deleted, at `$2`.
pub(super) fn claim_app_delete_sql() -> String {
    format!(
        "UPDATE applications SET state = 'deleting', error = NULL, updated_at = $2 \
         WHERE id = {LIVE_APPLICATION_ID} AND state IN ('deployed', 'failed')"
    )
}

/// Claims the cluster for a workload operation: it must be live and Ready, and no operation
/// on the cluster itself (create, delete, scale, upgrade) may be unfinished.
/// Takes a Ready, live cluster's row lock (the id looked up through the primary key).
pub(super) fn claim_ready_sql() -> String {
    format!(
        "UPDATE clusters SET updated_at = updated_at WHERE id = {} AND state = 'ready'",
        super::clusters::LIVE_CLUSTER_ID
    )
}

macro_rules! claim_ready_cluster {
    ($tx:ident, $cluster:expr, $now:expr) => {{
        let done = sqlx::query(&$crate::store::sql::applications::claim_ready_sql())
            .bind($cluster)
            .execute(&mut *$tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(Error::Conflict(
                "the cluster is not Ready; applications, addons, backups and restores wait \
                 until it is"
                    .into(),
            ));
        }
        let _ = $now;
    }};
}
pub(super) use claim_ready_cluster;

#[async_trait]
impl ApplicationStore for SqlStore {
    async fn queue_app_deploy(
        &self,
        app: &Application,
        op: &Operation,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<Application> {
        let checkpoint = to_json(&op.checkpoint)?;
        let sql = format!(
            "SELECT {APP_COLS} FROM applications WHERE cluster_id = $1 AND name = $2 \
             AND version = $3 AND deleted_at IS NULL"
        );
        let stored: Application = in_tx!(self, |tx| {
            claim_ready_cluster!(tx, app.cluster_id, op.created_at);
            let existing: Option<AppRow> = sqlx::query_as(&sql)
                .bind(app.cluster_id)
                .bind(&app.name)
                .bind(&app.version)
                .fetch_optional(&mut *tx)
                .await?;
            let stored = match existing {
                Some(row) => {
                    let old: Application = row.try_into()?;
                    if matches!(old.state, AppState::Deploying | AppState::Deleting) {
                        return Err(Error::Conflict(format!(
                            "{} {} is being {} already",
                            old.name,
                            old.version,
                            if old.state == AppState::Deploying {
                                "deployed"
                            } else {
                                "deleted"
                            }
                        )));
                    }
                    if old.namespace != app.namespace {
                        return Err(Error::Invalid(crate::ValidationError::new(
                            "namespace",
                            format!(
                                "{} {} runs in namespace {}; delete it to move it",
                                old.name, old.version, old.namespace
                            ),
                        )));
                    }
                    sqlx::query(
                        "UPDATE applications SET state = 'deploying', error = NULL, \
                         user_id = $2, requested_by = $3, updated_at = $4 WHERE id = $1",
                    )
                    .bind(old.id)
                    .bind(app.user_id)
                    .bind(&app.requested_by)
                    .bind(app.updated_at)
                    .execute(&mut *tx)
                    .await?;
                    Application {
                        state: AppState::Deploying,
                        error: None,
                        user_id: app.user_id,
                        requested_by: app.requested_by.clone(),
                        updated_at: app.updated_at,
                        ..old
                    }
                }
                None => {
                    let taken: Option<(String, String)> = sqlx::query_as(
                        "SELECT name, version FROM applications WHERE cluster_id = $1 \
                         AND namespace = $2 AND deleted_at IS NULL",
                    )
                    .bind(app.cluster_id)
                    .bind(&app.namespace)
                    .fetch_optional(&mut *tx)
                    .await?;
                    if let Some((name, version)) = taken {
                        return Err(Error::Invalid(crate::ValidationError::new(
                            "namespace",
                            format!("is used by {name} {version}"),
                        )));
                    }
                    sqlx::query(
                        "INSERT INTO applications (id, tenant_id, cluster_id, name, version, \
                         namespace, state, objects, user_id, requested_by, created_at, updated_at) \
                         VALUES ($1, $2, $3, $4, $5, $6, 'deploying', '[]', $7, $8, $9, $9)",
                    )
                    .bind(app.id)
                    .bind(app.tenant_id)
                    .bind(app.cluster_id)
                    .bind(&app.name)
                    .bind(&app.version)
                    .bind(&app.namespace)
                    .bind(app.user_id)
                    .bind(&app.requested_by)
                    .bind(app.created_at)
                    .execute(&mut *tx)
                    .await?;
                    app.clone()
                }
            };
            let mut op = op.clone();
            op.target = Some(crate::cluster::OperationTarget::Application(stored.id));
            insert_op!(tx, op, &checkpoint);
            insert_events!(tx, [event]);
            audit_insert!(audit).execute(&mut *tx).await?;
            tx.commit().await?;
            stored
        });
        Ok(stored)
    }

    async fn queue_app_delete(
        &self,
        app_id: Uuid,
        op: &Operation,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<()> {
        let checkpoint = to_json(&op.checkpoint)?;
        audited_tx!(self, audit, |tx| {
            claim_ready_cluster!(tx, op.cluster_id, op.created_at);
            let done = sqlx::query(&claim_app_delete_sql())
                .bind(app_id)
                .bind(op.created_at)
                .execute(&mut *tx)
                .await?;
            if done.rows_affected() == 0 {
                return Err(Error::Conflict(
                    "this version is being deployed or deleted already".into(),
                ));
            }
            insert_op!(tx, op, &checkpoint);
            insert_events!(tx, [event]);
        });
        Ok(())
    }

    async fn application(&self, id: Uuid) -> Result<Application> {
        let sql = application_by_id_sql();
        let row: Option<AppRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(id).fetch_optional(p).await?
        });
        row.ok_or(Error::NotFound("application"))?.try_into()
    }

    async fn applications_of(&self, cluster_id: Uuid) -> Result<Vec<Application>> {
        let sql = format!(
            "SELECT {APP_COLS} FROM applications WHERE cluster_id = $1 AND deleted_at IS NULL \
             ORDER BY name, created_at"
        );
        let rows: Vec<AppRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(cluster_id).fetch_all(p).await?
        });
        rows.into_iter().map(TryInto::try_into).collect()
    }

    async fn finish_app_deploy(
        &self,
        id: Uuid,
        result: std::result::Result<&[ObjectRef], &str>,
        now: DateTime<Utc>,
    ) -> Result<()> {
        match result {
            Ok(objects) => {
                let objects = to_json(&objects)?;
                on_pool!(self, p => sqlx::query(
                    "UPDATE applications SET state = 'deployed', error = NULL, objects = $2, \
                     deployed_at = $3, updated_at = $3 WHERE id = $1",
                ).bind(id).bind(objects).bind(now).execute(p).await.map(|_| ())?);
            }
            Err(reason) => {
                on_pool!(self, p => sqlx::query(
                    "UPDATE applications SET state = 'failed', error = $2, updated_at = $3 \
                     WHERE id = $1",
                ).bind(id).bind(reason).bind(now).execute(p).await.map(|_| ())?);
            }
        }
        Ok(())
    }

    async fn finish_app_delete(
        &self,
        id: Uuid,
        result: std::result::Result<(), &str>,
        now: DateTime<Utc>,
    ) -> Result<()> {
        match result {
            Ok(()) => {
                on_pool!(self, p => sqlx::query(
                    "UPDATE applications SET deleted_at = $2, updated_at = $2 WHERE id = $1",
                ).bind(id).bind(now).execute(p).await.map(|_| ())?);
            }
            Err(reason) => {
                on_pool!(self, p => sqlx::query(
                    "UPDATE applications SET state = 'failed', error = $2, updated_at = $3 \
                     WHERE id = $1",
                ).bind(id).bind(reason).bind(now).execute(p).await.map(|_| ())?);
            }
        }
        Ok(())
    }
}
