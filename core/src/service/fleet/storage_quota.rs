//! Tenants' shared-storage quotas applied at the end of an inventory round: a tenant whose
//! clusters keep more than its quota in the shared storage (hosted control planes' etcd) gets
//! them read-only there, and write access back once it is under again
//! ([`crate::cluster::storage_quota`] decides).

use super::Fleet;
use crate::audit::{action, AuditEvent};
use crate::cluster::storage_quota::{ClusterStorage, TenantStorage};
use crate::cluster::{Cluster, ClusterEvent, EventKind};
use crate::{Actor, Error, Result};

impl Fleet {
    /// Switches the write access of the clusters of `round` (the clusters just synced) whose
    /// tenant's usage, summed over every live cluster's last reading, says otherwise. Each
    /// switch is recorded in the cluster's timeline and the audit trail (by `system`). A
    /// switch that fails is logged and tried again at the next round (the stored reading
    /// still says what etcd allows); nothing here fails the sync.
    pub(super) async fn apply_storage_quotas(&self, round: &[Cluster]) {
        let tenants = match self.deps.store.tenant_storage().await {
            Ok(t) => t,
            Err(e) => {
                tracing::error!(error = %e, "cannot read the tenants' shared storage usage");
                return;
            }
        };
        for tenant in &tenants {
            for c in tenant.switches() {
                // Clusters not Ready now (being upgraded, deleted) wait for a round of theirs.
                let Some(cluster) = round.iter().find(|r| r.id == c.cluster_id) else {
                    continue;
                };
                if let Err(e) = self.switch_storage(cluster, tenant, c).await {
                    tracing::warn!(cluster = %cluster.name, tenant = %tenant.tenant, error = %e,
                        "cannot switch write access to shared storage; trying again next round");
                }
            }
        }
    }

    async fn switch_storage(
        &self,
        cluster: &Cluster,
        tenant: &TenantStorage,
        storage: &ClusterStorage,
    ) -> Result<()> {
        let writable = !storage.writable;
        let p = self
            .deps
            .registry
            .get(cluster.provider_kind)
            .ok_or_else(|| Error::Backend(format!("no provisioner {}", cluster.provider_kind)))?;
        let work_root = self.deps.settings.work_dir.clone();
        tokio::time::timeout(self.settings.timeout, async {
            let ctx =
                crate::engine::context::cluster_context(&self.deps, cluster, &work_root).await?;
            p.set_shared_storage_writable(&ctx, writable)
                .await
                .map_err(|e| Error::Backend(e.to_string()))
        })
        .await
        .map_err(|_| Error::Backend("timed out".into()))??;
        let reason = tenant.reason();
        let (kind, what) = if writable {
            (EventKind::State, action::CLUSTER_STORAGE_WRITABLE)
        } else {
            (EventKind::Error, action::CLUSTER_STORAGE_READ_ONLY)
        };
        let now = crate::clock::now();
        let event = ClusterEvent::new(cluster.id, None, kind, reason.clone(), now);
        let audit = AuditEvent::success(&Actor::system(), what, cluster.name.as_str())
            .in_tenant(cluster.tenant_id)
            .with_detail(reason);
        tracing::info!(cluster = %cluster.name, tenant = %tenant.tenant, writable,
            used = tenant.used(), quota = ?tenant.quota, "switched write access to shared storage");
        self.deps
            .store
            .record_storage_switch(cluster.id, writable, &event, &audit)
            .await
    }
}
