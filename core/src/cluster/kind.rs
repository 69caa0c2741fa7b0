//! The provisioner backends KQueen knows, as a provider names them.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The provisioner backends KQueen knows (the `kind` of a provider).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
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
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
