//! From parsed manifests to objects ready for a cluster: each kind looked up in the cluster's
//! discovery (an unknown kind is named with the cluster), each object placed in the target
//! namespace (another namespace is refused; cluster-scoped objects only where allowed), and
//! labelled as a member of its ApplySet.

use std::collections::HashMap;

use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::{self, Scope};
use serde_json::{Map, Value};

use super::errors::{api_error, WorkloadError};
use super::manifest::ManifestObject;
use super::refs::{ApplySet, ObjectRef};
use crate::ValidationError;

/// Where a set of objects goes.
#[derive(Debug, Clone)]
pub struct Placement {
    /// Namespaced objects without a namespace go here.
    pub namespace: String,
    /// Other namespaces objects may name (an addon's RoleBinding in kube-system); an
    /// application allows none.
    pub other_namespaces: bool,
    /// Whether cluster-scoped objects (ClusterRoles, CRDs…) are allowed.
    pub cluster_scoped: bool,
    /// The cluster's name, for messages.
    pub cluster_name: String,
}

/// An object ready to apply: its resource, where it goes, and its body with KQueen's labels.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub document: usize,
    pub resource: ApiResource,
    pub target: ObjectRef,
    pub body: Value,
}

/// Looks up every object's kind in the cluster and places it (see the module doc). Errors
/// name the document, the object and the cluster.
pub async fn resolve(
    client: &kube::Client,
    objects: &[ManifestObject],
    place: &Placement,
    set: &ApplySet,
) -> Result<Vec<Resolved>, WorkloadError> {
    let mut kinds: HashMap<(String, String, String), (ApiResource, bool)> = HashMap::new();
    let mut out = Vec::with_capacity(objects.len());
    for obj in objects {
        let key = (
            obj.group().to_owned(),
            obj.version().to_owned(),
            obj.kind.clone(),
        );
        let (resource, namespaced) = match kinds.get(&key) {
            Some(found) => found.clone(),
            None => {
                let gvk = GroupVersionKind::gvk(&key.0, &key.1, &key.2);
                let found = match discovery::pinned_kind(client, &gvk).await {
                    Ok((ar, caps)) => (ar, caps.scope == Scope::Namespaced),
                    Err(kube::Error::Api(s)) if s.code == 404 => {
                        return Err(invalid(
                            obj,
                            format!(
                                "kind {} ({}) is not served by cluster {}",
                                obj.kind, obj.api_version, place.cluster_name
                            ),
                        ))
                    }
                    Err(kube::Error::Discovery(_)) => {
                        return Err(invalid(
                            obj,
                            format!(
                                "kind {} ({}) is not served by cluster {}",
                                obj.kind, obj.api_version, place.cluster_name
                            ),
                        ))
                    }
                    Err(e) => {
                        return Err(api_error(
                            e,
                            &format!("look up kind {} ({})", obj.kind, obj.api_version),
                        ))
                    }
                };
                kinds.insert(key, found.clone());
                found
            }
        };
        out.push(place_object(obj, resource, namespaced, place, set)?);
    }
    out.sort_by_key(|r| apply_order(&r.target.kind));
    Ok(out)
}

fn place_object(
    obj: &ManifestObject,
    resource: ApiResource,
    namespaced: bool,
    place: &Placement,
    set: &ApplySet,
) -> Result<Resolved, WorkloadError> {
    let namespace = if namespaced {
        match obj.namespace.as_deref() {
            None => Some(place.namespace.clone()),
            Some(ns) if ns == place.namespace => Some(ns.to_owned()),
            Some(ns) if place.other_namespaces => Some(ns.to_owned()),
            Some(ns) => {
                return Err(invalid(
                    obj,
                    format!(
                        "is in namespace {ns}; this version's objects go into namespace {} \
                         (leave metadata.namespace out)",
                        place.namespace
                    ),
                ))
            }
        }
    } else {
        if obj.kind == "Namespace" && obj.group().is_empty() && !place.other_namespaces {
            return Err(invalid(
                obj,
                format!(
                    "is a Namespace; KQueen makes this version's namespace ({}) itself",
                    place.namespace
                ),
            ));
        }
        if !place.cluster_scoped {
            return Err(invalid(
                obj,
                format!(
                    "is cluster-scoped; your role may only deploy objects inside namespace {}",
                    place.namespace
                ),
            ));
        }
        None
    };
    let mut body = obj.object.clone();
    default_protocols(&mut body);
    let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) else {
        return Err(invalid(obj, "has no metadata".into()));
    };
    match &namespace {
        Some(ns) => {
            meta.insert("namespace".into(), Value::String(ns.clone()));
        }
        None => {
            meta.remove("namespace");
        }
    }
    let labels = meta
        .entry("labels")
        .or_insert_with(|| Value::Object(Map::new()));
    if !labels.is_object() {
        *labels = Value::Object(Map::new());
    }
    if let Some(labels) = labels.as_object_mut() {
        for (k, v) in set.member_labels() {
            labels.insert(k, Value::String(v));
        }
    }
    Ok(Resolved {
        document: obj.document,
        target: ObjectRef {
            group: resource.group.clone(),
            version: resource.version.clone(),
            kind: resource.kind.clone(),
            plural: resource.plural.clone(),
            namespace,
            name: obj.name.clone(),
        },
        resource,
        body,
    })
}

