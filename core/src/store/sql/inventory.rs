//! The fleet inventory: per-cluster rows replaced by each sync, image history, findings, and
//! the fleet queries over them. Every query restricts to live clusters and, when given, to
//! the caller's tenants.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::{contains_pattern, limit_offset, Pool, SqlStore};
use crate::cluster::{Cluster, ClusterFilter, ClusterState};
use crate::inventory::checks::{Finding, Severity};
use crate::inventory::fleet::{
    ClusterInventory, FindingCount, FindingRow, FleetCluster, FleetFilter, ImageHistoryRow,
    ImageSummary, ImageUsage, PodCount, VersionRow,
};
use crate::inventory::{
    NodeInfo, PodPhase, Resources, Snapshot, SyncStatus, Workload, WorkloadKind, WorkloadState,
    MAX_QUANTITY,
};
use crate::page::Page;
use crate::store::InventoryStore;
use crate::{Error, Result};

/// Rows per multi-row INSERT (well under both dialects' bind-parameter limits).
const CHUNK: usize = 400;

/// Inserts `$rows` into `$table ($cols)` in chunks, binding each row with `$bind`.
macro_rules! bulk_insert {
    ($tx:ident, $head:expr, $rows:expr, |$b:ident, $row:ident| $bind:block) => {
        for chunk in $rows.chunks(CHUNK) {
            let mut qb = sqlx::QueryBuilder::new($head);
            qb.push_values(chunk, |mut $b, $row| $bind);
            qb.build().execute(&mut *$tx).await?;
        }
    };
}

fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A resource quantity as stored: clamped to [`MAX_QUANTITY`], so that no cluster, however
/// hostile, can store values whose sums overflow or that mean nothing.
fn qty(v: u64) -> i64 {
    i64_of(v.min(MAX_QUANTITY))
}

/// A sum read as DOUBLE PRECISION (sums are never computed in integers, which overflow),
/// saturated into `u64`.
fn sum_of(v: Option<f64>) -> Option<u64> {
    // `as` saturates and maps NaN to 0.
    v.map(|f| f.max(0.0) as u64)
}

