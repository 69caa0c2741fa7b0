//! The fleet queries over the inventory rows ([`FleetStore`]): images and where
//! they run, image history, Kubernetes versions, findings. Every query restricts to live
//! clusters and, when given, to the caller's tenants.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::inventory::{finding_of, u32_of, u64_of};
use super::{contains_pattern, limit_offset, Pool, SqlStore};
use crate::cluster::ClusterFilter;
use crate::inventory::checks::Severity;
use crate::inventory::fleet::{
    FindingCount, FindingRow, FleetFilter, ImageHistoryRow, ImageSummary, ImageUsage, VersionRow,
};
use crate::page::Page;
use crate::store::FleetStore;
use crate::{Error, Result};

/// The WHERE clause of a fleet query: `extra` clauses first (each `(clause with "{}" for
/// its placeholder, value)`), then live clusters of the filter's tenant / name and of the
/// caller's `tenants`. Placeholders are numbered from `$first`; bind the returned texts, then
/// the tenant ids, in that order.
pub(super) fn fleet_where(
    filter: &FleetFilter,
    tenants: Option<&[Uuid]>,
    first: usize,
    extra: Vec<(String, String)>,
) -> (String, Vec<String>, Vec<Uuid>) {
    let mut clauses = Vec::new();
    let mut texts = Vec::new();
    for (clause, value) in extra {
        clauses.push(clause.replace("{}", &format!("${}", first + texts.len())));
        texts.push(value);
    }
    let (wh, more, ids) = super::clusters::cluster_where(
        &ClusterFilter {
            tenant: filter.tenant.clone(),
            state: None,
            name: filter.cluster.clone(),
        },
        tenants,
        first + texts.len(),
    );
    clauses.push(wh);
    texts.extend(more);
    (clauses.join(" AND "), texts, ids)
}

/// A case-insensitive substring clause on `expr` for a non-empty `q`.
fn like(expr: &str, q: Option<&str>) -> Option<(String, String)> {
    let q = q.map(str::trim).filter(|q| !q.is_empty())?;
    Some((
        format!("LOWER({expr}) LIKE {{}} ESCAPE '\\'"),
        contains_pattern(q),
    ))
}

/// Runs a page query (`$1` limit, `$2` offset, then the texts and tenant ids) and its count
/// query (the same binds without limit and offset); answers `(rows, total)`.
macro_rules! page_and_total {
    ($store:expr, $sql:expr, $count_sql:expr, $page:expr, $texts:expr, $ids:expr) => {{
        let (limit, offset) = limit_offset($page);
        on_pool!($store, p => {
            let rows = bind_all!(sqlx::query_as($sql).bind(limit).bind(offset), $texts, $ids)
                .fetch_all(p)
                .await?;
            let total = bind_all!(sqlx::query_scalar($count_sql), $texts, $ids)
                .fetch_one(p)
                .await?;
            (rows, total)
        })
    }};
}

#[derive(FromRow)]
struct FindingDbRow {
    cluster_id: Uuid,
    cluster: String,
    tenant: String,
    check_id: String,
    severity: String,
    subject: String,
    message: String,
}

/// `FROM inventory_findings … WHERE …` for the filter, numbered from `$first`.
fn findings_from(
    filter: &FleetFilter,
    tenants: Option<&[Uuid]>,
    first: usize,
) -> (String, Vec<String>, Vec<Uuid>) {
    let mut extra = Vec::new();
    if let Some(s) = filter.severity {
        extra.push(("f.severity = {}".to_owned(), s.as_str().to_owned()));
    }
    if let Some(check) = filter.check.as_deref().filter(|c| !c.is_empty()) {
        extra.push(("f.check_id = {}".to_owned(), check.to_owned()));
    }
    extra.extend(like("(f.subject || ' ' || f.message)", filter.q.as_deref()));
    let (wh, texts, ids) = fleet_where(filter, tenants, first, extra);
    (
        format!(
            "FROM inventory_findings f JOIN clusters c ON c.id = f.cluster_id \
             JOIN tenants t ON t.id = c.tenant_id WHERE {wh}"
        ),
        texts,
        ids,
    )
}

