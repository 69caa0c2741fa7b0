//! The inventory section's write (Sync now), as a server function behind `ActionForm`: it
//! posts and redirects without JavaScript, and runs in place with it.

use leptos::prelude::*;

use crate::AppError;

/// Syncs the cluster's inventory now (bounded by the inventory timeout); a failed sync is
/// shown on the cluster page as the last sync's error.
#[server(prefix = "/sfn", endpoint = "sync_inventory")]
pub async fn sync_inventory(id: String) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = k
        .fleet()
        .sync_cluster_inventory(&actor, &id)
        .await
        .map(|_| ());
    let page = format!("/clusters/{}", crate::query::form_escape(&id));
    crate::ssr::back(&page, result);
    Ok(())
}
