//! Users as operators see them, and invitations (the link's secret only in the answer that
//! creates it).

use serde::{Deserialize, Serialize};

/// A user of the portal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct User {
    pub username: String,
    pub display_name: Option<String>,
    pub email: Option<String>,
    /// `local` (a password set here) or `sso` (signs in through the identity provider).
    pub source: String,
    pub operator: bool,
    pub disabled: bool,
    /// `active` (may sign in), `invited` (local, the set-password link is still open),
    /// `invite expired` (local, no password and no open link), `waiting for first sign-in`
    /// (added to a tenant by name; single sign-on) or `disabled`.
    pub status: String,
    /// When the open invitation expires (RFC 3339, UTC).
    pub invite_expires_at: Option<String>,
    /// RFC 3339 (UTC), like every time here.
    pub created_at: String,
    pub last_login_at: Option<String>,
    pub tenants: Vec<UserTenant>,
}

/// A tenant a user belongs to, with their role there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UserTenant {
    pub tenant: String,
    /// `member` or `admin`.
    pub role: String,
}

/// A new invitation: the one-time link with which the person sets their password.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Invitation {
    pub username: String,
    /// Path of the set-password page, with the secret (`/invite/kqi_…`): shown this once.
    pub path: String,
    /// The whole link, on the portal's public URL.
    pub url: String,
    /// RFC 3339 (UTC).
    pub expires_at: String,
}
