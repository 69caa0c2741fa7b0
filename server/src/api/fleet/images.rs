//! Every container image of the fleet with where it runs, and each image's history.

use axum::extract::State;
use axum::response::Response;
use axum::Extension;
use kqueen_core::inventory::fleet::{ImageHistoryRow, ImageUsage};
use kqueen_core::{Actor, ImageRow};
use serde::Serialize;
use utoipa::ToSchema;

use super::{list_answer, time, FleetParams};
use crate::api::{ApiQuery, ApiResult, ErrorOut};
use crate::state::AppState;
use kqueen_core::inventory::export::{history_csv, images_csv};

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
    responses((status = 200, description = "JSON, or CSV (one row per usage) with format=csv",
        content((ImagesOut = "application/json"), (String = "text/csv"))),
        (status = 400, body = ErrorOut)))]
pub async fn images(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiQuery(p): ApiQuery<FleetParams>,
) -> ApiResult<Response> {
    let filter = p.filter()?;
    let fetch = |page| state.kqueen.fleet().fleet_images(&actor, &filter, page);
    list_answer(&p, fetch, images_csv, "kqueen-images", |total, items| {
        ImagesOut { total, items }
    })
    .await
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
    responses((status = 200, description = "JSON, or CSV with format=csv",
        content((ImageHistoryPageOut = "application/json"), (String = "text/csv"))),
        (status = 400, body = ErrorOut)))]
pub async fn image_history(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiQuery(p): ApiQuery<FleetParams>,
) -> ApiResult<Response> {
    let filter = p.filter()?;
    let fetch = |page| {
        state
            .kqueen
            .fleet()
            .fleet_image_history(&actor, &filter, page)
    };
    list_answer(
        &p,
        fetch,
        history_csv,
        "kqueen-image-history",
        |total, items| ImageHistoryPageOut { total, items },
    )
    .await
}
