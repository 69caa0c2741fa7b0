//! What a restore does with each object of a backup, decided before anything is written: the
//! order objects are created in (definitions first, workloads last), which objects a
//! namespace selection keeps, and each object's fate, in a report a person reads.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The order a restore creates objects in: what others need comes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// CustomResourceDefinitions: their kinds must be served before their objects come.
    Definitions,
    Namespaces,
    /// ClusterRoles and ClusterRoleBindings, PriorityClasses, StorageClasses.
    ClusterSettings,
    /// ServiceAccounts, Roles, RoleBindings.
    Access,
    /// ConfigMaps, Secrets, LimitRanges, ResourceQuotas.
    Config,
    /// PersistentVolumes and their claims.
    Storage,
    Services,
    /// Deployments, StatefulSets, DaemonSets, Jobs, CronJobs, ReplicaSets and bare Pods.
    Workloads,
    /// Everything else (custom resources, Ingresses, policies…).
    Other,
}

/// The stage of an object of `kind` in API group `group` (empty: core).
pub fn stage_of(group: &str, kind: &str) -> Stage {
    match (group, kind) {
        ("apiextensions.k8s.io", "CustomResourceDefinition") => Stage::Definitions,
        ("", "Namespace") => Stage::Namespaces,
        ("rbac.authorization.k8s.io", "ClusterRole" | "ClusterRoleBinding")
        | ("scheduling.k8s.io", "PriorityClass")
        | ("storage.k8s.io", "StorageClass") => Stage::ClusterSettings,
        ("", "ServiceAccount") | ("rbac.authorization.k8s.io", "Role" | "RoleBinding") => {
            Stage::Access
        }
        ("", "ConfigMap" | "Secret" | "LimitRange" | "ResourceQuota") => Stage::Config,
        ("", "PersistentVolume" | "PersistentVolumeClaim") => Stage::Storage,
        ("", "Service") => Stage::Services,
        ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet")
        | ("batch", "Job" | "CronJob")
        | ("", "Pod" | "ReplicationController") => Stage::Workloads,
        _ => Stage::Other,
    }
}

/// What becomes of one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fate {
    /// Plan: it does not exist in the cluster and will be created.
    WillCreate,
    /// Restore: it was created.
    Created,
    /// It exists and equals the backup's: left as it is.
    Unchanged,
    /// It exists and differs from the backup's: left as it is (a restore never overwrites).
    Differs,
    /// It cannot be restored into this cluster (the reason says why).
    Cannot,
    /// Restore: the cluster refused it (the reason says why).
    Failed,
}

/// One object of a restore's plan or report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreItem {
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    pub stage: Stage,
    pub fate: Fate,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl RestoreItem {
    /// The item for `object` (a backed-up object), with `fate`.
    pub fn of(object: &Value, fate: Fate, reason: Option<String>) -> Self {
        Self {
            api_version: text(object, &["apiVersion"]).to_owned(),
            stage: stage_of_object(object),
            kind: text(object, &["kind"]).to_owned(),
            namespace: Some(text(object, &["metadata", "namespace"]))
                .filter(|n| !n.is_empty())
                .map(str::to_owned),
            name: text(object, &["metadata", "name"]).to_owned(),
            fate,
            reason,
        }
    }
}

/// Counts of a plan or a report, by fate.
pub fn tally(items: &[RestoreItem]) -> Vec<(Fate, u32)> {
    let mut out: Vec<(Fate, u32)> = Vec::new();
    for item in items {
        match out.iter_mut().find(|(f, _)| *f == item.fate) {
            Some((_, n)) => *n += 1,
            None => out.push((item.fate, 1)),
        }
    }
    out.sort_by_key(|(f, _)| *f as u8);
    out
}

/// The string at `path` in `object`, empty when there is none.
pub(crate) fn text<'a>(object: &'a Value, path: &[&str]) -> &'a str {
    super::field(object, path).unwrap_or_default()
}

/// When a restore creates `object` (a backed-up object).
pub fn stage_of_object(object: &Value) -> Stage {
    let (group, _) = group_version(text(object, &["apiVersion"]));
    stage_of(group, text(object, &["kind"]))
}

/// `("apps", "v1")` of `apps/v1`; `("", "v1")` of `v1`.
pub fn group_version(api_version: &str) -> (&str, &str) {
    api_version.rsplit_once('/').unwrap_or(("", api_version))
}

