//! The portal's routes besides the pages and server functions: file downloads (the personal
//! kubeconfig, a backup's archive). They stay plain GET routes because they answer with a
//! file (an attachment the browser saves), which a server function behind a form cannot do;
//! every write of the portal is a server function (`kqueen_app::<feature>::actions`).

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Extension;
use kqueen_core::{Actor, BackupRef};

use crate::api::{archive_response, kubeconfig_response};
use crate::escape::query_escape;
use crate::state::AppState;

/// `GET /clusters/{id}/kubeconfig`: the caller's personal kubeconfig for the cluster, or back
/// to the cluster page with the reason (or to the login page), as the pages' writes do.
pub async fn kubeconfig(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> Response {
    let page = format!("/clusters/{}", query_escape(&id));
    match state.kqueen.access().kubeconfig(&actor, &id).await {
        Ok(d) => kubeconfig_response(d),
        Err(e) => Redirect::to(&kqueen_app::back_to(&page, Err(e))).into_response(),
    }
}

/// `GET /clusters/{id}/backups/{backup}/archive`: a backup's archive, or back to the cluster
/// page with the reason (or to the login page).
pub async fn backup_archive(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((id, backup)): Path<(String, String)>,
) -> Response {
    let page = format!("/clusters/{}", query_escape(&id));
    match state
        .kqueen
        .backups()
        .archive(&actor, BackupRef::of(&id, &backup))
        .await
    {
        Ok(a) => archive_response(a),
        Err(e) => Redirect::to(&kqueen_app::back_to(&page, Err(e))).into_response(),
    }
}

/// `GET /backups/{backup}/archive`: a backup's archive by id (its cluster may have been
/// deleted), or back to the backups page with the reason (or to the login page).
pub async fn backup_archive_by_id(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(backup): Path<String>,
) -> Response {
    match state
        .kqueen
        .backups()
        .archive(&actor, BackupRef::id(&backup))
        .await
    {
        Ok(a) => archive_response(a),
        Err(e) => Redirect::to(&kqueen_app::back_to("/backups", Err(e))).into_response(),
    }
}