fn u64_of(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn u32_of(v: i64) -> u32 {
    u32::try_from(v).unwrap_or(0)
}

/// The WHERE clause of a fleet query: `extra` clauses first (each `(clause with "{}" for
/// its placeholder, value)`), then live clusters of the filter's tenant / name and of the
/// caller's `tenants`. Placeholders are numbered from `$first`; bind the returned texts, then
/// the tenant ids, in that order.
fn fleet_where(
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
struct SyncRow {
    cluster_id: Uuid,
    attempted_at: DateTime<Utc>,
    synced_at: Option<DateTime<Utc>>,
    error: Option<String>,
    api_version: Option<String>,
    metrics: bool,
    duration_ms: i64,
}

impl From<SyncRow> for SyncStatus {
    fn from(r: SyncRow) -> Self {
        SyncStatus {
            cluster_id: r.cluster_id,
            attempted_at: r.attempted_at,
            synced_at: r.synced_at,
            error: r.error,
            api_version: r.api_version,
            metrics: r.metrics,
            duration_ms: u64_of(r.duration_ms),
        }
    }
}

#[derive(FromRow)]
struct NodeRow {
    name: String,
    ready: bool,
    problems: String,
    kubelet_version: String,
    container_runtime: String,
    os_image: String,
    kernel_version: String,
    architecture: String,
    cpu_capacity: i64,
    mem_capacity: i64,
    cpu_allocatable: i64,
    mem_allocatable: i64,
    cpu_requested: i64,
    mem_requested: i64,
    cpu_used: Option<i64>,
    mem_used: Option<i64>,
    pods: i64,
}

fn res(cpu: i64, mem: i64) -> Resources {
    Resources {
        cpu_millis: u64_of(cpu),
        memory_bytes: u64_of(mem),
    }
}

impl From<NodeRow> for NodeInfo {
    fn from(r: NodeRow) -> Self {
        NodeInfo {
            name: r.name,
            ready: r.ready,
            problems: r
                .problems
                .split('\n')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
            kubelet_version: r.kubelet_version,
            container_runtime: r.container_runtime,
            os_image: r.os_image,
            kernel_version: r.kernel_version,
            architecture: r.architecture,
            capacity: res(r.cpu_capacity, r.mem_capacity),
            allocatable: res(r.cpu_allocatable, r.mem_allocatable),
            requested: res(r.cpu_requested, r.mem_requested),
            used: match (r.cpu_used, r.mem_used) {
                (Some(c), Some(m)) => Some(res(c, m)),
                _ => None,
            },
            pods: u32_of(r.pods),
        }
    }
}

#[derive(FromRow)]
struct FleetRow {
    id: Uuid,
    name: String,
    tenant: String,
    state: String,
    provider: String,
    error: Option<String>,
    attempted_at: Option<DateTime<Utc>>,
    synced_at: Option<DateTime<Utc>>,
    sync_error: Option<String>,
    api_version: Option<String>,
    nodes: Option<i64>,
    nodes_ready: Option<i64>,
    cpu_capacity: Option<f64>,
    mem_capacity: Option<f64>,
    cpu_allocatable: Option<f64>,
    mem_allocatable: Option<f64>,
    cpu_requested: Option<f64>,
    mem_requested: Option<f64>,
    cpu_used: Option<f64>,
    mem_used: Option<f64>,
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

fn finding_of(check: String, severity: &str, subject: String, message: String) -> Result<Finding> {
    Ok(Finding {
        check,
        severity: Severity::parse(severity)
            .ok_or_else(|| Error::Corrupt(format!("finding severity '{severity}'")))?,
        subject,
        message,
    })
}

/// A workload container's row: what the sync writes to `inventory_containers`.
struct ContainerRow<'a> {
    namespace: &'a str,
    kind: WorkloadKind,
    workload: &'a str,
    container: &'a str,
    image: String,
    init: bool,
    privileged: bool,
    host_path: bool,
    pods: i64,
}

/// Collapses replicas: one row per workload, container and image, counting pods.
fn container_rows(s: &Snapshot) -> Vec<ContainerRow<'_>> {
    let mut rows: BTreeMap<(&str, WorkloadKind, &str, &str, String), ContainerRow<'_>> =
        BTreeMap::new();
    for p in &s.pods {
        for c in &p.containers {
            let image = c
                .image
                .as_ref()
                .map_or_else(|| c.image_spec.clone(), |i| i.reference());
            let key = (
                p.namespace.as_str(),
                p.workload_kind,
                p.workload_name.as_str(),
                c.name.as_str(),
                image.clone(),
            );
            rows.entry(key)
                .and_modify(|r| {
                    r.pods += 1;
                    r.privileged |= c.privileged;
                    r.host_path |= p.host_path;
                })
                .or_insert(ContainerRow {
                    namespace: &p.namespace,
                    kind: p.workload_kind,
                    workload: &p.workload_name,
                    container: &c.name,
                    image,
                    init: c.init,
                    privileged: c.privileged,
                    host_path: p.host_path,
                    pods: 1,
                });
        }
    }
    rows.into_values().collect()
}

const FLEET_SQL: &str = "SELECT c.id, c.name, t.slug AS tenant, c.state, p.name AS provider, \
     c.error, s.attempted_at, s.synced_at, s.error AS sync_error, s.api_version, \
     n.nodes, n.nodes_ready, n.cpu_capacity, n.mem_capacity, n.cpu_allocatable, \
     n.mem_allocatable, n.cpu_requested, n.mem_requested, n.cpu_used, n.mem_used \
     FROM clusters c JOIN tenants t ON t.id = c.tenant_id \
     JOIN providers p ON p.id = c.provider_id \
     LEFT JOIN inventory_syncs s ON s.cluster_id = c.id \
     LEFT JOIN (SELECT cluster_id, COUNT(*) AS nodes, \
        CAST(SUM(CASE WHEN ready THEN 1 ELSE 0 END) AS BIGINT) AS nodes_ready, \
        SUM(CAST(cpu_capacity AS DOUBLE PRECISION)) AS cpu_capacity, \
        SUM(CAST(mem_capacity AS DOUBLE PRECISION)) AS mem_capacity, \
        SUM(CAST(cpu_allocatable AS DOUBLE PRECISION)) AS cpu_allocatable, \
        SUM(CAST(mem_allocatable AS DOUBLE PRECISION)) AS mem_allocatable, \
        SUM(CAST(cpu_requested AS DOUBLE PRECISION)) AS cpu_requested, \
        SUM(CAST(mem_requested AS DOUBLE PRECISION)) AS mem_requested, \
        SUM(CAST(cpu_used AS DOUBLE PRECISION)) AS cpu_used, \
        SUM(CAST(mem_used AS DOUBLE PRECISION)) AS mem_used \
        FROM inventory_nodes GROUP BY cluster_id) n ON n.cluster_id = c.id";

#[async_trait]
impl InventoryStore for SqlStore {
    async fn ready_clusters(&self) -> Result<Vec<Cluster>> {
        let filter = ClusterFilter {
            state: Some(ClusterState::Ready),
            ..ClusterFilter::default()
        };
        let mut all = Vec::new();
        loop {
            let offset = u32::try_from(all.len()).unwrap_or(u32::MAX);
            let page = Page::new(Page::MAX_LIMIT, offset);
            let (batch, _) =
                crate::store::ClusterStore::list_clusters(self, &filter, None, page).await?;
            let done = batch.len() < Page::MAX_LIMIT as usize;
            all.extend(batch);
            if done {
                return Ok(all);
            }
        }
    }

    async fn save_inventory(
        &self,
        cluster_id: Uuid,
        snapshot: &Snapshot,
        findings: &[Finding],
        at: DateTime<Utc>,
        duration_ms: u64,
    ) -> Result<()> {
        let containers = container_rows(snapshot);
        let postgres = matches!(self.pool, Pool::Postgres(_));
        // Syncs of one cluster (the timer's and a Sync now) may finish together: they must
        // replace the rows one after the other, or the second one's inserts meet the first
        // one's rows. SQLite transactions are BEGIN IMMEDIATE (one writer); on Postgres a
        // transaction-scoped advisory lock per cluster serialises them without holding the
        // cluster's row (which the engine updates).
        let lock_key = i64::from_be_bytes(
            cluster_id.as_bytes()[..8]
                .try_into()
                .map_err(|_| Error::Corrupt("uuid".into()))?,
        );
        in_tx!(self, |tx| {
            if postgres {
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(lock_key)
                    .execute(&mut *tx)
                    .await?;
            }
            for table in [
                "inventory_nodes",
                "inventory_workloads",
                "inventory_pods",
                "inventory_containers",
                "inventory_findings",
            ] {
                sqlx::query(&format!("DELETE FROM {table} WHERE cluster_id = $1"))
                    .bind(cluster_id)
                    .execute(&mut *tx)
                    .await?;
            }
            bulk_insert!(
                tx,
                "INSERT INTO inventory_nodes (cluster_id, name, ready, problems, \
                 kubelet_version, container_runtime, os_image, kernel_version, architecture, \
                 cpu_capacity, mem_capacity, cpu_allocatable, mem_allocatable, cpu_requested, \
                 mem_requested, cpu_used, mem_used, pods) ",
                snapshot.nodes,
                |b, n| {
                    b.push_bind(cluster_id)
                        .push_bind(&n.name)
                        .push_bind(n.ready)
                        .push_bind(n.problems.join("\n"))
                        .push_bind(&n.kubelet_version)
                        .push_bind(&n.container_runtime)
                        .push_bind(&n.os_image)
                        .push_bind(&n.kernel_version)
                        .push_bind(&n.architecture)
                        .push_bind(qty(n.capacity.cpu_millis))
                        .push_bind(qty(n.capacity.memory_bytes))
                        .push_bind(qty(n.allocatable.cpu_millis))
                        .push_bind(qty(n.allocatable.memory_bytes))
                        .push_bind(qty(n.requested.cpu_millis))
                        .push_bind(qty(n.requested.memory_bytes))
                        .push_bind(n.used.map(|u| qty(u.cpu_millis)))
                        .push_bind(n.used.map(|u| qty(u.memory_bytes)))
                        .push_bind(i64::from(n.pods));
                }
            );
            bulk_insert!(
                tx,
                "INSERT INTO inventory_workloads (cluster_id, namespace, kind, name, desired, \
                 ready, state) ",
                snapshot.workloads,
                |b, w| {
                    b.push_bind(cluster_id)
                        .push_bind(&w.namespace)
                        .push_bind(w.kind.as_str())
                        .push_bind(&w.name)
                        .push_bind(i64::from(w.desired))
                        .push_bind(i64::from(w.ready))
                        .push_bind(w.state.as_str());
                }
            );
            bulk_insert!(
                tx,
                "INSERT INTO inventory_pods (cluster_id, namespace, name, phase, node, \
                 restarts, workload_kind, workload_name, cpu_requests, mem_requests, \
                 cpu_limits, mem_limits) ",
                snapshot.pods,
                |b, p| {
                    b.push_bind(cluster_id)
                        .push_bind(&p.namespace)
                        .push_bind(&p.name)
                        .push_bind(p.phase.as_str())
                        .push_bind(&p.node)
                        .push_bind(i64::from(p.restarts))
                        .push_bind(p.workload_kind.as_str())
                        .push_bind(&p.workload_name)
                        .push_bind(qty(p.requests.cpu_millis))
                        .push_bind(qty(p.requests.memory_bytes))
                        .push_bind(qty(p.limits.cpu_millis))
                        .push_bind(qty(p.limits.memory_bytes));
                }
            );
            bulk_insert!(
                tx,
                "INSERT INTO inventory_containers (cluster_id, namespace, workload_kind, \
                 workload_name, container, image, init, privileged, host_path, pods) ",
                containers,
                |b, c| {
                    b.push_bind(cluster_id)
                        .push_bind(c.namespace)
                        .push_bind(c.kind.as_str())
                        .push_bind(c.workload)
                        .push_bind(c.container)
                        .push_bind(&c.image)
                        .push_bind(c.init)
                        .push_bind(c.privileged)
                        .push_bind(c.host_path)
                        .push_bind(c.pods);
                }
            );
            let numbered: Vec<(i64, &Finding)> = (0i64..).zip(findings).collect();
            bulk_insert!(
                tx,
                "INSERT INTO inventory_findings (cluster_id, seq, check_id, severity, subject, \
                 message) ",
                numbered,
                |b, f| {
                    b.push_bind(cluster_id)
                        .push_bind(f.0)
                        .push_bind(&f.1.check)
                        .push_bind(f.1.severity.as_str())
                        .push_bind(&f.1.subject)
                        .push_bind(&f.1.message);
                }
            );
            // Image history: what runs now is present and seen now (an image that comes back
            // after it was gone starts a new period: first seen again); the rest is gone.
            let images: std::collections::BTreeSet<&str> =
                containers.iter().map(|c| c.image.as_str()).collect();
            let images: Vec<&str> = images.into_iter().collect();
            for chunk in images.chunks(CHUNK) {
                let mut qb = sqlx::QueryBuilder::new(
                    "INSERT INTO image_history (cluster_id, image, first_seen, last_seen, present) ",
                );
                qb.push_values(chunk, |mut b, image| {
                    b.push_bind(cluster_id)
                        .push_bind(*image)
                        .push_bind(at)
                        .push_bind(at)
                        .push_bind(true);
                });
                qb.push(
                    " ON CONFLICT (cluster_id, image) DO UPDATE SET last_seen = excluded.last_seen, \
                     first_seen = CASE WHEN image_history.present THEN image_history.first_seen \
                     ELSE excluded.first_seen END, present = TRUE",
                );
                qb.build().execute(&mut *tx).await?;
            }
            sqlx::query(
                "UPDATE image_history SET present = FALSE WHERE cluster_id = $1 AND present \
                 AND last_seen <> $2",
            )
            .bind(cluster_id)
            .bind(at)
            .execute(&mut *tx)
            .await?;
            sqlx::query(
                "INSERT INTO inventory_syncs (cluster_id, attempted_at, synced_at, error, \
                 api_version, metrics, duration_ms) VALUES ($1, $2, $2, NULL, $3, $4, $5) \
                 ON CONFLICT (cluster_id) DO UPDATE SET attempted_at = excluded.attempted_at, \
                 synced_at = excluded.synced_at, error = NULL, api_version = excluded.api_version, \
                 metrics = excluded.metrics, duration_ms = excluded.duration_ms",
            )
            .bind(cluster_id)
            .bind(at)
            .bind(&snapshot.api_version)
            .bind(snapshot.metrics)
            .bind(i64_of(duration_ms))
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
        });
        Ok(())
    }

    async fn save_sync_failure(
        &self,
        cluster_id: Uuid,
        error: &str,
        at: DateTime<Utc>,
        duration_ms: u64,
    ) -> Result<()> {
        // The rows of the last good sync stay; the status says how old they are and why.
        const SQL: &str = "INSERT INTO inventory_syncs (cluster_id, attempted_at, error, \
             duration_ms) VALUES ($1, $2, $3, $4) ON CONFLICT (cluster_id) DO UPDATE SET \
             attempted_at = excluded.attempted_at, error = excluded.error, \
             duration_ms = excluded.duration_ms";
        on_pool!(self, p => {
            sqlx::query(SQL)
                .bind(cluster_id)
                .bind(at)
                .bind(error)
                .bind(i64_of(duration_ms))
                .execute(p)
                .await
                .map(|_| ())?
        });
        Ok(())
    }

    async fn cluster_inventory(&self, cluster_id: Uuid) -> Result<ClusterInventory> {
        const STATUS: &str = "SELECT cluster_id, attempted_at, synced_at, error, api_version, \
             metrics, duration_ms FROM inventory_syncs WHERE cluster_id = $1";
        const NODES: &str = "SELECT name, ready, problems, kubelet_version, container_runtime, \
             os_image, kernel_version, architecture, cpu_capacity, mem_capacity, \
             cpu_allocatable, mem_allocatable, cpu_requested, mem_requested, cpu_used, mem_used, \
             CAST(pods AS BIGINT) AS pods FROM inventory_nodes WHERE cluster_id = $1 ORDER BY name";
        const WORKLOADS: &str = "SELECT namespace, kind, name, CAST(desired AS BIGINT), \
             CAST(ready AS BIGINT), state FROM inventory_workloads WHERE cluster_id = $1 \
             ORDER BY namespace, kind, name";
        const PODS: &str = "SELECT namespace, phase, COUNT(*) FROM inventory_pods \
             WHERE cluster_id = $1 GROUP BY namespace, phase ORDER BY namespace, phase";
        const FINDINGS: &str = "SELECT check_id, severity, subject, message \
             FROM inventory_findings WHERE cluster_id = $1 \
             ORDER BY CASE severity WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END, seq";
        type WorkloadTuple = (String, String, String, i64, i64, String);
        let (status, nodes, workloads, pods, findings): (
            Option<SyncRow>,
            Vec<NodeRow>,
            Vec<WorkloadTuple>,
            Vec<(String, String, i64)>,
            Vec<(String, String, String, String)>,
        ) = on_pool!(self, p => {
            (
                sqlx::query_as(STATUS).bind(cluster_id).fetch_optional(p).await?,
                sqlx::query_as(NODES).bind(cluster_id).fetch_all(p).await?,
                sqlx::query_as(WORKLOADS).bind(cluster_id).fetch_all(p).await?,
                sqlx::query_as(PODS).bind(cluster_id).fetch_all(p).await?,
                sqlx::query_as(FINDINGS).bind(cluster_id).fetch_all(p).await?,
            )
        });
        let corrupt = |what: &str| Error::Corrupt(format!("inventory of {cluster_id}: {what}"));
        Ok(ClusterInventory {
            status: status.map(Into::into),
            nodes: nodes.into_iter().map(Into::into).collect(),
            workloads: workloads
                .into_iter()
                .map(|(namespace, kind, name, desired, ready, state)| {
                    Ok(Workload {
                        kind: WorkloadKind::parse(&kind).ok_or_else(|| corrupt("kind"))?,
                        state: WorkloadState::parse(&state).ok_or_else(|| corrupt("state"))?,
                        namespace,
                        name,
                        desired: u32_of(desired),
                        ready: u32_of(ready),
                    })
                })
                .collect::<Result<_>>()?,
            pods: pods
                .into_iter()
                .map(|(namespace, phase, count)| PodCount {
                    namespace,
                    phase: PodPhase::from_status(&phase),
                    count: u32_of(count),
                })
                .collect(),
            findings: findings
                .into_iter()
                .map(|(c, sev, subject, message)| finding_of(c, &sev, subject, message))
                .collect::<Result<_>>()?,
        })
    }

    async fn fleet_clusters(
        &self,
        filter: &FleetFilter,
        tenants: Option<&[Uuid]>,
    ) -> Result<Vec<FleetCluster>> {
        let (wh, texts, ids) = fleet_where(filter, tenants, 1, Vec::new());
        let sql = format!("{FLEET_SQL} WHERE {wh} ORDER BY t.slug, c.name");
        let rows: Vec<FleetRow> = on_pool!(self, p => {
            bind_all!(sqlx::query_as(&sql), &texts, &ids).fetch_all(p).await?
        });
        rows.into_iter()
            .map(|r| {
                let state = ClusterState::parse(&r.state)
                    .ok_or_else(|| Error::Corrupt(format!("cluster {}: state", r.id)))?;
                let z = |v: Option<i64>| v.unwrap_or(0);
                let sum = |v: Option<f64>| sum_of(v).unwrap_or(0);
                let sums = |cpu: Option<f64>, mem: Option<f64>| Resources {
                    cpu_millis: sum(cpu),
                    memory_bytes: sum(mem),
                };
                Ok(FleetCluster {
                    id: r.id,
                    name: r.name,
                    tenant: r.tenant,
                    state,
                    provider: r.provider,
                    error: r.error,
                    attempted_at: r.attempted_at,
                    synced_at: r.synced_at,
                    sync_error: r.sync_error,
                    api_version: r.api_version,
                    nodes: u32_of(z(r.nodes)),
                    nodes_ready: u32_of(z(r.nodes_ready)),
                    capacity: sums(r.cpu_capacity, r.mem_capacity),
                    allocatable: sums(r.cpu_allocatable, r.mem_allocatable),
                    requested: sums(r.cpu_requested, r.mem_requested),
                    used: match (r.cpu_used, r.mem_used) {
                        (Some(c), Some(m)) => Some(sums(Some(c), Some(m))),
                        _ => None,
                    },
                })
            })
            .collect()
    }

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
