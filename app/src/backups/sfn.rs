//! Reads of the backups section: identify the caller, call one use case, send the API's
//! types.

use leptos::prelude::*;

use crate::AppError;

/// A cluster's backups, newest first (tenant admins and operators).
#[server(prefix = "/sfn", endpoint = "cluster_backups")]
pub async fn cluster_backups(id: String) -> Result<Vec<kqueen_dto::backups::Backup>, AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    Ok(k.backups()
        .list(&actor, &id)
        .await?
        .into_iter()
        .map(Into::into)
        .collect())
}
