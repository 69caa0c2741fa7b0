//! Server functions: The overview page. Each one takes the request's actor, calls one use
//! case, and maps the result to a DTO.

use leptos::prelude::*;

use crate::overview::dto::OverviewDto;
use crate::AppError;

/// Figures for the overview page.
#[server(prefix = "/sfn", endpoint = "overview")]
pub async fn overview() -> Result<OverviewDto, AppError> {
    let o = crate::ssr::kqueen()?.overview(&crate::ssr::actor()).await?;
    Ok(OverviewDto {
        tenants: o.counts.map(|c| c.tenants),
        users: o.counts.map(|c| c.users),
        audit_events: o.counts.map(|c| c.audit_events),
        database: o.backend.as_str().to_owned(),
    })
}