#[async_trait]
impl FleetStore for SqlStore {
    async fn list_images(
        &self,
        filter: &FleetFilter,
        tenants: Option<&[Uuid]>,
        page: Page,
    ) -> Result<(Vec<ImageSummary>, u64)> {
        let from = |first| {
            let extra = like("h.image", filter.q.as_deref()).into_iter().collect();
            let (wh, texts, ids) = fleet_where(filter, tenants, first, extra);
            let from = format!(
                "FROM image_history h JOIN clusters c ON c.id = h.cluster_id \
                 JOIN tenants t ON t.id = c.tenant_id WHERE h.present AND {wh}"
            );
            (from, texts, ids)
        };
        let (page_from, texts, ids) = from(3);
        let sql = format!(
            "SELECT h.image, COUNT(*) AS clusters, MIN(h.first_seen) AS first_seen {page_from} \
             GROUP BY h.image ORDER BY h.image LIMIT $1 OFFSET $2"
        );
        let count_sql = format!("SELECT COUNT(DISTINCT h.image) {}", from(1).0);
        let (rows, total): (Vec<(String, i64, DateTime<Utc>)>, i64) =
            page_and_total!(self, &sql, &count_sql, page, &texts, &ids);
        Ok((
            rows.into_iter()
                .map(|(image, clusters, first_seen)| ImageSummary {
                    image,
                    clusters: u32_of(clusters),
                    first_seen,
                })
                .collect(),
            u64_of(total),
        ))
    }

    async fn image_usages(
        &self,
        images: &[String],
        filter: &FleetFilter,
        tenants: Option<&[Uuid]>,
    ) -> Result<Vec<ImageUsage>> {
        if images.is_empty() {
            return Ok(Vec::new());
        }
        // The filter's tenant and cluster apply (its `q` chose `images`).
        let (wh, texts, ids) = fleet_where(filter, tenants, images.len() + 1, Vec::new());
        let list: Vec<String> = (1..=images.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "SELECT ic.image, c.id, c.name, t.slug, ic.namespace, ic.workload_kind, \
             ic.workload_name, ic.container, CAST(ic.pods AS BIGINT), h.first_seen, h.last_seen \
             FROM inventory_containers ic JOIN clusters c ON c.id = ic.cluster_id \
             JOIN tenants t ON t.id = c.tenant_id \
             LEFT JOIN image_history h ON h.cluster_id = ic.cluster_id AND h.image = ic.image \
             WHERE ic.image IN ({}) AND {wh} \
             ORDER BY ic.image, t.slug, c.name, ic.namespace, ic.workload_kind, ic.workload_name, \
             ic.container",
            list.join(", ")
        );
        type Row = (
            String,
            Uuid,
            String,
            String,
            String,
            String,
            String,
            String,
            i64,
            Option<DateTime<Utc>>,
            Option<DateTime<Utc>>,
        );
        let rows: Vec<Row> = on_pool!(self, p => {
            let mut q = sqlx::query_as(&sql);
            for i in images {
                q = q.bind(i);
            }
            bind_all!(q, &texts, &ids).fetch_all(p).await?
        });
        Ok(rows
            .into_iter()
            .map(|r| ImageUsage {
                image: r.0,
                cluster_id: r.1,
                cluster: r.2,
                tenant: r.3,
                namespace: r.4,
                workload_kind: r.5,
                workload_name: r.6,
                container: r.7,
                pods: u32_of(r.8),
                first_seen: r.9,
                last_seen: r.10,
            })
            .collect())
    }

    async fn list_image_history(
        &self,
        filter: &FleetFilter,
        tenants: Option<&[Uuid]>,
        page: Page,
    ) -> Result<(Vec<ImageHistoryRow>, u64)> {
        let from = |first| {
            let extra = like("h.image", filter.q.as_deref()).into_iter().collect();
            let (wh, texts, ids) = fleet_where(filter, tenants, first, extra);
            let from = format!(
                "FROM image_history h JOIN clusters c ON c.id = h.cluster_id \
                 JOIN tenants t ON t.id = c.tenant_id WHERE {wh}"
            );
            (from, texts, ids)
        };
        let (page_from, texts, ids) = from(3);
        let sql = format!(
            "SELECT c.id, c.name, t.slug, h.image, h.first_seen, h.last_seen, h.present \
             {page_from} ORDER BY t.slug, c.name, h.image LIMIT $1 OFFSET $2"
        );
        let count_sql = format!("SELECT COUNT(*) {}", from(1).0);
        type Row = (
            Uuid,
            String,
            String,
            String,
            DateTime<Utc>,
            DateTime<Utc>,
            bool,
        );
        let (rows, total): (Vec<Row>, i64) =
            page_and_total!(self, &sql, &count_sql, page, &texts, &ids);
        Ok((
            rows.into_iter()
                .map(|r| ImageHistoryRow {
                    cluster_id: r.0,
                    cluster: r.1,
                    tenant: r.2,
                    digest: crate::inventory::ImageRef::parse(&r.3).and_then(|i| i.digest),
                    image: r.3,
                    first_seen: r.4,
                    last_seen: r.5,
                    present: r.6,
                })
                .collect(),
            u64_of(total),
        ))
    }

