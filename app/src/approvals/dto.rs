//! What the approvals' views receive besides the API's own types.

use kqueen_dto::approvals::Approval;
use serde::{Deserialize, Serialize};

/// A request, and whether the caller may decide it (a tenant admin of its tenant or an
/// operator; their own requests they withdraw instead).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRow {
    pub approval: Approval,
    pub can_decide: bool,
}

/// Requests as a page shows them: a cluster's, or those waiting in the caller's tenants.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalsDto {
    /// Newest first.
    pub rows: Vec<ApprovalRow>,
    /// The caller may mark the cluster production (the cluster page's).
    pub can_mark: bool,
    /// The caller's username: their own requests are withdrawn, not approved.
    pub me: String,
}
