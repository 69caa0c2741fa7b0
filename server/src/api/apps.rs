//! Applications: the versions deployed into a cluster, the dry run of a deploy, the deploy
//! itself and a version's removal (both queued: 202 with the operation), and a version's live
//! rollout status. The wire types are `kqueen_dto::apps`, shared with the portal.
//!
//! Manifests may be up to 1 MiB (the core's `ManifestLimits`); the API's body limit is 2 MiB
//! (`routes::BODY_LIMIT`), so a 1 MiB manifest fits even with JSON's escapes, and a larger
//! body is refused with 413 in the API's error shape before any handler runs.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use kqueen_core::Actor;
use kqueen_dto::apps::{Application, ApplicationStatus, DeployPreview, DeployRequest};
use kqueen_dto::clusters::Operation as OperationOut;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::{ApiJson, ApiResult, ErrorOut};
use crate::state::AppState;

/// A queued deploy: the version (state `deploying`) and the operation that deploys it; follow
/// it at `/api/v1/clusters/{id}/apps/{app}` until `deployed` or `failed`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DeployAccepted {
    pub application: Application,
    pub operation: OperationOut,
}

/// The versions deployed in a cluster, oldest first.
#[utoipa::path(get, path = "/api/v1/clusters/{id}/apps", tag = "applications",
    params(("id" = uuid::Uuid, Path)),
    responses((status = 200, body = Vec<Application>), (status = 404, body = ErrorOut)))]
pub async fn list_apps(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<Application>>> {
    let apps = state.kqueen.apps().list(&actor, &id).await?;
    Ok(Json(apps.into_iter().map(Into::into).collect()))
}

/// What a deploy would do, from the cluster's server-side dry run with the caller's rights:
/// every object `created`, `changed` (which fields, before and after), `unchanged`, or
/// `pruned` by a re-deploy of the same version. Changes nothing.
#[utoipa::path(post, path = "/api/v1/clusters/{id}/apps/preview", tag = "applications",
    params(("id" = uuid::Uuid, Path)), request_body = DeployRequest,
    responses((status = 200, body = DeployPreview),
              (status = 400, body = ErrorOut, description = "Invalid name, version, namespace or manifests; the message says which and where"),
              (status = 403, body = ErrorOut), (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "The cluster is not Ready, cannot be reached, or refused an object")))]
pub async fn preview_app(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<DeployRequest>,
) -> ApiResult<Json<DeployPreview>> {
    let preview = state
        .kqueen
        .apps()
        .preview(&actor, &id, &input.into())
        .await?;
    Ok(Json(preview.into()))
}

/// Deploys a version (or re-deploys it: what its manifests no longer hold is pruned).
/// Answers at once (202): the deploy runs in the background.
#[utoipa::path(post, path = "/api/v1/clusters/{id}/apps", tag = "applications",
    params(("id" = uuid::Uuid, Path)), request_body = DeployRequest,
    responses((status = 202, body = DeployAccepted),
              (status = 400, body = ErrorOut, description = "Invalid name, version, namespace or manifests; the message says which and where"),
              (status = 403, body = ErrorOut), (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "The cluster is not Ready, cannot be reached, or is busy with another operation")))]
pub async fn deploy_app(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<DeployRequest>,
) -> ApiResult<(StatusCode, Json<DeployAccepted>)> {
    let (app, op) = state
        .kqueen
        .apps()
        .deploy(&actor, &id, &input.into())
        .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(DeployAccepted {
            application: app.into(),
            operation: op.into(),
        }),
    ))
}

/// A version with the live rollout of its workloads, failing pods and warning events (the
/// cluster is asked now; `unreachable` says why when it could not be).
#[utoipa::path(get, path = "/api/v1/clusters/{id}/apps/{app}", tag = "applications",
    params(("id" = uuid::Uuid, Path), ("app" = uuid::Uuid, Path)),
    responses((status = 200, body = ApplicationStatus), (status = 404, body = ErrorOut)))]
pub async fn app_status(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((id, app)): Path<(String, String)>,
) -> ApiResult<Json<ApplicationStatus>> {
    let status = state.kqueen.apps().status(&actor, &id, &app).await?;
    Ok(Json(status.into()))
}

/// Removes a version: every object it created, and its namespace when KQueen made it (in
/// the background; answers with the operation).
#[utoipa::path(delete, path = "/api/v1/clusters/{id}/apps/{app}", tag = "applications",
    params(("id" = uuid::Uuid, Path), ("app" = uuid::Uuid, Path)),
    responses((status = 202, body = OperationOut), (status = 403, body = ErrorOut),
              (status = 404, body = ErrorOut), (status = 409, body = ErrorOut)))]
pub async fn delete_app(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((id, app)): Path<(String, String)>,
) -> ApiResult<(StatusCode, Json<OperationOut>)> {
    let op = state.kqueen.apps().delete(&actor, &id, &app).await?;
    Ok((StatusCode::ACCEPTED, Json(op.into())))
}
