//! Form routes of the token, tenant and member pages.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::post;
use axum::{Extension, Form, Router};
use kqueen_app::account::sfn::FLASH_SECRET;
use kqueen_core::identity::Role;
use kqueen_core::tenant::NewTenant;
use kqueen_core::{Actor, Error};
use serde::Deserialize;
use tower_sessions::Session;
use uuid::Uuid;

use super::back;
use crate::escape::query_escape;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/account/tokens", post(create_token))
        .route("/account/tokens/revoke", post(revoke_token))
        .route("/admin/tenants", post(create_tenant))
        .route("/tenants/{slug}/members", post(put_member))
        .route("/tenants/{slug}/members/remove", post(remove_member))
}

#[derive(Deserialize)]
pub struct TokenForm {
    name: String,
    days: Option<String>,
}

async fn create_token(
    State(state): State<AppState>,
    session: Session,
    Extension(actor): Extension<Actor>,
    Form(form): Form<TokenForm>,
) -> Response {
    let days = form
        .days
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .unwrap_or("90");
    let Ok(days) = days.parse::<u32>() else {
        return back(
            "/tokens",
            Err(kqueen_core::ValidationError::new("days", "must be a number").into()),
        );
    };
    let result = match state.kqueen.create_token(&actor, &form.name, days).await {
        // Shown once, on the next page.
        Ok(issued) => session
            .insert(FLASH_SECRET, issued.secret)
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "cannot keep the new token for display");
                Error::Corrupt("session".into())
            }),
        Err(e) => Err(e),
    };
    back("/tokens", result)
}

#[derive(Deserialize)]
pub struct RevokeForm {
    id: String,
}

async fn revoke_token(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Form(form): Form<RevokeForm>,
) -> Response {
    let result = match Uuid::parse_str(form.id.trim()) {
        Ok(id) => state.kqueen.revoke_token(&actor, id).await,
        Err(_) => Err(Error::NotFound("token")),
    };
    back("/tokens", result)
}

#[derive(Deserialize)]
pub struct TenantForm {
    slug: String,
    display_name: Option<String>,
}

async fn create_tenant(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Form(form): Form<TenantForm>,
) -> Response {
    let input = NewTenant {
        slug: form.slug,
        display_name: form.display_name,
    };
    match state.kqueen.create_tenant(&actor, input).await {
        Ok(t) => Redirect::to(&format!("/tenants/{}", t.slug)).into_response(),
        Err(e) => back("/admin", Err(e)),
    }
}

#[derive(Deserialize)]
pub struct MemberForm {
    username: String,
    role: Option<String>,
}

async fn put_member(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(slug): Path<String>,
    Form(form): Form<MemberForm>,
) -> Response {
    let page = format!("/tenants/{}", query_escape(&slug));
    let result = match Role::parse(form.role.as_deref().unwrap_or("member")) {
        Ok(role) => {
            state
                .kqueen
                .put_member(&actor, &slug, form.username.trim(), role)
                .await
        }
        Err(e) => Err(e.into()),
    };
    back(&page, result)
}

async fn remove_member(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(slug): Path<String>,
    Form(form): Form<MemberForm>,
) -> Response {
    let page = format!("/tenants/{}", query_escape(&slug));
    back(
        &page,
        state
            .kqueen
            .remove_member(&actor, &slug, form.username.trim())
            .await,
    )
}
