//! What an autoscaling turn knows of a cluster, reduced from its Node and Pod lists: each
//! node's room and load, what keeps a node from being removed, and the pods the scheduler
//! could place nowhere. Which pods count, and which block a removal, is `pods`'s.

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{Node, Pod};

use super::fit;
use super::pods;
use crate::inventory::Resources;

const CONTROL_PLANE_LABELS: [&str; 2] = [
    "node-role.kubernetes.io/control-plane",
    "node-role.kubernetes.io/master",
];

/// One node as a turn sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeView {
    pub name: String,
    /// Its Ready condition is True.
    pub ready: bool,
    /// Cordoned (`spec.unschedulable`): someone keeps new pods off it.
    pub cordoned: bool,
    /// When its Node object was created: a node that is not Ready yet may just be joining.
    pub created: Option<DateTime<Utc>>,
    /// Labelled as a control-plane node: not one of the worker nodes autoscaling counts,
    /// never removed, never a place for moved pods.
    pub control_plane: bool,
    pub allocatable: Resources,
    /// What its workload pods request (neither DaemonSet nor static pods): its load.
    pub requested: Resources,
    /// What its DaemonSet and static pods request: room the node keeps for itself.
    pub daemon: Resources,
    /// The requests of each workload pod, which must find room elsewhere before it goes.
    pub movable: Vec<Resources>,
    /// The pods that keep it from being removed, and why: "default/debug (no controller)".
    pub blockers: Vec<String>,
}

impl NodeView {
    /// Whether the scheduler may place pods on it now: a Ready, uncordoned worker.
    pub fn takes_pods(&self) -> bool {
        self.ready && !self.cordoned && !self.control_plane
    }

    /// The room its pods leave.
    pub fn free(&self) -> Resources {
        fit::less(fit::less(self.allocatable, self.requested), self.daemon)
    }
}

/// A pod the scheduler could place on no node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PendingPod {
    pub namespace: String,
    pub name: String,
    pub requests: Resources,
}

/// A cluster's nodes (as listed) and its unschedulable pods (as listed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observation {
    pub nodes: Vec<NodeView>,
    pub pending: Vec<PendingPod>,
}

impl Observation {
    /// The nodes autoscaling counts: every one but the control plane's.
    pub fn workers(&self) -> impl Iterator<Item = &NodeView> {
        self.nodes.iter().filter(|n| !n.control_plane)
    }
}

/// Reduces a cluster's nodes and pods (all namespaces) to an [`Observation`]. Finished pods
/// (Succeeded, Failed) take no room; pods bound to a node that is not listed are ignored.
pub fn observe(nodes: &[Node], pods: &[Pod]) -> Observation {
    let mut views: Vec<NodeView> = nodes.iter().map(node_view).collect();
    let mut pending = Vec::new();
    for pod in pods {
        let Some(spec) = pod.spec.as_ref().filter(|_| !pods::finished(pod)) else {
            continue;
        };
        let requests = pods::requests(spec);
        let daemon = pods::is_daemon(pod);
        // A pod being deleted leaves anyway: nothing to move, to lose, or to make room for.
        let leaving = pod.metadata.deletion_timestamp.is_some();
        match spec.node_name.as_deref().filter(|n| !n.is_empty()) {
            Some(node) => {
                let Some(view) = views.iter_mut().find(|v| v.name == node) else {
                    continue;
                };
                if daemon {
                    view.daemon.add(requests);
                    continue;
                }
                view.requested.add(requests);
                if !leaving {
                    view.movable.push(requests);
                    if let Some(why) = pods::blocks_removal(pod, spec) {
                        view.blockers
                            .push(format!("{} ({why})", pods::full_name(pod)));
                    }
                }
            }
            None if !daemon && !leaving && pods::unschedulable(pod) => {
                pending.push(PendingPod {
                    namespace: pod.metadata.namespace.clone().unwrap_or_default(),
                    name: pod.metadata.name.clone().unwrap_or_default(),
                    requests,
                });
            }
            None => {}
        }
    }
    Observation {
        nodes: views,
        pending,
    }
}

