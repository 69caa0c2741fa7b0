//! The inventory section's writes (Sync now, and replacing a dead node from the Nodes table),
//! as server functions behind `ActionForm`: they post and redirect without JavaScript, and
//! run in place with it. Each comes back to the cluster's page, with a refusal said there.

use leptos::prelude::*;

use crate::AppError;

#[cfg(feature = "ssr")]
fn cluster_page(id: &str) -> String {
    format!("/clusters/{}", crate::query::form_escape(id))
}

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
    crate::ssr::back(&cluster_page(&id), result);
    Ok(())
}

/// Queues the replacement of node `node` of cluster `id` (confirmed on the cluster page
/// first). The core reads the node from the cluster at once: one that is Ready again, or
/// gone, is refused, and the page says why.
#[server(prefix = "/sfn", endpoint = "replace_node")]
pub async fn replace_node(id: String, node: String) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = k
        .clusters()
        .replace_node(&actor, &id, &node)
        .await
        .map(|_| ());
    crate::ssr::back(&cluster_page(&id), result);
    Ok(())
}
