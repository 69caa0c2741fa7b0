//! The caller's personal API tokens.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use kqueen_core::{Actor, Error, ValidationError};
use uuid::Uuid;

use super::{ApiJson, ApiResult, ErrorOut, TokenCreated, TokenIn, TokenOut};
use crate::state::AppState;

/// The caller's tokens, newest first (secrets are never listed).
#[utoipa::path(get, path = "/api/v1/tokens", tag = "tokens",
    responses((status = 200, body = Vec<TokenOut>), (status = 401, body = ErrorOut)))]
pub async fn list_tokens(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
) -> ApiResult<Json<Vec<TokenOut>>> {
    let tokens = state.kqueen.tokens().list(&actor).await?;
    Ok(Json(tokens.into_iter().map(TokenOut::from).collect()))
}

/// Creates a token; its secret is in this answer only.
#[utoipa::path(post, path = "/api/v1/tokens", tag = "tokens", request_body = TokenIn,
    responses((status = 201, body = TokenCreated), (status = 400, body = ErrorOut)))]
pub async fn create_token(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiJson(input): ApiJson<TokenIn>,
) -> ApiResult<(StatusCode, Json<TokenCreated>)> {
    let issued = state
        .kqueen
        .tokens()
        .create_token(&actor, &input.name, input.days.unwrap_or(90))
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(TokenCreated {
            token: issued.token.into(),
            secret: issued.secret,
        }),
    ))
}

/// Revokes one of the caller's tokens.
#[utoipa::path(delete, path = "/api/v1/tokens/{id}", tag = "tokens", params(("id" = uuid::Uuid, Path)),
    responses((status = 204), (status = 400, body = ErrorOut, description = "Not a token id"),
        (status = 404, body = ErrorOut)))]
pub async fn revoke_token(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let id = Uuid::parse_str(&id)
        .map_err(|_| Error::Invalid(ValidationError::new("id", "must be a token id (UUID)")))?;
    state.kqueen.tokens().revoke_token(&actor, id).await?;
    Ok(StatusCode::NO_CONTENT)
}
