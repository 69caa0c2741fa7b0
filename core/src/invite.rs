//! Local accounts created by operators in the portal, and invitations: a one-time link with
//! which the invited person sets their own password. The link's secret is shown once, to the
//! operator who created it; only its SHA-256 is kept, it works once, and it expires.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::identity::Role;
use crate::user::User;

/// Prefix of every invitation secret (recognisable by secret scanners, and never accepted as
/// an API token, whose prefix is `kq_`).
pub const INVITE_PREFIX: &str = "kqi_";

/// Subject of an account added to a tenant by username before its first single sign-on
/// login (`pending:<username>`); that login takes it over.
pub const PENDING_PREFIX: &str = "pending:";

/// How long an invitation link works.
pub const INVITE_DAYS: i64 = 7;

/// An invitation as stored (never its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invite {
    pub id: Uuid,
    pub user_id: Uuid,
    /// Who created it (a username, as the audit trail names actors).
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub used_at: Option<DateTime<Utc>>,
}

impl Invite {
    /// Neither used nor expired at `now`.
    pub fn is_open(&self, now: DateTime<Utc>) -> bool {
        self.used_at.is_none() && self.expires_at > now
    }
}

/// A new invitation: its stored form, whom it is for, and the secret to show once.
pub struct IssuedInvite {
    pub invite: Invite,
    /// The account it is for.
    pub user: User,
    pub secret: String,
}

impl IssuedInvite {
    /// The path of the page where the invited person sets their password.
    pub fn path(&self) -> String {
        format!("/invite/{}", self.secret)
    }
}

impl std::fmt::Debug for IssuedInvite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedInvite")
            .field("invite", &self.invite)
            .field("user", &self.user.username)
            .field("secret", &"[redacted]")
            .finish()
    }
}

/// What an operator fills in to create a local account.
#[derive(Debug, Clone, Default)]
pub struct NewUser {
    pub username: String,
    pub display_name: Option<String>,
    pub email: Option<String>,
    pub operator: bool,
}

/// A user as the operators' user list shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserSummary {
    pub user: User,
    /// A local account (password or invitation), not one from the identity provider.
    pub local: bool,
    /// Added to a tenant by username; has not signed in through the identity provider yet.
    pub pending: bool,
    /// A local account whose password is set.
    pub has_password: bool,
    /// When the open invitation (if any) expires.
    pub invite_expires_at: Option<DateTime<Utc>>,
    /// (tenant slug, role), by slug.
    pub tenants: Vec<(String, Role)>,
}

/// What the installation has, for the operators' first-run checklist.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SetupCounts {
    pub tenants: u64,
    pub providers: u64,
    pub templates: u64,
    pub users: u64,
    /// Memberships of any user in any tenant.
    pub memberships: u64,
}
