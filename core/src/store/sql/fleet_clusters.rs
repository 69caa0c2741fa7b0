//! The fleet's live clusters with their sync status and node figures ([`FleetClusterStore`]):
//! the dashboard's counts and totals aggregated in the database (whatever the fleet's size,
//! one row per group), its pages (clusters, or those needing attention, one page at a time)
//! and every cluster for a metrics scrape.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::fleet_queries::fleet_where;
use super::{limit_offset, Pool, SqlStore};
use crate::cluster::ClusterState;
use crate::inventory::fleet::{AttentionRule, FleetCluster, FleetFilter, FleetGroup, NodeTotals};
use crate::inventory::Resources;
use crate::page::Page;
use crate::provisioner::{SharedStorage, SharedStorageReading};
use crate::store::FleetClusterStore;
use crate::{Error, Result};

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
    #[sqlx(flatten)]
    sums: NodeSums,
    not_ready_since: Option<DateTime<Utc>>,
    storage_keys: Option<i64>,
    storage_bytes: Option<i64>,
    storage_writable: Option<bool>,
    storage_measured_at: Option<DateTime<Utc>>,
}

/// A cluster `c` with its tenant `t`, provider `p`, last sync `s`, shared storage `ss` and
/// node figures `n` (joined by the query).
const FLEET_COLS: &str = "c.id, c.name, t.slug AS tenant, c.state, p.name AS provider, \
     c.error, s.attempted_at, s.synced_at, s.error AS sync_error, s.api_version, \
     n.nodes, n.nodes_ready, n.not_ready_since, n.cpu_capacity, n.mem_capacity, n.cpu_allocatable, \
     n.mem_allocatable, n.cpu_requested, n.mem_requested, n.cpu_used, n.mem_used, \
     ss.keys AS storage_keys, ss.bytes AS storage_bytes, ss.writable AS storage_writable, \
     ss.measured_at AS storage_measured_at";

/// The joins [`FLEET_COLS`] reads, but the node figures.
const FLEET_JOINS: &str = "JOIN tenants t ON t.id = c.tenant_id \
     JOIN providers p ON p.id = c.provider_id \
     LEFT JOIN inventory_syncs s ON s.cluster_id = c.id \
     LEFT JOIN shared_storage_usage ss ON ss.cluster_id = c.id";

/// Sums of node figures read as DOUBLE PRECISION (never in integers, which overflow), over
/// the nodes of `FROM …` (with its alias `n`).
const NODE_SUMS: &str = "COUNT(*) AS nodes, \
     CAST(SUM(CASE WHEN n.ready THEN 1 ELSE 0 END) AS BIGINT) AS nodes_ready, \
     SUM(CAST(n.cpu_capacity AS DOUBLE PRECISION)) AS cpu_capacity, \
     SUM(CAST(n.mem_capacity AS DOUBLE PRECISION)) AS mem_capacity, \
     SUM(CAST(n.cpu_allocatable AS DOUBLE PRECISION)) AS cpu_allocatable, \
     SUM(CAST(n.mem_allocatable AS DOUBLE PRECISION)) AS mem_allocatable, \
     SUM(CAST(n.cpu_requested AS DOUBLE PRECISION)) AS cpu_requested, \
     SUM(CAST(n.mem_requested AS DOUBLE PRECISION)) AS mem_requested, \
     SUM(CAST(n.cpu_used AS DOUBLE PRECISION)) AS cpu_used, \
     SUM(CAST(n.mem_used AS DOUBLE PRECISION)) AS mem_used";

/// Node figures per cluster, of the nodes `which` selects (`WHERE …` on `n`, or empty).
fn nodes_per_cluster(which: &str) -> String {
    format!(
        "SELECT n.cluster_id, {NODE_SUMS}, MIN(n.not_ready_since) AS not_ready_since \
         FROM inventory_nodes n {which} GROUP BY n.cluster_id"
    )
}

