//! A cluster's dead nodes: whether a node may be replaced (it exists and is not Ready), and
//! its removal from the cluster before its provisioner replaces the machine. A dead node's
//! Node object is deleted with its uid as a precondition, so that a machine which came back
//! under the same name meanwhile is never removed.

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Node;
use kube::api::{DeleteParams, Preconditions};
use kube::Api;

/// A node name as Kubernetes takes it: a DNS-1123 subdomain.
pub fn is_node_name(s: &str) -> bool {
    crate::workloads::manifest::is_dns_subdomain(s)
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

/// The node `name` as the cluster sees it now.
pub async fn dead_node(client: &kube::Client, name: &str) -> Result<NodeCheck, kube::Error> {
    let nodes: Api<Node> = Api::all(client.clone());
    Ok(match nodes.get_opt(name).await? {
        None => NodeCheck::Missing,
        Some(node) => check(&node),
    })
}

/// Deletes the Node object of `name` when it is (still) not Ready; says what it found. A
/// node that came back (Ready) or is gone is left alone.
pub async fn remove_dead_node(client: &kube::Client, name: &str) -> Result<NodeCheck, kube::Error> {
    let nodes: Api<Node> = Api::all(client.clone());
    // Twice at most: a precondition that fails means another object of the name appeared.
    for _ in 0..2 {
        let Some(node) = nodes.get_opt(name).await? else {
            return Ok(NodeCheck::Missing);
        };
        let NodeCheck::Dead(dead) = check(&node) else {
            return Ok(NodeCheck::Ready);
        };
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(dead.uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match nodes.delete(name, &params).await {
            Ok(_) => return Ok(NodeCheck::Dead(dead)),
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(NodeCheck::Missing),
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(e) => return Err(e),
        }
    }
    dead_node(client, name).await
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
            .and_then(|t| {
                let nanos = u32::try_from(t.0.subsec_nanosecond()).unwrap_or(0);
                DateTime::from_timestamp(t.0.as_second(), nanos)
            }),
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
