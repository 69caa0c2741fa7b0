//! The approvals' writes, as server functions behind `ActionForm`: they post and redirect
//! without JavaScript, and run in place with it. Each comes back to the cluster's page (or
//! the approvals page, `back`), with the refusal said there.

use leptos::prelude::*;

use crate::AppError;

/// Where a write comes back to: `back` when it is a page of the portal, else the cluster's
/// page at its approvals.
#[cfg(feature = "ssr")]
fn page_of(id: &str, back: Option<&str>) -> String {
    match back {
        Some(b) if b.starts_with('/') && !b.starts_with("//") => b.to_owned(),
        _ => format!("/clusters/{}", crate::query::form_escape(id)),
    }
}

/// Marks cluster `id` production (`production` = "true"), or asks the core to take the mark
/// off (refused: that needs approval).
#[server(prefix = "/sfn", endpoint = "set_production")]
pub async fn set_production(id: String, production: String) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = k
        .approvals()
        .set_production(&actor, &id, production == "true")
        .await
        .map(|_| ());
    crate::ssr::back(&page_of(&id, None), result);
    Ok(())
}

/// Asks for a second person's approval of `action` (`delete`, `unprotect`) on cluster `id`.
#[server(prefix = "/sfn", endpoint = "request_approval")]
pub async fn request_approval(
    id: String,
    action: String,
    reason: Option<String>,
) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let input = kqueen_core::ApprovalInput {
        action,
        reason,
        ..Default::default()
    };
    let result = k.approvals().request(&actor, &id, &input).await.map(|_| ());
    crate::ssr::back(&page_of(&id, None), result);
    Ok(())
}

/// Approves request `approval` of cluster `id`: its action runs, as the caller's.
#[server(prefix = "/sfn", endpoint = "approve_request")]
pub async fn approve_request(
    id: String,
    approval: String,
    back: Option<String>,
) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = match k.approvals().approve(&actor, &approval).await {
        // Approved, but the action could not run: said as the refusal it was.
        Ok(a) if a.state == kqueen_core::approval::ApprovalState::Failed => {
            Err(kqueen_core::Error::Conflict(format!(
                "approved, but the action could not run: {}",
                a.note.unwrap_or_default()
            )))
        }
        Ok(_) => Ok(()),
        Err(e) => Err(e),
    };
    crate::ssr::back(&page_of(&id, back.as_deref()), result);
    Ok(())
}

/// Refuses request `approval` of cluster `id` (a second person), or withdraws it (the one
/// who asked).
#[server(prefix = "/sfn", endpoint = "refuse_request")]
pub async fn refuse_request(
    id: String,
    approval: String,
    reason: Option<String>,
    back: Option<String>,
) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = k
        .approvals()
        .refuse(&actor, &approval, reason.as_deref())
        .await
        .map(|_| ());
    crate::ssr::back(&page_of(&id, back.as_deref()), result);
    Ok(())
}
