//! Backups of a cluster: taking one (queued: 202 with the operation), the list with what
//! each holds, one backup, its archive (a gzipped tar of YAML files), and its restore (the
//! plan, then the restore, queued on the cluster restored into). The wire types are
//! `kqueen_dto::backups`, shared with the portal.

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use kqueen_core::{Actor, BackupArchive, BackupRef};
use kqueen_dto::backups::{
    Backup, BackupAccepted, BackupRequest, BackupSchedule, BackupScheduleInput, Restore,
    RestoreAccepted, RestorePlan, RestoreRequest,
};

use crate::api::{ApiJson, ApiResult, ErrorOut};
use crate::state::AppState;

/// A cluster's backups, newest first (tenant admins and operators).
#[utoipa::path(get, path = "/api/v1/clusters/{id}/backups", tag = "backups",
    params(("id" = uuid::Uuid, Path)),
    responses((status = 200, body = Vec<Backup>), (status = 403, body = ErrorOut),
              (status = 404, body = ErrorOut)))]
pub async fn list_backups(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<Backup>>> {
    let backups = state.kqueen.backups().list(&actor, &id).await?;
    Ok(Json(backups.into_iter().map(Into::into).collect()))
}

/// Takes a backup of everything the cluster holds (every listable resource at its preferred
/// version; Secrets only when asked for, sealed in KQueen's vault; on request, a
/// VolumeSnapshot of every claim where the cluster serves the snapshot API). Answers at once
/// (202): the backup is taken in the background.
#[utoipa::path(post, path = "/api/v1/clusters/{id}/backups", tag = "backups",
    params(("id" = uuid::Uuid, Path)), request_body = BackupRequest,
    responses((status = 202, body = BackupAccepted), (status = 403, body = ErrorOut),
              (status = 400, body = ErrorOut, description = "An unknown kind, or a key-space backup of a cluster that keeps no key space"),
              (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "The cluster is not Ready, or a backup of it is being taken")))]
pub async fn take_backup(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<BackupRequest>,
) -> ApiResult<(StatusCode, Json<BackupAccepted>)> {
    let options = kqueen_core::BackupOptions::try_from(&input)?;
    let (backup, op) = state.kqueen.backups().take(&actor, &id, options).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(BackupAccepted {
            backup: backup.into(),
            operation: op.into(),
        }),
    ))
}

/// One backup: where it is and, once taken, what it holds, what it left out and why, and
/// the volumes it recorded.
#[utoipa::path(get, path = "/api/v1/clusters/{id}/backups/{backup}", tag = "backups",
    params(("id" = uuid::Uuid, Path), ("backup" = uuid::Uuid, Path)),
    responses((status = 200, body = Backup), (status = 403, body = ErrorOut),
              (status = 404, body = ErrorOut)))]
pub async fn get_backup(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((id, backup)): Path<(String, String)>,
) -> ApiResult<Json<Backup>> {
    let backup = state
        .kqueen
        .backups()
        .get(&actor, BackupRef::of(&id, &backup))
        .await?;
    Ok(Json(backup.into()))
}

/// The archive of a finished backup: a gzipped tar, one YAML file per object at
/// `<namespace>/<group>/<kind>/<name>.yaml` (`_cluster/…` for cluster-scoped objects) and
/// `backup.yaml`, the summary. Secrets are never in it. Each download is audited.
#[utoipa::path(get, path = "/api/v1/clusters/{id}/backups/{backup}/archive", tag = "backups",
    params(("id" = uuid::Uuid, Path), ("backup" = uuid::Uuid, Path)),
    responses((status = 200, content_type = "application/gzip", body = Vec<u8>),
              (status = 403, body = ErrorOut), (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "The backup has no archive (running or failed), or this KQueen does not keep it")))]
pub async fn backup_archive(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((id, backup)): Path<(String, String)>,
) -> ApiResult<Response> {
    let archive = state
        .kqueen
        .backups()
        .archive(&actor, BackupRef::of(&id, &backup))
        .await?;
    Ok(archive_response(archive))
}

/// A backup archive as a file the browser saves.
pub fn archive_response(a: BackupArchive) -> Response {
    let name: String = a
        .file_name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        .collect();
    (
        [
            (header::CONTENT_TYPE, "application/gzip".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
            (header::CACHE_CONTROL, "no-store".to_owned()),
        ],
        a.bytes,
    )
        .into_response()
}

/// What restoring a backup would do, asked of the cluster restored into (the backup's own,
/// or `target_cluster`): each object `will-create`, `unchanged` or `differs` (it exists and
/// is left as it is: a restore never overwrites), or `cannot` with the reason (a kind the
/// cluster does not serve and no CRD of the backup defines). Changes nothing.
#[utoipa::path(post, path = "/api/v1/clusters/{id}/backups/{backup}/restore/plan", tag = "backups",
    params(("id" = uuid::Uuid, Path), ("backup" = uuid::Uuid, Path)), request_body = RestoreRequest,
    responses((status = 200, body = RestorePlan),
              (status = 400, body = ErrorOut, description = "A namespace the backup does not hold"),
              (status = 403, body = ErrorOut), (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "The backup has no archive here, or the cluster cannot be reached")))]
