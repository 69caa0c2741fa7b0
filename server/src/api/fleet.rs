//! The fleet inventory on the API: a cluster's inventory, on-demand sync, the fleet
//! dashboard, and the fleet audit queries (images, versions, findings) as paginated JSON or
//! whole-result exports (CSV or JSON).

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use kqueen_core::inventory::checks::Finding;
use kqueen_core::inventory::fleet::{
    ClusterInventory, FindingRow, FleetCluster, FleetFilter, ImageHistoryRow, ImageUsage,
    VersionRow,
};
use kqueen_core::inventory::{NodeInfo, Resources, SyncStatus};
use kqueen_core::page::Page;
use kqueen_core::{Actor, ClusterSync, Error, FleetOverview, ImageRow, ValidationError};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{ApiQuery, ApiResult, ErrorOut};
use crate::state::AppState;
use kqueen_core::export::all_pages;
use kqueen_core::inventory::export::{findings_csv, history_csv, images_csv, versions_csv};

/// Filters and paging of the fleet queries.
#[derive(Debug, Default, Deserialize, IntoParams)]
pub struct FleetParams {
    /// Tenant slug.
    pub tenant: Option<String>,
    /// Substring of the cluster name.
    pub cluster: Option<String>,
    /// Substring: of the image reference (images), the versions (versions), the subject or
    /// message (findings).
    pub q: Option<String>,
    /// Findings only: `high`, `medium` or `low`.
    pub severity: Option<String>,
    /// Findings only: a check id such as `latest-tag`.
    pub check: Option<String>,
    pub limit: Option<u32>,
    pub offset: Option<u32>,
    /// `json` (default: one page) or `csv` (the whole result, as a download).
    pub format: Option<String>,
    /// With `format=json`: the whole result (up to 10,000 rows) as a download.
    pub download: Option<bool>,
}

impl FleetParams {
    pub fn filter(&self) -> Result<FleetFilter, Error> {
        Ok(FleetFilter::parse(
            self.tenant.as_deref(),
            self.cluster.as_deref(),
            self.q.as_deref(),
            self.severity.as_deref(),
            self.check.as_deref(),
        )?)
    }

    fn page(&self) -> Page {
        Page::new(
            self.limit.unwrap_or(Page::DEFAULT_LIMIT),
            self.offset.unwrap_or(0),
        )
    }
}

/// How a query answers: a page, or everything as a download.
enum Output {
    Page(Page),
    Csv,
    JsonDownload,
}

fn output(p: &FleetParams) -> Result<Output, Error> {
    match p.format.as_deref().unwrap_or("json") {
        "json" if p.download == Some(true) => Ok(Output::JsonDownload),
        "json" => Ok(Output::Page(p.page())),
        "csv" => Ok(Output::Csv),
        _ => Err(Error::Invalid(ValidationError::new(
            "format",
            "must be json or csv",
        ))),
    }
}

fn download(body: String, content_type: &'static str, file: &str) -> Response {
    let disposition = format!("attachment; filename=\"{file}\"");
    (
        [
            (header::CONTENT_TYPE, content_type.to_owned()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        body,
    )
        .into_response()
}

/// Runs a fleet query as `p` asks: one page (`Ok`), every row for a JSON download (`Ok`,
/// total = rows), or every row as a CSV download made by `csv` (`Err`: the finished answer).
async fn rows_or_csv<T, F, Fut>(
    p: &FleetParams,
    mut fetch: F,
    csv: impl FnOnce(&[T]) -> Result<String, Error>,
    file: &str,
) -> Result<Result<(Vec<T>, u64), Response>, Error>
where
    F: FnMut(Page) -> Fut,
    Fut: std::future::Future<Output = Result<(Vec<T>, u64), Error>>,
{
    let out = output(p)?;
    if let Output::Page(page) = out {
        return fetch(page).await.map(Ok);
    }
    let rows = all_pages(fetch).await?;
    if matches!(out, Output::Csv) {
        let name = format!("{file}.csv");
        return Ok(Err(download(csv(&rows)?, "text/csv; charset=utf-8", &name)));
    }
    let total = rows.len() as u64;
    Ok(Ok((rows, total)))
}

fn time(t: Option<chrono::DateTime<chrono::Utc>>) -> Option<String> {
    t.map(|t| t.to_rfc3339())
}

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
    params(("id" = String, Path)),
    responses((status = 200, body = ClusterInventoryOut), (status = 404, body = ErrorOut)))]
