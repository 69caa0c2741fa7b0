//! How a run ends: the operation succeeded (the cluster's new state, its kubeconfig stored,
//! its secrets forgotten after a delete) or failed (the cluster in Error with the reason).

use std::time::Duration;

use chrono::Utc;

use super::checkpoint::{Checkpoint, Phase};
use super::tracker::Tracker;
use crate::cluster::{
    Cluster, ClusterEvent, ClusterState, EventKind, Operation, OperationKind, OperationState,
};
use crate::engine::{chrono_duration, context, lease_token, Engine, Stop};
use crate::store::ClusterChange;
use crate::vault::names;

impl Engine {
    pub(super) async fn succeed(
        &self,
        op: &Operation,
        cluster: &crate::cluster::Cluster,
        provisioned: Option<crate::provisioner::Provisioned>,
        tracker: &mut Tracker,
    ) -> Result<(), Stop> {
        let mut change = ClusterChange {
            state: Some(ClusterState::Ready),
            error: Some(None),
            ..Default::default()
        };
        let mut events = std::mem::take(&mut tracker.events);
        let now = crate::clock::now();
        match op.kind {
            OperationKind::Create => {
                let Some(p) = provisioned else {
                    return self
                        .fail(op, "the provisioner returned no kubeconfig")
                        .await;
                };
                let endpoint = p
                    .endpoint
                    .clone()
                    .or_else(|| server_of(p.kubeconfig.expose()));
                let at = names::cluster_kubeconfig(cluster.tenant_id, cluster.id);
                if let Err(e) = self.deps.vault.put(&at, &p.kubeconfig).await {
                    tracing::warn!(error = %e, "storing a kubeconfig failed; will retry");
                    let run_after = now + chrono_duration(Duration::from_secs(5));
                    let checkpoint =
                        Checkpoint::new(Phase::Kubeconfig, tracker.checkpoint.provisioner.clone())
                            .to_value();
                    let _ = self
                        .deps
                        .store
                        .reschedule(op.id, lease_token(op), run_after, &checkpoint, &events)
                        .await;
                    return Err(Stop::Rescheduled);
                }
                change.endpoint = endpoint;
                change.provisioner_state = Some(p.state);
                events.push(state_event(
                    cluster,
                    op,
                    "Ready: the cluster is provisioned and its kubeconfig stored",
                    now,
                ));
            }
            OperationKind::Delete => {
                change.state = None;
                change.deleted = true;
                context::forget_cluster_secrets(&self.deps, cluster).await;
                events.push(state_event(cluster, op, "Deleted", now));
            }
            OperationKind::Scale => {
                let nodes = match op.nodes() {
                    Ok(n) => n,
                    Err(why) => return self.fail(op, &why).await,
                };
                change.node_count = Some(nodes);
                change.parameters =
                    Some(with_param(cluster, "node_count", Some(nodes.to_string())));
                events.push(state_event(
                    cluster,
                    op,
                    format!("Ready: scaled to {nodes} nodes"),
                    now,
                ));
            }
            OperationKind::ReplaceNode => {
                let node = op.node().unwrap_or("?");
                events.push(state_event(
                    cluster,
                    op,
                    format!("Ready: node {node} replaced"),
                    now,
                ));
            }
            // Never here: they end in `workload.rs`.
            OperationKind::AppDeploy
            | OperationKind::AppDelete
            | OperationKind::AddonApply
            | OperationKind::AddonRemove
            | OperationKind::Backup
            | OperationKind::Restore => {}
            OperationKind::Upgrade => {
                let version = match op.version() {
                    Ok(v) => v.to_owned(),
                    Err(why) => return self.fail(op, &why).await,
                };
                events.push(state_event(
                    cluster,
                    op,
                    format!("Ready: upgraded to {version}"),
                    now,
                ));
                change.parameters = Some(with_param(cluster, "kubernetes_version", Some(version)));
            }
        }
        self.finish(op, OperationState::Succeeded, None, &change, &events, now)
            .await?;
        tracing::info!(operation = %op.id, cluster = %cluster.name, kind = %op.kind, "operation succeeded");
        if op.kind != OperationKind::Delete {
            self.hooks.cluster_ready(cluster.id);
        }
        Ok(())
    }

    /// Ends the operation as failed and puts the cluster in Error with the reason.
    pub(super) async fn fail(&self, op: &Operation, reason: &str) -> Result<(), Stop> {
        let now = crate::clock::now();
        let change = ClusterChange {
            state: Some(ClusterState::Error),
            error: Some(Some(reason.to_owned())),
            ..Default::default()
        };
        let event = ClusterEvent::new(
            op.cluster_id,
            Some(op.id),
            EventKind::Error,
            format!("Error: {reason}"),
            now,
        );
        tracing::warn!(operation = %op.id, kind = %op.kind, reason, "operation failed");
        self.finish(
            op,
            OperationState::Failed,
            Some(reason),
            &change,
            &[event],
            now,
        )
        .await
    }

    /// Ends the operation in `state` with the cluster `change` and the timeline `events`,
    /// fenced by the operation's lease.
    pub(super) async fn finish(
        &self,
        op: &Operation,
        state: OperationState,
        reason: Option<&str>,
        change: &ClusterChange,
        events: &[ClusterEvent],
        now: chrono::DateTime<Utc>,
    ) -> Result<(), Stop> {
        let store = &self.deps.store;
        match store
            .finish_operation(op.id, lease_token(op), state, reason, change, events, now)
            .await
        {
            Ok(true) => Ok(()),
            _ => Err(Stop::LostLease),
        }
    }
}

/// The API server URL of a kubeconfig's current context.
fn server_of(yaml: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(yaml).ok()?;
    let kc = crate::kubernetes::read_kubeconfig(text).ok()?;
    crate::kubernetes::current_server(&kc)
}

/// A timeline entry of the cluster's new state, for the operation that brought it.
fn state_event(
    cluster: &Cluster,
    op: &Operation,
    message: impl Into<String>,
    now: chrono::DateTime<Utc>,
) -> ClusterEvent {
    ClusterEvent::new(cluster.id, Some(op.id), EventKind::State, message, now)
}

/// The cluster's parameters with `key` set to `value` (unchanged without one).
fn with_param(cluster: &Cluster, key: &str, value: Option<String>) -> crate::cluster::Params {
    let mut params = cluster.parameters.clone();
    if let Some(v) = value {
        params.insert(key.to_owned(), v);
    }
    params
}
