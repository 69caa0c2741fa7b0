//! The access sweep: what keeps the users' access in every cluster in line with KQueen's
//! records, in the background (after membership changes and at every engine sweep).
//! First, ServiceAccounts of users who left, changed role or were disabled are revoked;
//! then every remaining user gets their role in every namespace open to the tenant (new
//! namespaces included), old cluster-wide bindings are removed and long-lived token Secrets
//! disarmed ([`crate::kubernetes::reconcile_access`]).

use std::collections::BTreeMap;

use futures::StreamExt;
use uuid::Uuid;

use std::sync::Arc;

use super::cluster_admin::{access_error, ClusterAdmin};
use super::sweep_gate::SweepGate;
use crate::audit::{action, AuditEvent};
use crate::cluster::Cluster;
use crate::deps::Deps;
use crate::identity::Role;
use crate::kubernetes::{AccessChanges, Grant, RoleMap};
use crate::store;
use crate::{Actor, Error, Result};

/// How many clusters one pass sweeps at once.
const PARALLEL_CLUSTERS: usize = 4;

/// Keeps the users' access in every cluster in line with KQueen's records.
#[derive(Clone)]
pub struct AccessSweep {
    deps: Deps,
    admin: ClusterAdmin,
    /// At most one background pass at a time.
    gate: Arc<SweepGate>,
}

impl AccessSweep {
    pub(super) fn new(deps: Deps, admin: ClusterAdmin) -> Self {
        Self {
            deps,
            admin,
            gate: Arc::default(),
        }
    }
}

