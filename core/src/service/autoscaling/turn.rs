//! The autoscaler's turns, run by the engine's periodic job on one replica at a time: for
//! each autoscaled cluster, read its nodes and pods, decide ([`crate::autoscale::decide`]),
//! queue the scale it decides (a scale-down names the node, which its operation drains
//! first), and keep what the turn leaves: the "underused since" times and the reason for the
//! next turn, the node counts when they changed (the chart), and a timeline entry when the
//! decision is news. A scale queued is its own timeline entry ("Autoscaling: …").

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::ListParams;
use kube::Api;

use super::{keep_since, Autoscaler};
use crate::audit::action;
use crate::autoscale::{self, Autoscaling, Decision, Sample, Turn};
use crate::cluster::{
    Cluster, ClusterEvent, ClusterState, EventKind, OperationKind, OperationTarget,
};
use crate::service::clusters::Via;
use crate::store::AutoscaleTurn;
use crate::{Actor, Error, Result};

/// Clusters taken per run (the longest without a turn first; the rest at the next run).
const PER_RUN: u32 = 200;

/// What one turn came to.
struct Came {
    reason: String,
    underused: autoscale::Underused,
    sample: Option<Sample>,
    /// A scale was queued (the operation's own timeline entry says why).
    queued: bool,
    /// Worth a timeline entry when news (not while the cluster is busy).
    noteworthy: bool,
}

impl Autoscaler {
    /// One turn at every autoscaled cluster; how many scales were queued. One cluster's
    /// failure is logged and the others go on.
    pub async fn turn_all(&self) -> Result<usize> {
        let mut queued = 0;
        for autoscaling in self.deps.store.autoscaled_clusters(PER_RUN).await? {
            match self.turn(&autoscaling, crate::clock::now()).await {
                Ok(true) => queued += 1,
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(cluster = %autoscaling.cluster_id, error = %e, "an autoscaling turn failed")
                }
            }
        }
        Ok(queued)
    }

    /// One turn at one cluster; whether it queued a scale.
    async fn turn(&self, a: &Autoscaling, now: DateTime<Utc>) -> Result<bool> {
        let store = &self.deps.store;
        let cluster = store.cluster(a.cluster_id).await?;
        let came = if cluster.state == ClusterState::Ready {
            self.decide(&cluster, a, now).await?
        } else {
            Came {
                reason: format!(
                    "the cluster is {}: autoscaling waits until it is Ready",
                    cluster.state.label()
                ),
                underused: a.underused.clone(),
                sample: None,
                queued: false,
                noteworthy: false,
            }
        };
        let last = store
            .autoscale_samples(cluster.id, keep_since(now), 1)
            .await?;
        let sample = came
            .sample
            .filter(|s| last.first().is_none_or(|l| s.differs_from(l)));
        let event = (came.noteworthy
            && !came.queued
            && autoscale::is_news(a.last_reason.as_deref(), &came.reason))
        .then(|| {
            ClusterEvent::new(
                cluster.id,
                None,
                EventKind::Log,
                format!("Autoscaling: {}", came.reason),
                now,
            )
        });
        store
            .record_autoscale_turn(
                AutoscaleTurn {
                    cluster_id: cluster.id,
                    underused: &came.underused,
                    reason: &came.reason,
                    at: now,
                    sample: sample.as_ref(),
                    event: event.as_ref(),
                },
                keep_since(now),
            )
            .await?;
        Ok(came.queued)
    }

    /// The decision for a Ready cluster, and the scale it queued.
    async fn decide(&self, cluster: &Cluster, a: &Autoscaling, now: DateTime<Utc>) -> Result<Came> {
        let (nodes, pods) = match self.read(cluster).await {
            Ok(read) => read,
            Err(why) => {
                return Ok(Came {
                    reason: format!("cannot read the cluster's nodes and pods: {why}"),
                    underused: a.underused.clone(),
                    sample: None,
                    queued: false,
                    noteworthy: true,
                })
            }
        };
        let observed = autoscale::observe(&nodes, &pods);
        let store = &self.deps.store;
        let quota = store.quota(cluster.tenant_id).await?;
        let mut usage = store.usage(cluster.tenant_id).await?;
        // The tenant's usage counts this cluster's reported nodes; until the nodes asked for
        // have joined, count those instead.
        let asked = cluster.asked_nodes();
        usage.nodes = usage
            .nodes
            .saturating_sub(cluster.node_count)
            .saturating_add(asked.max(cluster.node_count));
        let outcome = autoscale::decide(&Turn {
            settings: &a.settings,
            observed: &observed,
            current: asked,
            headroom: autoscale::quota_headroom(&quota, usage),
            underused: &a.underused,
            now,
        });
        let mut underused = outcome.underused;
        let (target, reason) = match outcome.decision {
            Decision::Hold { reason } => {
                return Ok(Came {
                    reason,
                    underused,
                    sample: Some(Sample::of(&observed, cluster.asked_nodes(), now)),
                    queued: false,
                    noteworthy: true,
                })
            }
            Decision::ScaleUp { to, reason } => (OperationTarget::Nodes(to), reason),
            Decision::ScaleDown { node, to, reason } => {
                underused.remove(&node);
                (OperationTarget::NodesWithout { nodes: to, node }, reason)
            }
        };
        let queued = self
            .clusters
            .try_enqueue(
                &Actor::system(),
                cluster,
                OperationKind::Scale,
                Some(target),
                action::CLUSTER_SCALE,
                Via::Autoscaler(&reason),
            )
            .await;
        let (reason, queued) = match queued {
            Ok(_) => (reason, true),
            // Refused (the tenant's quota, the template, the provider): said, and tried
            // again at the next turn.
            Err(e @ (Error::Conflict(_) | Error::Invalid(_))) => {
                (format!("{reason}; but the scale was refused: {e}"), false)
            }
            Err(e) => return Err(e),
        };
        Ok(Came {
            reason,
            underused,
            sample: Some(Sample::of(&observed, cluster.asked_nodes(), now)),
            queued,
            noteworthy: true,
        })
    }

    /// The cluster's nodes and pods (every namespace), through its stored admin kubeconfig.
    async fn read(&self, cluster: &Cluster) -> std::result::Result<(Vec<Node>, Vec<Pod>), String> {
        let (client, _) = self
            .admin
            .admin_client(cluster)
            .await
            .map_err(|e| e.to_string())?;
        let short = |e: kube::Error| crate::kubernetes::one_line(&e.to_string(), 200);
        let nodes = Api::<Node>::all(client.clone())
            .list(&ListParams::default())
            .await
            .map_err(short)?;
        let pods = Api::<Pod>::all(client)
            .list(&ListParams::default())
            .await
            .map_err(short)?;
        Ok((nodes.items, pods.items))
    }
}
