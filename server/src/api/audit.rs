//! The audit trail: filterable, paginated, JSON or CSV.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use kqueen_core::audit::{AuditEvent, AuditFilter};
use kqueen_core::page::Page;
use kqueen_core::{Actor, Error, ValidationError};
use kqueen_dto::audit::AuditEvent as AuditEventDto;
use serde::Deserialize;
use utoipa::IntoParams;

use super::{ApiQuery, ApiResult, ErrorOut};
use crate::state::AppState;

/// Most rows one CSV export holds.
const EXPORT_MAX: u32 = 10_000;

/// Filters of the audit list. Dates are RFC 3339 times or `YYYY-MM-DD` (UTC; `until` then
/// includes that whole day).
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditParams {
    /// Tenant slug.
    pub tenant: Option<String>,
    /// Exact actor (username, `system`, `cli:<user>`, `anonymous`).
    pub actor: Option<String>,
    /// Exact action, or a prefix ending in `.` such as `member.`.
    pub action: Option<String>,
    #[param(value_type = Option<super::schemas::DateOrTime>, inline)]
    pub since: Option<String>,
    #[param(value_type = Option<super::schemas::DateOrTime>, inline)]
    pub until: Option<String>,
    #[param(value_type = Option<u64>, maximum = 4294967295_i64)]
    pub limit: Option<u32>,
    #[param(value_type = Option<u64>, maximum = 4294967295_i64)]
    pub offset: Option<u32>,
    /// `json` (default) or `csv`.
    #[param(value_type = Option<super::schemas::ListFormat>, inline)]
    pub format: Option<String>,
}

impl AuditParams {
    fn filter(&self) -> AuditFilter {
        AuditFilter {
            tenant: self.tenant.clone(),
            actor: self.actor.clone(),
            action: self.action.clone(),
            since: self.since.clone(),
            until: self.until.clone(),
        }
    }
}

/// Audit events, newest first: operators see all, tenant admins their tenants'.
#[utoipa::path(get, path = "/api/v1/audit", tag = "audit", params(AuditParams),
    responses((status = 200, description = "JSON, or CSV with format=csv",
        content((Vec<AuditEventDto> = "application/json"), (String = "text/csv"))),
        (status = 400, body = ErrorOut), (status = 403, body = ErrorOut),
        (status = 404, body = ErrorOut, description = "No such tenant")))]
pub async fn list_audit(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiQuery(params): ApiQuery<AuditParams>,
) -> ApiResult<Response> {
    let query = state
        .kqueen
        .audit()
        .audit_query(&actor, &params.filter())
        .await?;
    match params.format.as_deref().unwrap_or("json") {
        "json" => {
            let page = Page::requested(params.limit, params.offset);
            let events = state
                .kqueen
                .audit()
                .audit_events(&actor, &query, page)
                .await?;
            Ok(Json(
                events
                    .into_iter()
                    .map(AuditEventDto::from)
                    .collect::<Vec<_>>(),
            )
            .into_response())
        }
        "csv" => {
            let mut rows = Vec::new();
            let mut offset = params.offset.unwrap_or(0);
            while rows.len() < EXPORT_MAX as usize {
                let batch = state
                    .kqueen
                    .audit()
                    .audit_events(&actor, &query, Page::new(Page::MAX_LIMIT, offset))
                    .await?;
                let done = batch.len() < Page::MAX_LIMIT as usize;
                offset += Page::MAX_LIMIT;
                rows.extend(batch);
                if done {
                    break;
                }
            }
            rows.truncate(EXPORT_MAX as usize);
            let headers = [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
                (
                    header::CONTENT_DISPOSITION,
                    "attachment; filename=\"kqueen-audit.csv\"",
                ),
            ];
            Ok((headers, to_csv(rows)?).into_response())
        }
        _ => Err(Error::Invalid(ValidationError::new("format", "must be json or csv")).into()),
    }
}

/// RFC 4180 CSV of the audit events.
pub fn to_csv(events: Vec<AuditEvent>) -> Result<String, Error> {
    kqueen_core::audit::audit_csv(&events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kqueen_core::audit::Outcome;

    #[test]
    fn csv_quotes_and_defuses_formulas() {
        let mut e = AuditEvent::now(
            &Actor::system(),
            "tenant.create",
            "a,\"b\"",
            Outcome::Success,
        );
        e.detail = Some("=HYPERLINK(\"x\")".into());
        let csv = to_csv(vec![e]).expect("csv");
        let line = csv.lines().nth(1).unwrap_or_default();
        assert!(line.contains(",\"a,\"\"b\"\"\","), "{line}");
        assert!(line.ends_with("\"'=HYPERLINK(\"\"x\"\")\""), "{line}");
    }
}