/// The rule as a condition on a cluster `c` with its last sync `s` and shared storage `ss`:
/// `stale` is the placeholder of its `stale_before`, `behind` those of the versions behind
/// (none: versions aside).
fn attention_sql(rule: &AttentionRule, stale: &str, behind: &[String]) -> String {
    let mut any = vec![
        format!("c.state = '{}'", ClusterState::Error.as_str()),
        format!(
            "(c.state = '{}' AND (s.synced_at IS NULL OR s.error IS NOT NULL \
             OR s.synced_at < {stale}))",
            ClusterState::Ready.as_str()
        ),
        "EXISTS (SELECT 1 FROM inventory_nodes nr WHERE nr.cluster_id = c.id AND NOT nr.ready)"
            .to_owned(),
    ];
    if rule.storage {
        // No row: NULL, which is not true.
        any.push("NOT ss.writable".to_owned());
    }
    if !behind.is_empty() {
        any.push(format!("s.api_version IN ({})", behind.join(", ")));
    }
    format!("({})", any.join(" OR "))
}

/// A sum read as DOUBLE PRECISION, saturated into `u64`.
fn sum_of(v: Option<f64>) -> Option<u64> {
    // `as` saturates and maps NaN to 0.
    v.map(|f| f.max(0.0) as u64)
}

fn resources(cpu: Option<f64>, mem: Option<f64>) -> Resources {
    Resources {
        cpu_millis: sum_of(cpu).unwrap_or(0),
        memory_bytes: sum_of(mem).unwrap_or(0),
    }
}

/// Usage where both sums exist (some node reports it).
fn used(cpu: Option<f64>, mem: Option<f64>) -> Option<Resources> {
    match (cpu, mem) {
        (Some(c), Some(m)) => Some(resources(Some(c), Some(m))),
        _ => None,
    }
}

fn fleet_cluster(r: FleetRow) -> Result<FleetCluster> {
    let state = ClusterState::parse(&r.state)
        .ok_or_else(|| Error::Corrupt(format!("cluster {}: state", r.id)))?;
    let sums = r.sums.totals();
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
        nodes: u32::try_from(sums.nodes).unwrap_or(u32::MAX),
        nodes_ready: u32::try_from(sums.nodes_ready).unwrap_or(u32::MAX),
        not_ready_since: r.not_ready_since,
        capacity: sums.capacity,
        allocatable: sums.allocatable,
        requested: sums.requested,
        used: sums.used,
        shared_storage: match (
            r.storage_keys,
            r.storage_bytes,
            r.storage_writable,
            r.storage_measured_at,
        ) {
            (Some(keys), Some(bytes), Some(writable), Some(measured_at)) => {
                Some(SharedStorageReading {
                    usage: SharedStorage {
                        keys: u64::try_from(keys).unwrap_or(0),
                        bytes: u64::try_from(bytes).unwrap_or(0),
                        writable,
                    },
                    measured_at,
                })
            }
            _ => None,
        },
    })
}

/// `n` placeholders numbered from `$first`.
fn placeholders(first: usize, n: usize) -> Vec<String> {
    (first..first + n).map(|i| format!("${i}")).collect()
}

#[async_trait]
impl FleetClusterStore for SqlStore {
    async fn clusters_version(&self) -> Result<i64> {
        self.list_version().await
    }

    async fn fleet_clusters(
        &self,
        filter: &FleetFilter,
        tenants: Option<&[Uuid]>,
    ) -> Result<Vec<FleetCluster>> {
        let (wh, texts, ids) = fleet_where(filter, tenants, 1, Vec::new());
        let sql = format!(
            "SELECT {FLEET_COLS} FROM clusters c {FLEET_JOINS} \
             LEFT JOIN ({}) n ON n.cluster_id = c.id WHERE {wh} ORDER BY t.slug, c.name",
            nodes_per_cluster("")
        );
        let rows: Vec<FleetRow> = on_pool!(self, p => {
            bind_all!(sqlx::query_as(&sql), &texts, &ids).fetch_all(p).await?
        });
        rows.into_iter().map(fleet_cluster).collect()
    }

