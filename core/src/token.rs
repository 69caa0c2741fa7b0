//! Personal API tokens for the REST API and the command line.

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// A token as stored and listed. The secret itself is shown once, at creation, and only its
/// hash is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiToken {
    pub id: Uuid,
    pub user_id: Uuid,
    pub name: String,
    /// The first characters of the secret, to recognise it in lists.
    pub prefix: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

impl ApiToken {
    /// Neither revoked nor expired at `now`.
    pub fn is_active(&self, now: DateTime<Utc>) -> bool {
        self.revoked_at.is_none() && self.expires_at > now
    }
}

/// A new token: its stored form, and the secret to show once.
pub struct IssuedToken {
    pub token: ApiToken,
    pub secret: String,
}

impl std::fmt::Debug for IssuedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedToken")
            .field("token", &self.token)
            .field("secret", &"[redacted]")
            .finish()
    }
}
