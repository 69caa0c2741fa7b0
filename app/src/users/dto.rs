//! What the users server functions send to the browser.

use serde::{Deserialize, Serialize};

// Users travel as `/api/v1/users` sends them.
pub use kqueen_dto::users::User;

/// The portal's public base URL (`KQUEEN_PUBLIC_URL`), provided by the server for every
/// request: invitation links are written on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrl(pub String);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsersPageDto {
    pub users: Vec<User>,
    /// An invitation created just before this page was shown: its link, shown this once.
    pub new_invite: Option<NewInviteDto>,
    /// Local accounts may sign in here (`KQUEEN_LOCAL_ACCOUNTS`).
    pub local_accounts: bool,
    /// The create form as it was refused (without the password), with the error.
    pub kept: Option<crate::kept::KeptForm>,
}

/// A new invitation, as the operator sees it once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewInviteDto {
    pub username: String,
    pub url: String,
    /// RFC 3339 (UTC).
    pub expires_at: String,
}

/// An open invitation, as the invited person sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvitationDto {
    pub username: String,
    pub display_name: Option<String>,
    /// RFC 3339 (UTC).
    pub expires_at: String,
}
