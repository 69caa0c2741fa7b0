//! A tenant's limits and what it uses against them.

/// A tenant's limits. `None`: unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Quota {
    pub max_clusters: Option<u32>,
    pub max_nodes: Option<u32>,
    /// Clusters of the tenant are deleted this many hours after creation.
    pub cluster_ttl_hours: Option<u32>,
    /// Bytes the tenant's clusters may keep in storage shared between clusters (hosted
    /// control planes' etcd key spaces) before they become read-only there
    /// ([`super::storage_quota`]).
    pub max_shared_storage_bytes: Option<u64>,
}

/// What a tenant uses against its quota.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub clusters: u32,
    pub nodes: u32,
    /// Bytes its clusters keep in shared storage, as last measured (never part of the
    /// admission of a new cluster: [`super::storage_quota`] enforces that quota).
    pub shared_storage_bytes: u64,
}

impl Quota {
    /// Refuses a new cluster of `nodes` nodes when it would exceed the quota.
    pub fn admit(&self, usage: Usage, nodes: u32) -> Result<(), String> {
        if let Some(max) = self.max_clusters {
            if usage.clusters + 1 > max {
                return Err(format!(
                    "quota exceeded: the tenant may have at most {max} clusters ({} in use)",
                    usage.clusters
                ));
            }
        }
        if let Some(max) = self.max_nodes {
            if usage.nodes + nodes > max {
                return Err(format!(
                    "quota exceeded: the tenant may have at most {max} nodes ({} in use, {nodes} requested)",
                    usage.nodes
                ));
            }
        }
        Ok(())
    }
}
