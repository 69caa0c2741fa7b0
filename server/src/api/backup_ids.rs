//! Backups by id, whichever cluster they were taken of: the backups of the tenants the caller
//! manages (those of deleted clusters too), one backup, its archive, its restore into a
//! cluster (the plan, then the restore) and its deletion. A backup outlives its cluster: this
//! is how a deleted cluster's backup is restored elsewhere.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::{Extension, Json};
use kqueen_core::{Actor, BackupRef};
use kqueen_dto::backups::{Backup, ListedBackup, RestoreAccepted, RestorePlan, RestoreRequest};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::api::backups::{archive_response, restore_accepted};
use crate::api::extract::ApiQuery;
use crate::api::{ApiJson, ApiResult, ErrorOut};
use crate::state::AppState;

/// Which backups to list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BackupParams {
    /// Only this tenant's (slug).
    pub tenant: Option<String>,
}

/// Backups the caller manages, newest first (at most 500), of live and deleted clusters:
/// every tenant's for operators, the tenants they administer for tenant admins.
#[utoipa::path(get, path = "/api/v1/backups", tag = "backups", params(BackupParams),
    responses((status = 200, body = Vec<ListedBackup>), (status = 401, body = ErrorOut),
              (status = 403, body = ErrorOut, description = "Not an admin of that tenant"),
              (status = 404, body = ErrorOut, description = "No such tenant")))]
pub async fn list_all_backups(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiQuery(params): ApiQuery<BackupParams>,
) -> ApiResult<Json<Vec<ListedBackup>>> {
    let listed = state
        .kqueen
        .backups()
        .all(&actor, params.tenant.as_deref())
        .await?;
    Ok(Json(listed.into_iter().map(Into::into).collect()))
}

/// One backup, by id (its cluster may have been deleted).
#[utoipa::path(get, path = "/api/v1/backups/{backup}", tag = "backups",
    params(("backup" = uuid::Uuid, Path)),
    responses((status = 200, body = Backup), (status = 403, body = ErrorOut),
              (status = 404, body = ErrorOut)))]
pub async fn get_backup_by_id(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(backup): Path<String>,
) -> ApiResult<Json<Backup>> {
    let backup = state
        .kqueen
        .backups()
        .get(&actor, BackupRef::id(&backup))
        .await?;
    Ok(Json(backup.into()))
}

/// Deletes a backup: its record, its archive and its sealed Secrets (its finished restores'
/// records go with it; their outcome stays in the clusters' timelines and the audit log).
#[utoipa::path(delete, path = "/api/v1/backups/{backup}", tag = "backups",
    params(("backup" = uuid::Uuid, Path)),
    responses((status = 204), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "The backup is being taken or restored")))]
pub async fn delete_backup(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(backup): Path<String>,
) -> ApiResult<StatusCode> {
    state
        .kqueen
        .backups()
        .delete(&actor, BackupRef::id(&backup))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The archive of a finished backup, by id (as `/api/v1/clusters/{id}/backups/{backup}/archive`).
#[utoipa::path(get, path = "/api/v1/backups/{backup}/archive", tag = "backups",
    params(("backup" = uuid::Uuid, Path)),
    responses((status = 200, content_type = "application/gzip", body = Vec<u8>),
              (status = 403, body = ErrorOut), (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "The backup has no archive (running or failed), or this KQueen does not keep it")))]
pub async fn backup_archive_by_id(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(backup): Path<String>,
) -> ApiResult<Response> {
    let archive = state
        .kqueen
        .backups()
        .archive(&actor, BackupRef::id(&backup))
        .await?;
    Ok(archive_response(archive))
}

/// What restoring a backup would do, by id: `target_cluster` is required once the backup's
/// cluster was deleted. Changes nothing.
#[utoipa::path(post, path = "/api/v1/backups/{backup}/restore/plan", tag = "backups",
    params(("backup" = uuid::Uuid, Path)), request_body = RestoreRequest,
    responses((status = 200, body = RestorePlan),
              (status = 400, body = ErrorOut, description = "A namespace the backup does not hold, or no target for a deleted cluster's backup"),
              (status = 403, body = ErrorOut), (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "The backup has no archive here, or the cluster cannot be reached")))]
pub async fn restore_plan_by_id(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(backup): Path<String>,
    ApiJson(input): ApiJson<RestoreRequest>,
) -> ApiResult<Json<RestorePlan>> {
    let plan = state
        .kqueen
        .backups()
        .restore_plan(&actor, BackupRef::id(&backup), &(&input).into())
        .await?;
    Ok(Json(plan.into()))
}

/// Restores a backup by id into `target_cluster` (required once the backup's cluster was
/// deleted), as `/api/v1/clusters/{id}/backups/{backup}/restore` does. Answers at once (202).
#[utoipa::path(post, path = "/api/v1/backups/{backup}/restore", tag = "backups",
    params(("backup" = uuid::Uuid, Path)), request_body = RestoreRequest,
    responses((status = 202, body = RestoreAccepted),
              (status = 400, body = ErrorOut, description = "A namespace the backup does not hold, or no target for a deleted cluster's backup"),
              (status = 403, body = ErrorOut), (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "The cluster restored into is not Ready or busy with a restore, or production (ask for approval), or the backup has no archive here")))]
pub async fn restore_backup_by_id(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(backup): Path<String>,
    ApiJson(input): ApiJson<RestoreRequest>,
) -> ApiResult<(StatusCode, Json<RestoreAccepted>)> {
    let (restore, op) = state
        .kqueen
        .backups()
        .restore(&actor, BackupRef::id(&backup), &(&input).into())
        .await?;
    Ok(restore_accepted(restore, op))
}
