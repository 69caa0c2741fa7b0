//! What the engine asks of the use cases above it. The engine owns this trait and the
//! services implement it, so the engine never depends on the services.

use std::time::Duration;

use async_trait::async_trait;

use crate::cluster::Cluster;

#[async_trait]
pub trait EngineHooks: Send + Sync {
    /// Asks for a background pass revoking stale cluster access; returns at once (clusters
    /// that do not answer must not hold up operations).
    fn sweep_access_soon(&self);

    /// The cluster has just become Ready (created, scaled, upgraded): asks for its inventory
    /// to be synced in the background, so that its page shows what it runs at once rather
    /// than after the next periodic sync. Returns at once.
    fn cluster_ready(&self, cluster_id: uuid::Uuid);

    /// Removes every per-user ServiceAccount KQueen created in `cluster`, before KQueen forgets
    /// a cluster that goes on existing. Best effort within `within`; the timeline line to
    /// record (None: there were none).
    async fn revoke_all_access(&self, cluster: &Cluster, within: Duration) -> Option<String>;
}
