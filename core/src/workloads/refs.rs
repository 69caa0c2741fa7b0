//! What KQueen applied to a cluster, and how it finds it again: object references, the labels
//! it puts on every object it owns, and ApplySet ids (KEP-3659), so that `kubectl` sees the
//! same grouping (`kubectl get … -l applyset.kubernetes.io/part-of=<id>`).

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Label on every object an application version or an addon owns: its ApplySet.
pub const PART_OF_LABEL: &str = "applyset.kubernetes.io/part-of";
/// Label on an ApplySet's parent object: the ApplySet's id.
pub const APPLYSET_ID_LABEL: &str = "applyset.kubernetes.io/id";
/// Annotation on the parent: the tool that manages the set.
pub const TOOLING_ANNOTATION: &str = "applyset.kubernetes.io/tooling";
/// Annotation on the parent: the group-kinds of its members (`Deployment.apps,Service`).
pub const GROUP_KINDS_ANNOTATION: &str = "applyset.kubernetes.io/contains-group-kinds";
/// The tooling KQueen announces.
pub const TOOLING: &str = "kqueen/v1";
/// The field manager of KQueen's server-side applies.
pub const FIELD_MANAGER: &str = "kqueen";

/// Labels KQueen adds to an application's objects.
pub const APPLICATION_LABEL: &str = "kqueen.io/application";
pub const VERSION_LABEL: &str = "kqueen.io/version";
pub const TENANT_LABEL: &str = "kqueen.io/tenant";
/// Label KQueen adds to an addon's objects.
pub const ADDON_LABEL: &str = "kqueen.io/addon";

/// One object in a cluster, as KQueen recorded it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ObjectRef {
    /// API group; empty for the core group.
    pub group: String,
    pub version: String,
    pub kind: String,
    /// The resource's plural name (`deployments`).
    pub plural: String,
    /// None for cluster-scoped objects.
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectRef {
    /// `Kind.group` as ApplySets and kubectl write it (`Deployment.apps`, `Service`).
    pub fn group_kind(&self) -> String {
        group_kind(&self.group, &self.kind)
    }

    /// The same object, whatever the API version it was read with.
    pub fn same_object(&self, other: &ObjectRef) -> bool {
        self.group == other.group
            && self.kind == other.kind
            && self.namespace == other.namespace
            && self.name == other.name
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

pub fn group_kind(group: &str, kind: &str) -> String {
    if group.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}.{group}")
    }
}

/// The id of the ApplySet whose parent is the object `name` of `kind.group` in `namespace`
/// (empty for a cluster-scoped parent), as KEP-3659 defines it:
/// `applyset-<base64url(sha256(<name>.<namespace>.<kind>.<group>))>-v1`.
pub fn applyset_id(name: &str, namespace: &str, kind: &str, group: &str) -> String {
    let digest = Sha256::digest(format!("{name}.{namespace}.{kind}.{group}").as_bytes());
    format!(
        "applyset-{}-v1",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
    )
}

/// What a set of objects is applied as: its ApplySet (a ConfigMap parent) and the labels
/// every member gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplySet {
    /// The parent ConfigMap's name and namespace.
    pub parent: String,
    pub namespace: String,
    pub id: String,
    /// Labels added to every member (and to the parent), besides [`PART_OF_LABEL`].
    pub labels: BTreeMap<String, String>,
}

impl ApplySet {
    /// A set whose parent is the ConfigMap `parent` in `namespace`.
    pub fn new(parent: &str, namespace: &str, labels: BTreeMap<String, String>) -> Self {
        Self {
            parent: parent.to_owned(),
            namespace: namespace.to_owned(),
            id: applyset_id(parent, namespace, "ConfigMap", ""),
            labels,
        }
    }

    /// The labels of a member object.
    pub fn member_labels(&self) -> BTreeMap<String, String> {
        let mut labels = self.labels.clone();
        labels.insert(PART_OF_LABEL.into(), self.id.clone());
        labels
    }

    /// The label selector of the set's members.
    pub fn selector(&self) -> String {
        format!("{PART_OF_LABEL}={}", self.id)
    }
}

/// Label values must be ≤ 63 characters of `[A-Za-z0-9._-]`, starting and ending with an
/// alphanumeric; names KQueen checked already are. Anything else is cut and cleaned.
pub fn label_value(value: &str) -> String {
    let cleaned: String = value
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(63)
        .collect();
    cleaned
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn applyset_ids_follow_kep_3659() {
        // The id kubectl computes for `--applyset=configmap/web -n shop`.
        let id = applyset_id("web", "shop", "ConfigMap", "");
        assert!(id.starts_with("applyset-") && id.ends_with("-v1"));
        // sha256 is 32 bytes: 43 characters of unpadded base64url.
        assert_eq!(id.len(), "applyset-".len() + 43 + "-v1".len());
        assert!(!id.contains(['+', '/', '=']));
        assert_ne!(id, applyset_id("web", "shop2", "ConfigMap", ""));
        assert!(id.len() <= 63, "usable as a label value");
    }

    #[test]
    fn group_kinds_are_written_like_kubectl() {
        let r = ObjectRef {
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
            plural: "deployments".into(),
            namespace: Some("shop".into()),
            name: "web".into(),
        };
        assert_eq!(r.group_kind(), "Deployment.apps");
        assert_eq!(group_kind("", "Service"), "Service");
        assert_eq!(r.to_string(), "Deployment shop/web");
    }

    #[test]
    fn label_values_are_cleaned() {
        assert_eq!(label_value("v1.2.3"), "v1.2.3");
        assert_eq!(label_value("-a b-"), "a-b");
        assert_eq!(label_value(&"x".repeat(80)).len(), 63);
    }
}
