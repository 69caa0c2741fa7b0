//! Syncing clusters' inventories: every Ready cluster in the background, or one on request,
//! each judged by the audit checks.

use std::time::Instant;

use futures::stream::{self, StreamExt};

use super::{ClusterSync, Fleet};
use crate::audit::{action, AuditEvent, Outcome};
use crate::cluster::{Cluster, ClusterState};
use crate::inventory::checks::{self, AuditCheck, CheckSettings};
use crate::policy::Permission;
use crate::{Actor, Error, Result};

impl Fleet {
    /// Syncs every Ready cluster, `concurrency` at a time, each within `timeout`: one dead
    /// cluster costs its own timeout and nothing else. Then, with every cluster measured,
    /// applies the tenants' shared-storage quotas. A system task (the server's timer).
    pub async fn sync_inventory(&self) -> Result<Vec<ClusterSync>> {
        let clusters = self.deps.store.ready_clusters().await?;
        let checks = self.audit_checks().await?;
        // Owned clusters: a stream over borrowed ones makes the future not `Send` (the
        // compiler cannot prove it for every lifetime), and the server spawns it.
        let synced = stream::iter(clusters.clone())
            .map(|c| {
                let checks = &checks;
                async move { self.sync_one(&c, checks).await }
            })
            .buffer_unordered(self.settings.concurrency.max(1))
            .collect::<Vec<_>>()
            .await;
        self.apply_storage_quotas(&clusters).await;
        // One round, one new dashboard (not one per cluster: at 10,000 clusters a round
        // would leave no answer to reuse).
        self.dashboards.invalidate();
        Ok(synced)
    }

    /// Syncs one cluster now (any member of its tenant; audited).
    pub async fn sync_cluster_inventory(&self, actor: &Actor, id: &str) -> Result<ClusterSync> {
        let cluster = self
            .clusters
            .visible_cluster(actor, id, action::INVENTORY_SYNC)
            .await?;
        self.guard
            .authorize(
                actor,
                Permission::ManageClusters(cluster.tenant_id),
                action::INVENTORY_SYNC,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
            )
            .await?;
        if cluster.state != ClusterState::Ready {
            let e = Error::Conflict(format!(
                "the cluster is {}; only Ready clusters are synced",
                cluster.state.label()
            ));
            self.guard
                .audit_refusal(
                    actor,
                    action::INVENTORY_SYNC,
                    cluster.name.as_str(),
                    Some(cluster.tenant_id),
                    &e,
                )
                .await?;
            return Err(e);
        }
        let checks = self.audit_checks().await?;
        let result = self.sync_one(&cluster, &checks).await;
        self.dashboards.invalidate();
        let outcome = if result.error.is_none() {
            Outcome::Success
        } else {
            Outcome::Failure
        };
        let mut event = AuditEvent::now(
            actor,
            action::INVENTORY_SYNC,
            cluster.name.to_string(),
            outcome,
        );
        event.tenant_id = Some(cluster.tenant_id);
        if let Some(e) = &result.error {
            event = event.with_detail(e.clone());
        }
        self.deps.store.record_audit(&event).await?;
        Ok(result)
    }

