//! What of an object a backup keeps, and which objects it leaves out and why.
//!
//! A backup holds what a person declared, in a form that can be applied to another cluster:
//! no `status`, no server bookkeeping (`managedFields`, `uid`, `resourceVersion`, dates,
//! `generation`), no owner references (they name uids of the cluster backed up). Objects the
//! control plane makes by itself (bootstrap RBAC, the `default` ServiceAccounts, the root CA
//! ConfigMaps, ServiceAccount tokens), objects a controller owns (a Deployment's ReplicaSets
//! and Pods: the Deployment is backed up and makes them again), and KQueen's own access
//! objects (KQueen makes them anew for any cluster) are left out with their reason.

use serde_json::{Map, Value};

use super::field;
use crate::kubernetes::{MANAGED_BY, MANAGED_BY_LABEL};

/// Metadata fields the API server writes; never in a backup.
const SERVER_METADATA: &[&str] = &[
    "managedFields",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "ownerReferences",
];

/// Namespaces every cluster has from its first start.
const BUILT_IN_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// Resources a backup never lists, by `group/plural` (core: empty group), with the reason.
const LEFT_OUT_RESOURCES: &[(&str, &str, &str)] = &[
    ("", "events", "events are history, not configuration"),
    (
        "events.k8s.io",
        "events",
        "events are history, not configuration",
    ),
    (
        "",
        "nodes",
        "nodes are the machines under the cluster, not its contents",
    ),
    (
        "",
        "endpoints",
        "the control plane makes them from Services",
    ),
    (
        "discovery.k8s.io",
        "endpointslices",
        "the control plane makes them from Services",
    ),
    (
        "coordination.k8s.io",
        "leases",
        "leader elections and node heartbeats",
    ),
    ("", "componentstatuses", "live health of the control plane"),
    ("metrics.k8s.io", "pods", "live measurements"),
    ("metrics.k8s.io", "nodes", "live measurements"),
    (
        "certificates.k8s.io",
        "certificatesigningrequests",
        "requests signed by this cluster's CA only",
    ),
    (
        "extensions",
        "ingresses",
        "the same objects as Ingresses of networking.k8s.io",
    ),
    (
        "apiregistration.k8s.io",
        "apiservices",
        "registered by the API server and by what serves them",
    ),
];

/// Why a backup does not list resource `plural` of `group`, if it does not.
pub fn left_out_resource(group: &str, plural: &str) -> Option<&'static str> {
    LEFT_OUT_RESOURCES
        .iter()
        .find(|(g, p, _)| *g == group && *p == plural)
        .map(|(_, _, why)| *why)
}

/// Why `object` (of `kind`) is left out of a backup, if it is.
pub fn left_out_object(kind: &str, object: &Value) -> Option<String> {
    let meta = object.get("metadata");
    let name = field(object, &["metadata", "name"]).unwrap_or_default();
    let namespace = field(object, &["metadata", "namespace"]);
    let label = |key: &str| meta.and_then(|m| m.get("labels")).and_then(|l| l.get(key));
    let annotation = |key: &str| {
        meta.and_then(|m| m.get("annotations"))
            .and_then(|a| a.get(key))
    };
    if let Some(owner) = meta
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .and_then(|refs| {
            refs.iter()
                .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        })
    {
        return Some(format!(
            "made by its owner {} {}",
            field(owner, &["kind"]).unwrap_or("?"),
            field(owner, &["name"]).unwrap_or("?")
        ));
    }
    if label(MANAGED_BY_LABEL).and_then(Value::as_str) == Some(MANAGED_BY)
        && label(crate::workloads::refs::APPLICATION_LABEL).is_none()
        && label(crate::workloads::refs::ADDON_LABEL).is_none()
    {
        return Some("KQueen's access for this cluster's users (made anew in any cluster)".into());
    }
    if label("kubernetes.io/bootstrapping").and_then(Value::as_str) == Some("rbac-defaults") {
        return Some("bootstrap RBAC of the API server".into());
    }
    if annotation("apf.kubernetes.io/autoupdate-spec").is_some() {
        return Some("API priority and fairness defaults of the API server".into());
    }
    let made_by_control_plane = match kind {
        "Namespace" => BUILT_IN_NAMESPACES.contains(&name),
        "ConfigMap" => name == "kube-root-ca.crt",
        "ServiceAccount" => name == "default",
        "Secret" => field(object, &["type"]) == Some("kubernetes.io/service-account-token"),
        "Service" => namespace == Some("default") && name == "kubernetes",
        "PriorityClass" => name.starts_with("system-"),
        _ => false,
    };
    made_by_control_plane.then(|| "made by the control plane in every cluster".into())
}

