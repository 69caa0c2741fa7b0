//! The fleet inventory's write side ([`InventoryStore`]): per-cluster rows replaced by each
//! sync, image history, findings, sync status; and one cluster's inventory. The fleet
//! queries over these rows are in `fleet_queries.rs`.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::{Pool, SqlStore};
use crate::cluster::{Cluster, ClusterFilter, ClusterState};
use crate::inventory::checks::{Finding, Severity};
use crate::inventory::fleet::{ClusterInventory, PodCount};
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

pub(super) fn u64_of(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

pub(super) fn u32_of(v: i64) -> u32 {
    u32::try_from(v).unwrap_or(0)
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
    not_ready_since: Option<DateTime<Utc>>,
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
            not_ready_since: r.not_ready_since,
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

pub(super) fn finding_of(
    check: String,
    severity: &str,
    subject: String,
    message: String,
) -> Result<Finding> {
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
                 mem_requested, cpu_used, mem_used, pods, not_ready_since) ",
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
                        .push_bind(i64::from(n.pods))
                        .push_bind(n.not_ready_since);
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
            // One number of nodes everywhere (lists, cards, the tenant's quota): what the
            // cluster reports once synced, the request's before. Not while an operation
            // is queued or runs (a scale sets its own count when it ends; a read from
            // before it must not undo it), nor for a cluster that is no longer Ready. Last
            // in the transaction: the engine updates the same row.
            sqlx::query(
                "UPDATE clusters SET node_count = $1 WHERE id = $2 AND deleted_at IS NULL \
                 AND state = 'ready' AND NOT EXISTS (SELECT 1 FROM operations o \
                 WHERE o.cluster_id = $2 AND o.state IN ('pending', 'running'))",
            )
            .bind(i32::try_from(snapshot.nodes.len()).unwrap_or(i32::MAX))
            .bind(cluster_id)
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
        const NODES: &str = "SELECT name, ready, problems, not_ready_since, kubelet_version, \
             container_runtime, \
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
}
