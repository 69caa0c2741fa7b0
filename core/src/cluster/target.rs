//! What an operation works towards, by its kind, and how it is stored: JSON with a version
//! tag (`{"v":1,"nodes":3}`), read back as what it was or, when it cannot be, as
//! [`OperationTarget::Unreadable`], so that the operation fails saying so instead of running
//! with a default.

use std::fmt;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::OperationKind;

/// The stored form's version; a row of another is unreadable to this KQueen.
const STORED_VERSION: u32 = 1;

/// What an operation works towards (create and delete have no target).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OperationTarget {
    /// Scale: the node count.
    Nodes(u32),
    /// Scale down by removing one chosen node (drained first), to `nodes` in all: what the
    /// autoscaler asks for.
    NodesWithout { nodes: u32, node: String },
    /// Upgrade: the Kubernetes version.
    Version(String),
    /// Replace a node: the dead node's name.
    Node(String),
    /// Application deploy or delete: the application (one version of it).
    Application(Uuid),
    /// Addon apply or remove: the addon's name.
    Addon(String),
    /// Backup: the backup being taken.
    Backup(Uuid),
    /// Restore: the restore being run.
    Restore(Uuid),
    /// A stored target this KQueen cannot read (written by another version, or by hand):
    /// what was stored and why it cannot be read.
    Unreadable { stored: String, why: String },
}

/// The stored form without its version tag: one field, named by what the target is.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Stored {
    Nodes(u32),
    ScaleDown { nodes: u32, node: String },
    Version(String),
    Node(String),
    Application(Uuid),
    Addon(String),
    Backup(Uuid),
    Restore(Uuid),
}

impl OperationTarget {
    /// The stored form; `None` for [`OperationTarget::Unreadable`], which is never written
    /// back.
    pub fn to_stored(&self) -> Option<String> {
        let target = match self {
            OperationTarget::Nodes(n) => Stored::Nodes(*n),
            OperationTarget::NodesWithout { nodes, node } => Stored::ScaleDown {
                nodes: *nodes,
                node: node.clone(),
            },
            OperationTarget::Version(v) => Stored::Version(v.clone()),
            OperationTarget::Node(name) => Stored::Node(name.clone()),
            OperationTarget::Application(id) => Stored::Application(*id),
            OperationTarget::Addon(name) => Stored::Addon(name.clone()),
            OperationTarget::Backup(id) => Stored::Backup(*id),
            OperationTarget::Restore(id) => Stored::Restore(*id),
            OperationTarget::Unreadable { .. } => return None,
        };
        // `{"nodes":3}` → `{"v":1,"nodes":3}`: the tag first, for people reading rows.
        let fields = serde_json::to_string(&target).ok()?;
        let rest = fields.strip_prefix('{')?;
        Some(format!("{{\"v\":{STORED_VERSION},{rest}"))
    }

    /// Reads a stored form; what cannot be read becomes [`OperationTarget::Unreadable`].
    pub fn from_stored(text: &str) -> Self {
        let unreadable = |why: String| OperationTarget::Unreadable {
            stored: text.chars().take(200).collect(),
            why,
        };
        let Ok(serde_json::Value::Object(mut fields)) = serde_json::from_str(text) else {
            return unreadable("not a JSON object".into());
        };
        match fields.remove("v").and_then(|v| v.as_u64()) {
            Some(v) if v == u64::from(STORED_VERSION) => {}
            other => {
                return unreadable(format!("stored as version {other:?}, not {STORED_VERSION}"))
            }
        }
        if fields.len() != 1 {
            return unreadable(format!("{} fields besides v, not one", fields.len()));
        }
        match serde_json::from_value(serde_json::Value::Object(fields)) {
            Ok(Stored::Nodes(n)) => OperationTarget::Nodes(n),
            Ok(Stored::ScaleDown { nodes, node }) => OperationTarget::NodesWithout { nodes, node },
            Ok(Stored::Version(v)) => OperationTarget::Version(v),
            Ok(Stored::Node(name)) => OperationTarget::Node(name),
            Ok(Stored::Application(id)) => OperationTarget::Application(id),
            Ok(Stored::Addon(name)) => OperationTarget::Addon(name),
            Ok(Stored::Backup(id)) => OperationTarget::Backup(id),
            Ok(Stored::Restore(id)) => OperationTarget::Restore(id),
            Err(e) => unreadable(e.to_string()),
        }
    }

    /// A scale's node count, whichever way it scales.
    pub fn nodes(&self) -> Option<u32> {
        match self {
            OperationTarget::Nodes(n) | OperationTarget::NodesWithout { nodes: n, .. } => Some(*n),
            _ => None,
        }
    }

