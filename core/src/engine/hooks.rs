//! What the engine asks of the use cases above it. The engine owns this trait and the
//! services implement it, so the engine never depends on the services.

use std::time::Duration;

use async_trait::async_trait;

use crate::cluster::{Cluster, Operation};
use crate::provisioner::Reporter;
use crate::workloads::WorkloadError;

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

    /// Does the work of a workload operation (an application deploy or delete, an addon
    /// toggle) in `cluster`, reporting steps to `reporter`; returns the line for the
    /// timeline. Transient errors are retried by the engine.
    async fn run_workload(
        &self,
        cluster: &Cluster,
        op: &Operation,
        reporter: Reporter,
    ) -> Result<String, WorkloadError>;

    /// A workload operation failed for good (or timed out): the services record it on what
    /// the operation was about.
    async fn workload_failed(&self, op: &Operation, reason: &str);

    /// Queues the scheduled backups that are due and removes those past retention (run by
    /// the periodic sweep, on one replica at a time). Failures are logged.
    async fn run_backup_schedules(&self);

    /// One turn of the upgrades in waves: follows the upgrades under way, starts the next
    /// ones, moves rollouts on (run by a periodic job on one replica at a time). Failures are
    /// logged.
    async fn drive_rollouts(&self);

    /// One autoscaling turn at every autoscaled cluster (run by a periodic job on one replica
    /// at a time). Failures are logged.
    async fn autoscale(&self);
}
