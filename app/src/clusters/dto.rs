//! What the clusters server functions send to the browser: lists, the request form and the
//! cluster page, made of `kqueen_dto`'s clusters and templates (what `/api/v1` sends too) and
//! what only the pages need.

use kqueen_dto::clusters::{Cluster, ClusterDetail};
use kqueen_dto::providers::Template;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClustersPageDto {
    /// Whole in the server function's answer; in the page's hydration script only what the
    /// table shows (`listed.rs`).
    #[serde(serialize_with = "crate::hydrated::rows")]
    pub clusters: Vec<Cluster>,
    pub total: u64,
    pub offset: u32,
    pub limit: u32,
    /// The tenants the filter offers; none when there are too many to choose from.
    pub tenants: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewClusterPageDto {
    /// The tenants to choose from; none when there are too many (a slug is typed instead).
    pub tenants: Option<Vec<String>>,
    pub tenant: Option<String>,
    /// Why the chosen tenant cannot be used (none the caller sees has that slug).
    pub tenant_error: Option<String>,
    pub templates: Vec<Template>,
    /// The chosen template (its parameters are the form).
    pub template: Option<Template>,
    /// The tenant's quota and usage, as text ("2 of 5 clusters").
    pub quota: Option<String>,
    /// The request form as it was refused, with the error.
    pub kept: Option<crate::kept::KeptForm>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterPageDto {
    pub detail: ClusterDetail,
    /// True while an operation is pending or running (the page refreshes itself).
    pub busy: bool,
    pub admin_kubeconfig: bool,
    pub can_manage: bool,
    /// The caller may back this cluster up and download its backups (tenant admins,
    /// operators).
    pub can_back_up: bool,
    /// The caller may have the provisioner replace the cluster's nodes that are not Ready:
    /// its provider can, the cluster is Ready, and the caller is a tenant admin of its tenant
    /// or an operator (the inventory's Nodes table offers "Replace…").
    pub can_replace_nodes: bool,
    /// Node counts a scale may ask for under the template (None: fixed by it).
    pub node_range: Option<(i64, i64)>,
    /// Versions an upgrade may choose from (empty: free text).
    pub version_options: Vec<String>,
    /// What tenant admins' personal kubeconfigs may do here, in words.
    pub admin_access_label: String,
    /// The stored inventory (nodes, workloads, charts), once the cluster was synced.
    pub inventory: Option<crate::fleet::dto::InventoryDto>,
    /// The portal's public URL, for the `kqueen login` line.
    pub public_url: String,
    /// Its requests for a second person's approval, and whether the caller marks it.
    pub approvals: crate::approvals::dto::ApprovalsDto,
}
