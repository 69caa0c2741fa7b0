//! JSON bodies of the API.

use kqueen_core::identity::Identity;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TenantRole {
    pub tenant: String,
    #[schema(value_type = RoleName)]
    pub role: String,
}

/// A role in a tenant: `member` (request and use clusters) or `admin` (also manage members).
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)] // Only its schema is used: roles travel as strings, parsed by the core.
pub enum RoleName {
    Member,
    Admin,
}

/// A DNS-1123 label without its anchors: the one name rule the document states.
macro_rules! dns_label {
    () => {
        "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
    };
}
pub(crate) use dns_label;

/// A DNS-1123 label, as the core's `TenantSlug` and `ClusterName` parse it. Fields of the
/// wire types say `format = "dns-label"` and get this pattern when the document is served
/// (`openapi::finish`): utoipa takes only a literal pattern.
pub const DNS_LABEL: &str = concat!("^", dns_label!(), "$");
/// The custom format that stands for [`DNS_LABEL`] in the wire types' schemas.
pub const DNS_LABEL_FORMAT: &str = "dns-label";

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
    #[schema(format = "dns-label", max_length = 63, example = "team-a")]
    pub slug: String,
    /// Up to 100 characters, no control characters; empty: the slug.
    #[schema(pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$", max_length = 100)]
    pub display_name: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct MemberIn {
    #[schema(value_type = RoleName)]
    pub role: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TokenIn {
    /// 1 to 100 printable characters.
    #[schema(
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$",
        max_length = 100
    )]
    pub name: String,
    /// Validity in days (default 90).
    #[schema(minimum = 1, maximum = 365)]
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

/// A device login started (RFC 8628): show the user `verification_uri` and `user_code`, then
/// poll `POST /api/v1/login/device/token` with `device_code` every `interval` seconds.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct DeviceLoginOut {
    /// What the user enters at `verification_uri`.
    pub user_code: String,
    /// The identity provider's page where the user signs in and enters the code.
    pub verification_uri: String,
    /// The same page with the code filled in, when the provider offers one.
    pub verification_uri_complete: Option<String>,
    /// Seconds the codes stay valid.
    pub expires_in: u64,
    /// Seconds to wait between polls.
    pub interval: u64,
    /// Sent back with each poll; whoever holds it gets the token: keep it to yourself.
    pub device_code: String,
}

/// A poll of a device login.
#[derive(Deserialize, ToSchema)]
pub struct DeviceTokenIn {
    /// From `POST /api/v1/login/device`.
    #[schema(min_length = 1, max_length = 1024, pattern = "^[!-~]+$")]
    pub device_code: String,
    /// The personal token's name (default "kqueen CLI"): 1 to 100 printable characters.
    #[schema(max_length = 100)]
    pub name: Option<String>,
    /// The personal token's validity in days (default 30).
    #[schema(minimum = 1, maximum = 90)]
    pub days: Option<u32>,
}

impl std::fmt::Debug for DeviceTokenIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceTokenIn")
            .field("name", &self.name)
            .field("days", &self.days)
            .finish_non_exhaustive()
    }
}

/// The user has not finished signing in at the identity provider yet: poll again after
/// `interval` seconds (or your own interval when it is longer: it only ever grows).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DevicePendingOut {
    /// `pending`, or `slow_down` (polled too often: the interval grew).
    pub status: String,
    /// Seconds to wait before the next poll.
    pub interval: u64,
}

/// The user signed in: their new personal token (its secret is in this answer only).
#[derive(Serialize, Deserialize, ToSchema)]
pub struct DeviceLoggedIn {
    pub username: String,
    pub token: TokenOut,
    pub secret: String,
}
