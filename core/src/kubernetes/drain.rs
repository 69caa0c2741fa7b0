//! Draining a healthy node before its machine goes (an autoscaler's scale-down): it is
//! cordoned, then each of its pods that would not come back by itself on the node is evicted
//! through the Eviction API, so that PodDisruptionBudgets are honoured (an eviction a budget
//! refuses is tried again at the next pass). DaemonSet pods and static (mirror) pods stay:
//! they belong to the node. A pass evicts what it can and says what is left; the caller
//! passes again until nothing is.

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{ListParams, Patch, PatchParams};
use kube::Api;

/// The eviction API's versions, newest first: `policy/v1` from Kubernetes 1.22,
/// `policy/v1beta1` before (1.20 and 1.21 serve only that one).
const EVICTION_VERSIONS: [&str; 2] = ["policy/v1", "policy/v1beta1"];

/// What one drain pass found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DrainPass {
    /// Whether the node is there at all (a node that is gone is drained).
    pub found: bool,
    /// Pods evicted by this pass (`namespace/name`).
    pub evicted: Vec<String>,
    /// Pods still on the node that must leave it: evicted and terminating, or refused by a
    /// disruption budget for now (`namespace/name`, with why when refused).
    pub left: Vec<String>,
}

impl DrainPass {
    /// Nothing that must leave is left.
    pub fn drained(&self) -> bool {
        self.left.is_empty()
    }
}

/// Marks node `name` (un)schedulable; false when there is no such node.
pub async fn cordon(
    client: &kube::Client,
    name: &str,
    cordoned: bool,
) -> Result<bool, kube::Error> {
    let nodes: Api<Node> = Api::all(client.clone());
    let patch = serde_json::json!({ "spec": { "unschedulable": cordoned } });
    match nodes
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(false),
        Err(e) => Err(e),
    }
}

/// One pass of draining node `name`: cordons it, evicts the pods that must leave and are not
/// leaving yet, and says what is left.
pub async fn drain_pass(client: &kube::Client, name: &str) -> Result<DrainPass, kube::Error> {
    let mut pass = DrainPass::default();
    if !cordon(client, name, true).await? {
        return Ok(pass);
    }
    pass.found = true;
    let pods: Api<Pod> = Api::all(client.clone());
    let on_node = pods
        .list(&ListParams::default().fields(&format!("spec.nodeName={name}")))
        .await?;
    for pod in on_node.items.iter().filter(|p| must_leave(p)) {
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let pod_name = pod.metadata.name.clone().unwrap_or_default();
        let id = format!("{namespace}/{pod_name}");
        if pod.metadata.deletion_timestamp.is_some() {
            pass.left.push(format!("{id} (terminating)"));
            continue;
        }
        match evict(client, &namespace, &pod_name).await? {
            Eviction::Done => {
                pass.evicted.push(id.clone());
                pass.left.push(format!("{id} (terminating)"));
            }
            Eviction::Gone => {}
            Eviction::Refused(why) => pass.left.push(format!("{id} ({why})")),
        }
    }
    Ok(pass)
}

/// Deletes the Node object of a drained node whose machine is gone; false when it was gone
/// already.
pub async fn remove_node(client: &kube::Client, name: &str) -> Result<bool, kube::Error> {
    let nodes: Api<Node> = Api::all(client.clone());
    match nodes
        .delete(name, &kube::api::DeleteParams::default())
        .await
    {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(false),
        Err(e) => Err(e),
    }
}

/// Whether a pod on a node being drained must leave it: not finished, and neither a
/// DaemonSet's (it would come back) nor a static pod's mirror (the node's own).
fn must_leave(pod: &Pod) -> bool {
    let finished = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .is_some_and(|p| p == "Succeeded" || p == "Failed");
    let daemon = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.kind == "DaemonSet" && o.controller == Some(true));
    let mirror = pod
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key("kubernetes.io/config.mirror"));
    !finished && !daemon && !mirror
}

enum Eviction {
    Done,
    Gone,
    Refused(String),
}

/// Evicts one pod, with the newest eviction version the cluster takes.
async fn evict(client: &kube::Client, namespace: &str, pod: &str) -> Result<Eviction, kube::Error> {
    let path = format!("/api/v1/namespaces/{namespace}/pods/{pod}/eviction");
    let mut last = None;
    for version in EVICTION_VERSIONS {
        let body = serde_json::json!({
            "apiVersion": version,
            "kind": "Eviction",
            "metadata": { "name": pod, "namespace": namespace },
        });
        let request = http::Request::post(&path)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(serde_json::to_vec(&body).unwrap_or_default())
            .map_err(kube::Error::HttpError)?;
        match client.request_text(request).await {
            Ok(_) => return Ok(Eviction::Done),
            Err(kube::Error::Api(e)) if e.code == 404 && !e.message.contains(version) => {
                return Ok(Eviction::Gone)
            }
            // A disruption budget allows no more disruptions now.
            Err(kube::Error::Api(e)) if e.code == 429 => {
                return Ok(Eviction::Refused(super::one_line(&e.message, 160)))
            }
            // A version the cluster does not serve: the next one.
            Err(kube::Error::Api(e)) if matches!(e.code, 400 | 404 | 415) => {
                last = Some(kube::Error::Api(e));
            }
            Err(e) => return Err(e),
        }
    }
    match last {
        Some(e) => Err(e),
        None => Ok(Eviction::Refused(
            "the cluster serves no eviction API".into(),
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn pod(extra: serde_json::Value) -> Pod {
        let mut base = serde_json::json!({
            "metadata": { "name": "p", "namespace": "default" },
            "status": { "phase": "Running" },
        });
        json_merge(&mut base, extra);
        serde_json::from_value(base).unwrap()
    }

    fn json_merge(into: &mut serde_json::Value, from: serde_json::Value) {
        match (into, from) {
            (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
                for (k, v) in b {
                    json_merge(a.entry(k).or_insert(serde_json::Value::Null), v);
                }
            }
            (slot, v) => *slot = v,
        }
    }

    #[test]
    fn daemon_static_and_finished_pods_stay() {
        assert!(must_leave(&pod(serde_json::json!({}))));
        let owned = |kind: &str| {
            serde_json::json!({ "metadata": { "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": kind, "name": "x", "uid": "u",
                "controller": true }] } })
        };
        assert!(!must_leave(&pod(owned("DaemonSet"))));
        assert!(must_leave(&pod(owned("ReplicaSet"))));
        assert!(!must_leave(&pod(serde_json::json!({ "metadata": {
            "annotations": { "kubernetes.io/config.mirror": "abc" } } }))));
        for phase in ["Succeeded", "Failed"] {
            assert!(!must_leave(&pod(
                serde_json::json!({ "status": { "phase": phase } })
            )));
        }
        assert!(must_leave(&pod(
            serde_json::json!({ "status": { "phase": "Pending" } })
        )));
    }

    #[test]
    fn a_pass_with_nothing_left_is_drained() {
        let mut pass = DrainPass {
            found: true,
            ..DrainPass::default()
        };
        assert!(pass.drained());
        pass.left.push("default/web (terminating)".into());
        assert!(!pass.drained());
    }
}
