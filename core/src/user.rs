//! People who use the portal. They are created at their first login (single sign-on) or as
//! break-glass local accounts.

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// A user as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub id: Uuid,
    /// Stable identity from the identity provider (`<issuer>#<sub>`) or `local:<name>`.
    pub subject: String,
    pub username: String,
    pub email: Option<String>,
    pub display_name: Option<String>,
    pub is_operator: bool,
    /// Disabled users cannot log in, and their sessions and tokens stop working.
    pub disabled: bool,
    pub created_at: DateTime<Utc>,
    pub last_login_at: Option<DateTime<Utc>>,
}
