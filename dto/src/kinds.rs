//! The provisioner backends KQueen knows, as a provider names them (its `kind`): one list
//! for the domain, the REST API's OpenAPI enum and the portal.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The provisioner backends KQueen knows (the `kind` of a provider).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    Import,
    Command,
    Jenkins,
    Hosted,
    /// Cluster API: `Cluster` objects with managed topologies in a management cluster.
    #[serde(rename = "cluster-api")]
    ClusterApi,
}

impl ProviderKind {
    pub const ALL: [ProviderKind; 5] = [
        ProviderKind::Import,
        ProviderKind::Command,
        ProviderKind::Jenkins,
        ProviderKind::Hosted,
        ProviderKind::ClusterApi,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Import => "import",
            ProviderKind::Command => "command",
            ProviderKind::Jenkins => "jenkins",
            ProviderKind::Hosted => "hosted",
            ProviderKind::ClusterApi => "cluster-api",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// What its clusters come from, in a few words (the portal's kind picker says it).
    pub fn summary(self) -> &'static str {
        match self {
            ProviderKind::Import => "an existing cluster's kubeconfig",
            ProviderKind::Command => "an installer command (kubeadm, kind, k3d, terraform…)",
            ProviderKind::Jenkins => "a parameterized Jenkins job",
            ProviderKind::Hosted => "control planes KQueen runs on a shared etcd",
            ProviderKind::ClusterApi => "Clusters of a Cluster API management cluster (any cloud)",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::ProviderKind;

    #[test]
    fn every_kind_reads_back_from_its_name_and_its_json() {
        for kind in ProviderKind::ALL {
            assert_eq!(ProviderKind::parse(kind.as_str()), Some(kind));
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{kind}\""));
        }
        assert_eq!(ProviderKind::parse("cluster_api"), None);
    }
}
