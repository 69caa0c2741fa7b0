//! whoami, tenants and their members.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use kqueen_core::identity::Role;
use kqueen_core::page::Page;
use kqueen_core::tenant::{NewTenant, TenantFilter};
use kqueen_core::{Actor, Error};
use serde::Deserialize;
use utoipa::IntoParams;

use super::{
    ApiJson, ApiQuery, ApiResult, ErrorOut, MemberIn, MemberOut, TenantIn, TenantOut, WhoAmI,
};
use crate::state::AppState;

/// The caller: name, e-mail, tenants with roles, operator or not.
#[utoipa::path(get, path = "/api/v1/whoami", tag = "identity",
    responses((status = 200, body = WhoAmI), (status = 401, body = ErrorOut)))]
pub async fn whoami(Extension(actor): Extension<Actor>) -> ApiResult<Json<WhoAmI>> {
    let identity = actor.identity().ok_or(Error::Unauthenticated)?;
    Ok(Json(WhoAmI::from(identity)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TenantQuery {
    /// Case-insensitive substring of slug or name.
    q: Option<String>,
    #[param(value_type = Option<u64>, maximum = 4294967295_i64)]
    limit: Option<u32>,
    #[param(value_type = Option<u64>, maximum = 4294967295_i64)]
    offset: Option<u32>,
}

/// Tenants the caller may see (all for operators).
#[utoipa::path(get, path = "/api/v1/tenants", tag = "tenants", params(TenantQuery),
    responses((status = 200, body = Vec<TenantOut>), (status = 401, body = ErrorOut)))]
pub async fn list_tenants(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiQuery(q): ApiQuery<TenantQuery>,
) -> ApiResult<Json<Vec<TenantOut>>> {
    let page = Page::requested(q.limit, q.offset);
    let list = state
        .kqueen
        .tenancy()
        .list_tenants(&actor, &TenantFilter::from_query(q.q.as_deref()), page)
        .await?;
    Ok(Json(list.into_iter().map(TenantOut::from).collect()))
}

/// Creates a tenant (operators).
#[utoipa::path(post, path = "/api/v1/tenants", tag = "tenants", request_body = TenantIn,
    responses((status = 201, body = TenantOut), (status = 400, body = ErrorOut),
        (status = 403, body = ErrorOut), (status = 409, body = ErrorOut)))]
pub async fn create_tenant(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiJson(input): ApiJson<TenantIn>,
) -> ApiResult<(StatusCode, Json<TenantOut>)> {
    let input = NewTenant {
        slug: input.slug,
        display_name: input.display_name,
    };
    let t = state.kqueen.tenancy().create_tenant(&actor, input).await?;
    Ok((StatusCode::CREATED, Json(t.into())))
}

/// One tenant.
#[utoipa::path(get, path = "/api/v1/tenants/{slug}", tag = "tenants",
    params(("slug" = String, Path, format = "dns-label", max_length = 63)),
    responses((status = 200, body = TenantOut), (status = 404, body = ErrorOut)))]
pub async fn get_tenant(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(slug): Path<String>,
) -> ApiResult<Json<TenantOut>> {
    Ok(Json(
        state.kqueen.tenancy().tenant(&actor, &slug).await?.into(),
    ))
}

/// Members of a tenant.
#[utoipa::path(get, path = "/api/v1/tenants/{slug}/members", tag = "tenants",
    params(("slug" = String, Path, format = "dns-label", max_length = 63)),
    responses((status = 200, body = Vec<MemberOut>), (status = 404, body = ErrorOut)))]
pub async fn list_members(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(slug): Path<String>,
) -> ApiResult<Json<Vec<MemberOut>>> {
    let members = state.kqueen.tenancy().members(&actor, &slug).await?;
    Ok(Json(members.into_iter().map(MemberOut::from).collect()))
}

/// Adds a user to a tenant or changes their role (tenant admins, operators).
#[utoipa::path(put, path = "/api/v1/tenants/{slug}/members/{username}", tag = "tenants",
    params(("slug" = String, Path, format = "dns-label", max_length = 63), ("username" = String, Path, pattern = "^[A-Za-z0-9._@+-]{1,64}$", max_length = 64)), request_body = MemberIn,
    responses((status = 204), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut),
        (status = 404, body = ErrorOut)))]
pub async fn put_member(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((slug, username)): Path<(String, String)>,
    ApiJson(input): ApiJson<MemberIn>,
) -> ApiResult<StatusCode> {
    let role = Role::parse(&input.role).map_err(Error::Invalid)?;
    state
        .kqueen
        .tenancy()
        .put_member(&actor, &slug, &username, role)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Removes a user from a tenant (tenant admins, operators).
#[utoipa::path(delete, path = "/api/v1/tenants/{slug}/members/{username}", tag = "tenants",
    params(("slug" = String, Path, format = "dns-label", max_length = 63), ("username" = String, Path, pattern = "^[A-Za-z0-9._@+-]{1,64}$", max_length = 64)),
    responses((status = 204), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
pub async fn remove_member(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((slug, username)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    state
        .kqueen
        .tenancy()
        .remove_member(&actor, &slug, &username)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
