//! The findings of the inventory checks across the fleet.

use axum::extract::State;
use axum::response::Response;
use axum::Extension;
use kqueen_core::inventory::fleet::FindingRow;
use kqueen_core::Actor;
use serde::Serialize;
use utoipa::ToSchema;

use super::inventory::FindingOut;
use super::{json_answer, rows_or_csv, FleetParams};
use crate::api::{ApiQuery, ApiResult, ErrorOut};
use crate::state::AppState;
use kqueen_core::inventory::export::findings_csv;

#[derive(Debug, Serialize, ToSchema)]
pub struct FindingRowOut {
    pub cluster_id: String,
    pub cluster: String,
    pub tenant: String,
    #[serde(flatten)]
    pub finding: FindingOut,
}

impl From<FindingRow> for FindingRowOut {
    fn from(r: FindingRow) -> Self {
        Self {
            cluster_id: r.cluster_id.to_string(),
            cluster: r.cluster,
            tenant: r.tenant,
            finding: r.finding.into(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FindingCountOut {
    pub severity: String,
    pub check: String,
    pub count: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FindingsOut {
    pub total: u64,
    /// Per severity and check, over the filter without its severity and check.
    pub counts: Vec<FindingCountOut>,
    pub items: Vec<FindingRowOut>,
}

/// Findings of the audit checks in the visible clusters, most severe first.
#[utoipa::path(get, path = "/api/v1/fleet/findings", tag = "fleet", params(FleetParams),
    responses((status = 200, description = "JSON, or CSV with format=csv",
        content((FindingsOut = "application/json"), (String = "text/csv"))),
        (status = 400, body = ErrorOut)))]
pub async fn findings(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiQuery(p): ApiQuery<FleetParams>,
) -> ApiResult<Response> {
    let filter = p.filter()?;
    let k = &state.kqueen;
    // Rows (a page or everything), then the counts of the whole filter.
    let fetch = |page| k.fleet().fleet_findings(&actor, &filter, page);
    let (rows, total) = match rows_or_csv(&p, fetch, findings_csv, "kqueen-findings").await? {
        Ok(rows) => rows,
        Err(csv) => return Ok(csv),
    };
    let counts = k.fleet().fleet_finding_counts(&actor, &filter).await?;
    let body = FindingsOut {
        total,
        counts: counts
            .into_iter()
            .map(|c| FindingCountOut {
                severity: c.severity.as_str().to_owned(),
                check: c.check,
                count: c.count,
            })
            .collect(),
        items: rows.into_iter().map(Into::into).collect(),
    };
    json_answer(&p, body, "kqueen-findings.json")
}
