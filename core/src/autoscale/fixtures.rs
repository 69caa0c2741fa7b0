//! Clusters to decide about in tests: worker nodes of 4 cores and 16 GiB, pods by the core
//! and the GiB, times in minutes after a fixed start; and Node and Pod objects as the
//! Kubernetes API lists them.

use chrono::{DateTime, TimeZone, Utc};
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{json, Value};

use super::{decide, Underused};
use super::{AutoscaleSettings, Decision, NodeView, Observation, Outcome, PendingPod, Turn};
use crate::inventory::Resources;

pub(super) const GI: u64 = 1 << 30;

pub(super) fn res(cpu_millis: u64, gib: u64) -> Resources {
    Resources {
        cpu_millis,
        memory_bytes: gib * GI,
    }
}

/// A Ready worker node of 4 cores and 16 GiB with one workload pod of `cpu_millis` and `gib`.
pub(super) fn node(name: &str, cpu_millis: u64, gib: u64) -> NodeView {
    let load = res(cpu_millis, gib);
    NodeView {
        name: name.into(),
        ready: true,
        allocatable: res(4000, 16),
        requested: load,
        movable: if load == Resources::default() {
            Vec::new()
        } else {
            vec![load]
        },
        ..NodeView::default()
    }
}

pub(super) fn cordoned(mut n: NodeView) -> NodeView {
    n.cordoned = true;
    n
}

pub(super) fn not_ready(mut n: NodeView) -> NodeView {
    n.ready = false;
    n
}

/// `n` holding a pod that draining would lose.
pub(super) fn blocked(mut n: NodeView, pod: &str) -> NodeView {
    n.blockers.push(format!("shop/{pod} (no controller)"));
    n
}

pub(super) fn pending(name: &str, cpu_millis: u64, gib: u64) -> PendingPod {
    PendingPod {
        namespace: "shop".into(),
        name: name.into(),
        requests: res(cpu_millis, gib),
    }
}

/// `min`..=`max` nodes; under 50% for 10 minutes goes.
pub(super) fn settings(min_nodes: u32, max_nodes: u32) -> AutoscaleSettings {
    AutoscaleSettings {
        min_nodes,
        max_nodes,
        scale_down_utilisation: 50,
        scale_down_after_secs: 600,
    }
}

/// `minutes` after a fixed start.
pub(super) fn at(minutes: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 2, 9, 0, 0)
        .single()
        .unwrap_or_default()
        + chrono::Duration::minutes(minutes)
}

/// A turn of `nodes` (the current count unless `current` says otherwise) and `pending`.
pub(super) struct Case {
    pub settings: AutoscaleSettings,
    pub observed: Observation,
    pub current: Option<u32>,
    pub headroom: Option<u32>,
    pub underused: Underused,
    pub now: DateTime<Utc>,
}

impl Case {
    pub fn new(settings: AutoscaleSettings, nodes: Vec<NodeView>) -> Self {
        Self {
            settings,
            observed: Observation {
                nodes,
                pending: Vec::new(),
            },
            current: None,
            headroom: None,
            underused: Underused::new(),
            now: at(0),
        }
    }

    pub fn pending(mut self, pods: Vec<PendingPod>) -> Self {
        self.observed.pending = pods;
        self
    }

    pub fn current(mut self, n: u32) -> Self {
        self.current = Some(n);
        self
    }

    pub fn headroom(mut self, n: u32) -> Self {
        self.headroom = Some(n);
        self
    }

    /// `node` underused since `minutes`; the turn at `now` minutes.
    pub fn underused(mut self, node: &str, minutes: i64) -> Self {
        self.underused.insert(node.into(), at(minutes));
        self
    }

    pub fn at(mut self, minutes: i64) -> Self {
        self.now = at(minutes);
        self
    }

    pub fn outcome(&self) -> Outcome {
        let current = self.current.unwrap_or_else(|| {
            let workers = self.observed.nodes.iter().filter(|n| !n.control_plane);
            u32::try_from(workers.count()).unwrap_or(u32::MAX)
        });
        decide(&Turn {
            settings: &self.settings,
            observed: &self.observed,
            current,
            headroom: self.headroom,
            underused: &self.underused,
            now: self.now,
        })
    }

    pub fn decide(&self) -> Decision {
        self.outcome().decision
    }
}

/// A Node of 4 cores and 16 GiB, its Ready condition `ready`, with `extra` merged in.
pub(super) fn k8s_node(name: &str, ready: &str, extra: Value) -> Node {
    let mut v = json!({
        "metadata": {"name": name},
        "status": {
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": ready}]
        }
    });
    merge(&mut v, extra);
    serde_json::from_value(v).expect("a Node")
}

/// A running pod of a ReplicaSet in `shop` on `node` (pending and not bound when it is ""),
/// requesting `cpu` and `memory`, with `extra` merged in.
pub(super) fn k8s_pod(name: &str, node: &str, cpu: &str, memory: &str, extra: Value) -> Pod {
    let mut v = json!({
        "metadata": {
            "name": name, "namespace": "shop",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": "web-7d9", "uid": "u1", "controller": true}]
        },
        "spec": {"containers": [{"name": "c", "resources": {
            "requests": {"cpu": cpu, "memory": memory}}}]},
        "status": {"phase": if node.is_empty() { "Pending" } else { "Running" }}
    });
    if !node.is_empty() {
        v["spec"]["nodeName"] = json!(node);
    }
    merge(&mut v, extra);
    serde_json::from_value(v).expect("a Pod")
}

/// Merges `from` into `into`, objects key by key (null replaces, so removes an entry).
pub(super) fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (into, from) => *into = from,
    }
}

/// A pod status the scheduler gave up on.
pub(super) fn unschedulable_status() -> Value {
    json!({"status": {"conditions": [{"type": "PodScheduled", "status": "False",
        "reason": "Unschedulable", "message": "0/3 nodes are available"}]}})
}

/// The owner of a DaemonSet's pod.
pub(super) fn daemonset() -> Value {
    json!({"metadata": {"ownerReferences": [{"apiVersion": "apps/v1",
        "kind": "DaemonSet", "name": "proxy", "uid": "u2", "controller": true}]}})
}
