//! What server functions send to the browser: plain data, times already formatted (UTC).

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
pub struct OverviewDto {
    /// Installation-wide counts, for operators only.
    pub tenants: Option<u64>,
    pub users: Option<u64>,
    pub audit_events: Option<u64>,
    /// `sqlite` or `postgres`.
    pub database: String,
}

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
pub struct TokenDto {
    pub id: String,
    pub name: String,
    pub prefix: String,
    pub created: String,
    pub expires: String,
    pub last_used: Option<String>,
    pub active: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokensPageDto {
    pub tokens: Vec<TokenDto>,
    /// A token created just before this page was shown: its secret, shown this once.
    pub new_secret: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEventDto {
    pub id: String,
    /// `YYYY-MM-DD HH:MM:SS`.
    pub time: String,
    pub actor: String,
    pub tenant: Option<String>,
    pub action: String,
    pub target: String,
    pub outcome: String,
    pub source_ip: Option<String>,
    pub detail: Option<String>,
}

/// Filters of the audit page, as in its URL. Missing fields are empty (no filter).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AuditFilter {
    pub tenant: String,
    pub actor: String,
    pub action: String,
    pub since: String,
    pub until: String,
}

/// One page of the audit list, and whether an older page exists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditPageDto {
    pub events: Vec<AuditEventDto>,
    pub offset: u32,
    pub limit: u32,
    pub has_more: bool,
}

/// One parameter of a form rendered from a provisioner's schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamDto {
    pub name: String,
    pub label: String,
    pub help: Option<String>,
    pub required: bool,
    pub secret: bool,
    /// `string`, `text`, `integer`, `boolean` or `enum`.
    pub kind: String,
    pub default: Option<String>,
    pub min: Option<i64>,
    pub max: Option<i64>,
    pub options: Vec<String>,
    pub max_len: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapabilitiesDto {
    pub scale: bool,
    pub upgrade: bool,
    pub deletes_infrastructure: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterRowDto {
    pub id: String,
    pub tenant: String,
    pub name: String,
    pub template: String,
    pub kind: String,
    pub state: String,
    pub state_label: String,
    pub node_count: u32,
    pub endpoint: Option<String>,
    pub created: String,
    pub expires: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClustersPageDto {
    pub clusters: Vec<ClusterRowDto>,
    pub total: u64,
    pub offset: u32,
    pub limit: u32,
    /// Tenants the caller can request clusters in.
    pub tenants: Vec<String>,
    pub states: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TemplateChoiceDto {
    pub name: String,
    pub description: String,
    pub provider: String,
    pub kind: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewClusterPageDto {
    pub tenants: Vec<String>,
    pub tenant: Option<String>,
    pub templates: Vec<TemplateChoiceDto>,
    /// The chosen template's form.
    pub template: Option<TemplateChoiceDto>,
    pub params: Vec<ParamDto>,
    pub fixed: Vec<(String, String)>,
    /// The tenant's quota and usage, as text ("2 of 5 clusters").
    pub quota: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationDto {
    pub kind: String,
    pub state: String,
    pub step: String,
    pub progress: u8,
    pub attempts: u32,
    pub error: Option<String>,
    pub requested_by: String,
    pub created: String,
    pub finished: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventDto {
    pub id: String,
    pub time: String,
    pub kind: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterPageDto {
    pub cluster: ClusterRowDto,
    pub parameters: Vec<(String, String)>,
    pub error: Option<String>,
    pub created_by: String,
    pub capabilities: CapabilitiesDto,
    pub operations: Vec<OperationDto>,
    pub events: Vec<EventDto>,
    /// True while an operation is pending or running (the page refreshes itself).
    pub busy: bool,
    pub admin_kubeconfig: bool,
    pub can_manage: bool,
    /// Node counts a scale may ask for under the template (None: fixed by it).
    pub node_range: Option<(i64, i64)>,
    /// Versions an upgrade may choose from (empty: free text).
    pub version_options: Vec<String>,
    /// What tenant admins' personal kubeconfigs may do here (`namespaced`, `cluster-admin`)
    /// and its label.
    pub admin_access: (String, String),
    /// The stored inventory (nodes, workloads, charts), once the cluster was synced.
    pub inventory: Option<crate::dto_fleet::InventoryDto>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderDto {
    pub name: String,
    pub kind: String,
    pub description: String,
    pub settings: Vec<(String, String)>,
    pub secret_fields: Vec<String>,
    pub disabled: bool,
    pub updated: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TemplateDto {
    pub name: String,
    pub description: String,
    pub provider: String,
    pub kind: String,
    pub overrides: String,
    pub tenants: Vec<String>,
    pub timeout_minutes: u32,
    /// `namespaced` or `cluster-admin`.
    pub admin_access: String,
    pub disabled: bool,
    pub params: Vec<ParamDto>,
    pub fixed: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindDto {
    pub kind: String,
    pub capabilities: CapabilitiesDto,
    pub provider_params: Vec<ParamDto>,
    pub cluster_params: Vec<ParamDto>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProvidersPageDto {
    pub providers: Vec<ProviderDto>,
    pub templates: Vec<TemplateDto>,
    pub kinds: Vec<KindDto>,
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
