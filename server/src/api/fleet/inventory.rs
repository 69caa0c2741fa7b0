//! A cluster's inventory and its on-demand sync.

use axum::extract::{Path, State};
use axum::{Extension, Json};
use kqueen_core::inventory::checks::Finding;
use kqueen_core::inventory::fleet::ClusterInventory;
use kqueen_core::inventory::{NodeInfo, Resources, SyncStatus};
use kqueen_core::{Actor, ClusterSync};
use serde::Serialize;
use utoipa::ToSchema;

use super::time;
use crate::api::{ApiResult, ErrorOut};
use crate::state::AppState;

/// CPU in millicores, memory in bytes.
#[derive(Debug, Serialize, ToSchema)]
pub struct ResourcesOut {
    pub cpu_millis: u64,
    pub memory_bytes: u64,
}

impl From<Resources> for ResourcesOut {
    fn from(r: Resources) -> Self {
        Self {
            cpu_millis: r.cpu_millis,
            memory_bytes: r.memory_bytes,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SyncStatusOut {
    pub attempted_at: String,
    /// Last successful sync.
    pub synced_at: Option<String>,
    /// Why the last attempt failed.
    pub error: Option<String>,
    pub api_version: Option<String>,
    /// Whether node usage came from metrics.k8s.io (otherwise only requests are known).
    pub metrics: bool,
    pub duration_ms: u64,
}

impl From<SyncStatus> for SyncStatusOut {
    fn from(s: SyncStatus) -> Self {
        Self {
            attempted_at: s.attempted_at.to_rfc3339(),
            synced_at: time(s.synced_at),
            error: s.error,
            api_version: s.api_version,
            metrics: s.metrics,
            duration_ms: s.duration_ms,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct NodeOut {
    pub name: String,
    pub ready: bool,
    pub problems: Vec<String>,
    /// When it stopped being Ready (its Ready condition's last transition); none while Ready.
    #[schema(format = DateTime)]
    pub not_ready_since: Option<String>,
    pub kubelet_version: String,
    pub container_runtime: String,
    pub os_image: String,
    pub kernel_version: String,
    pub architecture: String,
    pub capacity: ResourcesOut,
    pub allocatable: ResourcesOut,
    pub requested: ResourcesOut,
    pub used: Option<ResourcesOut>,
    pub pods: u32,
}

impl From<NodeInfo> for NodeOut {
    fn from(n: NodeInfo) -> Self {
        Self {
            name: n.name,
            ready: n.ready,
            problems: n.problems,
            not_ready_since: n.not_ready_since.map(|t| t.to_rfc3339()),
            kubelet_version: n.kubelet_version,
            container_runtime: n.container_runtime,
            os_image: n.os_image,
            kernel_version: n.kernel_version,
            architecture: n.architecture,
            capacity: n.capacity.into(),
            allocatable: n.allocatable.into(),
            requested: n.requested.into(),
            used: n.used.map(Into::into),
            pods: n.pods,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WorkloadOut {
    pub namespace: String,
    /// Deployment, StatefulSet, DaemonSet, Job or Pod.
    pub kind: String,
    pub name: String,
    pub desired: u32,
    pub ready: u32,
    /// Ready, Progressing, Failed or Idle.
    pub state: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PodCountOut {
    pub namespace: String,
    pub phase: String,
    pub count: u32,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FindingOut {
    pub check: String,
    pub severity: String,
    pub subject: String,
    pub message: String,
}

impl From<Finding> for FindingOut {
    fn from(f: Finding) -> Self {
        Self {
            check: f.check,
            severity: f.severity.as_str().to_owned(),
            subject: f.subject,
            message: f.message,
        }
    }
}

/// What the last syncs read from a cluster.
#[derive(Debug, Serialize, ToSchema)]
pub struct ClusterInventoryOut {
    /// None until the first sync attempt.
    pub sync: Option<SyncStatusOut>,
    pub nodes: Vec<NodeOut>,
    pub workloads: Vec<WorkloadOut>,
    pub pods: Vec<PodCountOut>,
    pub findings: Vec<FindingOut>,
}

impl From<ClusterInventory> for ClusterInventoryOut {
    fn from(i: ClusterInventory) -> Self {
        Self {
            sync: i.status.map(Into::into),
            nodes: i.nodes.into_iter().map(Into::into).collect(),
            workloads: i
                .workloads
                .into_iter()
                .map(|w| WorkloadOut {
                    namespace: w.namespace,
                    kind: w.kind.as_str().to_owned(),
                    name: w.name,
                    desired: w.desired,
                    ready: w.ready,
                    state: w.state.as_str().to_owned(),
                })
                .collect(),
            pods: i
                .pods
                .into_iter()
                .map(|p| PodCountOut {
                    namespace: p.namespace,
                    phase: p.phase.as_str().to_owned(),
                    count: p.count,
                })
                .collect(),
            findings: i.findings.into_iter().map(Into::into).collect(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ClusterSyncOut {
    pub cluster: String,
    pub tenant: String,
    /// Why it failed; none when it succeeded.
    pub error: Option<String>,
    pub duration_ms: u64,
}

impl From<ClusterSync> for ClusterSyncOut {
    fn from(s: ClusterSync) -> Self {
        Self {
            cluster: s.cluster,
            tenant: s.tenant,
            error: s.error,
            duration_ms: s.duration_ms,
        }
    }
}

/// A cluster's inventory: nodes, workloads, pods per namespace and phase, findings, and
/// how the last sync went.
#[utoipa::path(get, path = "/api/v1/clusters/{id}/inventory", tag = "fleet",
    params(("id" = uuid::Uuid, Path)),
    responses((status = 200, body = ClusterInventoryOut), (status = 404, body = ErrorOut)))]
pub async fn cluster_inventory(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> ApiResult<Json<ClusterInventoryOut>> {
    Ok(Json(
        state
            .kqueen
            .fleet()
            .cluster_inventory(&actor, &id)
            .await?
            .into(),
    ))
}

/// Syncs a Ready cluster's inventory now (members of its tenant). A cluster that cannot be
/// read answers 200 with the reason in `error`.
#[utoipa::path(post, path = "/api/v1/clusters/{id}/inventory/sync", tag = "fleet",
    params(("id" = uuid::Uuid, Path)),
    responses((status = 200, body = ClusterSyncOut), (status = 404, body = ErrorOut),
        (status = 409, body = ErrorOut, description = "the cluster is not Ready")))]
pub async fn sync_cluster(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> ApiResult<Json<ClusterSyncOut>> {
    Ok(Json(
        state
            .kqueen
            .fleet()
            .sync_cluster_inventory(&actor, &id)
            .await?
            .into(),
    ))
}
