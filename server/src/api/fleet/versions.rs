//! The Kubernetes versions of all clusters.

use axum::extract::State;
use axum::response::Response;
use axum::Extension;
use kqueen_core::inventory::fleet::VersionRow;
use kqueen_core::Actor;
use serde::Serialize;
use utoipa::ToSchema;

use super::{list_answer, time, FleetParams};
use crate::api::{ApiQuery, ApiResult, ErrorOut};
use crate::state::AppState;
use kqueen_core::inventory::export::versions_csv;

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
    responses((status = 200, description = "JSON, or CSV with format=csv",
        content((VersionsOut = "application/json"), (String = "text/csv"))),
        (status = 400, body = ErrorOut)))]
pub async fn versions(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiQuery(p): ApiQuery<FleetParams>,
) -> ApiResult<Response> {
    let filter = p.filter()?;
    let fetch = |page| state.kqueen.fleet().fleet_versions(&actor, &filter, page);
    list_answer(
        &p,
        fetch,
        versions_csv,
        "kqueen-versions",
        |total, items| VersionsOut { total, items },
    )
    .await
}
