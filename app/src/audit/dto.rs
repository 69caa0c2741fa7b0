//! What the audit server functions send to the browser: The audit trail.

use kqueen_dto::audit::AuditEvent;
use serde::{Deserialize, Serialize};

/// Filters of the audit page, as in its URL. Missing fields are empty (no filter).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AuditFilter {
    pub tenant: String,
    pub actor: String,
    pub action: String,
    pub since: String,
    pub until: String,
}

/// One page of the audit list, and whether an older page exists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditPageDto {
    /// The same entries `/api/v1/audit` answers with.
    pub events: Vec<AuditEvent>,
    pub offset: u32,
    pub limit: u32,
    pub has_more: bool,
}
