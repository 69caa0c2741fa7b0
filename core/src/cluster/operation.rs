//! Durable operations on clusters and the entries of a cluster's timeline.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{EventKind, OperationKind, OperationState, OperationTarget};

/// A durable operation on a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    pub id: Uuid,
    pub cluster_id: Uuid,
    pub kind: OperationKind,
    pub state: OperationState,
    pub step: String,
    pub progress: u8,
    pub attempts: u32,
    pub error: Option<String>,
    /// What it works towards (scale: the node count, upgrade: the version, …).
    pub target: Option<OperationTarget>,
    pub checkpoint: serde_json::Value,
    pub requested_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub deadline_at: DateTime<Utc>,
    pub run_after: DateTime<Utc>,
    pub lease_owner: Option<String>,
    pub lease_expires_at: Option<DateTime<Utc>>,
}

/// The step of an operation no worker has started yet.
pub const WAITING_STEP: &str = "Waiting for a worker";
/// The step of an operation a worker started, until its provisioner names one.
pub const STARTING_STEP: &str = "Starting";

impl Operation {
    pub fn new(
        cluster_id: Uuid,
        kind: OperationKind,
        target: Option<OperationTarget>,
        requested_by: &str,
        now: DateTime<Utc>,
        timeout: chrono::Duration,
    ) -> Self {
        Self {
            id: Uuid::now_v7(),
            cluster_id,
            kind,
            state: OperationState::Pending,
            step: WAITING_STEP.into(),
            progress: 0,
            attempts: 0,
            error: None,
            target,
            checkpoint: serde_json::Value::Null,
            requested_by: requested_by.into(),
            created_at: now,
            updated_at: now,
            started_at: None,
            finished_at: None,
            deadline_at: now + timeout,
            run_after: now,
            lease_owner: None,
            lease_expires_at: None,
        }
    }

    /// The target, when it is what an operation of its kind takes; else why not (the
    /// operation fails with it rather than run with a default).
    fn target_for(&self) -> std::result::Result<&OperationTarget, String> {
        match &self.target {
            Some(t) if t.fits(self.kind) => Ok(t),
            Some(OperationTarget::Unreadable { stored, why }) => Err(format!(
                "the {} operation's target cannot be read ({why}): {stored}",
                self.kind
            )),
            Some(other) => Err(format!(
                "the {} operation's target is not one it takes: {other:?}",
                self.kind
            )),
            None => Err(format!("the {} operation has no target", self.kind)),
        }
    }

    /// A scale's node count.
    pub fn nodes(&self) -> std::result::Result<u32, String> {
        self.target_for()?
            .nodes()
            .ok_or_else(|| format!("a {} operation has no node count", self.kind))
    }

    /// The node a scale removes (drained first), when it names one.
    pub fn removed_node(&self) -> Option<&str> {
        match &self.target {
            Some(OperationTarget::NodesWithout { node, .. }) => Some(node),
            _ => None,
        }
    }

    /// An upgrade's Kubernetes version.
    pub fn version(&self) -> std::result::Result<&str, String> {
        match self.target_for()? {
            OperationTarget::Version(v) => Ok(v),
            _ => Err(format!("a {} operation has no version", self.kind)),
        }
    }

    /// The node a replace-node operation replaces.
    pub fn node(&self) -> std::result::Result<&str, String> {
        match self.target_for()? {
            OperationTarget::Node(name) => Ok(name),
            _ => Err(format!("a {} operation has no node", self.kind)),
        }
    }

    /// The application an application operation deploys or deletes.
    pub fn application(&self) -> std::result::Result<Uuid, String> {
        match self.target_for()? {
            OperationTarget::Application(id) => Ok(*id),
            _ => Err(format!("a {} operation has no application", self.kind)),
        }
    }

    /// The addon an addon operation applies or removes.
    pub fn addon(&self) -> std::result::Result<&str, String> {
        match self.target_for()? {
            OperationTarget::Addon(name) => Ok(name),
            _ => Err(format!("a {} operation has no addon", self.kind)),
        }
    }

    /// The backup a backup operation takes.
    pub fn backup(&self) -> std::result::Result<Uuid, String> {
        match self.target_for()? {
            OperationTarget::Backup(id) => Ok(*id),
            _ => Err(format!("a {} operation has no backup", self.kind)),
        }
    }

    /// The restore a restore operation runs.
    pub fn restore(&self) -> std::result::Result<Uuid, String> {
        match self.target_for()? {
            OperationTarget::Restore(id) => Ok(*id),
            _ => Err(format!("a {} operation has no restore", self.kind)),
        }
    }

    pub fn is_finished(&self) -> bool {
        matches!(
            self.state,
            OperationState::Succeeded | OperationState::Failed
        )
    }
}

/// One entry of a cluster's timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterEvent {
    pub id: Uuid,
    pub cluster_id: Uuid,
    pub operation_id: Option<Uuid>,
    pub occurred_at: DateTime<Utc>,
    pub kind: EventKind,
    pub message: String,
}

impl ClusterEvent {
    pub fn new(
        cluster_id: Uuid,
        operation_id: Option<Uuid>,
        kind: EventKind,
        message: impl Into<String>,
        at: DateTime<Utc>,
    ) -> Self {
        let mut message: String = message.into();
        if message.len() > 2000 {
            let mut cut = 2000;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
            message.push('…');
        }
        Self {
            id: Uuid::now_v7(),
            cluster_id,
            operation_id,
            occurred_at: at,
            kind,
            message,
        }
    }
}
