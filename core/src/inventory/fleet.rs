//! What fleet queries answer: rows read from the stored inventory, never from live clusters.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::checks::{Finding, Severity};
use super::{NodeInfo, PodPhase, Resources, SyncStatus, Workload};
use crate::cluster::ClusterState;
use crate::ValidationError;

/// Filters shared by the fleet queries; each query uses the fields that apply to it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FleetFilter {
    /// Tenant slug.
    pub tenant: Option<String>,
    /// Substring of the cluster name.
    pub cluster: Option<String>,
    /// Substring searched in the image reference, the versions, or the finding.
    pub q: Option<String>,
    pub severity: Option<Severity>,
    /// A check id.
    pub check: Option<String>,
}

impl FleetFilter {
    /// A filter from query-string texts (the API's and the pages' parameters): blank texts
    /// filter nothing, texts are cut at 200 characters, and an unknown severity is refused.
    pub fn parse(
        tenant: Option<&str>,
        cluster: Option<&str>,
        q: Option<&str>,
        severity: Option<&str>,
        check: Option<&str>,
    ) -> Result<Self, ValidationError> {
        let text = |v: Option<&str>| {
            v.map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| s.chars().take(200).collect::<String>())
        };
        let severity =
            match text(severity) {
                None => None,
                Some(s) => Some(Severity::parse(&s.to_lowercase()).ok_or_else(|| {
                    ValidationError::new("severity", "must be high, medium or low")
                })?),
            };
        Ok(FleetFilter {
            tenant: text(tenant),
            cluster: text(cluster),
            q: text(q),
            severity,
            check: text(check),
        })
    }
}

/// One cluster with its sync status and node totals (the fleet dashboard's raw material).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetCluster {
    pub id: Uuid,
    pub name: String,
    pub tenant: String,
    pub state: ClusterState,
    pub provider: String,
    pub error: Option<String>,
    pub attempted_at: Option<DateTime<Utc>>,
    pub synced_at: Option<DateTime<Utc>>,
    pub sync_error: Option<String>,
    pub api_version: Option<String>,
    pub nodes: u32,
    pub nodes_ready: u32,
    /// When the first of its nodes that are not Ready stopped being Ready (a Ready node has
    /// no such time).
    pub not_ready_since: Option<DateTime<Utc>>,
    pub capacity: Resources,
    pub allocatable: Resources,
    pub requested: Resources,
    /// Sum over the nodes that report usage; none when no node does.
    pub used: Option<Resources>,
    /// What it keeps in storage shared between clusters (a hosted control plane's etcd key
    /// space), as last measured. Operators only: none for everyone else. Not serialized
    /// (adapters map it into their own types; the provisioner's type is no wire type).
    #[serde(skip)]
    pub shared_storage: Option<crate::provisioner::SharedStorageReading>,
}

/// What makes a cluster need attention on the fleet dashboard, as the store selects it; the
/// fleet service words the reasons from the same rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttentionRule {
    /// A Ready cluster never synced, whose last sync failed, or whose last good sync is older
    /// than this, needs attention.
    pub stale_before: DateTime<Utc>,
    /// Whether read-only shared storage counts (operators only: nobody else sees it).
    pub storage: bool,
    /// API versions, as clusters report them, that are behind the newest offered.
    pub behind: Vec<String>,
}

/// The live clusters of one state, provider and reported API version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetGroup {
    pub state: ClusterState,
    pub provider: String,
    pub api_version: Option<String>,
    pub clusters: u64,
    /// Of them, those the rule says need attention, its `behind` versions aside.
    pub attention: u64,
}

/// Node figures summed over clusters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeTotals {
    pub nodes: u64,
    pub nodes_ready: u64,
    pub capacity: Resources,
    pub allocatable: Resources,
    pub requested: Resources,
    /// Over the nodes that report usage; none when no node does.
    pub used: Option<Resources>,
}

/// An image and how widely it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageSummary {
    /// Normalised reference (`registry/repository[:tag][@digest]`).
    pub image: String,
    pub clusters: u32,
    pub first_seen: DateTime<Utc>,
}

/// Where an image runs: one workload container in one cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageUsage {
    pub image: String,
    pub cluster_id: Uuid,
    pub cluster: String,
    pub tenant: String,
    pub namespace: String,
    pub workload_kind: String,
    pub workload_name: String,
    pub container: String,
    pub pods: u32,
    /// Since when the cluster runs the image (first sync that saw it).
    pub first_seen: Option<DateTime<Utc>>,
    pub last_seen: Option<DateTime<Utc>>,
}

/// One image in one cluster: since when it runs there (first seen: the first sync of its
/// current period, which starts again when the image comes back after it was gone) and
/// when a sync last saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageHistoryRow {
    pub cluster_id: Uuid,
    pub cluster: String,
    pub tenant: String,
    /// Normalised reference (`registry/repository[:tag][@digest]`).
    pub image: String,
    pub digest: Option<String>,
    pub first_seen: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
    /// Whether the last good sync saw it.
    pub present: bool,
}

/// Versions of a cluster and one of its nodes (node fields empty for clusters with no
/// synced nodes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionRow {
    pub cluster_id: Uuid,
    pub cluster: String,
    pub tenant: String,
    pub api_version: Option<String>,
    pub synced_at: Option<DateTime<Utc>>,
    pub node: Option<String>,
    pub kubelet_version: Option<String>,
    pub container_runtime: Option<String>,
    pub os_image: Option<String>,
    pub kernel_version: Option<String>,
    pub ready: Option<bool>,
}

/// A finding with the cluster it is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingRow {
    pub cluster_id: Uuid,
    pub cluster: String,
    pub tenant: String,
    #[serde(flatten)]
    pub finding: Finding,
}

/// Findings per severity and check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingCount {
    pub severity: Severity,
    pub check: String,
    pub count: u64,
}

/// Pods of one namespace in one phase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodCount {
    pub namespace: String,
    pub phase: PodPhase,
    pub count: u32,
}

/// A cluster's stored inventory (the cluster page).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterInventory {
    pub status: Option<SyncStatus>,
    pub nodes: Vec<NodeInfo>,
    pub workloads: Vec<Workload>,
    pub pods: Vec<PodCount>,
    pub findings: Vec<Finding>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_parse_from_query_texts() {
        let f = FleetFilter::parse(
            Some(" team-a "),
            Some(""),
            Some("nginx"),
            Some("HIGH"),
            None,
        )
        .expect("valid");
        assert_eq!(f.tenant.as_deref(), Some("team-a"));
        assert_eq!(f.cluster, None, "blank is no filter");
        assert_eq!(f.severity, Some(Severity::High));
        let long = "x".repeat(500);
        let f = FleetFilter::parse(None, None, Some(&long), None, None).expect("valid");
        assert_eq!(f.q.map(|q| q.len()), Some(200));
        let e = FleetFilter::parse(None, None, None, Some("urgent"), None).expect_err("refused");
        assert!(e.to_string().contains("severity"), "{e}");
    }
}

/// An image with where it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageRow {
    pub image: String,
    pub registry: Option<String>,
    pub repository: Option<String>,
    pub tag: Option<String>,
    pub digest: Option<String>,
    pub clusters: u32,
    pub first_seen: DateTime<Utc>,
    pub usages: Vec<ImageUsage>,
}
