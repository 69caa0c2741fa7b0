//! The fleet dashboard: tallies and totals of the visible clusters, what needs attention,
//! and one page of the clusters with their figures.

use axum::extract::State;
use axum::{Extension, Json};
use kqueen_core::inventory::fleet::FleetCluster;
use kqueen_core::page::Page;
use kqueen_core::{Actor, Attention, FleetOverview};
use kqueen_dto::clusters::{SharedStorage as SharedStorageOut, TenantStorage as TenantStorageOut};
use serde::Serialize;
use utoipa::ToSchema;

use super::inventory::ResourcesOut;
use super::{time, FleetFilterParams};
use crate::api::{ApiQuery, ApiResult, ErrorOut};
use crate::state::AppState;

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
    /// Operators, hosted clusters: the etcd key space's keys and bytes, last measured, and
    /// whether it may write there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_storage: Option<SharedStorageOut>,
}

impl From<&FleetCluster> for FleetClusterOut {
    fn from(c: &FleetCluster) -> Self {
        Self {
            id: c.id.to_string(),
            name: c.name.clone(),
            tenant: c.tenant.clone(),
            state: c.state.as_str().to_owned(),
            provider: c.provider.clone(),
            api_version: c.api_version.clone(),
            synced_at: time(c.synced_at),
            sync_error: c.sync_error.clone(),
            nodes: c.nodes,
            nodes_ready: c.nodes_ready,
            capacity: c.capacity.into(),
            allocatable: c.allocatable.into(),
            requested: c.requested.into(),
            used: c.used.map(Into::into),
            shared_storage: c.shared_storage.map(Into::into),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CountOut {
    pub label: String,
    pub count: u64,
}

fn counts(t: &[(String, u64)]) -> Vec<CountOut> {
    t.iter()
        .map(|(label, count)| CountOut {
            label: label.clone(),
            count: *count,
        })
        .collect()
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AttentionOut {
    pub cluster: FleetClusterOut,
    pub reasons: Vec<String>,
}

/// A cluster of the page, its fields as in `FleetClusterOut`, with why it needs attention
/// (empty when it does not).
#[derive(Debug, Serialize, ToSchema)]
pub struct FleetItemOut {
    #[serde(flatten)]
    pub cluster: FleetClusterOut,
    pub reasons: Vec<String>,
}

impl From<&Attention> for FleetItemOut {
    fn from(a: &Attention) -> Self {
        Self {
            cluster: (&a.cluster).into(),
            reasons: a.reasons.clone(),
        }
    }
}

impl From<&Attention> for AttentionOut {
    fn from(a: &Attention) -> Self {
        Self {
            cluster: (&a.cluster).into(),
            reasons: a.reasons.clone(),
        }
    }
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
    /// The highest version any synced cluster's API server reports, as reported
    /// (`v1.33.2`); null until a cluster was synced. Shown only: nothing is measured against it.
    #[schema(example = "v1.33.2")]
    pub newest_running: Option<String>,
    /// The newest minor version offered by a template, or the configured minimum
    /// (`KQUEEN_MIN_KUBERNETES_VERSION`) when newer; null when no template offers a version and
    /// no minimum is set. A cluster older than it needs attention ("… is behind 1.34, the
    /// newest offered").
    #[schema(example = "1.34")]
    pub newest_offered: Option<String>,
    /// The first clusters needing attention (up to 20), by tenant and name; page through
    /// all of them with `attention=true`.
    pub attention: Vec<AttentionOut>,
    /// How many clusters need attention.
    pub attention_total: u64,
    /// One page of the clusters (with `attention=true`, of those needing attention), by
    /// tenant and name, each with why it needs attention (empty when it does not).
    pub items: Vec<FleetItemOut>,
    /// How many clusters the page is of.
    pub total: u64,
    pub limit: u32,
    pub offset: u32,
    /// Operators: per tenant with hosted clusters, its shared etcd usage against its quota
    /// (`max_shared_storage_bytes`). Empty for everyone else.
    pub storage: Vec<TenantStorageOut>,
}

impl FleetOut {
    fn new(o: &FleetOverview, page: Page) -> Self {
        Self {
            clusters: o.totals.clusters,
            nodes: o.totals.nodes,
            nodes_ready: o.totals.nodes_ready,
            capacity: o.totals.capacity.into(),
            allocatable: o.totals.allocatable.into(),
            requested: o.totals.requested.into(),
            used: o.totals.used.map(Into::into),
            by_state: counts(&o.by_state),
            by_provider: counts(&o.by_provider),
            by_version: counts(&o.by_version),
            newest_running: o.newest_running.clone(),
            newest_offered: o.newest_offered.clone(),
            attention: o.attention.iter().map(Into::into).collect(),
            attention_total: o.attention_total,
            items: o.clusters.iter().map(Into::into).collect(),
            total: o.clusters_total,
            limit: page.limit(),
            offset: page.offset(),
            storage: o.storage.iter().map(Into::into).collect(),
        }
    }
}

/// The fleet dashboard's figures: clusters by state, provider and version, node totals, the
/// clusters needing attention, and one page of the clusters. Operators see all, with each
/// hosted cluster's shared etcd usage and each tenant's usage against its quota; tenant
/// admins their tenants.
#[utoipa::path(get, path = "/api/v1/fleet", tag = "fleet", params(FleetFilterParams),
    responses((status = 200, body = FleetOut), (status = 403, body = ErrorOut)))]
pub async fn overview(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiQuery(p): ApiQuery<FleetFilterParams>,
) -> ApiResult<Json<FleetOut>> {
    let filter = p.filter()?;
    let page = Page::requested(p.limit, p.offset);
    let attention = p.attention.unwrap_or(false);
    let o = state
        .kqueen
        .fleet()
        .fleet_overview(&actor, &filter, attention, page)
        .await?;
    Ok(Json(FleetOut::new(&o, page)))
}
