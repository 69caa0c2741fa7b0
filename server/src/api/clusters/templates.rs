//! Templates: a provider plus refinements of its cluster parameters.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use kqueen_core::page::Page;
use kqueen_core::Actor;

use super::dto::TemplateOut;
use super::template_in::{TemplateIn, TemplateQuery};
use crate::api::{ApiJson, ApiQuery, ApiResult, ErrorOut};
use crate::state::AppState;

/// Templates: all (operators), or those offered to `tenant`.
#[utoipa::path(get, path = "/api/v1/templates", tag = "templates", params(TemplateQuery),
    responses((status = 200, body = Vec<TemplateOut>), (status = 403, body = ErrorOut),
              (status = 404, body = ErrorOut, description = "No such tenant")))]
pub async fn list_templates(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiQuery(q): ApiQuery<TemplateQuery>,
) -> ApiResult<Json<Vec<TemplateOut>>> {
    let list = state
        .kqueen
        .catalog()
        .list_templates(&actor, q.tenant.as_deref(), Page::new(Page::MAX_LIMIT, 0))
        .await?;
    Ok(Json(list.into_iter().map(Into::into).collect()))
}

#[utoipa::path(post, path = "/api/v1/templates", tag = "templates", request_body = TemplateIn,
    responses((status = 201, body = TemplateOut), (status = 400, body = ErrorOut),
              (status = 403, body = ErrorOut),
              (status = 404, body = ErrorOut, description = "No such provider or tenant"),
              (status = 409, body = ErrorOut)))]
pub async fn create_template(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiJson(input): ApiJson<TemplateIn>,
) -> ApiResult<(StatusCode, Json<TemplateOut>)> {
    let t = state
        .kqueen
        .catalog()
        .create_template(&actor, input.into())
        .await?;
    Ok((StatusCode::CREATED, Json(t.into())))
}

#[utoipa::path(get, path = "/api/v1/templates/{name}", tag = "templates", params(("name" = String, Path, format = "dns-label", max_length = 63)),
    responses((status = 200, body = TemplateOut), (status = 404, body = ErrorOut)))]
pub async fn get_template(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(name): Path<String>,
) -> ApiResult<Json<TemplateOut>> {
    Ok(Json(
        state.kqueen.catalog().template(&actor, &name).await?.into(),
    ))
}

#[utoipa::path(put, path = "/api/v1/templates/{name}", tag = "templates", params(("name" = String, Path, format = "dns-label", max_length = 63)),
    request_body = TemplateIn,
    responses((status = 200, body = TemplateOut), (status = 400, body = ErrorOut),
              (status = 404, body = ErrorOut), (status = 409, body = ErrorOut)))]
pub async fn update_template(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(name): Path<String>,
    ApiJson(input): ApiJson<TemplateIn>,
) -> ApiResult<Json<TemplateOut>> {
    let t = state
        .kqueen
        .catalog()
        .update_template(&actor, &name, input.into())
        .await?;
    Ok(Json(t.into()))
}

#[utoipa::path(delete, path = "/api/v1/templates/{name}", tag = "templates", params(("name" = String, Path, format = "dns-label", max_length = 63)),
    responses((status = 204), (status = 404, body = ErrorOut)))]
pub async fn delete_template(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    state
        .kqueen
        .catalog()
        .delete_template(&actor, &name)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