    /// Whether an operation of `kind` takes this target.
    pub fn fits(&self, kind: OperationKind) -> bool {
        matches!(
            (kind, self),
            (
                OperationKind::Scale,
                OperationTarget::Nodes(_) | OperationTarget::NodesWithout { .. }
            ) | (OperationKind::Upgrade, OperationTarget::Version(_))
                | (OperationKind::ReplaceNode, OperationTarget::Node(_))
                | (
                    OperationKind::AppDeploy | OperationKind::AppDelete,
                    OperationTarget::Application(_)
                )
                | (
                    OperationKind::AddonApply | OperationKind::AddonRemove,
                    OperationTarget::Addon(_)
                )
                | (OperationKind::Backup, OperationTarget::Backup(_))
                | (OperationKind::Restore, OperationTarget::Restore(_))
        )
    }
}

/// The target as people and the API read it: `3`, `1.34`, an application's id, an addon's
/// name (what the API has always shown).
impl fmt::Display for OperationTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OperationTarget::Nodes(n) => write!(f, "{n}"),
            OperationTarget::NodesWithout { nodes, node } => write!(f, "{nodes} (without {node})"),
            OperationTarget::Version(v) | OperationTarget::Addon(v) | OperationTarget::Node(v) => {
                f.write_str(v)
            }
            OperationTarget::Application(id)
            | OperationTarget::Backup(id)
            | OperationTarget::Restore(id) => write!(f, "{id}"),
            OperationTarget::Unreadable { stored, .. } => f.write_str(stored),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{OperationKind, OperationTarget};

    #[test]
    fn every_target_reads_back_as_it_was_stored() {
        let app = uuid::Uuid::now_v7();
        for target in [
            OperationTarget::Nodes(3),
            OperationTarget::NodesWithout {
                nodes: 2,
                node: "worker-3".into(),
            },
            OperationTarget::Version("1.34".into()),
            OperationTarget::Node("worker-1".into()),
            OperationTarget::Application(app),
            OperationTarget::Addon("metrics-server".into()),
            OperationTarget::Backup(app),
            OperationTarget::Restore(app),
        ] {
            let stored = target.to_stored().unwrap();
            assert!(stored.starts_with("{\"v\":1,"), "{stored}");
            assert_eq!(OperationTarget::from_stored(&stored), target);
        }
        assert_eq!(
            OperationTarget::Nodes(3).to_stored().unwrap(),
            r#"{"v":1,"nodes":3}"#
        );
        let without = OperationTarget::NodesWithout {
            nodes: 2,
            node: "w3".into(),
        };
        assert_eq!(
            without.to_stored().unwrap(),
            r#"{"v":1,"scale_down":{"nodes":2,"node":"w3"}}"#
        );
        assert_eq!(without.to_string(), "2 (without w3)");
        assert_eq!(without.nodes(), Some(2));
        assert!(without.fits(OperationKind::Scale));
        assert!(!without.fits(OperationKind::ReplaceNode));
    }

    #[test]
    fn what_cannot_be_read_says_why_instead_of_defaulting() {
        for (stored, why) in [
            ("3", "not a JSON object"),
            ("abc", "not a JSON object"),
            (r#"{"nodes":3}"#, "version None"),
            (r#"{"v":2,"nodes":3}"#, "version Some(2)"),
            (r#"{"v":1,"nodes":-1}"#, "invalid value"),
            (r#"{"v":1,"nodes":3,"extra":1}"#, "2 fields besides v"),
            (r#"{"v":1,"colour":"red"}"#, "unknown variant"),
        ] {
            match OperationTarget::from_stored(stored) {
                OperationTarget::Unreadable { stored: s, why: w } => {
                    assert_eq!(s, stored);
                    assert!(w.contains(why), "{stored}: {w}");
                }
                other => panic!("{stored} read as {other:?}"),
            }
        }
        assert_eq!(
            OperationTarget::Unreadable {
                stored: "x".into(),
                why: "y".into()
            }
            .to_stored(),
            None
        );
    }

    #[test]
    fn each_kind_takes_its_own_target() {
        let nodes = OperationTarget::Nodes(3);
        assert!(nodes.fits(OperationKind::Scale));
        assert!(!nodes.fits(OperationKind::Upgrade));
        assert!(OperationTarget::Version("1.34".into()).fits(OperationKind::Upgrade));
        assert!(OperationTarget::Addon("a".into()).fits(OperationKind::AddonRemove));
        assert!(!OperationTarget::Addon("a".into()).fits(OperationKind::AppDeploy));
        assert!(!nodes.fits(OperationKind::Create));
        assert!(OperationTarget::Node("w1".into()).fits(OperationKind::ReplaceNode));
        assert!(!OperationTarget::Node("w1".into()).fits(OperationKind::Scale));
        assert!(!nodes.fits(OperationKind::ReplaceNode));
        assert!(OperationTarget::Backup(uuid::Uuid::nil()).fits(OperationKind::Backup));
        assert!(!OperationTarget::Backup(uuid::Uuid::nil()).fits(OperationKind::AppDeploy));
    }
}