pub async fn restore_plan(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((id, backup)): Path<(String, String)>,
    ApiJson(input): ApiJson<RestoreRequest>,
) -> ApiResult<Json<RestorePlan>> {
    let plan = state
        .kqueen
        .backups()
        .restore_plan(&actor, BackupRef::of(&id, &backup), &(&input).into())
        .await?;
    Ok(Json(plan.into()))
}

/// Restores a backup into its own cluster or `target_cluster` (tenant admins of both
/// tenants, or operators), stage by stage: CRDs, namespaces, cluster settings, access,
/// config, storage, services, workloads, the rest. Objects that exist are left as they are.
/// Answers at once (202): the restore runs as an operation of the cluster restored into.
#[utoipa::path(post, path = "/api/v1/clusters/{id}/backups/{backup}/restore", tag = "backups",
    params(("id" = uuid::Uuid, Path), ("backup" = uuid::Uuid, Path)), request_body = RestoreRequest,
    responses((status = 202, body = RestoreAccepted),
              (status = 400, body = ErrorOut, description = "A namespace the backup does not hold"),
              (status = 403, body = ErrorOut), (status = 404, body = ErrorOut),
              (status = 409, body = ErrorOut, description = "The cluster restored into is not Ready or busy with a restore, or production (ask for approval), or the backup has no archive here")))]
pub async fn restore_backup(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((id, backup)): Path<(String, String)>,
    ApiJson(input): ApiJson<RestoreRequest>,
) -> ApiResult<(StatusCode, Json<RestoreAccepted>)> {
    let (restore, op) = state
        .kqueen
        .backups()
        .restore(&actor, BackupRef::of(&id, &backup), &(&input).into())
        .await?;
    Ok(restore_accepted(restore, op))
}

/// The 202 answer to a queued restore.
pub(super) fn restore_accepted(
    restore: kqueen_core::backup::Restore,
    op: kqueen_core::cluster::Operation,
) -> (StatusCode, Json<RestoreAccepted>) {
    (
        StatusCode::ACCEPTED,
        Json(RestoreAccepted {
            restore: restore.into(),
            operation: op.into(),
        }),
    )
}

/// A restore into a cluster, with what became of each object once done.
#[utoipa::path(get, path = "/api/v1/clusters/{id}/restores/{restore}", tag = "backups",
    params(("id" = uuid::Uuid, Path), ("restore" = uuid::Uuid, Path)),
    responses((status = 200, body = Restore), (status = 403, body = ErrorOut),
              (status = 404, body = ErrorOut)))]
pub async fn get_restore(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((id, restore)): Path<(String, String)>,
) -> ApiResult<Json<Restore>> {
    let restore = state
        .kqueen
        .backups()
        .restore_status(&actor, &id, &restore)
        .await?;
    Ok(Json(restore.into()))
}

/// A cluster's backup schedule; 404 when it has none.
#[utoipa::path(get, path = "/api/v1/clusters/{id}/backups/schedule", tag = "backups",
    params(("id" = uuid::Uuid, Path)),
    responses((status = 200, body = BackupSchedule), (status = 403, body = ErrorOut),
              (status = 404, body = ErrorOut, description = "No such cluster, or it has no schedule")))]
pub async fn get_schedule(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> ApiResult<Json<BackupSchedule>> {
    match state.kqueen.backups().schedule(&actor, &id).await? {
        Some(s) => Ok(Json(s.into())),
        None => Err(kqueen_core::Error::NotFound("backup schedule").into()),
    }
}

/// Sets a cluster's backup schedule: a backup every `every_hours` (the first at once when
/// the cluster had no schedule), the newest `keep` scheduled backups kept.
#[utoipa::path(put, path = "/api/v1/clusters/{id}/backups/schedule", tag = "backups",
    params(("id" = uuid::Uuid, Path)), request_body = BackupScheduleInput,
    responses((status = 200, body = BackupSchedule),
              (status = 400, body = ErrorOut, description = "every_hours or keep out of range"),
              (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
pub async fn put_schedule(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<BackupScheduleInput>,
) -> ApiResult<Json<BackupSchedule>> {
    let options = kqueen_core::BackupOptions::try_from(&input.backup())?;
    let schedule = state
        .kqueen
        .backups()
        .set_schedule(&actor, &id, input.every_hours, input.keep, options)
        .await?;
    Ok(Json(schedule.into()))
}

/// Removes a cluster's backup schedule (the backups it took stay).
#[utoipa::path(delete, path = "/api/v1/clusters/{id}/backups/schedule", tag = "backups",
    params(("id" = uuid::Uuid, Path)),
    responses((status = 204), (status = 403, body = ErrorOut),
              (status = 404, body = ErrorOut, description = "No such cluster, or it has no schedule")))]
pub async fn delete_schedule(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    state.kqueen.backups().remove_schedule(&actor, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
