//! Tenants and their members.

use serde::{Deserialize, Serialize};

/// A tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Tenant {
    /// DNS-1123 label, e.g. `team-a`.
    pub slug: String,
    pub display_name: String,
    /// RFC 3339 (UTC).
    pub created_at: String,
}

/// A member of a tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Member {
    pub username: String,
    pub email: Option<String>,
    /// `member` or `admin`.
    pub role: String,
    /// `oidc` (from identity-provider groups) or `manual`.
    pub source: String,
}
