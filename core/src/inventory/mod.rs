//! The fleet inventory: what runs in every Ready cluster, read from its Kubernetes API by a
//! periodic sync ([`collect`]), checked by pluggable audit checks ([`checks`]) and stored as
//! normalised rows, so that pages and fleet queries never fan out to live clusters.
//!
//! Sync strategy: periodic paginated lists, not watches. A watch per resource per cluster
//! holds five long-lived connections and a full object cache per cluster in the portal; a
//! list every few minutes costs one burst of requests per cluster and nothing in between,
//! and the rows only need to be as fresh as the sync interval. `cargo bench --bench
//! inventory` prints what a full sync costs.

pub mod checks;
mod collect;
pub mod export;
pub mod fleet;
pub mod image;
pub mod quantity;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::cluster::string_enum;

pub use collect::{collect, CollectError};
/// What pods request and nodes offer, as the inventory counts them (autoscaling counts alike).
pub(crate) use collect::{effective as pod_requests, resources};
pub use image::ImageRef;

/// The largest quantity stored for one node or pod (2^50: a pebibyte of memory, a million
/// million millicores). Clusters report what they like; beyond this a value is nonsense, and
/// clamping keeps fleet sums far from any integer limit.
pub const MAX_QUANTITY: u64 = 1 << 50;

/// CPU (millicores) and memory (bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resources {
    pub cpu_millis: u64,
    pub memory_bytes: u64,
}

impl Resources {
    pub fn add(&mut self, other: Resources) {
        self.cpu_millis = self.cpu_millis.saturating_add(other.cpu_millis);
        self.memory_bytes = self.memory_bytes.saturating_add(other.memory_bytes);
    }
}

/// One node as the sync saw it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInfo {
    pub name: String,
    pub ready: bool,
    /// Conditions that are not well (`Ready` false or unknown, pressure conditions true).
    pub problems: Vec<String>,
    /// When it stopped being Ready (the Ready condition's last transition); none while
    /// Ready, or when the node never said.
    #[serde(default)]
    pub not_ready_since: Option<DateTime<Utc>>,
    pub kubelet_version: String,
    pub container_runtime: String,
    pub os_image: String,
    pub kernel_version: String,
    pub architecture: String,
    pub capacity: Resources,
    pub allocatable: Resources,
    /// Sum of the requests of the node's pods that are not finished.
    pub requested: Resources,
    /// From metrics.k8s.io, when the cluster serves it.
    pub used: Option<Resources>,
    pub pods: u32,
}

string_enum!(
    /// Kinds of workloads; bare pods (no controller KQueen knows) are their own workload.
    WorkloadKind {
        Deployment = "Deployment",
        StatefulSet = "StatefulSet",
        DaemonSet = "DaemonSet",
        Job = "Job",
        Pod = "Pod",
    }
);

string_enum!(
    /// Health of a workload, from its status.
    WorkloadState {
        /// All desired replicas ready, or a Job that completed.
        Ready = "Ready",
        /// Fewer ready than desired, or a Job still running.
        Progressing = "Progressing",
        /// A Job that failed, a Deployment past its progress deadline, a failed bare pod.
        Failed = "Failed",
        /// Scaled to zero, or a bare pod that succeeded.
        Idle = "Idle",
    }
);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workload {
    pub namespace: String,
    pub kind: WorkloadKind,
    pub name: String,
    pub desired: u32,
    pub ready: u32,
    pub state: WorkloadState,
}

string_enum!(
    /// Pod phases as Kubernetes reports them.
    PodPhase {
        Running = "Running",
        Pending = "Pending",
        Succeeded = "Succeeded",
        Failed = "Failed",
        Unknown = "Unknown",
    }
);

impl PodPhase {
    /// A reported phase; unknown phases (and none) are `Unknown`.
    pub fn from_status(s: &str) -> Self {
        Self::parse(s).unwrap_or(Self::Unknown)
    }

    /// Whether the pod still holds its node's resources.
    pub fn is_active(self) -> bool {
        matches!(self, Self::Running | Self::Pending | Self::Unknown)
    }
}

/// One container of a pod (init containers included).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerInfo {
    pub name: String,
    /// The reference as written in the pod spec (kept when it does not parse).
    pub image_spec: String,
    /// Parsed reference, with the digest the status reports when the spec names none.
    pub image: Option<ImageRef>,
    pub privileged: bool,
    pub init: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodInfo {
    pub namespace: String,
    pub name: String,
    pub phase: PodPhase,
    pub node: Option<String>,
    pub restarts: u32,
    /// The workload that owns it (a ReplicaSet's Deployment, a Job, …) or the pod itself.
    pub workload_kind: WorkloadKind,
    pub workload_name: String,
    pub requests: Resources,
    pub limits: Resources,
    pub host_path: bool,
    pub containers: Vec<ContainerInfo>,
}

/// Everything one sync read from one cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The API server's `gitVersion` (`v1.33.2`).
    pub api_version: String,
    pub nodes: Vec<NodeInfo>,
    pub namespaces: Vec<String>,
    pub workloads: Vec<Workload>,
    pub pods: Vec<PodInfo>,
    /// Whether node usage came from metrics.k8s.io.
    pub metrics: bool,
}

/// How a cluster's last syncs went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncStatus {
    pub cluster_id: Uuid,
    pub attempted_at: DateTime<Utc>,
    /// Last successful sync.
    pub synced_at: Option<DateTime<Utc>>,
    /// Why the last attempt failed (none when it succeeded).
    pub error: Option<String>,
    pub api_version: Option<String>,
    pub metrics: bool,
    pub duration_ms: u64,
}

/// `v1.33.2-gke.100` → `(1, 33)`.
pub fn minor_version(version: &str) -> Option<(u32, u32)> {
    let v = version.trim().trim_start_matches('v');
    let mut parts = v.split(['.', '-', '+']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minor_versions() {
        assert_eq!(minor_version("v1.33.2"), Some((1, 33)));
        assert_eq!(minor_version("1.30"), Some((1, 30)));
        assert_eq!(minor_version("v1.29.4-gke.100"), Some((1, 29)));
        assert_eq!(minor_version("v1.31+k3s1"), Some((1, 31)));
        assert_eq!(minor_version("latest"), None);
        assert_eq!(minor_version(""), None);
    }

    #[test]
    fn phases_and_names() {
        for p in PodPhase::ALL {
            assert_eq!(PodPhase::from_status(p.as_str()), *p);
        }
        assert_eq!(PodPhase::from_status("Weird"), PodPhase::Unknown);
        assert_eq!(
            serde_json::to_string(&WorkloadKind::StatefulSet).expect("serialises"),
            "\"StatefulSet\""
        );
    }
}
