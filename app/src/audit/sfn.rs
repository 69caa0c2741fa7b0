//! Server functions: The audit trail. Each one takes the request's actor, calls one use
//! case, and maps the result to a DTO.

use leptos::prelude::*;

use crate::audit::dto::AuditFilter;
use crate::audit::dto::AuditPageDto;
use crate::AppError;

/// One page of the audit trail, newest first, filtered.
#[server(prefix = "/sfn", endpoint = "audit")]
pub async fn list_audit(
    filter: AuditFilter,
    offset: Option<u32>,
) -> Result<AuditPageDto, AppError> {
    use kqueen_core::page::Page;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let typed = kqueen_core::audit::AuditFilter {
        tenant: Some(filter.tenant),
        actor: Some(filter.actor),
        action: Some(filter.action),
        since: Some(filter.since),
        until: Some(filter.until),
    };
    let query = k.audit().audit_query(&actor, &typed).await?;
    let offset = offset.unwrap_or(0);
    // One row more than shown tells whether an older page exists.
    let mut events = k
        .audit()
        .audit_events(&actor, &query, Page::new(Page::DEFAULT_LIMIT + 1, offset))
        .await?;
    let has_more = events.len() > Page::DEFAULT_LIMIT as usize;
    events.truncate(Page::DEFAULT_LIMIT as usize);
    Ok(AuditPageDto {
        events: events.into_iter().map(Into::into).collect(),
        offset,
        limit: Page::DEFAULT_LIMIT,
        has_more,
    })
}