/// Whether a restore limited to `namespaces` (empty: everything) takes `object`: the
/// namespaces' objects and the Namespaces themselves, and the CustomResourceDefinitions
/// (their objects may be in those namespaces); other cluster-scoped objects only when the
/// restore takes everything.
pub fn selected(object: &Value, namespaces: &[String]) -> bool {
    if namespaces.is_empty() {
        return true;
    }
    let namespace = text(object, &["metadata", "namespace"]);
    if !namespace.is_empty() {
        return namespaces.iter().any(|n| n == namespace);
    }
    match text(object, &["kind"]) {
        "Namespace" => namespaces
            .iter()
            .any(|n| n == text(object, &["metadata", "name"])),
        "CustomResourceDefinition" => true,
        _ => false,
    }
}

/// The `(group, version, kind)` every CustomResourceDefinition among `objects` serves.
pub fn defined_kinds(objects: &[Value]) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for crd in objects
        .iter()
        .filter(|o| text(o, &["kind"]) == "CustomResourceDefinition")
    {
        let spec = crd.get("spec");
        let group = spec.map(|s| text(s, &["group"])).unwrap_or_default();
        let kind = spec
            .map(|s| text(s, &["names", "kind"]))
            .unwrap_or_default();
        let versions = spec
            .and_then(|s| s.get("versions"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for v in versions {
            if v.get("served").and_then(Value::as_bool) == Some(true) {
                out.insert((
                    group.to_owned(),
                    text(&v, &["name"]).to_owned(),
                    kind.to_owned(),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn definitions_come_first_and_workloads_last() {
        let mut kinds = vec![
            ("apps", "Deployment"),
            ("stable.example.com", "CronTab"),
            ("", "ConfigMap"),
            ("rbac.authorization.k8s.io", "RoleBinding"),
            ("", "Namespace"),
            ("apiextensions.k8s.io", "CustomResourceDefinition"),
            ("", "Service"),
            ("rbac.authorization.k8s.io", "ClusterRole"),
            ("", "PersistentVolumeClaim"),
        ];
        kinds.sort_by_key(|(g, k)| stage_of(g, k));
        let order: Vec<&str> = kinds.iter().map(|(_, k)| *k).collect();
        assert_eq!(
            order,
            [
                "CustomResourceDefinition",
                "Namespace",
                "ClusterRole",
                "RoleBinding",
                "ConfigMap",
                "PersistentVolumeClaim",
                "Service",
                "Deployment",
                "CronTab"
            ]
        );
    }

    #[test]
    fn a_namespace_selection_keeps_its_objects_its_namespace_and_the_definitions() {
        let only = vec!["shop".to_owned()];
        let cases = [
            (
                json!({"kind": "ConfigMap", "metadata": {"name": "a", "namespace": "shop"}}),
                true,
            ),
            (
                json!({"kind": "ConfigMap", "metadata": {"name": "a", "namespace": "other"}}),
                false,
            ),
            (
                json!({"kind": "Namespace", "metadata": {"name": "shop"}}),
                true,
            ),
            (
                json!({"kind": "Namespace", "metadata": {"name": "other"}}),
                false,
            ),
            (
                json!({"kind": "CustomResourceDefinition", "metadata": {"name": "x.y"}}),
                true,
            ),
            (
                json!({"kind": "ClusterRole", "metadata": {"name": "reader"}}),
                false,
            ),
        ];
        for (object, kept) in cases {
            assert_eq!(selected(&object, &only), kept, "{object}");
            assert!(selected(&object, &[]), "everything without a selection");
        }
    }

    #[test]
    fn the_kinds_a_backup_defines_are_its_crds_served_versions() {
        let crd = json!({"kind": "CustomResourceDefinition", "spec": {
            "group": "stable.example.com", "names": {"kind": "CronTab"},
            "versions": [{"name": "v1", "served": true}, {"name": "v0", "served": false}]}});
        let kinds = defined_kinds(&[crd, json!({"kind": "ConfigMap"})]);
        assert_eq!(
            kinds.into_iter().collect::<Vec<_>>(),
            [("stable.example.com".into(), "v1".into(), "CronTab".into())]
        );
    }

    #[test]
    fn items_say_what_and_where_and_tally_by_fate() {
        let object = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop"}});
        let item = RestoreItem::of(&object, Fate::WillCreate, None);
        assert_eq!(item.stage, Stage::Workloads);
        assert_eq!(item.namespace.as_deref(), Some("shop"));
        let other = RestoreItem::of(&object, Fate::Cannot, Some("why".into()));
        let tallied = tally(&[item.clone(), other, item]);
        assert_eq!(tallied, [(Fate::WillCreate, 2), (Fate::Cannot, 1)]);
        assert_eq!(
            serde_json::to_value(Fate::WillCreate).unwrap_or_default(),
            "will-create"
        );
    }
}
