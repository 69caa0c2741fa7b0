//! A cluster's dead nodes: whether a node may be replaced (it exists and is not Ready), and
//! its removal from the cluster before its provisioner replaces the machine. A dead node's
//! Node object is deleted with its uid and resourceVersion as preconditions, so that neither
//! a kubelet that reported Ready meanwhile nor a machine that came back under the same name
//! is ever removed.

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Node;
use kube::api::{DeleteParams, Preconditions};
use kube::Api;

/// A node name as Kubernetes takes it: a DNS-1123 subdomain.
pub fn is_node_name(s: &str) -> bool {
    super::is_dns_subdomain(s)
}

/// A node that is not Ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadNode {
    pub name: String,
    pub uid: String,
    /// When its Ready condition last changed (none when it never reported one).
    pub not_ready_since: Option<DateTime<Utc>>,
    /// Why, as the Ready condition says (`Kubelet stopped posting node status.`).
    pub reason: String,
}

/// What a cluster says of a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeCheck {
    Dead(DeadNode),
    Ready,
    Missing,
}

/// What became of a dead node's removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Removal {
    Removed(DeadNode),
    /// It is Ready (again): left alone.
    Ready,
    /// No such node (any more).
    Missing,
    /// It changed under every attempt: try again later.
    Changing,
}

/// The node `name` as the cluster sees it now.
pub async fn dead_node(client: &kube::Client, name: &str) -> Result<NodeCheck, kube::Error> {
    let nodes: Api<Node> = Api::all(client.clone());
    Ok(match nodes.get_opt(name).await? {
        None => NodeCheck::Missing,
        Some(node) => check(&node),
    })
}

/// Deletes the Node object of `name` when it is (still) not Ready, as it was read; says what
/// it found. A node that came back (Ready) or is gone is left alone.
pub async fn remove_dead_node(client: &kube::Client, name: &str) -> Result<Removal, kube::Error> {
    let nodes: Api<Node> = Api::all(client.clone());
    // A precondition that fails means the object changed since it was read: read it again.
    for _ in 0..3 {
        let Some(node) = nodes.get_opt(name).await? else {
            return Ok(Removal::Missing);
        };
        let NodeCheck::Dead(dead) = check(&node) else {
            return Ok(Removal::Ready);
        };
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(dead.uid.clone()),
                resource_version: node.metadata.resource_version.clone(),
            }),
            ..DeleteParams::default()
        };
        match nodes.delete(name, &params).await {
            Ok(_) => return Ok(Removal::Removed(dead)),
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(Removal::Missing),
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(Removal::Changing)
}

fn check(node: &Node) -> NodeCheck {
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
    if ready.is_some_and(|c| c.status == "True") {
        return NodeCheck::Ready;
    }
    let reason = ready
        .map(|c| {
            c.message
                .clone()
                .or_else(|| c.reason.clone())
                .unwrap_or_else(|| format!("Ready is {}", c.status))
        })
        .unwrap_or_else(|| "it has never reported Ready".into());
    NodeCheck::Dead(DeadNode {
        name: node.metadata.name.clone().unwrap_or_default(),
        uid: node.metadata.uid.clone().unwrap_or_default(),
        not_ready_since: ready
            .and_then(|c| c.last_transition_time.as_ref())
            .and_then(super::utc),
        reason,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn node(ready: Option<&str>) -> Node {
        let conditions = ready.map(|status| {
            serde_json::json!([{ "type": "Ready", "status": status,
                "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status.",
                "lastTransitionTime": "2026-11-28T10:00:00Z" }])
        });
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": "worker-1", "uid": "u-1" },
            "status": { "conditions": conditions },
        }))
        .unwrap()
    }

    #[test]
    fn only_a_node_that_is_not_ready_is_dead() {
        assert_eq!(check(&node(Some("True"))), NodeCheck::Ready);
        for status in ["False", "Unknown"] {
            let NodeCheck::Dead(dead) = check(&node(Some(status))) else {
                panic!("{status} is dead");
            };
            assert_eq!(dead.name, "worker-1");
            assert_eq!(dead.uid, "u-1");
            assert_eq!(dead.reason, "Kubelet stopped posting node status.");
            assert!(dead.not_ready_since.is_some());
        }
        let NodeCheck::Dead(never) = check(&node(None)) else {
            panic!("a node without conditions is not Ready");
        };
        assert_eq!(never.reason, "it has never reported Ready");
    }

    #[test]
    fn node_names_are_dns_subdomains() {
        for ok in [
            "localhost",
            "worker-1",
            "ip-10-0-0-1.eu-west-1.compute.internal",
        ] {
            assert!(is_node_name(ok), "{ok}");
        }
        for bad in [
            "",
            "Worker",
            "-a",
            "a_b",
            "a..b",
            &"a".repeat(254),
            "a b",
            "a;rm",
        ] {
            assert!(!is_node_name(bad), "{bad}");
        }
    }
}
