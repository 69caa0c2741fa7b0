//! What the clusters server functions send to the browser: Clusters: lists, the request form, the cluster page.

use kqueen_dto::clusters::{Capabilities, Event, Operation};
use serde::{Deserialize, Serialize};

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
    /// The request form as it was refused, with the error.
    pub kept: Option<crate::kept::KeptForm>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterPageDto {
    pub cluster: ClusterRowDto,
    pub parameters: Vec<(String, String)>,
    pub error: Option<String>,
    pub created_by: String,
    pub capabilities: Capabilities,
    pub operations: Vec<Operation>,
    pub events: Vec<Event>,
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
    pub inventory: Option<crate::fleet::dto::InventoryDto>,
    /// Operators, hosted clusters: the etcd key space, last measured.
    pub shared_storage: Option<kqueen_dto::clusters::SharedStorage>,
}
