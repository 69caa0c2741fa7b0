//! The credential kubectl's plugin (`kqueen get-token`) fetches instead of a kubeconfig.

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use kqueen_core::Actor;
use kqueen_dto::credentials::Credential;

use crate::api::{ApiResult, ErrorOut};
use crate::state::AppState;

/// The caller's credential for a cluster, for kubectl's credential plugin: where the API
/// server is and a fresh token of the caller's own ServiceAccount (tenant members, exactly
/// what a kubeconfig download holds), or the cluster's admin token or client certificate
/// (operators). Ask again at `expires_at`. Audited like a kubeconfig download.
#[utoipa::path(post, path = "/api/v1/clusters/{id}/credential", tag = "clusters",
    params(("id" = uuid::Uuid, Path)),
    responses((status = 200, body = Credential), (status = 404, body = ErrorOut),
        (status = 409, body = ErrorOut, description = "Not Ready, or a credential that only \
            works where it was configured")))]
pub async fn credential(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let credential = state.kqueen.access().credential(&actor, &id).await?;
    Ok((
        [(header::CACHE_CONTROL, "no-store")],
        Json(Credential::from(credential)),
    )
        .into_response())
}