pub async fn cluster_inventory(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> ApiResult<Json<ClusterInventoryOut>> {
    Ok(Json(
        state.kqueen.cluster_inventory(&actor, &id).await?.into(),
    ))
}

/// Syncs a Ready cluster's inventory now (members of its tenant). A cluster that cannot be
/// read answers 200 with the reason in `error`.
#[utoipa::path(post, path = "/api/v1/clusters/{id}/inventory/sync", tag = "fleet",
    params(("id" = String, Path)),
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
            .sync_cluster_inventory(&actor, &id)
            .await?
            .into(),
    ))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FleetClusterOut {
    pub id: String,
    pub name: String,
    pub tenant: String,
    pub state: String,
    pub provider: String,
    pub api_version: Option<String>,
    pub synced_at: Option<String>,
    pub sync_error: Option<String>,
    pub nodes: u32,
    pub nodes_ready: u32,
    pub capacity: ResourcesOut,
    pub allocatable: ResourcesOut,
    pub requested: ResourcesOut,
    pub used: Option<ResourcesOut>,
}

impl From<FleetCluster> for FleetClusterOut {
    fn from(c: FleetCluster) -> Self {
        Self {
            id: c.id.to_string(),
            name: c.name,
            tenant: c.tenant,
            state: c.state.as_str().to_owned(),
            provider: c.provider,
            api_version: c.api_version,
            synced_at: time(c.synced_at),
            sync_error: c.sync_error,
            nodes: c.nodes,
            nodes_ready: c.nodes_ready,
            capacity: c.capacity.into(),
            allocatable: c.allocatable.into(),
            requested: c.requested.into(),
            used: c.used.map(Into::into),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CountOut {
    pub label: String,
    pub count: u64,
}

fn counts(t: Vec<(String, u64)>) -> Vec<CountOut> {
    t.into_iter()
        .map(|(label, count)| CountOut { label, count })
        .collect()
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AttentionOut {
    pub cluster: FleetClusterOut,
    pub reasons: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FleetOut {
    pub clusters: u64,
    pub nodes: u64,
    pub nodes_ready: u64,
    pub capacity: ResourcesOut,
    pub allocatable: ResourcesOut,
    pub requested: ResourcesOut,
    pub used: Option<ResourcesOut>,
    pub by_state: Vec<CountOut>,
    pub by_provider: Vec<CountOut>,
    /// By Kubernetes minor version; `unknown` for clusters never synced.
    pub by_version: Vec<CountOut>,
    pub newest_version: Option<String>,
    pub attention: Vec<AttentionOut>,
    pub items: Vec<FleetClusterOut>,
}

impl From<FleetOverview> for FleetOut {
    fn from(o: FleetOverview) -> Self {
        Self {
            clusters: o.totals.clusters,
            nodes: o.totals.nodes,
            nodes_ready: o.totals.nodes_ready,
            capacity: o.totals.capacity.into(),
            allocatable: o.totals.allocatable.into(),
            requested: o.totals.requested.into(),
            used: o.totals.used.map(Into::into),
            by_state: counts(o.by_state),
            by_provider: counts(o.by_provider),
            by_version: counts(o.by_version),
            newest_version: o.newest_version,
            attention: o
                .attention
                .into_iter()
                .map(|a| AttentionOut {
                    cluster: a.cluster.into(),
                    reasons: a.reasons,
                })
                .collect(),
            items: o.clusters.into_iter().map(Into::into).collect(),
        }
    }
}

/// The fleet dashboard's figures: clusters by state, provider and version, node totals, and
/// the clusters needing attention. Operators see all; tenant admins their tenants.
#[utoipa::path(get, path = "/api/v1/fleet", tag = "fleet", params(FleetParams),
    responses((status = 200, body = FleetOut), (status = 403, body = ErrorOut)))]
pub async fn overview(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiQuery(p): ApiQuery<FleetParams>,
) -> ApiResult<Json<FleetOut>> {
    let filter = p.filter()?;
    Ok(Json(
        state.kqueen.fleet_overview(&actor, &filter).await?.into(),
    ))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ImageUsageOut {
    pub cluster_id: String,
    pub cluster: String,
    pub tenant: String,
    pub namespace: String,
    pub workload_kind: String,
    pub workload_name: String,
    pub container: String,
    pub pods: u32,
    /// Since when the cluster runs the image.
    pub first_seen: Option<String>,
    pub last_seen: Option<String>,
}

impl From<ImageUsage> for ImageUsageOut {
    fn from(u: ImageUsage) -> Self {
        Self {
            cluster_id: u.cluster_id.to_string(),
            cluster: u.cluster,
            tenant: u.tenant,
            namespace: u.namespace,
            workload_kind: u.workload_kind,
            workload_name: u.workload_name,
            container: u.container,
            pods: u.pods,
            first_seen: time(u.first_seen),
            last_seen: time(u.last_seen),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ImageOut {
    /// `registry/repository[:tag][@digest]`.
    pub image: String,
    pub registry: Option<String>,
    pub repository: Option<String>,
    pub tag: Option<String>,
    pub digest: Option<String>,
    pub clusters: u32,
    pub first_seen: String,
    pub usages: Vec<ImageUsageOut>,
}

impl From<ImageRow> for ImageOut {
    fn from(i: ImageRow) -> Self {
        Self {
            image: i.image,
            registry: i.registry,
            repository: i.repository,
            tag: i.tag,
            digest: i.digest,
            clusters: i.clusters,
            first_seen: i.first_seen.to_rfc3339(),
            usages: i.usages.into_iter().map(Into::into).collect(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ImagesOut {
    pub total: u64,
    pub items: Vec<ImageOut>,
}

/// Every image running in the visible clusters, with the clusters, namespaces and workloads
/// that run it; `q` searches the reference ("which clusters run image X").
#[utoipa::path(get, path = "/api/v1/fleet/images", tag = "fleet", params(FleetParams),
    responses((status = 200, body = ImagesOut, description = "JSON, or CSV (one row per usage) with format=csv"),
        (status = 400, body = ErrorOut)))]
pub async fn images(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiQuery(p): ApiQuery<FleetParams>,
) -> ApiResult<Response> {
    let filter = p.filter()?;
    let k = &state.kqueen;
    let fetch = |page| k.fleet_images(&actor, &filter, page);
    let (items, total) = match rows_or_csv(&p, fetch, images_csv, "kqueen-images").await? {
        Ok(rows) => rows,
        Err(csv) => return Ok(csv),
    };
    let body = ImagesOut {
        total,
        items: items.into_iter().map(Into::into).collect(),
    };
    json_answer(&p, body, "kqueen-images.json")
}

fn json_answer<T: Serialize>(p: &FleetParams, body: T, file: &str) -> ApiResult<Response> {
    if p.download == Some(true) {
        let text = serde_json::to_string_pretty(&body)
            .map_err(|e| Error::Corrupt(format!("cannot encode the export: {e}")))?;
        return Ok(download(text, "application/json", file));
    }
    Ok(Json(body).into_response())
}

/// One image in one cluster: since when it runs there and when a sync last saw it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImageHistoryOut {
    pub cluster_id: String,
    pub cluster: String,
    pub tenant: String,
    /// `registry/repository[:tag][@digest]`.
    pub image: String,
    pub digest: Option<String>,
    /// Start of the current period (an image that was gone and came back starts anew).
    pub first_seen: String,
    pub last_seen: String,
    /// Whether the last good sync saw it.
    pub present: bool,
}

impl From<ImageHistoryRow> for ImageHistoryOut {
    fn from(h: ImageHistoryRow) -> Self {
        Self {
            cluster_id: h.cluster_id.to_string(),
            cluster: h.cluster,
            tenant: h.tenant,
            image: h.image,
            digest: h.digest,
            first_seen: h.first_seen.to_rfc3339(),
            last_seen: h.last_seen.to_rfc3339(),
            present: h.present,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ImageHistoryPageOut {
    pub total: u64,
    pub items: Vec<ImageHistoryOut>,
}

/// The image history of the visible clusters, gone images included: per cluster and image,
/// first and last seen ("since when does cluster X run image Y"); `q` searches the reference.
#[utoipa::path(get, path = "/api/v1/fleet/images/history", tag = "fleet", params(FleetParams),
    responses((status = 200, body = ImageHistoryPageOut, description = "JSON, or CSV with format=csv"),
        (status = 400, body = ErrorOut)))]
pub async fn image_history(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiQuery(p): ApiQuery<FleetParams>,
) -> ApiResult<Response> {
    let filter = p.filter()?;
    let k = &state.kqueen;
    let fetch = |page| k.fleet_image_history(&actor, &filter, page);
    let (items, total) = match rows_or_csv(&p, fetch, history_csv, "kqueen-image-history").await? {
        Ok(rows) => rows,
        Err(csv) => return Ok(csv),
    };
    let body = ImageHistoryPageOut {
        total,
        items: items.into_iter().map(Into::into).collect(),
    };
    json_answer(&p, body, "kqueen-image-history.json")
}

#[derive(Debug, Serialize, ToSchema)]
pub struct VersionOut {
    pub cluster_id: String,
    pub cluster: String,
    pub tenant: String,
    pub api_version: Option<String>,
    pub synced_at: Option<String>,
    pub node: Option<String>,
    pub kubelet_version: Option<String>,
    pub container_runtime: Option<String>,
    pub os_image: Option<String>,
    pub kernel_version: Option<String>,
    pub ready: Option<bool>,
}

impl From<VersionRow> for VersionOut {
    fn from(v: VersionRow) -> Self {
        Self {
            cluster_id: v.cluster_id.to_string(),
            cluster: v.cluster,
            tenant: v.tenant,
            api_version: v.api_version,
            synced_at: time(v.synced_at),
            node: v.node,
            kubelet_version: v.kubelet_version,
            container_runtime: v.container_runtime,
            os_image: v.os_image,
            kernel_version: v.kernel_version,
            ready: v.ready,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct VersionsOut {
    pub total: u64,
    pub items: Vec<VersionOut>,
}

/// API server and kubelet versions of every visible cluster and node (a cluster without
/// synced nodes has one row with empty node fields).
#[utoipa::path(get, path = "/api/v1/fleet/versions", tag = "fleet", params(FleetParams),
    responses((status = 200, body = VersionsOut, description = "JSON, or CSV with format=csv"),
        (status = 400, body = ErrorOut)))]
pub async fn versions(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiQuery(p): ApiQuery<FleetParams>,
) -> ApiResult<Response> {
    let filter = p.filter()?;
    let k = &state.kqueen;
    let fetch = |page| k.fleet_versions(&actor, &filter, page);
    let (items, total) = match rows_or_csv(&p, fetch, versions_csv, "kqueen-versions").await? {
        Ok(rows) => rows,
        Err(csv) => return Ok(csv),
    };
    let body = VersionsOut {
        total,
        items: items.into_iter().map(Into::into).collect(),
    };
    json_answer(&p, body, "kqueen-versions.json")
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FindingRowOut {
    pub cluster_id: String,
    pub cluster: String,
    pub tenant: String,
    #[serde(flatten)]
    pub finding: FindingOut,
}

impl From<FindingRow> for FindingRowOut {
    fn from(r: FindingRow) -> Self {
        Self {
            cluster_id: r.cluster_id.to_string(),
            cluster: r.cluster,
            tenant: r.tenant,
            finding: r.finding.into(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FindingCountOut {
    pub severity: String,
    pub check: String,
    pub count: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FindingsOut {
    pub total: u64,
    /// Per severity and check, over the filter without its severity and check.
    pub counts: Vec<FindingCountOut>,
    pub items: Vec<FindingRowOut>,
}

/// Findings of the audit checks in the visible clusters, most severe first.
#[utoipa::path(get, path = "/api/v1/fleet/findings", tag = "fleet", params(FleetParams),
    responses((status = 200, body = FindingsOut, description = "JSON, or CSV with format=csv"),
        (status = 400, body = ErrorOut)))]
pub async fn findings(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiQuery(p): ApiQuery<FleetParams>,
) -> ApiResult<Response> {
    let filter = p.filter()?;
    let k = &state.kqueen;
    // Rows (a page or everything), then the counts of the whole filter.
    let fetch = |page| k.fleet_findings(&actor, &filter, page);
    let (rows, total) = match rows_or_csv(&p, fetch, findings_csv, "kqueen-findings").await? {
        Ok(rows) => rows,
        Err(csv) => return Ok(csv),
    };
    let counts = k.fleet_finding_counts(&actor, &filter).await?;
    let body = FindingsOut {
        total,
        counts: counts
            .into_iter()
            .map(|c| FindingCountOut {
                severity: c.severity.as_str().to_owned(),
                check: c.check,
                count: c.count,
            })
            .collect(),
        items: rows.into_iter().map(Into::into).collect(),
    };
    json_answer(&p, body, "kqueen-findings.json")
}
