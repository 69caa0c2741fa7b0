//! The backups' writes: take a backup, set or stop the schedule, restore, as server functions
//! behind `ActionForm` (they post and redirect without JavaScript, and run in place with it).

use leptos::prelude::*;

use crate::AppError;

/// Queues a backup of the cluster; `kind` is the choice of a hosted cluster's form
/// (`resources` or `key_space`; absent: resources), `include_secrets` and `snapshot_volumes`
/// are the checkboxes (present: checked).
#[server(prefix = "/sfn", endpoint = "take_backup")]
pub async fn take_backup(
    id: String,
    kind: Option<String>,
    include_secrets: Option<String>,
    snapshot_volumes: Option<String>,
) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let request = kqueen_dto::backups::BackupRequest {
        kind,
        include_secrets: include_secrets.is_some(),
        snapshot_volumes: snapshot_volumes.is_some(),
    };
    let result = match kqueen_core::BackupOptions::try_from(&request) {
        Ok(options) => k.backups().take(&actor, &id, options).await.map(|_| ()),
        Err(e) => Err(e),
    };
    crate::ssr::back(
        &format!("/clusters/{}", crate::query::form_escape(&id)),
        result,
    );
    Ok(())
}

/// The restore page of `backup`: under its cluster `id`, or by its id alone.
#[cfg(feature = "ssr")]
fn restore_page_path(id: Option<&str>, backup: &str) -> String {
    let backup = crate::query::form_escape(backup);
    match id {
        Some(id) => format!(
            "/clusters/{}/backups/{backup}/restore",
            crate::query::form_escape(id)
        ),
        None => format!("/backups/{backup}/restore"),
    }
}

/// Queues the restore of `backup` (of cluster `id`, or by its id alone) into `target` (the
/// namespaces comma-separated, empty: everything) and leads to that cluster's page, where it
/// runs; a refusal goes back to the restore page with the reason.
#[server(prefix = "/sfn", endpoint = "restore_backup")]
pub async fn restore_backup(
    id: Option<String>,
    backup: String,
    target: String,
    namespaces: Option<String>,
    reason: Option<String>,
) -> Result<(), AppError> {
    use kqueen_core::BackupRef;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let request = kqueen_core::RestoreRequest {
        target: Some(target.clone()),
        namespaces: namespaces
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
            .collect(),
    };
    let id = id.filter(|i| !i.trim().is_empty());
    // The form of a plan into a production cluster asks for the restore (it has a reason).
    if let Some(reason) = reason {
        let input = kqueen_core::ApprovalInput {
            action: "restore".into(),
            backup: Some(backup.clone()),
            namespaces: request.namespaces.clone(),
            reason: Some(reason),
        };
        match k.approvals().request(&actor, &target, &input).await {
            Ok(_) => leptos_axum::redirect(&format!(
                "/clusters/{}#approvals",
                crate::query::form_escape(&target)
            )),
            Err(e) => crate::ssr::back(&restore_page_path(id.as_deref(), &backup), Err(e)),
        }
        return Ok(());
    }
    let r = match id.as_deref() {
        Some(cluster) => BackupRef::of(cluster, &backup),
        None => BackupRef::id(&backup),
    };
    match k.backups().restore(&actor, r, &request).await {
        Ok(_) => {
            leptos_axum::redirect(&format!("/clusters/{}", crate::query::form_escape(&target)))
        }
        Err(e) => crate::ssr::back(&restore_page_path(id.as_deref(), &backup), Err(e)),
    }
    Ok(())
}

/// Deletes a backup (its archive and sealed Secrets too), from the cluster page (`id`) or
/// the backups page; a refusal is said there.
#[server(prefix = "/sfn", endpoint = "delete_backup")]
pub async fn delete_backup(id: Option<String>, backup: String) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = k
        .backups()
        .delete(&actor, kqueen_core::BackupRef::id(&backup))
        .await;
    let page = match id.as_deref().map(str::trim).filter(|i| !i.is_empty()) {
        Some(id) => format!("/clusters/{}", crate::query::form_escape(id)),
        None => "/backups".to_owned(),
    };
    crate::ssr::back(&page, result);
    Ok(())
}

/// Sets the cluster's backup schedule from the section's form.
#[server(prefix = "/sfn", endpoint = "set_backup_schedule")]
pub async fn set_backup_schedule(
    id: String,
    every_hours: String,
    keep: String,
    kind: Option<String>,
    include_secrets: Option<String>,
    snapshot_volumes: Option<String>,
) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = async {
        let every = crate::ssr::whole("every_hours", &every_hours)?;
        let keep = crate::ssr::whole("keep", &keep)?;
        let request = kqueen_dto::backups::BackupRequest {
            kind,
            include_secrets: include_secrets.is_some(),
            snapshot_volumes: snapshot_volumes.is_some(),
        };
        let options = kqueen_core::BackupOptions::try_from(&request)?;
        k.backups()
            .set_schedule(&actor, &id, every, keep, options)
            .await
            .map(|_| ())
    }
    .await;
    crate::ssr::back(
        &format!("/clusters/{}", crate::query::form_escape(&id)),
        result,
    );
    Ok(())
}

/// Stops the cluster's backup schedule (the backups it took stay).
#[server(prefix = "/sfn", endpoint = "remove_backup_schedule")]
pub async fn remove_backup_schedule(id: String) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = k.backups().remove_schedule(&actor, &id).await;
    crate::ssr::back(
        &format!("/clusters/{}", crate::query::form_escape(&id)),
        result,
    );
    Ok(())
}
