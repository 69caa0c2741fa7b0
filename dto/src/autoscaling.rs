//! A cluster's autoscaling: its settings and node counts over time.

use serde::{Deserialize, Serialize};

/// Autoscaling as asked for. The scale-down rule defaults to the Kubernetes cluster
/// autoscaler's: a node under 50% used for 10 minutes goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AutoscalingInput {
    /// Never fewer worker nodes than this (1–1000).
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 1000))]
    pub min_nodes: u32,
    /// Never more worker nodes than this (1–1000, at least `min_nodes`; a tenant admin's
    /// within what the tenant's node quota leaves). The tenant's quota caps it too.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 1000))]
    pub max_nodes: u32,
    /// A node whose pods (DaemonSets aside) request less than this percentage of both its
    /// CPU and its memory is underused (1–100; default 50).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 100))]
    pub scale_down_utilisation: Option<u32>,
    /// Seconds a node stays underused before it is drained and removed (60–86400; default
    /// 600).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = 60, maximum = 86400))]
    pub scale_down_after_secs: Option<u32>,
}

/// The settings in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AutoscalingSettings {
    pub min_nodes: u32,
    pub max_nodes: u32,
    pub scale_down_utilisation: u32,
    pub scale_down_after_secs: u32,
    pub updated_by: String,
    /// RFC 3339.
    pub updated_at: String,
}

/// A cluster's node counts at one moment (kept each time they changed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeSample {
    /// RFC 3339.
    pub taken_at: String,
    /// The node count KQueen had asked the provider for.
    pub wanted: u32,
    /// Worker nodes in the cluster.
    pub nodes: u32,
    /// … of which Ready.
    pub ready: u32,
    /// Pods the scheduler could place on no node.
    pub pending_pods: u32,
}

/// A cluster's autoscaling: on (with its settings and last decision) or off, and its node
/// counts over the last seven days.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Autoscaling {
    pub cluster_id: String,
    pub cluster: String,
    /// The node count its provider was last asked for.
    pub node_count: u32,
    /// None: autoscaling is off.
    pub settings: Option<AutoscalingSettings>,
    /// The last turn's decision, in words.
    pub last_decision: Option<String>,
    /// RFC 3339.
    pub last_turn_at: Option<String>,
    /// The cluster's provider can scale (autoscaling can be turned on).
    pub can_scale: bool,
    /// The caller may change it (operators, the tenant's admins).
    pub can_change: bool,
    /// Oldest first.
    pub samples: Vec<NodeSample>,
}
