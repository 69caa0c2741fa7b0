//! Provisioner kinds and providers (operators).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use kqueen_core::page::Page;
use kqueen_core::provisioner::ProviderKind;
use kqueen_core::{Actor, Error, ValidationError};

use super::dto::{KindOut, ProviderOut};
use super::provider_in::{ProviderIn, ProviderUpdateIn};
use crate::api::{ApiJson, ApiResult, ErrorOut};
use crate::state::AppState;

/// The provisioner kinds of this portal (operators).
#[utoipa::path(get, path = "/api/v1/provider-kinds", tag = "providers",
    responses((status = 200, body = Vec<KindOut>), (status = 403, body = ErrorOut)))]
pub async fn list_kinds(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
) -> ApiResult<Json<Vec<KindOut>>> {
    let kinds = state.kqueen.catalog().provider_kinds(&actor).await?;
    Ok(Json(kinds.into_iter().map(Into::into).collect()))
}

/// Providers (operators).
#[utoipa::path(get, path = "/api/v1/providers", tag = "providers",
    responses((status = 200, body = Vec<ProviderOut>), (status = 403, body = ErrorOut)))]
pub async fn list_providers(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
) -> ApiResult<Json<Vec<ProviderOut>>> {
    let list = state
        .kqueen
        .catalog()
        .list_providers(&actor, Page::new(Page::MAX_LIMIT, 0))
        .await?;
    Ok(Json(list.into_iter().map(Into::into).collect()))
}

/// Registers a provider; secret settings go to the vault.
#[utoipa::path(post, path = "/api/v1/providers", tag = "providers", request_body = ProviderIn,
    responses((status = 201, body = ProviderOut), (status = 400, body = ErrorOut),
              (status = 403, body = ErrorOut), (status = 409, body = ErrorOut)))]
pub async fn create_provider(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiJson(input): ApiJson<ProviderIn>,
) -> ApiResult<(StatusCode, Json<ProviderOut>)> {
    // An unknown kind is refused by the core, by name.
    let schema = ProviderKind::parse(input.kind.trim())
        .and_then(|k| state.kqueen.registry().get(k))
        .map(|p| p.provider_schema());
    let p = state
        .kqueen
        .catalog()
        .create_provider(&actor, input.into_input(schema.as_ref())?)
        .await?;
    Ok((StatusCode::CREATED, Json(p.into())))
}

#[utoipa::path(get, path = "/api/v1/providers/{name}", tag = "providers", params(("name" = String, Path, format = "dns-label", max_length = 63)),
    responses((status = 200, body = ProviderOut), (status = 404, body = ErrorOut)))]
pub async fn get_provider(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(name): Path<String>,
) -> ApiResult<Json<ProviderOut>> {
    Ok(Json(
        state.kqueen.catalog().provider(&actor, &name).await?.into(),
    ))
}

/// Edits a provider (name, description, settings, disabled); its kind cannot change (409).
#[utoipa::path(put, path = "/api/v1/providers/{name}", tag = "providers", params(("name" = String, Path, format = "dns-label", max_length = 63)),
    request_body = ProviderUpdateIn,
    responses((status = 200, body = ProviderOut), (status = 400, body = ErrorOut),
              (status = 404, body = ErrorOut), (status = 409, body = ErrorOut)))]
pub async fn update_provider(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(name): Path<String>,
    ApiJson(input): ApiJson<ProviderUpdateIn>,
) -> ApiResult<Json<ProviderOut>> {
    let catalog = state.kqueen.catalog();
    let kind = catalog.provider(&actor, &name).await?.kind;
    // The settings are the kind's: the body says which, so that it is checked as written.
    match input.kind.as_deref().map(str::trim).unwrap_or_default() {
        "" => {
            return Err(Error::Invalid(ValidationError::new(
                "kind",
                format!("is required: the provider's kind ({kind}), which cannot change"),
            ))
            .into())
        }
        asked if asked != kind.as_str() => {
            return Err(Error::Conflict(format!(
                "kind: a provider's kind cannot change (this one is {kind})"
            ))
            .into());
        }
        _ => {}
    }
    let schema = state
        .kqueen
        .registry()
        .get(kind)
        .map(|p| p.provider_schema())
        .unwrap_or_default();
    let p = catalog
        .update_provider(&actor, &name, input.into_input(&schema)?)
        .await?;
    Ok(Json(p.into()))
}

/// Deletes a provider that has no templates or clusters.
#[utoipa::path(delete, path = "/api/v1/providers/{name}", tag = "providers", params(("name" = String, Path, format = "dns-label", max_length = 63)),
    responses((status = 204), (status = 404, body = ErrorOut), (status = 409, body = ErrorOut)))]
pub async fn delete_provider(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    state
        .kqueen
        .catalog()
        .delete_provider(&actor, &name)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
