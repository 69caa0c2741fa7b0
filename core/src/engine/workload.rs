//! Operations on what runs in a cluster (application deploys and deletes, addon toggles):
//! the same lease, progress, deadline and retries as the cluster's own operations, but no
//! provisioner takes part and the cluster stays as it is whatever the outcome. The work
//! itself is the services' ([`EngineHooks::run_workload`]).

use std::time::Duration;

use tokio::sync::mpsc;

use super::checkpoint::Checkpoint;
use super::tracker::Tracker;
use crate::cluster::{Cluster, ClusterEvent, EventKind, Operation, OperationState};
use crate::engine::{chrono_duration, lease_token, Engine, Stop};
use crate::provisioner::Reporter;
use crate::store::ClusterChange;
use crate::workloads::WorkloadError;

impl Engine {
    pub(super) async fn execute_workload(
        &self,
        op: Operation,
        cluster: Cluster,
    ) -> Result<(), Stop> {
        let store = &self.deps.store;
        let owner = lease_token(&op);
        let (tx, mut rx) = mpsc::unbounded_channel();
        let reporter = Reporter::new(tx);
        // Workload operations keep no checkpoint of their own.
        let mut tracker = Tracker::new(&op, Checkpoint::default());
        if op.attempts > 1 {
            tracker.step(&format!("Resumed (attempt {})", op.attempts));
        } else if tracker.step == crate::cluster::WAITING_STEP {
            tracker.step = crate::cluster::STARTING_STEP.into();
            tracker.dirty = true;
        }
        self.flush(&op, &mut tracker, None).await?;
        let call = self.hooks.run_workload(&cluster, &op, reporter);
        let outcome = self.drive(&op, &mut tracker, &mut rx, call).await?;
        while let Ok(r) = rx.try_recv() {
            tracker.apply(r);
        }
        let reason = match outcome {
            Ok(Ok(summary)) => {
                let now = crate::clock::now();
                let mut events = std::mem::take(&mut tracker.events);
                events.push(ClusterEvent::new(
                    cluster.id,
                    Some(op.id),
                    EventKind::State,
                    summary,
                    now,
                ));
                let change = ClusterChange::default();
                return self
                    .finish(&op, OperationState::Succeeded, None, &change, &events, now)
                    .await;
            }
            Ok(Err(WorkloadError::Transient(msg))) if op.attempts < self.config.max_attempts => {
                self.flush(&op, &mut tracker, None).await?;
                let backoff = Duration::from_secs(2u64.saturating_pow(op.attempts.min(6)));
                let event = ClusterEvent::new(
                    op.cluster_id,
                    Some(op.id),
                    EventKind::Error,
                    format!("{msg} (retrying in {} s)", backoff.as_secs()),
                    crate::clock::now(),
                );
                let run_after = crate::clock::now() + chrono_duration(backoff);
                return match store
                    .reschedule(op.id, owner, run_after, &op.checkpoint, &[event])
                    .await
                {
                    Ok(true) => Err(Stop::Rescheduled),
                    _ => Err(Stop::LostLease),
                };
            }
            Ok(Err(WorkloadError::Transient(msg))) => {
                format!("gave up after {} attempts: {msg}", op.attempts)
            }
            Ok(Err(e)) => e.to_string(),
            Err(_elapsed) => {
                let minutes = (op.deadline_at - op.created_at).num_minutes();
                format!(
                    "timed out after {minutes} min during step \"{}\"",
                    tracker.step
                )
            }
        };
        self.flush(&op, &mut tracker, None).await?;
        self.fail_workload(&op, &reason).await
    }

    /// Ends a workload operation as failed: the cluster is left as it is; the services
    /// record the failure on what the operation was about.
    async fn fail_workload(&self, op: &Operation, reason: &str) -> Result<(), Stop> {
        let now = crate::clock::now();
        let event = ClusterEvent::new(
            op.cluster_id,
            Some(op.id),
            EventKind::Error,
            format!("Failed: {reason}"),
            now,
        );
        tracing::warn!(operation = %op.id, kind = %op.kind, reason, "workload operation failed");
        self.finish(
            op,
            OperationState::Failed,
            Some(reason),
            &ClusterChange::default(),
            &[event],
            now,
        )
        .await?;
        self.hooks.workload_failed(op, reason).await;
        Ok(())
    }
}