fn node_view(node: &Node) -> NodeView {
    let status = node.status.as_ref();
    let labels = node.metadata.labels.as_ref();
    NodeView {
        name: node.metadata.name.clone().unwrap_or_default(),
        ready: status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
            .is_some_and(|c| c.status == "True"),
        cordoned: node
            .spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false),
        created: node
            .metadata
            .creation_timestamp
            .as_ref()
            .and_then(crate::kubernetes::utc),
        control_plane: CONTROL_PLANE_LABELS
            .iter()
            .any(|l| labels.is_some_and(|m| m.contains_key(*l))),
        allocatable: pods::resources(status.and_then(|s| s.allocatable.as_ref())),
        ..NodeView::default()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::autoscale::fixtures::{
        at, daemonset, k8s_node, k8s_pod, merge, unschedulable_status, GI,
    };

    #[test]
    fn nodes_say_whether_they_are_ready_cordoned_control_plane_and_how_big() {
        let nodes = [
            k8s_node("a", "True", json!({})),
            k8s_node("b", "Unknown", json!({"spec": {"unschedulable": true}})),
            k8s_node(
                "cp",
                "True",
                json!({"metadata": {"labels": {"node-role.kubernetes.io/control-plane": ""}}}),
            ),
            k8s_node(
                "new",
                "True",
                json!({"metadata": {"creationTimestamp": "2026-03-02T09:00:00Z"},
                    "status": {"conditions": null}}),
            ),
        ];
        let o = observe(&nodes, &[]);
        let flags: Vec<_> = o
            .nodes
            .iter()
            .map(|n| (n.name.as_str(), n.ready, n.cordoned, n.control_plane))
            .collect();
        assert_eq!(
            flags,
            [
                ("a", true, false, false),
                ("b", false, true, false),
                ("cp", true, false, true),
                ("new", false, false, false)
            ]
        );
        assert_eq!(o.nodes[3].created, Some(at(0)));
        assert_eq!(o.nodes[0].created, None);
        assert_eq!(o.nodes[0].allocatable.cpu_millis, 4000);
        assert_eq!(o.nodes[0].allocatable.memory_bytes, 16 * GI);
        let workers: Vec<_> = o.workers().map(|n| n.name.as_str()).collect();
        assert_eq!(workers, ["a", "b", "new"]);
        let takes: Vec<_> = o.nodes.iter().map(NodeView::takes_pods).collect();
        assert_eq!(takes, [true, false, false, false]);
    }

    #[test]
    fn a_node_sums_its_live_pods_daemonsets_apart() {
        let mirror = json!({"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}}});
        let pods = [
            k8s_pod("web-1", "a", "500m", "1Gi", json!({})),
            k8s_pod("web-2", "a", "1", "2Gi", json!({})),
            k8s_pod(
                "done",
                "a",
                "2",
                "4Gi",
                json!({"status": {"phase": "Succeeded"}}),
            ),
            k8s_pod(
                "crashed",
                "a",
                "2",
                "4Gi",
                json!({"status": {"phase": "Failed"}}),
            ),
            k8s_pod("proxy", "a", "100m", "128Mi", daemonset()),
            k8s_pod("etcd", "a", "200m", "0", mirror),
            k8s_pod("elsewhere", "gone", "1", "1Gi", json!({})),
        ];
        let a = &observe(&[k8s_node("a", "True", json!({}))], &pods).nodes[0];
        let r = a.requested;
        assert_eq!((r.cpu_millis, r.memory_bytes), (1500, 3 * GI));
        assert_eq!(a.daemon.cpu_millis, 300);
        assert_eq!(a.movable.len(), 2);
        assert!(a.blockers.is_empty(), "{:?}", a.blockers);
        assert_eq!(a.free().cpu_millis, 4000 - 1500 - 300);
    }

    #[test]
    fn blockers_are_named_with_their_reason() {
        let bare = json!({"metadata": {"ownerReferences": null}});
        let local = json!({"spec": {"volumes": [{"name": "tmp", "emptyDir": {}}]}});
        let pods = [
            k8s_pod("debug", "a", "0", "0", bare),
            k8s_pod("cache", "a", "0", "0", local),
        ];
        let a = &observe(&[k8s_node("a", "True", json!({}))], &pods).nodes[0];
        assert_eq!(
            a.blockers,
            ["shop/debug (no controller)", "shop/cache (local storage)"]
        );
    }

    #[test]
    fn pending_pods_are_those_the_scheduler_could_not_place() {
        let mut daemon = daemonset();
        merge(&mut daemon, unschedulable_status());
        let mut leaving = unschedulable_status();
        let gone = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}});
        merge(&mut leaving, gone);
        let pods = [
            k8s_pod("web-3", "", "1", "1Gi", unschedulable_status()),
            // Not tried by the scheduler yet: it may well fit.
            k8s_pod("web-4", "", "1", "1Gi", json!({})),
            // A DaemonSet's pod waits for its own node, never for a new one.
            k8s_pod("proxy-x", "", "100m", "0", daemon),
            k8s_pod("leaving", "", "1", "1Gi", leaving),
        ];
        let o = observe(&[k8s_node("a", "True", json!({}))], &pods);
        assert_eq!(
            o.pending,
            [PendingPod {
                namespace: "shop".into(),
                name: "web-3".into(),
                requests: Resources {
                    cpu_millis: 1000,
                    memory_bytes: GI
                },
            }]
        );
    }

    #[test]
    fn a_pod_being_deleted_counts_but_neither_moves_nor_blocks() {
        let leaving = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z",
            "ownerReferences": null}});
        let pod = k8s_pod("p", "a", "1", "1Gi", leaving);
        let o = observe(&[k8s_node("a", "True", json!({}))], &[pod]);
        let a = &o.nodes[0];
        assert_eq!(a.requested.cpu_millis, 1000);
        assert!(a.movable.is_empty() && a.blockers.is_empty());
    }
}
