//! Production clusters and requests for a second person's approval (two-person rule):
//! deleting a production cluster, restoring a backup over it, or taking its mark off.

use serde::{Deserialize, Serialize};

/// Marks a cluster production, or asks to take the mark off (which needs approval: 409).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProductionMark {
    pub production: bool,
}

/// A request for approval, as asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApprovalRequest {
    /// `delete` (the cluster), `restore` (a backup into the cluster) or `unprotect` (take the
    /// production mark off).
    #[cfg_attr(feature = "openapi", schema(example = "delete"))]
    pub action: String,
    /// For `restore`: the backup (UUID), of this cluster or another of a tenant you may
    /// restore from.
    #[serde(default)]
    pub backup: Option<String>,
    /// For `restore`: only these namespaces of the backup (empty: everything).
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// Why (shown to the approver; at most 500 characters).
    #[serde(default)]
    pub reason: Option<String>,
}

/// A refusal (by a second person) or withdrawal (by the one who asked).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApprovalRefusal {
    /// Why (at most 500 characters).
    #[serde(default)]
    pub reason: Option<String>,
}

/// A request for approval and its fate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Approval {
    /// UUID.
    pub id: String,
    /// The cluster (UUID) and its name when asked.
    pub cluster_id: String,
    pub cluster: String,
    /// `delete`, `restore` or `unprotect`.
    pub action: String,
    /// For a restore: the backup (UUID) and the namespaces (empty: everything).
    pub backup: Option<String>,
    pub namespaces: Vec<String>,
    pub reason: String,
    pub requested_by: String,
    /// RFC 3339, UTC (like every time below).
    pub requested_at: String,
    /// Past this, a pending request is expired.
    pub expires_at: String,
    /// `pending`, `approved` (its action ran: `operation`), `failed` (approved, but the action
    /// could not run: `note`), `refused`, `withdrawn` or `expired`.
    pub state: String,
    pub decided_by: Option<String>,
    pub decided_at: Option<String>,
    /// Why it was refused, or why the approved action could not run.
    pub note: Option<String>,
    /// The operation the approved action queued (UUID). Set just after the decision: a
    /// request read in between is approved without it for a moment.
    pub operation: Option<String>,
}
