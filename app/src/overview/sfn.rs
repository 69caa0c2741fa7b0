//! Server functions: The overview page. Each one takes the request's actor, calls one use
//! case, and maps the result to a DTO.

use leptos::prelude::*;

use crate::overview::dto::OverviewDto;
use crate::AppError;

/// Figures for the overview page, and what is set up (operators).
#[server(prefix = "/sfn", endpoint = "overview")]
pub async fn overview() -> Result<OverviewDto, AppError> {
    use crate::overview::dto::SetupDto;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let o = k.overview(&actor).await?;
    let setup = k.users().setup(&actor).await?.map(|s| SetupDto {
        tenants: s.tenants,
        providers: s.providers,
        templates: s.templates,
        users: s.users,
        memberships: s.memberships,
    });
    let operator = o.counts.is_some();
    Ok(OverviewDto {
        tenants: o.counts.map(|c| c.tenants),
        users: o.counts.map(|c| c.users),
        audit_events: o.counts.map(|c| c.audit_events),
        database: operator.then(|| o.backend.as_str().to_owned()),
        operator,
        setup,
    })
}
