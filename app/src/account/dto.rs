//! What the account server functions send to the browser: Who is logged in, how people log in, their API tokens.

use serde::{Deserialize, Serialize};

/// How people can log in here (provided by the server for every request).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoginOptions {
    pub sso: bool,
    pub local_accounts: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeDto {
    pub username: String,
    pub display_name: Option<String>,
    pub operator: bool,
    /// (tenant slug, role)
    pub tenants: Vec<(String, String)>,
    /// Admin of at least one tenant, or operator: may read (part of) the audit log.
    pub can_audit: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokensPageDto {
    pub tokens: Vec<kqueen_dto::tokens::Token>,
    /// A token created just before this page was shown: its secret, shown this once.
    pub new_secret: Option<String>,
    /// The create form as it was refused, with the error.
    pub kept: Option<crate::kept::KeptForm>,
}
