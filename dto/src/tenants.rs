//! Tenants, their members and their quota.

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

/// What a tenant may have; `None` in a field: unlimited (no time-to-live).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = QuotaIo))]
pub struct Quota {
    /// Empty: unlimited.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 100000))]
    pub max_clusters: Option<u32>,
    /// Empty: unlimited.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 1000000))]
    pub max_nodes: Option<u32>,
    /// Hours a cluster lives before it is deleted (up to ten years); empty: for ever.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 87600))]
    pub cluster_ttl_hours: Option<u32>,
    /// Bytes (1 to 2^50) the tenant's hosted clusters may keep in the shared etcd; over it,
    /// the next inventory round makes them read-only there until the tenant is under again.
    #[cfg_attr(
        feature = "openapi",
        schema(example = 1073741824, minimum = 1, maximum = 1125899906842624_i64)
    )]
    pub max_shared_storage_bytes: Option<u64>,
}

/// A tenant's quota and what it uses against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = QuotaOut))]
pub struct QuotaUsage {
    #[serde(flatten)]
    pub quota: Quota,
    pub used_clusters: u32,
    pub used_nodes: u32,
    /// Bytes its clusters keep in the shared etcd, as last measured.
    pub used_shared_storage_bytes: u64,
}
