//! A tenant's quota and usage: `GET`/`PUT /api/v1/tenants/{slug}/quota` (tag `tenants`),
//! sent and read as `kqueen_dto::tenants`' (the portal's tenant page sends the same).

use axum::extract::{Path, State};
use axum::{Extension, Json};
use kqueen_core::cluster::Quota;
use kqueen_core::Actor;
pub use kqueen_dto::tenants::{Quota as QuotaIo, QuotaUsage as QuotaOut};

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
    Ok(Json(q.with_usage(u)))
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
