//! What the tenants server functions send to the browser: Tenants, members and quotas.

// Tenants and members travel as `/api/v1/tenants` sends them.
pub use kqueen_dto::tenants::{Member, QuotaUsage, Tenant};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenantPageDto {
    pub tenant: Tenant,
    pub members: Vec<Member>,
    /// The caller may add, change and remove members.
    pub can_manage: bool,
    /// The member form as it was refused, with the error.
    pub kept: Option<crate::kept::KeptForm>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaDto {
    /// As `/api/v1/tenants/{slug}/quota` sends it.
    pub usage: QuotaUsage,
    /// What the tenant's clusters keep in the shared etcd against its quota, in words
    /// ("12.5 MiB of 1 GiB").
    pub shared_storage: String,
    /// The quota as the form shows it, exactly (`1536 MiB`); empty: unlimited.
    pub shared_storage_input: String,
    pub can_set: bool,
}