/// Writes `protocol: TCP` where a port list leaves it out (Services, and containers of pod
/// templates). It is the server's default anyway, but the server-side apply of Kubernetes
/// before 1.21 refuses port lists without it ("associative list with keys has an element
/// that omits key field protocol").
fn default_protocols(body: &mut Value) {
    fn fill(ports: Option<&mut Value>) {
        for port in ports.and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(p) = port.as_object_mut() {
                p.entry("protocol")
                    .or_insert_with(|| Value::String("TCP".into()));
            }
        }
    }
    fn pod_spec(spec: Option<&mut Value>) {
        let Some(spec) = spec else { return };
        for key in ["containers", "initContainers"] {
            for c in spec
                .get_mut(key)
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                fill(c.get_mut("ports"));
            }
        }
    }
    let kind = body
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    match kind.as_str() {
        "Service" => fill(body.pointer_mut("/spec/ports")),
        "Pod" => pod_spec(body.get_mut("spec")),
        "CronJob" => pod_spec(body.pointer_mut("/spec/jobTemplate/spec/template/spec")),
        _ => pod_spec(body.pointer_mut("/spec/template/spec")),
    }
}

fn invalid(obj: &ManifestObject, message: String) -> WorkloadError {
    WorkloadError::Invalid(ValidationError::at(
        "manifests",
        format!("document {}", obj.document),
        format!(
            "document {} ({} {}): {message}",
            obj.document, obj.kind, obj.name
        ),
    ))
}

/// Kinds others depend on go first (namespaces, accounts, configuration, RBAC, CRDs), then
/// services, then workloads, like Helm's install order; unknown kinds last.
pub fn apply_order(kind: &str) -> usize {
    const ORDER: &[&str] = &[
        "Namespace",
        "NetworkPolicy",
        "ResourceQuota",
        "LimitRange",
        "PodDisruptionBudget",
        "ServiceAccount",
        "Secret",
        "ConfigMap",
        "StorageClass",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "CustomResourceDefinition",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Service",
        "DaemonSet",
        "Pod",
        "ReplicaSet",
        "Deployment",
        "HorizontalPodAutoscaler",
        "StatefulSet",
        "Job",
        "CronJob",
        "IngressClass",
        "Ingress",
        "APIService",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ];
    ORDER.iter().position(|k| *k == kind).unwrap_or(ORDER.len())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn port_protocols_are_written_out() {
        let mut svc = serde_json::json!({"kind": "Service", "spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}});
        default_protocols(&mut svc);
        assert_eq!(svc["spec"]["ports"][0]["protocol"], "TCP");
        assert_eq!(svc["spec"]["ports"][1]["protocol"], "UDP");
        let mut d = serde_json::json!({"kind": "Deployment", "spec": {"template": {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 8080}]}]}}}});
        default_protocols(&mut d);
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"],
            "TCP"
        );
    }

    #[test]
    fn dependencies_are_applied_first() {
        let mut kinds = vec!["Deployment", "Widget", "Service", "ConfigMap", "Namespace"];
        kinds.sort_by_key(|k| apply_order(k));
        assert_eq!(
            kinds,
            ["Namespace", "ConfigMap", "Service", "Deployment", "Widget"]
        );
    }
}
