//! The hosted provisioner's checkpoint of one operation: the phase it is in and what it has
//! fixed so far (where the API server is reached, the version started). Saved by the engine
//! after every call; one this provisioner cannot read fails the operation saying so.

use serde::{Deserialize, Serialize};

use crate::provisioner::{OpContext, ProvisionError};

/// Where a create, upgrade or delete is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Phase {
    /// Create: waiting for an address for the API server.
    Reserve,
    /// Create, upgrade: the control plane is to be started (again).
    Start,
    /// Create, upgrade: started; waiting for the rollout and `/readyz`.
    Wait,
    /// Delete: stopping the control plane.
    Stop,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Checkpoint {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) phase: Option<Phase>,
    /// When the current wait began (Unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) since: Option<i64>,
    /// Where the API server is reached, once reserved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) port: Option<u16>,
    /// The `major.minor` started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) version: Option<String>,
    /// What the rollout last said it waits for (said once per change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) rolling: Option<String>,
}

impl Checkpoint {
    pub(super) fn of(ctx: &OpContext) -> Result<Self, ProvisionError> {
        ctx.read_checkpoint("hosted")
    }

    /// A checkpoint in `phase` whose wait begins now.
    pub(super) fn starting(phase: Phase) -> Self {
        Self {
            phase: Some(phase),
            since: Some(crate::clock::now().timestamp()),
            ..Self::default()
        }
    }

    /// Seconds since the current wait began (all of them when it was not recorded).
    pub(super) fn elapsed(&self) -> i64 {
        crate::clock::now().timestamp() - self.since.unwrap_or_default()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{Checkpoint, Phase};

    #[test]
    fn a_checkpoint_reads_back_and_an_unknown_phase_is_refused() {
        let c = Checkpoint {
            port: Some(6443),
            host: Some("10.0.0.1".into()),
            ..Checkpoint::starting(Phase::Start)
        };
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["phase"], "start");
        let back: Checkpoint = serde_json::from_value(v).unwrap();
        assert_eq!((back.phase, back.port), (Some(Phase::Start), Some(6443)));
        let unknown = serde_json::json!({"phase": "launch"});
        assert!(serde_json::from_value::<Checkpoint>(unknown).is_err());
    }
}
