//! A cluster's autoscaling: see it, turn it on or change it, turn it off.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use kqueen_core::autoscale::AutoscaleSettings;
use kqueen_core::Actor;
use kqueen_dto::autoscaling::{Autoscaling, AutoscalingInput};

use super::{ApiJson, ApiResult, ErrorOut};
use crate::state::AppState;

/// A cluster's autoscaling (`settings` null when it is off), its last decision, and its node
/// counts over the last seven days: anyone who sees the cluster.
#[utoipa::path(get, path = "/api/v1/clusters/{id}/autoscaling", tag = "clusters",
    params(("id" = uuid::Uuid, Path)),
    responses((status = 200, body = Autoscaling), (status = 404, body = ErrorOut)))]
pub async fn get_autoscaling(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> ApiResult<Json<Autoscaling>> {
    let view = state.kqueen.autoscaler().view(&actor, &id).await?;
    Ok(Json(view.into()))
}

/// Turns a cluster's autoscaling on, or changes it (operators and the tenant's admins). Pods
/// the scheduler cannot place make KQueen scale the cluster up within `max_nodes`; a node
/// underused for long enough is drained and removed, never below `min_nodes`. Each decision
/// is on the cluster's timeline; the tenant's node quota is never exceeded.
#[utoipa::path(put, path = "/api/v1/clusters/{id}/autoscaling", tag = "clusters",
    params(("id" = uuid::Uuid, Path)), request_body = AutoscalingInput,
    responses((status = 200, body = Autoscaling),
              (status = 400, body = ErrorOut, description = "A figure out of range, a bound the template does not allow, or a tenant admin's maximum beyond the node quota"),
              (status = 403, body = ErrorOut), (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "The cluster's provider cannot scale")))]
pub async fn put_autoscaling(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<AutoscalingInput>,
) -> ApiResult<Json<Autoscaling>> {
    let autoscaler = state.kqueen.autoscaler();
    autoscaler
        .set(&actor, &id, AutoscaleSettings::from(&input))
        .await?;
    Ok(Json(autoscaler.view(&actor, &id).await?.into()))
}

/// Turns a cluster's autoscaling off; its node count stays as it is.
#[utoipa::path(delete, path = "/api/v1/clusters/{id}/autoscaling", tag = "clusters",
    params(("id" = uuid::Uuid, Path)),
    responses((status = 204), (status = 403, body = ErrorOut),
              (status = 404, body = ErrorOut, description = "No such cluster, or its autoscaling is off")))]
pub async fn delete_autoscaling(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    state.kqueen.autoscaler().disable(&actor, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
