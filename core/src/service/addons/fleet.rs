//! The fleet's addons: which version runs on which cluster (operators see every tenant,
//! tenant admins their own), and one addon upgraded on many clusters at once.

use uuid::Uuid;

use super::Addons;
use crate::audit::action;
use crate::identity::Role;
use crate::policy::{self, Permission};
use crate::workloads::addons::compare_versions;
use crate::workloads::addons::installed::{FleetAddon, InstallState};
use crate::{Actor, Error, Result};

/// What a bulk upgrade did on one cluster.
#[derive(Debug)]
pub struct BulkOutcome {
    pub cluster_id: Uuid,
    pub cluster_name: String,
    pub result: Result<crate::cluster::Operation>,
}

impl Addons {
    /// Every addon KQueen manages, with the newest catalog version when it is newer.
    pub async fn fleet(&self, actor: &Actor) -> Result<Vec<(FleetAddon, Option<String>)>> {
        let scope = self.scope(actor).await?;
        let catalog = self.definitions().await?;
        let rows = self.deps.store.fleet_addons().await?;
        Ok(rows
            .into_iter()
            .filter(|r| scope.as_ref().is_none_or(|s| s.contains(&r.tenant_id)))
            .map(|r| {
                let newest = catalog
                    .iter()
                    .find(|d| d.name == r.addon.name)
                    .filter(|d| compare_versions(&d.version, &r.addon.version).is_gt())
                    .map(|d| d.version.clone());
                (r, newest)
            })
            .collect())
    }

    /// Moves `name` to `version` on each of `clusters` (every cluster running another
    /// version of it when empty), keeping each cluster's parameters. Operators only; one
    /// result per cluster, so that one refusal never stops the others.
    pub async fn bulk_upgrade(
        &self,
        actor: &Actor,
        name: &str,
        version: &str,
        clusters: &[String],
    ) -> Result<Vec<BulkOutcome>> {
        self.guard
            .authorize(
                actor,
                Permission::ListAllTenants,
                action::ADDON_UPGRADE,
                name,
                None,
            )
            .await?;
        if !self
            .definitions()
            .await?
            .iter()
            .any(|d| d.name == name && d.version == version)
        {
            return Err(crate::ValidationError::new(
                "version",
                format!("{name} {version} is not in the catalog"),
            )
            .into());
        }
        let rows = self.deps.store.fleet_addons().await?;
        let targets: Vec<(Uuid, String)> = if clusters.is_empty() {
            rows.iter()
                .filter(|r| {
                    r.addon.name == name
                        && r.addon.version != version
                        && r.addon.state == InstallState::Installed
                })
                .map(|r| (r.addon.cluster_id, r.cluster_name.clone()))
                .collect()
        } else {
            clusters
                .iter()
                .map(|c| {
                    let id = Uuid::parse_str(c.trim()).unwrap_or_default();
                    let name = rows
                        .iter()
                        .find(|r| r.addon.cluster_id == id)
                        .map(|r| r.cluster_name.clone())
                        .unwrap_or_else(|| c.clone());
                    (id, name)
                })
                .collect()
        };
        let empty = std::collections::BTreeMap::new();
        let mut out = Vec::with_capacity(targets.len());
        for (id, cluster_name) in targets {
            let result = self
                .install(actor, &id.to_string(), name, Some(version), &empty)
                .await;
            out.push(BulkOutcome {
                cluster_id: id,
                cluster_name,
                result,
            });
        }
        Ok(out)
    }

    /// Tenants whose addons the actor sees: all (None) for operators, their admin tenants
    /// for tenant admins.
    async fn scope(&self, actor: &Actor) -> Result<Option<Vec<Uuid>>> {
        if policy::check(actor, Permission::ListAllTenants).is_ok() {
            return Ok(None);
        }
        let e = match actor.identity() {
            None => Error::Unauthenticated,
            Some(who) => {
                let tenants: Vec<Uuid> = who
                    .memberships
                    .iter()
                    .filter(|m| m.role >= Role::Admin)
                    .map(|m| m.tenant_id)
                    .collect();
                if !tenants.is_empty() {
                    return Ok(Some(tenants));
                }
                Error::Forbidden
            }
        };
        self.guard
            .audit_refusal(actor, action::FLEET_VIEW, "addons", None, &e)
            .await?;
        Err(e)
    }
}
