//! Worker nodes of hosted clusters: the `kubeadm join` command with a bootstrap token, and
//! revoking a token.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use kqueen_core::Actor;

use crate::api::{ApiResult, ErrorOut};
use crate::state::AppState;

pub use kqueen_dto::clusters::Join as JoinOut;

/// The `kubeadm join` command for a worker node of a hosted cluster, with a bootstrap token
/// valid for a day (the same token while it has an hour or more left). Audited.
#[utoipa::path(get, path = "/api/v1/clusters/{id}/join", tag = "clusters", params(("id" = uuid::Uuid, Path)),
    responses((status = 200, body = JoinOut), (status = 403, body = ErrorOut),
              (status = 404, body = ErrorOut), (status = 409, body = ErrorOut)))]
pub async fn join_info(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> ApiResult<impl axum::response::IntoResponse> {
    let info = state.kqueen.clusters().join_info(&actor, &id).await?;
    // It carries a credential: never kept by caches.
    let no_store = [(axum::http::header::CACHE_CONTROL, "no-store")];
    Ok((no_store, Json(JoinOut::from(info))))
}

/// Revokes a join token: machines that have not joined cannot join with it any more.
#[utoipa::path(delete, path = "/api/v1/clusters/{id}/join/{token_id}", tag = "clusters",
    params(("id" = uuid::Uuid, Path), ("token_id" = String, Path)),
    responses((status = 204), (status = 400, body = ErrorOut), (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut)))]
pub async fn revoke_join_token(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((id, token_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let existed = state
        .kqueen
        .clusters()
        .revoke_join_token(&actor, &id, &token_id)
        .await?;
    Ok(if existed {
        StatusCode::NO_CONTENT
    } else {
        StatusCode::NOT_FOUND
    })
}
