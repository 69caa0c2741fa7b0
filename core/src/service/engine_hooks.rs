//! The use cases the operation engine calls back ([`crate::engine::EngineHooks`]).

use std::time::Duration;

use async_trait::async_trait;

use super::Kqueen;
use crate::cluster::{Cluster, Operation, OperationKind};
use crate::engine::EngineHooks;
use crate::provisioner::Reporter;
use crate::workloads::WorkloadError;

#[async_trait]
impl EngineHooks for Kqueen {
    fn sweep_access_soon(&self) {
        self.access_sweep().sweep_access_soon()
    }

    fn cluster_ready(&self, cluster_id: uuid::Uuid) {
        self.fleet().sync_soon(cluster_id)
    }

    async fn revoke_all_access(&self, cluster: &Cluster, within: Duration) -> Option<String> {
        self.access().revoke_all_access(cluster, within).await
    }

    async fn run_workload(
        &self,
        cluster: &Cluster,
        op: &Operation,
        reporter: Reporter,
    ) -> Result<String, WorkloadError> {
        match op.kind {
            OperationKind::AppDeploy | OperationKind::AppDelete => {
                self.apps().run(cluster, op, &reporter).await
            }
            OperationKind::AddonApply | OperationKind::AddonRemove => {
                self.addons().run(cluster, op, &reporter).await
            }
            OperationKind::Backup => self.backups().run(cluster, op, &reporter).await,
            OperationKind::Restore => self.backups().run_restore(cluster, op, &reporter).await,
            kind => Err(WorkloadError::Refused(format!(
                "{kind} is not an operation on what runs in a cluster"
            ))),
        }
    }

    async fn workload_failed(&self, op: &Operation, reason: &str) {
        match op.kind {
            OperationKind::AppDeploy | OperationKind::AppDelete => {
                self.apps().failed(op, reason).await
            }
            OperationKind::AddonApply | OperationKind::AddonRemove => {
                self.addons().failed(op, reason).await
            }
            OperationKind::Backup => self.backups().failed(op, reason).await,
            OperationKind::Restore => self.backups().restore_failed(op, reason).await,
            _ => {}
        }
    }

    async fn run_backup_schedules(&self) {
        match self.backups().run_schedules(crate::clock::now()).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(queued = n, "scheduled backups queued"),
            Err(e) => tracing::warn!(error = %e, "scheduled backups failed"),
        }
    }

    async fn autoscale(&self) {
        match self.autoscaler().turn_all().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(queued = n, "autoscaling queued scales"),
            Err(e) => tracing::warn!(error = %e, "the autoscaling turn failed"),
        }
    }

    async fn drive_rollouts(&self) {
        match self.rollouts().drive().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(started = n, "rollouts started upgrades"),
            Err(e) => tracing::warn!(error = %e, "the rollouts' turn failed"),
        }
    }
}