    async fn list_versions(
        &self,
        filter: &FleetFilter,
        tenants: Option<&[Uuid]>,
        page: Page,
    ) -> Result<(Vec<VersionRow>, u64)> {
        let from = |first| {
            let extra = like(
                "(COALESCE(s.api_version, '') || ' ' || COALESCE(n.kubelet_version, ''))",
                filter.q.as_deref(),
            )
            .into_iter()
            .collect();
            let (wh, texts, ids) = fleet_where(filter, tenants, first, extra);
            let from = format!(
                "FROM clusters c JOIN tenants t ON t.id = c.tenant_id \
                 LEFT JOIN inventory_syncs s ON s.cluster_id = c.id \
                 LEFT JOIN inventory_nodes n ON n.cluster_id = c.id WHERE {wh}"
            );
            (from, texts, ids)
        };
        let (page_from, texts, ids) = from(3);
        let sql = format!(
            "SELECT c.id, c.name, t.slug, s.api_version, s.synced_at, n.name, n.kubelet_version, \
             n.container_runtime, n.os_image, n.kernel_version, n.ready {page_from} \
             ORDER BY t.slug, c.name, n.name LIMIT $1 OFFSET $2"
        );
        let count_sql = format!("SELECT COUNT(*) {}", from(1).0);
        type Row = (
            Uuid,
            String,
            String,
            Option<String>,
            Option<DateTime<Utc>>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<bool>,
        );
        let (rows, total): (Vec<Row>, i64) =
            page_and_total!(self, &sql, &count_sql, page, &texts, &ids);
        Ok((
            rows.into_iter()
                .map(|r| VersionRow {
                    cluster_id: r.0,
                    cluster: r.1,
                    tenant: r.2,
                    api_version: r.3,
                    synced_at: r.4,
                    node: r.5,
                    kubelet_version: r.6,
                    container_runtime: r.7,
                    os_image: r.8,
                    kernel_version: r.9,
                    ready: r.10,
                })
                .collect(),
            u64_of(total),
        ))
    }

    async fn list_findings(
        &self,
        filter: &FleetFilter,
        tenants: Option<&[Uuid]>,
        page: Page,
    ) -> Result<(Vec<FindingRow>, u64)> {
        let (from, texts, ids) = findings_from(filter, tenants, 3);
        let count_sql = format!("SELECT COUNT(*) {}", findings_from(filter, tenants, 1).0);
        let sql = format!(
            "SELECT f.cluster_id, c.name AS cluster, t.slug AS tenant, f.check_id, f.severity, \
             f.subject, f.message {from} \
             ORDER BY CASE f.severity WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END, \
             t.slug, c.name, f.seq LIMIT $1 OFFSET $2"
        );
        let (rows, total): (Vec<FindingDbRow>, i64) =
            page_and_total!(self, &sql, &count_sql, page, &texts, &ids);
        let rows = rows
            .into_iter()
            .map(|r| {
                Ok(FindingRow {
                    cluster_id: r.cluster_id,
                    cluster: r.cluster,
                    tenant: r.tenant,
                    finding: finding_of(r.check_id, &r.severity, r.subject, r.message)?,
                })
            })
            .collect::<Result<_>>()?;
        Ok((rows, u64_of(total)))
    }

    async fn count_findings(
        &self,
        filter: &FleetFilter,
        tenants: Option<&[Uuid]>,
    ) -> Result<Vec<FindingCount>> {
        let (from, texts, ids) = findings_from(filter, tenants, 1);
        let sql = format!(
            "SELECT f.severity, f.check_id, COUNT(*) {from} GROUP BY f.severity, f.check_id \
             ORDER BY CASE f.severity WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END, f.check_id"
        );
        let rows: Vec<(String, String, i64)> = on_pool!(self, p => {
            bind_all!(sqlx::query_as(&sql), &texts, &ids).fetch_all(p).await?
        });
        let mut out = rows
            .into_iter()
            .map(|(s, check, n)| {
                Ok(FindingCount {
                    severity: Severity::parse(&s)
                        .ok_or_else(|| Error::Corrupt(format!("finding severity '{s}'")))?,
                    check,
                    count: u64_of(n),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        out.sort_by(|a, b| (a.severity, &a.check).cmp(&(b.severity, &b.check)));
        Ok(out)
    }
}