    async fn fleet_groups(
        &self,
        filter: &FleetFilter,
        tenants: Option<&[Uuid]>,
        rule: &AttentionRule,
    ) -> Result<Vec<FleetGroup>> {
        let (wh, texts, ids) = fleet_where(filter, tenants, 2, Vec::new());
        let attention = attention_sql(rule, "$1", &[]);
        let sql = format!(
            "SELECT c.state, p.name, s.api_version, COUNT(*), \
             SUM(CASE WHEN {attention} THEN 1 ELSE 0 END) \
             FROM clusters c JOIN providers p ON p.id = c.provider_id \
             LEFT JOIN inventory_syncs s ON s.cluster_id = c.id \
             LEFT JOIN shared_storage_usage ss ON ss.cluster_id = c.id \
             WHERE {wh} GROUP BY c.state, p.name, s.api_version"
        );
        type Row = (String, String, Option<String>, i64, Option<i64>);
        let rows: Vec<Row> = on_pool!(self, p => {
            let q = sqlx::query_as(&sql).bind(rule.stale_before);
            bind_all!(q, &texts, &ids).fetch_all(p).await?
        });
        rows.into_iter()
            .map(|(state, provider, api_version, clusters, attention)| {
                Ok(FleetGroup {
                    state: ClusterState::parse(&state)
                        .ok_or_else(|| Error::Corrupt(format!("cluster state {state:?}")))?,
                    provider,
                    api_version,
                    clusters: u64::try_from(clusters).unwrap_or(0),
                    attention: u64::try_from(attention.unwrap_or(0)).unwrap_or(0),
                })
            })
            .collect()
    }

    async fn fleet_node_totals(
        &self,
        filter: &FleetFilter,
        tenants: Option<&[Uuid]>,
    ) -> Result<NodeTotals> {
        let (wh, texts, ids) = fleet_where(filter, tenants, 1, Vec::new());
        let sql = format!(
            "SELECT {NODE_SUMS} FROM inventory_nodes n JOIN clusters c ON c.id = n.cluster_id \
             WHERE {wh}"
        );
        let r: NodeSums = on_pool!(self, p => {
            bind_all!(sqlx::query_as(&sql), &texts, &ids).fetch_one(p).await?
        });
        Ok(r.totals())
    }

    async fn fleet_page(
        &self,
        filter: &FleetFilter,
        tenants: Option<&[Uuid]>,
        attention: Option<&AttentionRule>,
        page: Page,
    ) -> Result<Vec<FleetCluster>> {
        // `$1` limit, `$2` offset, then (attention only) `$3` its stale_before and the
        // versions behind, then the filter's texts and tenants.
        let behind = attention.map_or(&[][..], |r| &r.behind[..]);
        let first = if attention.is_some() { 4 } else { 3 };
        let (wh, texts, ids) = fleet_where(filter, tenants, first + behind.len(), Vec::new());
        let only = attention.map_or(String::new(), |rule| {
            format!(
                "AND {}",
                attention_sql(rule, "$3", &placeholders(first, behind.len()))
            )
        });
        // The page's ids first, walked as the cluster list walks them (tenants by slug, each
        // tenant's clusters by name, through indexes, stopping after the page); the figures
        // of those clusters only.
        let sql = format!(
            "WITH page AS (SELECT c.id FROM tenants t CROSS JOIN clusters c \
             LEFT JOIN inventory_syncs s ON s.cluster_id = c.id \
             LEFT JOIN shared_storage_usage ss ON ss.cluster_id = c.id \
             WHERE c.tenant_id = t.id AND {wh} {only} ORDER BY t.slug, c.name LIMIT $1 OFFSET $2) \
             SELECT {FLEET_COLS} FROM page JOIN clusters c ON c.id = page.id {FLEET_JOINS} \
             LEFT JOIN ({}) n ON n.cluster_id = c.id ORDER BY t.slug, c.name",
            nodes_per_cluster("WHERE n.cluster_id IN (SELECT id FROM page)")
        );
        let (limit, offset) = limit_offset(page);
        let rows: Vec<FleetRow> = on_pool!(self, p => {
            let mut q = sqlx::query_as(&sql).bind(limit).bind(offset);
            if let Some(rule) = attention {
                q = q.bind(rule.stale_before);
                for v in &rule.behind {
                    q = q.bind(v);
                }
            }
            bind_all!(q, &texts, &ids).fetch_all(p).await?
        });
        rows.into_iter().map(fleet_cluster).collect()
    }
}

/// [`NODE_SUMS`] as read: none where a cluster has no nodes.
#[derive(FromRow)]
struct NodeSums {
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

impl NodeSums {
    fn totals(&self) -> NodeTotals {
        let count = |v: Option<i64>| u64::try_from(v.unwrap_or(0)).unwrap_or(0);
        NodeTotals {
            nodes: count(self.nodes),
            nodes_ready: count(self.nodes_ready),
            capacity: resources(self.cpu_capacity, self.mem_capacity),
            allocatable: resources(self.cpu_allocatable, self.mem_allocatable),
            requested: resources(self.cpu_requested, self.mem_requested),
            used: used(self.cpu_used, self.mem_used),
        }
    }
}
