//! A cluster's addons as its page shows them: every addon of the catalog with its state,
//! asked of the cluster now (drift, then health; or whether someone else installed it).

use std::time::Duration;

use chrono::Utc;

use super::Addons;
use crate::audit::action;
use crate::cluster::ClusterState;
use crate::workloads::addons::installed::{InstallState, InstalledAddon};
use crate::workloads::addons::state::{drifted, present_unmanaged, unhealthy, AddonState};
use crate::workloads::addons::{compare_versions, AddonDefinition};
use crate::workloads::WorkloadError;
use crate::{Actor, Result};

/// Installed addons whose workloads are not available yet count as installing this long.
const STARTING: chrono::Duration = chrono::Duration::minutes(10);

/// One addon of the catalog in one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterAddonView {
    pub name: String,
    pub state: AddonState,
    pub reason: Option<String>,
    /// What KQueen recorded (None: it does not manage it here).
    pub installed: Option<InstalledAddon>,
    /// The catalog's versions, newest first.
    pub versions: Vec<String>,
    /// The newest version (its description and parameters are the install form's).
    pub newest: AddonDefinition,
    /// A version newer than the installed one.
    pub upgrade_available: Option<String>,
}

impl Addons {
    /// Every addon of the catalog in the cluster, with its state asked of the cluster.
    pub async fn for_cluster(
        &self,
        actor: &Actor,
        cluster_id: &str,
    ) -> Result<Vec<ClusterAddonView>> {
        let cluster = self
            .clusters
            .visible_cluster(actor, cluster_id, action::ADDON_VIEW)
            .await?;
        let catalog = self.definitions().await?;
        let installed = self.deps.store.installed_addons(cluster.id).await?;
        let client =
            if cluster.state == ClusterState::Ready || cluster.state == ClusterState::Updating {
                self.admin
                    .admin_client(&cluster)
                    .await
                    .map(|(c, _)| c)
                    .map_err(|e| e.to_string())
            } else {
                Err(format!("the cluster is {}", cluster.state.label()))
            };
        // The addons are asked at once, each within the budget: a slow cluster delays the
        // page by one budget, not one per addon.
        let budget = self.deps.settings.request_check_timeout * 3;
        let mut names: Vec<&str> = catalog.iter().map(|d| d.name.as_str()).collect();
        names.dedup();
        let (catalog, installed, client, cluster) = (&catalog, &installed, &client, &cluster);
        let asked = names.into_iter().map(|name| async move {
            let versions: Vec<&AddonDefinition> =
                catalog.iter().filter(|d| d.name == name).collect();
            let newest = versions[0].clone();
            let record = installed.iter().find(|a| a.name == name).cloned();
            let running = record
                .as_ref()
                .and_then(|r| versions.iter().find(|d| d.version == r.version))
                .map(|d| (*d).clone());
            let (state, reason) = match (&record, client) {
                (Some(r), _) if r.state == InstallState::Installing => {
                    (AddonState::Installing, None)
                }
                (Some(r), _) if r.state == InstallState::Removing => (AddonState::Removing, None),
                (Some(r), _) if r.state == InstallState::Failed => {
                    (AddonState::Failed, r.error.clone())
                }
                (_, Err(why)) => (AddonState::Unknown, Some(why.clone())),
                (Some(r), Ok(client)) => match &running {
                    None => (
                        AddonState::Unknown,
                        Some(format!(
                            "{} {} is no longer in the catalog",
                            r.name, r.version
                        )),
                    ),
                    Some(def) => {
                        let asked = tokio::time::timeout(
                            budget,
                            installed_state(client, def, r, cluster.name.as_str()),
                        )
                        .await;
                        match asked {
                            Ok(Ok(s)) => s,
                            Ok(Err(e)) => (AddonState::Unknown, Some(e.to_string())),
                            Err(_) => (AddonState::Unknown, Some(timed_out(budget))),
                        }
                    }
                },
                (None, Ok(client)) => {
                    match tokio::time::timeout(budget, present_unmanaged(client, &newest)).await {
                        Ok(Ok(true)) => (AddonState::PresentUnmanaged, None),
                        Ok(Ok(false)) => (AddonState::NotInstalled, None),
                        Ok(Err(e)) => (AddonState::Unknown, Some(e.to_string())),
                        Err(_) => (AddonState::Unknown, Some(timed_out(budget))),
                    }
                }
            };
            let upgrade_available = record
                .as_ref()
                .filter(|r| compare_versions(&newest.version, &r.version).is_gt())
                .map(|_| newest.version.clone());
            ClusterAddonView {
                name: name.to_owned(),
                state,
                reason,
                installed: record,
                versions: versions.iter().map(|d| d.version.clone()).collect(),
                newest,
                upgrade_available,
            }
        });
        Ok(futures::future::join_all(asked).await)
    }
}

fn timed_out(after: Duration) -> String {
    format!("the cluster did not answer within {} s", after.as_secs())
}

/// An installed addon's state: drifted (objects changed behind KQueen's back), else its
/// health rule (installing while young, degraded after), else healthy.
async fn installed_state(
    client: &kube::Client,
    def: &AddonDefinition,
    record: &InstalledAddon,
    cluster_name: &str,
) -> Result<(AddonState, Option<String>), WorkloadError> {
    let drift = drifted(client, def, &record.parameters, cluster_name).await?;
    if !drift.is_empty() {
        return Ok((AddonState::Drifted, Some(drift.join("; "))));
    }
    match unhealthy(client, def).await? {
        None => Ok((AddonState::Healthy, None)),
        Some(why) => {
            let young = record
                .installed_at
                .is_some_and(|t| Utc::now() - t < STARTING);
            Ok((
                if young {
                    AddonState::Installing
                } else {
                    AddonState::Degraded
                },
                Some(why),
            ))
        }
    }
}