    /// Syncs one cluster in the background if it is Ready (a system task: the engine asks
    /// when a cluster has just become Ready). Returns at once; failures are the cluster's
    /// sync result, as in the periodic sync.
    pub fn sync_soon(&self, cluster_id: uuid::Uuid) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let fleet = self.clone();
        runtime.spawn(async move {
            let cluster = match fleet.deps.store.cluster(cluster_id).await {
                Ok(c) if c.state == ClusterState::Ready => c,
                Ok(_) => return,
                Err(e) => {
                    tracing::warn!(cluster = %cluster_id, error = %e, "cannot read a cluster to sync");
                    return;
                }
            };
            let checks = match fleet.audit_checks().await {
                Ok(checks) => checks,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the audit checks");
                    return;
                }
            };
            let synced = fleet.sync_one(&cluster, &checks).await;
            fleet.dashboards.invalidate();
            tracing::info!(cluster = %synced.cluster, error = ?synced.error, "first sync after Ready");
        });
    }

    /// Reads one cluster and stores the result. Every failure, storing included, is this
    /// cluster's result (recorded as its sync error when the store takes it), never an error
    /// that would fail the other clusters' syncs.
    pub(super) async fn sync_one(
        &self,
        cluster: &Cluster,
        checks: &[Box<dyn AuditCheck>],
    ) -> ClusterSync {
        let started = Instant::now();
        let timeout = self.settings.timeout;
        let read = async {
            let (client, _) = self.admin.admin_client(cluster).await?;
            crate::inventory::collect(&client)
                .await
                .map_err(|e| Error::Conflict(e.to_string()))
        };
        let outcome = match tokio::time::timeout(timeout, read).await {
            Ok(Ok(snapshot)) => Ok(snapshot),
            Ok(Err(e)) => Err(match e {
                Error::Conflict(m) => m,
                other => other.to_string(),
            }),
            Err(_) => Err(format!("timed out after {} s", timeout.as_secs())),
        };
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.measure_shared_storage(cluster, timeout).await;
        let now = crate::clock::now();
        let outcome = match outcome {
            Ok(snapshot) => {
                let findings = checks::run_all(checks, &snapshot);
                self.deps.store
                    .save_inventory(cluster.id, &snapshot, &findings, now, duration_ms)
                    .await
                    .map_err(|e| {
                        tracing::error!(cluster = %cluster.name, tenant = %cluster.tenant_slug, error = %e, "storing the inventory failed");
                        "storing the inventory failed".to_owned()
                    })
            }
            Err(e) => Err(e),
        };
        let error = match outcome {
            Ok(()) => None,
            Err(e) => {
                tracing::warn!(cluster = %cluster.name, tenant = %cluster.tenant_slug, error = %e, "inventory sync failed");
                if let Err(store) = self
                    .deps
                    .store
                    .save_sync_failure(cluster.id, &e, now, duration_ms)
                    .await
                {
                    tracing::error!(cluster = %cluster.name, error = %store, "recording the sync failure failed");
                }
                Some(e)
            }
        };
        self.syncs.record(error.is_none());
        ClusterSync {
            cluster_id: cluster.id,
            cluster: cluster.name.to_string(),
            tenant: cluster.tenant_slug.clone(),
            error,
            duration_ms,
        }
    }

    /// Measures and keeps what the cluster stores in storage shared with other clusters (a
    /// hosted control plane's etcd key space), when its provisioner has such a thing. A
    /// failure is logged; the inventory sync goes on.
    async fn measure_shared_storage(&self, cluster: &Cluster, within: std::time::Duration) {
        let Some(p) = self.deps.registry.get(cluster.provider_kind) else {
            return;
        };
        let work_root = self.deps.settings.work_dir.clone();
        let measured = tokio::time::timeout(within, async {
            let ctx =
                crate::engine::context::cluster_context(&self.deps, cluster, &work_root).await?;
            p.shared_storage(&ctx)
                .await
                .map_err(|e| Error::Backend(e.to_string()))
        })
        .await;
        let usage = match measured {
            Ok(Ok(Some(usage))) => usage,
            Ok(Ok(None)) => return,
            Ok(Err(e)) => {
                tracing::warn!(cluster = %cluster.name, error = %e, "cannot measure shared storage");
                return;
            }
            Err(_) => {
                tracing::warn!(cluster = %cluster.name, "measuring shared storage timed out");
                return;
            }
        };
        let now = crate::clock::now();
        if let Err(e) = self
            .deps
            .store
            .put_shared_storage(cluster.id, &usage, now)
            .await
        {
            tracing::error!(cluster = %cluster.name, error = %e, "storing shared storage usage failed");
        }
    }

    /// The configured checks, with the version floor derived when not configured.
    pub(super) async fn audit_checks(&self) -> Result<Vec<Box<dyn AuditCheck>>> {
        let min_kubernetes = match self.settings.min_kubernetes {
            Some(v) => Some(v),
            None => self
                .newest_offered_version()
                .await?
                .map(|(major, minor)| (major, minor.saturating_sub(2))),
        };
        Ok(checks::builtin(&CheckSettings {
            allowed_registries: self.settings.allowed_registries.clone(),
            min_kubernetes,
        }))
    }
}
