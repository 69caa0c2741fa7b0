//! The audit trail.

use serde::{Deserialize, Serialize};

/// One audited action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditEvent {
    pub id: String,
    /// When it happened, RFC 3339 (UTC).
    pub time: String,
    pub actor: String,
    /// The tenant's slug, when the action concerns one.
    pub tenant: Option<String>,
    pub action: String,
    pub target: String,
    /// `success`, `denied` or `failure`.
    pub result: String,
    pub source_ip: Option<String>,
    pub detail: Option<String>,
}
