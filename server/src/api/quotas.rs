//! A tenant's quota and usage: `GET`/`PUT /api/v1/tenants/{slug}/quota` (tag `tenants`),
//! with their wire types.

use axum::extract::{Path, State};
use axum::{Extension, Json};
use kqueen_core::cluster::Quota;
use kqueen_core::Actor;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::{ApiJson, ApiResult, ErrorOut};
use crate::state::AppState;

/// A tenant's quota and usage.
#[utoipa::path(get, path = "/api/v1/tenants/{slug}/quota", tag = "tenants", params(("slug" = String, Path, format = "dns-label", max_length = 63)),
    responses((status = 200, body = QuotaOut), (status = 404, body = ErrorOut)))]
pub async fn get_quota(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(slug): Path<String>,
) -> ApiResult<Json<QuotaOut>> {
    let (q, u) = state.kqueen.tenancy().quota(&actor, &slug).await?;
    Ok(Json(QuotaOut {
        quota: q.into(),
        used_clusters: u.clusters,
        used_nodes: u.nodes,
        used_shared_storage_bytes: u.shared_storage_bytes,
    }))
}

/// Sets a tenant's quota (operators); `null` means unlimited / no time-to-live.
#[utoipa::path(put, path = "/api/v1/tenants/{slug}/quota", tag = "tenants", params(("slug" = String, Path, format = "dns-label", max_length = 63)),
    request_body = QuotaIo,
    responses((status = 200, body = QuotaIo), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut)))]
pub async fn put_quota(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(slug): Path<String>,
    ApiJson(q): ApiJson<QuotaIo>,
) -> ApiResult<Json<QuotaIo>> {
    let quota = Quota::from(&q);
    state
        .kqueen
        .tenancy()
        .set_quota(&actor, &slug, quota)
        .await?;
    Ok(Json(q))
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct QuotaIo {
    /// Empty: unlimited.
    #[schema(minimum = 1, maximum = 100000)]
    pub max_clusters: Option<u32>,
    /// Empty: unlimited.
    #[schema(minimum = 1, maximum = 1000000)]
    pub max_nodes: Option<u32>,
    /// Hours a cluster lives before it is deleted (up to ten years); empty: for ever.
    #[schema(minimum = 1, maximum = 87600)]
    pub cluster_ttl_hours: Option<u32>,
    /// Bytes (1 to 2^50) the tenant's hosted clusters may keep in the shared etcd; over it,
    /// the next inventory round makes them read-only there until the tenant is under again.
    #[schema(example = 1073741824, minimum = 1, maximum = 1125899906842624_i64)]
    pub max_shared_storage_bytes: Option<u64>,
}

impl From<Quota> for QuotaIo {
    fn from(q: Quota) -> Self {
        Self {
            max_clusters: q.max_clusters,
            max_nodes: q.max_nodes,
            cluster_ttl_hours: q.cluster_ttl_hours,
            max_shared_storage_bytes: q.max_shared_storage_bytes,
        }
    }
}

impl From<&QuotaIo> for Quota {
    fn from(q: &QuotaIo) -> Self {
        Self {
            max_clusters: q.max_clusters,
            max_nodes: q.max_nodes,
            cluster_ttl_hours: q.cluster_ttl_hours,
            max_shared_storage_bytes: q.max_shared_storage_bytes,
        }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct QuotaOut {
    #[serde(flatten)]
    pub quota: QuotaIo,
    pub used_clusters: u32,
    pub used_nodes: u32,
    /// Bytes its clusters keep in the shared etcd, as last measured.
    pub used_shared_storage_bytes: u64,
}