impl AccessSweep {
    /// Deletes the ServiceAccounts of users who left a cluster's tenant, whose role there
    /// changed, or who were disabled, so that the kubeconfigs issued to them stop working at
    /// once instead of when their tokens expire (after a role change the user downloads a new
    /// one, bound to the new role). Each cluster gets `request_check_timeout` × 2 in all; one
    /// that does not answer keeps its records, is skipped for the rest of the pass and tried
    /// again at the next (the engine asks for one every minute). Returns how many were
    /// revoked.
    pub async fn revoke_stale_access(&self) -> Result<usize> {
        let stale = self.deps.store.stale_accesses(10_000).await?;
        let mut by_cluster: BTreeMap<Uuid, Vec<store::StaleAccess>> = BTreeMap::new();
        for access in stale {
            by_cluster
                .entry(access.cluster_id)
                .or_default()
                .push(access);
        }
        let mut revoked = 0;
        for (cluster_id, accesses) in by_cluster {
            let cluster = match self.deps.store.cluster(cluster_id).await {
                Ok(c) => c,
                Err(Error::NotFound(_)) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read a cluster with stale access");
                    continue;
                }
            };
            let within = self.deps.settings.request_check_timeout * 2;
            match tokio::time::timeout(within, self.revoke_stale_in(&cluster, &accesses)).await {
                Ok(Ok(n)) => revoked += n,
                Ok(Err((n, e))) => {
                    revoked += n;
                    tracing::warn!(cluster = %cluster.name, error = %e,
                        "cannot revoke stale ServiceAccounts yet; will retry");
                }
                Err(_) => tracing::warn!(cluster = %cluster.name,
                    "the cluster did not answer in time to revoke stale ServiceAccounts; will retry"),
            }
        }
        Ok(revoked)
    }

    /// Revokes `accesses` in `cluster`, stopping at the first failure: how many were done,
    /// with the failure if any.
    async fn revoke_stale_in(
        &self,
        cluster: &Cluster,
        accesses: &[store::StaleAccess],
    ) -> std::result::Result<usize, (usize, Error)> {
        let (client, _) = self.admin.admin_client(cluster).await.map_err(|e| (0, e))?;
        let mut done = 0;
        for access in accesses {
            // Read again just before acting: a download since the list was read (after a role
            // change) recorded the new role, and its fresh ServiceAccount must stay.
            if !self
                .deps
                .store
                .still_stale(access)
                .await
                .map_err(|e| (done, e))?
            {
                continue;
            }
            crate::kubernetes::revoke_user_access(client.clone(), &access.username)
                .await
                .map_err(|e| (done, access_error(e)))?;
            let reason = if access.disabled {
                "account disabled".to_owned()
            } else {
                match &access.current_role {
                    None => format!("no longer a member of {}", cluster.tenant_slug),
                    Some(now) => format!("role changed from {} to {now}", access.granted_role),
                }
            };
            let audit = AuditEvent::success(
                &Actor::system(),
                action::ACCESS_REVOKE,
                cluster.name.as_str(),
            )
            .in_tenant(cluster.tenant_id)
            .with_detail(format!("user {}: {reason}", access.username));
            if self
                .deps
                .store
                .delete_stale_access(access, &audit)
                .await
                .map_err(|e| (done, e))?
            {
                done += 1;
            }
        }
        Ok(done)
    }

    /// Brings every cluster's bindings in line with the recorded accesses (see the module
    /// documentation). Each cluster gets `request_check_timeout` × 2; one that fails or does
    /// not answer is tried again at the next pass and never holds up the others. Changes are
    /// audited (`access.sync`, by `system`). Returns how many clusters were changed.
    pub async fn sync_access(&self) -> Result<usize> {
        let grants = self.deps.store.access_grants(100_000).await?;
        let mut by_cluster: BTreeMap<Uuid, Vec<store::AccessGrant>> = BTreeMap::new();
        for grant in grants {
            by_cluster.entry(grant.cluster_id).or_default().push(grant);
        }
        let within = self.deps.settings.request_check_timeout * 2;
        let changed = futures::stream::iter(by_cluster)
            .map(|(cluster_id, grants)| async move {
                let cluster = match self.deps.store.cluster(cluster_id).await {
                    Ok(c) => c,
                    Err(Error::NotFound(_)) => return false,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot read a cluster to sweep its access");
                        return false;
                    }
                };
                match tokio::time::timeout(within, self.sync_access_in(&cluster, &grants)).await {
                    Ok(Ok(changes)) => !changes.is_empty(),
                    Ok(Err(e)) => {
                        tracing::warn!(cluster = %cluster.name, error = %e,
                            "cannot sweep the cluster's access yet; will retry");
                        false
                    }
                    Err(_) => {
                        tracing::warn!(cluster = %cluster.name,
                            "the cluster did not answer in time to sweep its access; will retry");
                        false
                    }
                }
            })
            .buffer_unordered(PARALLEL_CLUSTERS)
            .filter(|changed| std::future::ready(*changed))
            .count()
            .await;
        Ok(changed)
    }

    /// One cluster of [`Self::sync_access`].
    pub(crate) async fn sync_access_in(
        &self,
        cluster: &Cluster,
        grants: &[store::AccessGrant],
    ) -> Result<AccessChanges> {
        let admin_access = self.admin.admin_access_of(cluster).await?;
        let grants: Vec<Grant> = grants
            .iter()
            .filter_map(|g| {
                Some(Grant {
                    username: g.username.clone(),
                    tenant: cluster.tenant_slug.clone(),
                    role: Role::parse(&g.role).ok()?,
                })
            })
            .collect();
        let (client, _) = self.admin.admin_client(cluster).await?;
        let changes =
            crate::kubernetes::reconcile_access(client, &grants, &RoleMap::default(), admin_access)
                .await
                .map_err(access_error)?;
        if !changes.is_empty() {
            let audit =
                AuditEvent::success(&Actor::system(), action::ACCESS_SYNC, cluster.name.as_str())
                    .in_tenant(cluster.tenant_id)
                    .with_detail(format!(
                        "{} (tenant admins: {})",
                        changes.summary(),
                        admin_access.as_str()
                    ));
            self.deps.store.record_audit(&audit).await?;
        }
        Ok(changes)
    }

    /// The access sweep in the background: right after a membership or template change
    /// (which must not wait for clusters to answer) and from the engine's sweeps. One pass at
    /// a time; asking while one runs gets one more pass after it.
    pub fn sweep_access_soon(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let k = self.clone();
        self.gate.request(&runtime, move || {
            let k = k.clone();
            async move {
                match k.revoke_stale_access().await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(revoked = n, "stale cluster access revoked"),
                    Err(e) => tracing::warn!(error = %e, "cannot revoke stale cluster access"),
                }
                match k.sync_access().await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(clusters = n, "cluster access swept"),
                    Err(e) => tracing::warn!(error = %e, "cannot sweep cluster access"),
                }
            }
        });
    }
}
