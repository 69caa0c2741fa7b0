//! Adoption (operators): the clusters a provider's infrastructure already holds (a Cluster
//! API management cluster's Clusters) and the request that takes one into a tenant.

use serde::{Deserialize, Serialize};

/// A cluster that exists in a provider's infrastructure, adopted or not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AdoptableCluster {
    /// What names it in an adoption (Cluster API: `namespace/name`).
    pub reference: String,
    pub name: String,
    /// Where it lives (Cluster API: the namespace).
    pub location: String,
    /// What it is built from (Cluster API: the ClusterClass).
    pub class: Option<String>,
    pub kubernetes_version: Option<String>,
    /// As its provisioner words it (Cluster API: `Provisioning`, `Provisioned`, `Failed`…).
    pub phase: Option<String>,
    /// Its control plane is available, as its provisioner reports it.
    pub ready: bool,
    pub control_plane_nodes: Option<u32>,
    pub worker_nodes: Option<u32>,
    /// The id (UUID) of the KQueen cluster it already is, if adopted or created by KQueen.
    pub adopted_by: Option<String>,
}

/// Takes an existing cluster into a tenant.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AdoptRequest {
    /// The tenant's slug.
    pub tenant: String,
    /// Its name in KQueen (a DNS label); empty: the existing cluster's own name.
    #[serde(default)]
    pub name: String,
    /// The template (name or id) of the same provider that limits its scale and upgrades.
    pub template: String,
    /// [`AdoptableCluster::reference`].
    pub reference: String,
}
