//! What the tenants server functions send to the browser: Tenants, members and quotas.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenantDto {
    pub slug: String,
    pub display_name: String,
    /// `YYYY-MM-DD HH:MM`.
    pub created: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberDto {
    pub username: String,
    pub email: Option<String>,
    pub role: String,
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenantPageDto {
    pub tenant: TenantDto,
    pub members: Vec<MemberDto>,
    /// The caller may add, change and remove members.
    pub can_manage: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaDto {
    pub max_clusters: Option<u32>,
    pub max_nodes: Option<u32>,
    pub cluster_ttl_hours: Option<u32>,
    pub used_clusters: u32,
    pub used_nodes: u32,
    pub can_set: bool,
}