/// `object` as a backup keeps it: with `apiVersion` and `kind`, without status and what the
/// server wrote (see the module doc).
pub fn clean(api_version: &str, kind: &str, mut object: Value) -> Value {
    let Some(fields) = object.as_object_mut() else {
        return object;
    };
    fields.remove("status");
    if let Some(Value::Object(meta)) = fields.get_mut("metadata") {
        for key in SERVER_METADATA {
            meta.remove(*key);
        }
        if let Some(Value::Object(annotations)) = meta.get_mut("annotations") {
            annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
            annotations.remove("deployment.kubernetes.io/revision");
            if annotations.is_empty() {
                meta.remove("annotations");
            }
        }
    }
    match kind {
        // Addresses the cluster gave out: another cluster gives its own (headless stays).
        "Service" => {
            if let Some(Value::Object(spec)) = fields.get_mut("spec") {
                if spec.get("clusterIP").and_then(Value::as_str) != Some("None") {
                    spec.remove("clusterIP");
                    spec.remove("clusterIPs");
                }
            }
        }
        // The token Secrets of another cluster's token controller.
        "ServiceAccount" => {
            fields.remove("secrets");
        }
        // The claim it was bound to, by the old cluster's uid: bound again by name.
        "PersistentVolume" => {
            if let Some(Value::Object(claim)) =
                fields.get_mut("spec").and_then(|s| s.get_mut("claimRef"))
            {
                claim.remove("uid");
                claim.remove("resourceVersion");
            }
        }
        _ => {}
    }
    let mut ordered = Map::new();
    ordered.insert("apiVersion".into(), Value::String(api_version.into()));
    ordered.insert("kind".into(), Value::String(kind.into()));
    for (k, v) in std::mem::take(fields) {
        if k != "apiVersion" && k != "kind" {
            ordered.insert(k, v);
        }
    }
    Value::Object(ordered)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn cleaning_keeps_what_was_declared() {
        let live = json!({
            "metadata": {
                "name": "web", "namespace": "shop", "uid": "u-1", "resourceVersion": "42",
                "creationTimestamp": "2026-01-01T00:00:00Z", "generation": 3,
                "managedFields": [{"manager": "kubectl"}],
                "labels": {"app": "web"},
                "annotations": {
                    "kubectl.kubernetes.io/last-applied-configuration": "{}",
                    "deployment.kubernetes.io/revision": "2"
                }
            },
            "spec": {"replicas": 2},
            "status": {"readyReplicas": 2}
        });
        let kept = clean("apps/v1", "Deployment", live);
        assert_eq!(
            kept,
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
                "spec": {"replicas": 2}
            })
        );
        let keys: Vec<&String> = kept.as_object().unwrap().keys().collect();
        assert_eq!(keys[..2], ["apiVersion", "kind"], "read first in the YAML");
    }

    #[test]
    fn addresses_and_tokens_of_the_old_cluster_are_dropped() {
        let service = clean(
            "v1",
            "Service",
            json!({"metadata": {"name": "web"}, "spec": {"clusterIP": "10.0.0.7",
                "clusterIPs": ["10.0.0.7"], "ports": [{"port": 80}]}}),
        );
        assert_eq!(service["spec"], json!({"ports": [{"port": 80}]}));
        let headless = clean(
            "v1",
            "Service",
            json!({"metadata": {"name": "db"}, "spec": {"clusterIP": "None"}}),
        );
        assert_eq!(headless["spec"]["clusterIP"], "None");
        let sa = clean(
            "v1",
            "ServiceAccount",
            json!({"metadata": {"name": "ci"}, "secrets": [{"name": "ci-token-x"}]}),
        );
        assert_eq!(sa.get("secrets"), None);
        let pv = clean(
            "v1",
            "PersistentVolume",
            json!({"metadata": {"name": "pv-1"}, "spec": {"claimRef": {"namespace": "shop",
                "name": "data", "uid": "u-9", "resourceVersion": "7"}}}),
        );
        assert_eq!(
            pv["spec"]["claimRef"],
            json!({"namespace": "shop", "name": "data"})
        );
    }

    #[test]
    fn what_the_cluster_makes_by_itself_is_left_out_with_a_reason() {
        let owned = json!({"metadata": {"name": "web-5d8", "ownerReferences": [
            {"kind": "Deployment", "name": "web", "controller": true}]}});
        assert_eq!(
            left_out_object("ReplicaSet", &owned).as_deref(),
            Some("made by its owner Deployment web")
        );
        let referenced = json!({"metadata": {"name": "cfg", "ownerReferences": [
            {"kind": "Thing", "name": "t"}]}});
        assert_eq!(
            left_out_object("ConfigMap", &referenced),
            None,
            "not a controller"
        );
        let cases = [
            (
                "Namespace",
                json!({"metadata": {"name": "kube-system"}}),
                true,
            ),
            ("Namespace", json!({"metadata": {"name": "shop"}}), false),
            (
                "ConfigMap",
                json!({"metadata": {"name": "kube-root-ca.crt"}}),
                true,
            ),
            (
                "ServiceAccount",
                json!({"metadata": {"name": "default"}}),
                true,
            ),
            ("ServiceAccount", json!({"metadata": {"name": "ci"}}), false),
            (
                "Secret",
                json!({"metadata": {"name": "t"}, "type": "kubernetes.io/service-account-token"}),
                true,
            ),
            (
                "Secret",
                json!({"metadata": {"name": "db"}, "type": "Opaque"}),
                false,
            ),
            (
                "Service",
                json!({"metadata": {"name": "kubernetes", "namespace": "default"}}),
                true,
            ),
            (
                "Service",
                json!({"metadata": {"name": "kubernetes", "namespace": "shop"}}),
                false,
            ),
            (
                "ClusterRole",
                json!({"metadata": {"name": "admin", "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}}}),
                true,
            ),
            (
                "FlowSchema",
                json!({"metadata": {"name": "x", "annotations": {"apf.kubernetes.io/autoupdate-spec": "true"}}}),
                true,
            ),
            (
                "PriorityClass",
                json!({"metadata": {"name": "system-node-critical"}}),
                true,
            ),
            (
                "ServiceAccount",
                json!({"metadata": {"name": "amy", "labels": {"app.kubernetes.io/managed-by": "kqueen"}}}),
                true,
            ),
            (
                "ConfigMap",
                json!({"metadata": {"name": "app-set", "labels": {"app.kubernetes.io/managed-by": "kqueen", "kqueen.io/application": "shop"}}}),
                false,
            ),
        ];
        for (kind, object, out) in cases {
            assert_eq!(
                left_out_object(kind, &object).is_some(),
                out,
                "{kind} {object}"
            );
        }
    }

    #[test]
    fn resources_left_out_say_why() {
        assert!(left_out_resource("", "events").is_some());
        assert!(left_out_resource("coordination.k8s.io", "leases").is_some());
        assert_eq!(left_out_resource("", "configmaps"), None);
        assert_eq!(left_out_resource("apps", "deployments"), None);
    }
}
