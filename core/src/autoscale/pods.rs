//! What a pod is to autoscaling: what it requests, whether it belongs to its node, whether
//! the scheduler gave up on it, and whether removing its node would lose it.
//!
//! DaemonSet pods (and static pods, which their kubelet mirrors) belong to their node: they
//! are not its load, never block its removal and never wait for a new node (a new node runs
//! its own). What they request still takes room on their node, and on a new one.
//!
//! A pod blocks the removal of its node when draining it would lose it or its data: a pod
//! no controller recreates, or one with local storage (`emptyDir`, `hostPath`). The cluster
//! autoscaler's annotation `cluster-autoscaler.kubernetes.io/safe-to-evict` overrides that
//! either way ("true": never blocks, "false": always blocks), so workloads that carry it
//! already behave here as they would under the cluster autoscaler.

use k8s_openapi::api::core::v1::{Pod, PodSpec};

use crate::inventory::Resources;

const SAFE_TO_EVICT: &str = "cluster-autoscaler.kubernetes.io/safe-to-evict";
const MIRROR: &str = "kubernetes.io/config.mirror";

/// Succeeded or Failed: it holds no room any more.
pub(super) fn finished(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    matches!(phase, Some("Succeeded" | "Failed"))
}

/// Whether the scheduler has said it cannot place the pod (PodScheduled False, reason
/// Unschedulable). A pod it has not tried yet is not counted: it may well fit.
pub(super) fn unschedulable(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled"))
        .is_some_and(|c| c.status == "False" && c.reason.as_deref() == Some("Unschedulable"))
}

/// A DaemonSet's pod, or a static pod (mirrored by its kubelet, owned by its Node).
pub(super) fn is_daemon(pod: &Pod) -> bool {
    let mirror = pod
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(MIRROR));
    mirror || matches!(controller_kind(pod), Some("DaemonSet" | "Node"))
}

fn controller_kind(pod: &Pod) -> Option<&str> {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| o.kind.as_str())
}

/// Why draining the pod would lose it or its data, if it would.
pub(super) fn blocks_removal(pod: &Pod, spec: &PodSpec) -> Option<&'static str> {
    let annotations = pod.metadata.annotations.as_ref();
    match annotations
        .and_then(|a| a.get(SAFE_TO_EVICT))
        .map(String::as_str)
    {
        Some("true") => return None,
        Some("false") => return Some("marked not safe to evict"),
        _ => {}
    }
    if controller_kind(pod).is_none() {
        return Some("no controller");
    }
    let local = spec
        .volumes
        .iter()
        .flatten()
        .any(|v| v.empty_dir.is_some() || v.host_path.is_some());
    local.then_some("local storage")
}

/// "namespace/name".
pub(super) fn full_name(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

pub(super) use crate::inventory::resources;

/// What the scheduler reserves for a pod, counted as the inventory counts it: the larger of
/// its containers' sum and its biggest init container (they run one at a time, first), plus
/// the pod's overhead.
pub(super) fn requests(spec: &PodSpec) -> Resources {
    crate::inventory::pod_requests(spec, false)
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::autoscale::fixtures::{daemonset, k8s_pod, merge, unschedulable_status, GI};
    use crate::inventory::MAX_QUANTITY;

    fn on_a(extra: Value) -> Pod {
        k8s_pod("p", "a", "1", "1Gi", extra)
    }

    fn blocker(extra: Value) -> Option<&'static str> {
        let pod = on_a(extra);
        pod.spec.as_ref().and_then(|s| blocks_removal(&pod, s))
    }

    #[test]
    fn requests_take_the_biggest_init_container_and_the_overhead() {
        let extra = json!({"spec": {
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
            "overhead": {"memory": "1Gi"}
        }});
        let r = on_a(extra).spec.as_ref().map(requests).unwrap_or_default();
        assert_eq!((r.cpu_millis, r.memory_bytes), (2000, 2 * GI));
    }

    #[test]
    fn garbage_quantities_count_as_nothing_and_huge_ones_are_clamped() {
        let pod = k8s_pod("p", "a", "-1", "1Qi", json!({}));
        let r = pod.spec.as_ref().map(requests);
        assert_eq!(r, Some(Resources::default()));
        let pod = k8s_pod("p", "a", "1e15", "1Ei", json!({}));
        let r = pod.spec.as_ref().map(requests).unwrap_or_default();
        assert_eq!((r.cpu_millis, r.memory_bytes), (MAX_QUANTITY, MAX_QUANTITY));
    }

    #[test]
    fn bare_pods_and_local_storage_block_removal_unless_marked_safe() {
        let bare = || json!({"metadata": {"ownerReferences": null}});
        let host = || json!({"spec": {"volumes": [{"name": "h", "hostPath": {"path": "/x"}}]}});
        let mut safe = bare();
        merge(
            &mut safe,
            json!({"metadata": {"annotations": {SAFE_TO_EVICT: "true"}}}),
        );
        let mut daemon_with_host = daemonset();
        merge(&mut daemon_with_host, host());
        let cases = [
            (json!({}), None),
            (bare(), Some("no controller")),
            (
                json!({"spec": {"volumes": [{"name": "t", "emptyDir": {}}]}}),
                Some("local storage"),
            ),
            (host(), Some("local storage")),
            (
                json!({"spec": {"volumes": [{"name": "c", "configMap": {"name": "x"}}]}}),
                None,
            ),
            (safe, None),
            (
                json!({"metadata": {"annotations": {SAFE_TO_EVICT: "false"}}}),
                Some("marked not safe to evict"),
            ),
        ];
        for (extra, expected) in cases {
            assert_eq!(blocker(extra.clone()), expected, "{extra}");
        }
        // A DaemonSet's pod is counted apart (never blocks): `observe` asks before this.
        assert!(is_daemon(&on_a(daemon_with_host)));
    }

    #[test]
    fn daemonset_and_static_pods_belong_to_their_node() {
        let mirror = json!({"metadata": {"annotations": {MIRROR: "abc"}}});
        let node_owned = json!({"metadata": {"ownerReferences": [{"apiVersion": "v1",
            "kind": "Node", "name": "a", "uid": "n", "controller": true}]}});
        assert!(is_daemon(&on_a(daemonset())));
        assert!(is_daemon(&on_a(mirror)));
        assert!(is_daemon(&on_a(node_owned)));
        assert!(!is_daemon(&on_a(json!({}))));
    }

    #[test]
    fn only_pods_the_scheduler_gave_up_on_are_unschedulable() {
        let other_reason = json!({"status": {"conditions": [{"type": "PodScheduled",
            "status": "False", "reason": "SchedulingGated"}]}});
        assert!(unschedulable(&k8s_pod(
            "p",
            "",
            "1",
            "1Gi",
            unschedulable_status()
        )));
        assert!(!unschedulable(&k8s_pod("p", "", "1", "1Gi", other_reason)));
        assert!(!unschedulable(&k8s_pod("p", "", "1", "1Gi", json!({}))));
        assert!(finished(&on_a(json!({"status": {"phase": "Failed"}}))));
        assert!(!finished(&on_a(json!({}))));
    }
}
