//! The token page's writes, as server functions behind `ActionForm`: they post and redirect
//! without JavaScript, and run in place with it.

use leptos::prelude::*;

use crate::AppError;

/// Creates an API token for the caller; its secret is kept in the session for the next page
/// to show once.
#[server(prefix = "/sfn", endpoint = "create_token")]
pub async fn create_token(name: String, days: Option<String>) -> Result<(), AppError> {
    use kqueen_core::{Error, ValidationError};

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let values = [
        ("name".to_owned(), name.clone()),
        ("days".to_owned(), days.clone().unwrap_or_default()),
    ]
    .into();
    let days = days
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .unwrap_or("90");
    // The session first: a token whose secret cannot be shown must not be created.
    let session = crate::ssr::session();
    let result = match (days.parse::<u32>(), session) {
        (Err(_), _) => Err(ValidationError::new("days", "must be a number").into()),
        (Ok(_), None) => Err(Error::Corrupt("session".into())),
        (Ok(days), Some(session)) => match k.tokens().create_token(&actor, &name, days).await {
            Ok(issued) => session
                .insert(super::sfn::FLASH_SECRET, issued.secret)
                .await
                .map_err(|e| {
                    tracing::error!(error = %e, "cannot keep the new token for display");
                    Error::Corrupt("session".into())
                }),
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) => crate::ssr::back("/tokens", Ok(())),
        Err(e) => crate::kept::refused("/tokens", "create-token", values, e).await,
    }
    Ok(())
}

/// Revokes one of the caller's tokens.
#[server(prefix = "/sfn", endpoint = "revoke_token")]
pub async fn revoke_token(id: String) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = match uuid_of(&id) {
        Some(id) => k.tokens().revoke_token(&actor, id).await,
        None => Err(kqueen_core::Error::NotFound("token")),
    };
    crate::ssr::back("/tokens", result);
    Ok(())
}

#[cfg(feature = "ssr")]
fn uuid_of(id: &str) -> Option<uuid::Uuid> {
    uuid::Uuid::parse_str(id.trim()).ok()
}
