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
mod tests {
    use super::*;

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
