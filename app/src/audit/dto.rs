//! What the audit server functions send to the browser: The audit trail.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEventDto {
    pub id: String,
    /// `YYYY-MM-DD HH:MM:SS`.
    pub time: String,
    pub actor: String,
    pub tenant: Option<String>,
    pub action: String,
    pub target: String,
    pub outcome: String,
    pub source_ip: Option<String>,
    pub detail: Option<String>,
}

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
    pub events: Vec<AuditEventDto>,
    pub offset: u32,
    pub limit: u32,
    pub has_more: bool,
}
