//! Upgrades in waves (rollouts): the plan of one, starting it, the list, one with its
//! clusters, pause, resume and abort. Operators roll out across the fleet, tenant admins
//! across their tenant. The wire types are `kqueen_dto::rollouts`; waves travel numbered
//! from 1, as the reasons and timelines the core writes count them.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use kqueen_core::{Actor, RolloutInput, ValidationError};
use kqueen_dto::rollouts::{Rollout, RolloutDetail, RolloutPlan, RolloutRequest};

use crate::api::{ApiJson, ApiResult, ErrorOut};
use crate::state::AppState;

/// What a rollout of the request would do: its waves in order (production clusters last,
/// the others by tenant and name) and every cluster the filter takes but the rollout leaves
/// out, with why. Nothing is written.
#[utoipa::path(post, path = "/api/v1/rollouts/plan", tag = "rollouts", request_body = RolloutRequest,
    responses((status = 200, body = RolloutPlan),
              (status = 400, body = ErrorOut, description = "target_version or version is not a version, wave_size is not from 1 to 100, no provider has that name, or a text starts or ends with a space"),
              (status = 403, body = ErrorOut, description = "Members; tenant admins without `tenant` (the whole fleet is the operators')"),
              (status = 404, body = ErrorOut, description = "No tenant of that slug among yours")))]
pub async fn plan_rollout(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiJson(input): ApiJson<RolloutRequest>,
) -> ApiResult<Json<RolloutPlan>> {
    let plan = state
        .kqueen
        .rollouts()
        .plan(&actor, &input_of(&input)?)
        .await?;
    Ok(Json(plan.into()))
}

/// Starts a rollout: its plan is recorded and its first wave's upgrades are queued at once;
/// each next wave starts when every cluster of the one before has ended, and the first
/// failure pauses it (the reason says which cluster and why).
#[utoipa::path(post, path = "/api/v1/rollouts", tag = "rollouts", request_body = RolloutRequest,
    responses((status = 201, body = RolloutDetail),
              (status = 400, body = ErrorOut, description = "target_version or version is not a version, wave_size is not from 1 to 100, no provider has that name, or a text starts or ends with a space"),
              (status = 403, body = ErrorOut, description = "Members; tenant admins without `tenant` (the whole fleet is the operators')"),
              (status = 404, body = ErrorOut, description = "No tenant of that slug among yours"),
              (status = 409, body = ErrorOut, description = "No cluster would be upgraded (each left out says why, such as being in another open rollout), or more than 5,000 would")))]
pub async fn start_rollout(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiJson(input): ApiJson<RolloutRequest>,
) -> ApiResult<(StatusCode, Json<RolloutDetail>)> {
    let view = state
        .kqueen
        .rollouts()
        .start(&actor, &input_of(&input)?)
        .await?;
    Ok((StatusCode::CREATED, Json(view.into())))
}

/// The rollouts you manage, newest first (at most 200): every one for operators, those of
/// the tenants you administer for tenant admins.
#[utoipa::path(get, path = "/api/v1/rollouts", tag = "rollouts",
    responses((status = 200, body = Vec<Rollout>),
              (status = 403, body = ErrorOut, description = "Neither an operator nor a tenant admin")))]
pub async fn list_rollouts(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
) -> ApiResult<Json<Vec<Rollout>>> {
    let list = state.kqueen.rollouts().list(&actor).await?;
    Ok(Json(list.into_iter().map(Into::into).collect()))
}

/// One rollout with its clusters (by wave and place) and its progress.
#[utoipa::path(get, path = "/api/v1/rollouts/{id}", tag = "rollouts",
    params(("id" = uuid::Uuid, Path)),
    responses((status = 200, body = RolloutDetail),
              (status = 403, body = ErrorOut, description = "A member of its tenant who is not its admin"),
              (status = 404, body = ErrorOut)))]
pub async fn get_rollout(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> ApiResult<Json<RolloutDetail>> {
    let view = state.kqueen.rollouts().get(&actor, &id).await?;
    Ok(Json(view.into()))
}

/// Pauses a running rollout: upgrades under way finish, no new one starts.
#[utoipa::path(post, path = "/api/v1/rollouts/{id}/pause", tag = "rollouts",
    params(("id" = uuid::Uuid, Path)),
    responses((status = 200, body = RolloutDetail), (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "It is not running")))]
pub async fn pause_rollout(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> ApiResult<Json<RolloutDetail>> {
    let view = state.kqueen.rollouts().pause(&actor, &id).await?;
    Ok(Json(view.into()))
}

/// Resumes a paused rollout: its failed clusters that are Ready again are tried again (the
/// others stay failed), and the waves go on.
#[utoipa::path(post, path = "/api/v1/rollouts/{id}/resume", tag = "rollouts",
    params(("id" = uuid::Uuid, Path)),
    responses((status = 200, body = RolloutDetail), (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "It is not paused")))]
pub async fn resume_rollout(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> ApiResult<Json<RolloutDetail>> {
    let view = state.kqueen.rollouts().resume(&actor, &id).await?;
    Ok(Json(view.into()))
}

/// Aborts a running or paused rollout for good: upgrades under way finish, the clusters
/// still waiting are skipped.
#[utoipa::path(post, path = "/api/v1/rollouts/{id}/abort", tag = "rollouts",
    params(("id" = uuid::Uuid, Path)),
    responses((status = 200, body = RolloutDetail), (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "It has ended already")))]
pub async fn abort_rollout(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> ApiResult<Json<RolloutDetail>> {
    let view = state.kqueen.rollouts().abort(&actor, &id).await?;
    Ok(Json(view.into()))
}

/// The request as the core takes it. Texts are taken exactly as given, as names are
/// everywhere in the API (the core would trim them: " 1.21" is refused here instead).
fn input_of(r: &RolloutRequest) -> Result<RolloutInput, kqueen_core::Error> {
    let texts = [
        ("tenant", r.tenant.as_deref()),
        ("provider", r.provider.as_deref()),
        ("version", r.version.as_deref()),
        ("target_version", Some(r.target_version.as_str())),
    ];
    for (field, text) in texts {
        if text.is_some_and(|t| t.trim() != t) {
            return Err(ValidationError::new(field, "must not start or end with a space").into());
        }
    }
    Ok(RolloutInput {
        tenant: r.tenant.clone(),
        provider: r.provider.clone(),
        version: r.version.clone(),
        target_version: r.target_version.clone(),
        wave_size: r.wave_size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_taken_exactly_as_given() {
        let ok = RolloutRequest {
            tenant: Some(String::new()),
            target_version: "1.21".into(),
            wave_size: 2,
            ..RolloutRequest::default()
        };
        assert!(input_of(&ok).is_ok());
        let spaced = RolloutRequest {
            version: Some("1.20 ".into()),
            ..ok
        };
        let e = input_of(&spaced).err().map(|e| e.public().message);
        assert_eq!(
            e.as_deref(),
            Some("version: must not start or end with a space")
        );
    }
}
