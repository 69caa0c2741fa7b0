//! Production clusters and the two-person rule: marking a cluster production, asking for a
//! second person's approval of a delete, a restore over it or taking the mark off, and
//! approving (the action then runs), refusing or withdrawing such a request. The wire types
//! are `kqueen_dto::approvals`, shared with the portal.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use kqueen_core::Actor;
use kqueen_dto::approvals::{Approval, ApprovalRefusal, ApprovalRequest, ProductionMark};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::api::clusters::ClusterOut;
use crate::api::extract::ApiQuery;
use crate::api::{ApiJson, ApiResult, ErrorOut};
use crate::state::AppState;

/// Marks a cluster production (tenant admins and operators): from then on deleting it,
/// restoring a backup over it and taking the mark off need a second person's approval, and
/// its time-to-live no longer deletes it. `production: false` on a production cluster
/// answers 409: ask for approval with action `unprotect`.
#[utoipa::path(put, path = "/api/v1/clusters/{id}/production", tag = "approvals",
    params(("id" = uuid::Uuid, Path)), request_body = ProductionMark,
    responses((status = 200, body = ClusterOut), (status = 403, body = ErrorOut),
              (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "Taking the mark off needs approval")))]
pub async fn put_production(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<ProductionMark>,
) -> ApiResult<Json<ClusterOut>> {
    let cluster = state
        .kqueen
        .approvals()
        .set_production(&actor, &id, input.production)
        .await?;
    Ok(Json(cluster.into()))
}

/// A cluster's requests for approval, newest first (anyone who sees the cluster).
#[utoipa::path(get, path = "/api/v1/clusters/{id}/approvals", tag = "approvals",
    params(("id" = uuid::Uuid, Path)),
    responses((status = 200, body = Vec<Approval>), (status = 404, body = ErrorOut)))]
pub async fn cluster_approvals(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<Approval>>> {
    let list = state.kqueen.approvals().of_cluster(&actor, &id).await?;
    Ok(Json(list.into_iter().map(Into::into).collect()))
}

/// Asks for a second person's approval of an action on a production cluster: `delete`
/// (whoever may delete the tenant's clusters), `restore` of `backup` (whoever may restore
/// it into this cluster; checked now as the restore will be) or `unprotect` (tenant admins
/// and operators). The request waits 24 hours for an operator or a tenant admin other than
/// you.
#[utoipa::path(post, path = "/api/v1/clusters/{id}/approvals", tag = "approvals",
    params(("id" = uuid::Uuid, Path)), request_body = ApprovalRequest,
    responses((status = 201, body = Approval),
              (status = 400, body = ErrorOut, description = "An unknown action, a restore without a backup or with a namespace the backup lacks, a reason too long"),
              (status = 403, body = ErrorOut), (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "Not a production cluster, or the same request is pending")))]
pub async fn request_approval(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<ApprovalRequest>,
) -> ApiResult<(StatusCode, Json<Approval>)> {
    let approval = state
        .kqueen
        .approvals()
        .request(&actor, &id, &(&input).into())
        .await?;
    Ok((StatusCode::CREATED, Json(approval.into())))
}

/// Which requests to list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ApprovalParams {
    /// Only those waiting for a decision.
    #[serde(default)]
    pub pending: bool,
}

/// Requests for approval in your tenants (operators: every tenant), newest first (at most
/// 200).
#[utoipa::path(get, path = "/api/v1/approvals", tag = "approvals", params(ApprovalParams),
    responses((status = 200, body = Vec<Approval>), (status = 401, body = ErrorOut)))]
pub async fn list_approvals(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiQuery(params): ApiQuery<ApprovalParams>,
) -> ApiResult<Json<Vec<Approval>>> {
    let list = state
        .kqueen
        .approvals()
        .list(&actor, params.pending)
        .await?;
    Ok(Json(list.into_iter().map(Into::into).collect()))
}

/// One request.
#[utoipa::path(get, path = "/api/v1/approvals/{approval}", tag = "approvals",
    params(("approval" = uuid::Uuid, Path)),
    responses((status = 200, body = Approval), (status = 404, body = ErrorOut)))]
pub async fn get_approval(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(approval): Path<String>,
) -> ApiResult<Json<Approval>> {
    let found = state.kqueen.approvals().get(&actor, &approval).await?;
    Ok(Json(found.into()))
}

/// Approves a pending request (an operator or a tenant admin other than the one who asked):
/// its action runs at once, as yours. Answers with the request as it ends: `approved` with
/// the operation it queued, or `failed` with why the action could not run.
#[utoipa::path(post, path = "/api/v1/approvals/{approval}/approve", tag = "approvals",
    params(("approval" = uuid::Uuid, Path)),
    responses((status = 200, body = Approval),
              (status = 403, body = ErrorOut, description = "Not an operator or admin of the tenant, or the one who asked"),
              (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "Decided already, expired, or its cluster is gone")))]
pub async fn approve(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(approval): Path<String>,
) -> ApiResult<Json<Approval>> {
    let done = state.kqueen.approvals().approve(&actor, &approval).await?;
    Ok(Json(done.into()))
}

/// Refuses a pending request (an operator or a tenant admin), or withdraws it (the one who
/// asked).
#[utoipa::path(post, path = "/api/v1/approvals/{approval}/refuse", tag = "approvals",
    params(("approval" = uuid::Uuid, Path)), request_body = ApprovalRefusal,
    responses((status = 200, body = Approval), (status = 400, body = ErrorOut),
              (status = 403, body = ErrorOut), (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "Decided already, or expired")))]
pub async fn refuse(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(approval): Path<String>,
    ApiJson(input): ApiJson<ApprovalRefusal>,
) -> ApiResult<Json<Approval>> {
    let done = state
        .kqueen
        .approvals()
        .refuse(&actor, &approval, input.reason.as_deref())
        .await?;
    Ok(Json(done.into()))
}
