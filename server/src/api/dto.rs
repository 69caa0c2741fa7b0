//! JSON bodies of the API.

use kqueen_core::identity::Identity;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TenantRole {
    pub tenant: String,
    /// `member` or `admin`.
    pub role: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WhoAmI {
    pub username: String,
    pub email: Option<String>,
    pub display_name: Option<String>,
    pub operator: bool,
    pub tenants: Vec<TenantRole>,
}

impl From<&Identity> for WhoAmI {
    fn from(i: &Identity) -> Self {
        WhoAmI {
            username: i.username.clone(),
            email: i.email.clone(),
            display_name: i.display_name.clone(),
            operator: i.is_operator,
            tenants: i
                .memberships
                .iter()
                .map(|m| TenantRole {
                    tenant: m.tenant_slug.to_string(),
                    role: m.role.to_string(),
                })
                .collect(),
        }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TenantIn {
    /// DNS-1123 label, e.g. `team-a`.
    pub slug: String,
    pub display_name: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct MemberIn {
    /// `member` or `admin`.
    pub role: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TokenIn {
    pub name: String,
    /// Validity in days, 1 to 365 (default 90).
    pub days: Option<u32>,
}

/// A new token. `secret` is shown this once and cannot be read again.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct TokenCreated {
    pub token: TokenOut,
    pub secret: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ErrorOut {
    pub error: String,
    pub status: u16,
}

// Tenants and members are sent as the portal sends them (one type, `kqueen_dto`).
pub use kqueen_dto::tenants::{Member as MemberOut, Tenant as TenantOut};
pub use kqueen_dto::tokens::Token as TokenOut;
