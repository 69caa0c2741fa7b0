//! Addons: the catalog (KQueen's built-in addons and operators' own definitions), each
//! cluster's addons with their state asked of the cluster, their install, change, upgrade and
//! removal (queued: 202 with the operation), and the fleet's view with its bulk upgrade. The
//! wire types are `kqueen_dto::addons`, shared with the portal.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use kqueen_core::workloads::addons::AddonDefinition as Definition;
use kqueen_core::{Actor, Error};
use kqueen_dto::addons::{
    AddonDefinition, AddonInstall, BulkResult, BulkUpgrade, ClusterAddon, FleetAddon,
};
use kqueen_dto::clusters::Operation as OperationOut;

use crate::api::{ApiJson, ApiResult, ErrorOut};
use crate::state::AppState;

/// The catalog: every version of every addon, built-in ones first, by name and newest first.
/// `manifests` is left empty here (read one version for them).
#[utoipa::path(get, path = "/api/v1/addons", tag = "addons",
    responses((status = 200, body = Vec<AddonDefinition>)))]
pub async fn list_addons(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
) -> ApiResult<Json<Vec<AddonDefinition>>> {
    let catalog = state.kqueen.addons().catalog(&actor).await?;
    Ok(Json(
        catalog
            .into_iter()
            .map(|d| {
                AddonDefinition::from(Definition {
                    manifests: String::new(),
                    ..d
                })
            })
            .collect(),
    ))
}

/// Adds an addon version to the catalog (operators). Its names, parameters, health rule and
/// manifests are checked: manifests must parse within the manifest limits and use only the
/// parameters declared (`${name}`).
#[utoipa::path(post, path = "/api/v1/addons", tag = "addons", request_body = AddonDefinition,
    responses((status = 201, body = AddonDefinition),
              (status = 400, body = ErrorOut, description = "Invalid definition; the message names the field"),
              (status = 403, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "This name and version are in the catalog already")))]
pub async fn define_addon(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiJson(input): ApiJson<AddonDefinition>,
) -> ApiResult<(StatusCode, Json<AddonDefinition>)> {
    let def = Definition::try_from(input).map_err(Error::from)?;
    state.kqueen.addons().define(&actor, def.clone()).await?;
    Ok((StatusCode::CREATED, Json(def.into())))
}

/// One version of an addon, with its manifests.
#[utoipa::path(get, path = "/api/v1/addons/{name}/{version}", tag = "addons",
    params(("name" = String, Path), ("version" = String, Path)),
    responses((status = 200, body = AddonDefinition), (status = 404, body = ErrorOut)))]
pub async fn get_addon(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((name, version)): Path<(String, String)>,
) -> ApiResult<Json<AddonDefinition>> {
    let def = state
        .kqueen
        .addons()
        .catalog(&actor)
        .await?
        .into_iter()
        .find(|d| d.name == name && d.version == version)
        .ok_or(Error::NotFound("addon version"))?;
    Ok(Json(def.into()))
}

/// Removes an operator-defined addon version from the catalog (operators); not while a
/// cluster runs it.
#[utoipa::path(delete, path = "/api/v1/addons/{name}/{version}", tag = "addons",
    params(("name" = String, Path), ("version" = String, Path)),
    responses((status = 204), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "A cluster runs this version")))]
pub async fn delete_addon(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((name, version)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    state
        .kqueen
        .addons()
        .undefine(&actor, &name, &version)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Every addon of the catalog in a cluster, with its state asked of the cluster now
/// (`not_installed`, `installing`, `healthy`, `degraded`, `drifted`…; `reason` says why).
#[utoipa::path(get, path = "/api/v1/clusters/{id}/addons", tag = "addons",
    params(("id" = uuid::Uuid, Path)),
    responses((status = 200, body = Vec<ClusterAddon>), (status = 404, body = ErrorOut)))]
pub async fn cluster_addons(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<ClusterAddon>>> {
    let views = state.kqueen.addons().for_cluster(&actor, &id).await?;
    Ok(Json(views.into_iter().map(Into::into).collect()))
}

/// Installs an addon in a cluster, or changes its parameters, or moves it to another catalog
/// version. Answers at once (202): the apply runs in the background; follow the addon's
/// state at `/api/v1/clusters/{id}/addons`.
#[utoipa::path(put, path = "/api/v1/clusters/{id}/addons/{name}", tag = "addons",
    params(("id" = uuid::Uuid, Path), ("name" = String, Path)), request_body = AddonInstall,
    responses((status = 202, body = OperationOut),
              (status = 400, body = ErrorOut, description = "Unknown version or parameter, or a value out of range; the message names it"),
              (status = 403, body = ErrorOut), (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "The cluster is not Ready or is busy, a required addon is missing, or someone else installed it")))]
pub async fn install_addon(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((id, name)): Path<(String, String)>,
    ApiJson(input): ApiJson<AddonInstall>,
) -> ApiResult<(StatusCode, Json<OperationOut>)> {
    let op = state
        .kqueen
        .addons()
        .install(
            &actor,
            &id,
            &name,
            input.version.as_deref(),
            &input.parameters,
        )
        .await?;
    Ok((StatusCode::ACCEPTED, Json(op.into())))
}

/// Removes an addon KQueen installed: everything it applied, nothing else (in the
/// background; answers with the operation).
#[utoipa::path(delete, path = "/api/v1/clusters/{id}/addons/{name}", tag = "addons",
    params(("id" = uuid::Uuid, Path), ("name" = String, Path)),
    responses((status = 202, body = OperationOut), (status = 403, body = ErrorOut),
              (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "Another addon needs it, or it is being changed")))]
pub async fn remove_addon(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((id, name)): Path<(String, String)>,
) -> ApiResult<(StatusCode, Json<OperationOut>)> {
    let op = state.kqueen.addons().remove(&actor, &id, &name).await?;
    Ok((StatusCode::ACCEPTED, Json(op.into())))
}

/// Every addon KQueen manages in the fleet, with a newer catalog version when there is one
/// (operators: every tenant; tenant admins: their tenants).
#[utoipa::path(get, path = "/api/v1/fleet/addons", tag = "addons",
    responses((status = 200, body = Vec<FleetAddon>), (status = 403, body = ErrorOut)))]
pub async fn fleet_addons(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
) -> ApiResult<Json<Vec<FleetAddon>>> {
    let rows = state.kqueen.addons().fleet(&actor).await?;
    Ok(Json(
        rows.into_iter()
            .map(|(row, newer)| row.into_dto(newer))
            .collect(),
    ))
}

/// Moves one addon to a catalog version on many clusters (operators), keeping each
/// cluster's parameters: on the clusters named, or on every cluster running another version.
/// One result per cluster (the queued operation, or why not), so that one refusal never
/// stops the others.
#[utoipa::path(post, path = "/api/v1/fleet/addons/upgrade", tag = "addons",
    request_body = BulkUpgrade,
    responses((status = 200, body = Vec<BulkResult>),
              (status = 400, body = ErrorOut, description = "The version is not in the catalog"),
              (status = 403, body = ErrorOut)))]
pub async fn bulk_upgrade(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiJson(input): ApiJson<BulkUpgrade>,
) -> ApiResult<Json<Vec<BulkResult>>> {
    let outcomes = state
        .kqueen
        .addons()
        .bulk_upgrade(&actor, &input.addon, &input.version, &input.clusters)
        .await?;
    Ok(Json(outcomes.into_iter().map(Into::into).collect()))
}
