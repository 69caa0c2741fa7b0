//! A bulk upgrade's results, kept in the caller's session until the fleet page reads them
//! once: a plain form post ends with a redirect, which cannot carry a result per cluster.

use crate::addons::dto::BulkOutcomeDto;

const SESSION_KEY: &str = "kq.addon_bulk";

/// Keeps `outcome` for the next read of `/fleet/addons`; false when there is no session.
pub async fn put(outcome: &BulkOutcomeDto) -> bool {
    let Some(session) = crate::ssr::session() else {
        return false;
    };
    match session.insert(SESSION_KEY, outcome).await {
        Ok(()) => true,
        Err(e) => {
            tracing::error!(error = %e, "cannot keep a bulk upgrade's results");
            false
        }
    }
}

/// The results of the caller's last bulk upgrade, once.
pub async fn take() -> Option<BulkOutcomeDto> {
    let session = crate::ssr::session()?;
    session.remove(SESSION_KEY).await.ok().flatten()
}
