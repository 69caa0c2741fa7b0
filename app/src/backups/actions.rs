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
