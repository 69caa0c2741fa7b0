//! The backups section's write: take a backup, as a server function behind `ActionForm` (it
//! posts and redirects without JavaScript, and runs in place with it).

use leptos::prelude::*;

use crate::AppError;

/// Queues a backup of the cluster; `include_secrets` is the checkbox (present: checked).
#[server(prefix = "/sfn", endpoint = "take_backup")]
pub async fn take_backup(id: String, include_secrets: Option<String>) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = k
        .backups()
        .take(&actor, &id, include_secrets.is_some())
        .await
        .map(|_| ());
    crate::ssr::back(
        &format!("/clusters/{}", crate::query::form_escape(&id)),
        result,
    );
    Ok(())
}

/// Queues the restore of `backup` (of cluster `id`) into `target` (the namespaces
/// comma-separated, empty: everything) and leads to that cluster's page, where it runs; a
/// refusal goes back to the restore page with the reason.
#[server(prefix = "/sfn", endpoint = "restore_backup")]
pub async fn restore_backup(
    id: String,
    backup: String,
    target: String,
    namespaces: Option<String>,
) -> Result<(), AppError> {
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
    match k.backups().restore(&actor, &id, &backup, &request).await {
        Ok(_) => {
            leptos_axum::redirect(&format!("/clusters/{}", crate::query::form_escape(&target)))
        }
        Err(e) => crate::ssr::back(
            &format!(
                "/clusters/{}/backups/{}/restore",
                crate::query::form_escape(&id),
                crate::query::form_escape(&backup)
            ),
            Err(e),
        ),
    }
    Ok(())
}
