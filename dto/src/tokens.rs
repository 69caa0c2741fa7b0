//! Personal API tokens (never their secret).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Token {
    /// UUID.
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub id: String,
    pub name: String,
    /// The first characters of the secret, to tell tokens apart.
    pub prefix: String,
    /// RFC 3339 (UTC), like every time below.
    pub created_at: String,
    pub expires_at: String,
    pub last_used_at: Option<String>,
    pub revoked_at: Option<String>,
    /// Neither revoked nor expired when this answer was made.
    pub active: bool,
}
