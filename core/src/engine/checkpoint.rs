//! The checkpoint a provisioner operation's row keeps between calls: the engine's phase and
//! the provisioner's own part (`{"engine": {"phase": "create"}, "provisioner": …}`). A
//! stored checkpoint that cannot be read fails its operation saying so instead of starting
//! over from a default.

use serde::{Deserialize, Serialize};

/// Where the engine is in an operation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Phase {
    /// The provisioner's own calls (create, delete, scale, upgrade); a replace-node
    /// operation's removal of the dead node from the cluster; the drain of the node a
    /// scale removes.
    #[default]
    Create,
    /// A replace-node operation removed the dead node: the provisioner replaces its machine
    /// (a scale that removes a node drained it: the provisioner removes its machine).
    Replace,
    /// A create is done: its kubeconfig is fetched and stored.
    Kubeconfig,
}

/// Fields a newer KQueen adds are left alone (replicas of two versions share a database);
/// a phase this one does not know is not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct EnginePart {
    #[serde(default)]
    pub(crate) phase: Phase,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Checkpoint {
    #[serde(default)]
    pub(crate) engine: EnginePart,
    /// The provisioner's own, as it left it (`null` before its first call).
    #[serde(default)]
    pub(crate) provisioner: serde_json::Value,
}

impl Checkpoint {
    pub(crate) fn new(phase: Phase, provisioner: serde_json::Value) -> Self {
        Self {
            engine: EnginePart { phase },
            provisioner,
        }
    }

    /// An operation's stored checkpoint (`null` for one no call has saved yet), or why it
    /// cannot be read.
    pub(crate) fn read(stored: &serde_json::Value) -> Result<Self, String> {
        if stored.is_null() {
            return Ok(Self::default());
        }
        serde_json::from_value(stored.clone())
            .map_err(|e| format!("the operation's checkpoint cannot be read ({e})"))
    }

    pub(crate) fn phase(&self) -> Phase {
        self.engine.phase
    }

    /// As the row keeps it.
    pub(crate) fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::{Checkpoint, Phase};

    #[test]
    fn a_checkpoint_reads_back_as_it_was_saved() {
        let saved = Checkpoint::new(Phase::Kubeconfig, json!({"step": "apply"}));
        let stored = saved.to_value();
        assert_eq!(
            stored,
            json!({"engine": {"phase": "kubeconfig"}, "provisioner": {"step": "apply"}})
        );
        assert_eq!(Checkpoint::read(&stored).unwrap(), saved);
        let fresh = Checkpoint::read(&serde_json::Value::Null).unwrap();
        assert_eq!(
            (fresh.phase(), fresh.provisioner),
            (Phase::Create, json!(null))
        );
    }

    #[test]
    fn a_checkpoint_that_cannot_be_read_says_why() {
        for stored in [
            json!({"engine": {"phase": "deploy"}}),
            json!({"engine": {"phase": 3}}),
            json!({"engine": "create"}),
            json!("create"),
        ] {
            let why = Checkpoint::read(&stored).unwrap_err();
            assert!(
                why.starts_with("the operation's checkpoint cannot be read"),
                "{why}"
            );
        }
    }
}
