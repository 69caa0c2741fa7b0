//! The fleet inventory on the API: a cluster's inventory, on-demand sync, the fleet
//! dashboard, and the fleet audit queries (images, versions, findings) as paginated JSON or
//! whole-result exports (CSV or JSON).

mod findings;
mod images;
mod inventory;
mod overview;
mod versions;

pub use findings::*;
pub use images::*;
pub use inventory::*;
pub use overview::*;
pub use versions::*;

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use kqueen_core::export::all_pages;
use kqueen_core::inventory::fleet::FleetFilter;
use kqueen_core::page::Page;
use kqueen_core::{Error, ValidationError};
use serde::{Deserialize, Serialize};
use utoipa::IntoParams;

use super::ApiResult;

/// Filters and paging of the fleet queries.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FleetParams {
    /// Tenant slug.
    pub tenant: Option<String>,
    /// Substring of the cluster name.
    pub cluster: Option<String>,
    /// Substring: of the image reference (images), the versions (versions), the subject or
    /// message (findings).
    pub q: Option<String>,
    /// Findings only: `high`, `medium` or `low`.
    #[param(value_type = Option<crate::api::schemas::SeverityFilter>, inline)]
    pub severity: Option<String>,
    /// Findings only: a check id such as `latest-tag`.
    pub check: Option<String>,
    #[param(value_type = Option<u64>, maximum = 4294967295_i64)]
    pub limit: Option<u32>,
    #[param(value_type = Option<u64>, maximum = 4294967295_i64)]
    pub offset: Option<u32>,
    /// `json` (default: one page) or `csv` (the whole result, as a download).
    #[param(value_type = Option<crate::api::schemas::ListFormat>, inline)]
    pub format: Option<String>,
    /// With `format=json`: the whole result (up to 10,000 rows) as a download.
    pub download: Option<bool>,
}

/// Filters and page of the fleet dashboard (it has no exports).
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FleetFilterParams {
    /// List only the clusters needing attention (each with its reasons).
    pub attention: Option<bool>,
    #[param(value_type = Option<u64>, maximum = 4294967295_i64)]
    pub limit: Option<u32>,
    #[param(value_type = Option<u64>, maximum = 4294967295_i64)]
    pub offset: Option<u32>,
    /// Tenant slug.
    pub tenant: Option<String>,
    /// Substring of the cluster name.
    pub cluster: Option<String>,
    /// Substring of image references, versions, subjects or messages.
    pub q: Option<String>,
    #[param(value_type = Option<crate::api::schemas::SeverityFilter>, inline)]
    pub severity: Option<String>,
    /// A check id such as `latest-tag`.
    pub check: Option<String>,
}

impl FleetFilterParams {
    pub fn filter(&self) -> Result<FleetFilter, Error> {
        Ok(FleetFilter::parse(
            self.tenant.as_deref(),
            self.cluster.as_deref(),
            self.q.as_deref(),
            self.severity.as_deref(),
            self.check.as_deref(),
        )?)
    }
}

impl FleetParams {
    pub fn filter(&self) -> Result<FleetFilter, Error> {
        Ok(FleetFilter::parse(
            self.tenant.as_deref(),
            self.cluster.as_deref(),
            self.q.as_deref(),
            self.severity.as_deref(),
            self.check.as_deref(),
        )?)
    }

    fn page(&self) -> Page {
        Page::requested(self.limit, self.offset)
    }
}

/// How a query answers: a page, or everything as a download.
enum Output {
    Page(Page),
    Csv,
    JsonDownload,
}

fn output(p: &FleetParams) -> Result<Output, Error> {
    match p.format.as_deref().unwrap_or("json") {
        "json" if p.download == Some(true) => Ok(Output::JsonDownload),
        "json" => Ok(Output::Page(p.page())),
        "csv" => Ok(Output::Csv),
        _ => Err(Error::Invalid(ValidationError::new(
            "format",
            "must be json or csv",
        ))),
    }
}

pub(super) fn download(body: String, content_type: &'static str, file: &str) -> Response {
    let disposition = format!("attachment; filename=\"{file}\"");
    (
        [
            (header::CONTENT_TYPE, content_type.to_owned()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        body,
    )
        .into_response()
}

/// Runs a fleet query as `p` asks: one page (`Ok`), every row for a JSON download (`Ok`,
/// total = rows), or every row as a CSV download made by `csv` (`Err`: the finished answer).
pub(super) async fn rows_or_csv<T, F, Fut>(
    p: &FleetParams,
    mut fetch: F,
    csv: impl FnOnce(&[T]) -> Result<String, Error>,
    file: &str,
) -> Result<Result<(Vec<T>, u64), Response>, Error>
where
    F: FnMut(Page) -> Fut,
    Fut: std::future::Future<Output = Result<(Vec<T>, u64), Error>>,
{
    let out = output(p)?;
    if let Output::Page(page) = out {
        return fetch(page).await.map(Ok);
    }
    let rows = all_pages(fetch).await?;
    if matches!(out, Output::Csv) {
        let name = format!("{file}.csv");
        return Ok(Err(download(csv(&rows)?, "text/csv; charset=utf-8", &name)));
    }
    let total = rows.len() as u64;
    Ok(Ok((rows, total)))
}

pub(super) fn time(t: Option<chrono::DateTime<chrono::Utc>>) -> Option<String> {
    t.map(|t| t.to_rfc3339())
}

/// Answers a fleet query as `p` asks: a page of rows as JSON (`wrap` makes the body from the
/// total and the rows mapped to `O`), every row as a JSON download, or every row as a CSV
/// download made by `csv` (file `<file>.csv` / `<file>.json`).
pub(super) async fn list_answer<R, O, B, F, Fut>(
    p: &FleetParams,
    fetch: F,
    csv: impl FnOnce(&[R]) -> Result<String, Error>,
    file: &str,
    wrap: impl FnOnce(u64, Vec<O>) -> B,
) -> ApiResult<Response>
where
    O: From<R>,
    B: Serialize,
    F: FnMut(Page) -> Fut,
    Fut: std::future::Future<Output = Result<(Vec<R>, u64), Error>>,
{
    let (rows, total) = match rows_or_csv(p, fetch, csv, file).await? {
        Ok(rows) => rows,
        Err(csv) => return Ok(csv),
    };
    let body = wrap(total, rows.into_iter().map(O::from).collect());
    json_answer(p, body, &format!("{file}.json"))
}

pub(super) fn json_answer<T: Serialize>(
    p: &FleetParams,
    body: T,
    file: &str,
) -> ApiResult<Response> {
    if p.download == Some(true) {
        let text = serde_json::to_string_pretty(&body)
            .map_err(|e| Error::Corrupt(format!("cannot encode the export: {e}")))?;
        return Ok(download(text, "application/json", file));
    }
    Ok(Json(body).into_response())
}
