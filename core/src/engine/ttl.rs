//! Clusters whose time-to-live ran out: their deletion is queued like any other.

use crate::actor::Actor;
use crate::audit::{action, AuditEvent};
use crate::cluster::{Cluster, ClusterEvent, ClusterState, EventKind, Operation, OperationKind};
use crate::engine::Engine;
use crate::{Error, Result};

impl Engine {
    /// Queues the deletion of clusters whose time-to-live ran out.
    pub async fn sweep_expired(&self) -> Result<usize> {
        let expired = self
            .deps
            .store
            .expired_clusters(crate::clock::now(), 50)
            .await?;
        let mut n = 0;
        for cluster in expired {
            match self.expire_cluster(&cluster).await {
                Ok(()) => n += 1,
                Err(Error::Conflict(_)) => {}
                Err(e) => {
                    tracing::warn!(cluster = %cluster.name, error = %e, "expiring a cluster failed")
                }
            }
        }
        Ok(n)
    }

    /// Queues the deletion of a cluster whose time-to-live ran out
    async fn expire_cluster(&self, cluster: &Cluster) -> Result<()> {
        let system = Actor::system();
        let now = crate::clock::now();
        let op = Operation::new(
            cluster.id,
            OperationKind::Delete,
            None,
            "system",
            now,
            chrono::Duration::hours(1),
        );
        let event = ClusterEvent::new(
            cluster.id,
            Some(op.id),
            EventKind::State,
            "Time-to-live expired: deletion queued",
            now,
        );
        let audit = AuditEvent::success(&system, action::CLUSTER_EXPIRE, cluster.name.as_str())
            .in_tenant(cluster.tenant_id)
            .with_detail("time-to-live expired");
        self.deps
            .store
            .enqueue_operation(&op, ClusterState::Deleting, &event, &audit, false)
            .await?;
        tracing::info!(cluster = %cluster.name, tenant = %cluster.tenant_slug, "cluster expired; deletion queued");
        Ok(())
    }
}
