//! Tenants' quotas and what they use, and the admission check cluster writes run inside
//! their transaction ([`admit_in_tx!`]).

use async_trait::async_trait;
use uuid::Uuid;

use super::{Pool, SqlStore, INSERT_AUDIT};
use crate::audit::AuditEvent;
use crate::cluster::{Quota, Usage};
use crate::store::QuotaStore;
use crate::{Error, Result};

/// Clusters and nodes a tenant uses: live clusters, each counted with its node count or the
/// target of its unfinished scale operation, whichever is larger (a scale in flight has
/// already taken its share of the quota). `$2` names a cluster to leave out (`nil`: none).
/// The clusters and their node counts:
pub(super) const CLUSTERS_SQL: &str = "SELECT COUNT(*), COALESCE(SUM(node_count), 0) \
     FROM clusters WHERE tenant_id = $1 AND deleted_at IS NULL AND id <> $2";
/// … and the unfinished scales of those clusters (their targets are read in Rust: they are
/// stored as tagged JSON, which the two databases read differently).
pub(super) const SCALES_SQL: &str = "SELECT o.cluster_id, o.target, c.node_count \
     FROM operations o JOIN clusters c ON c.id = o.cluster_id \
     WHERE o.kind = 'scale' AND o.state IN ('pending', 'running') \
       AND c.tenant_id = $1 AND c.deleted_at IS NULL AND c.id <> $2";

/// An unfinished scale: its cluster, its stored target, the cluster's node count.
pub(super) type ScaleRow = (Uuid, Option<String>, i32);

/// The usage from [`CLUSTERS_SQL`]'s count and sum and [`SCALES_SQL`]'s rows. A scale whose
/// target cannot be read adds nothing (it fails, saying why, when a worker takes it).
pub(super) fn usage(clusters: i64, nodes: i64, scales: &[ScaleRow]) -> Usage {
    let mut beyond: std::collections::BTreeMap<Uuid, i64> = std::collections::BTreeMap::new();
    for (cluster, target, count) in scales {
        if let Some(n) = target
            .as_deref()
            .map(crate::cluster::OperationTarget::from_stored)
            .and_then(|t| t.nodes())
        {
            let more = (i64::from(n) - i64::from(*count)).max(0);
            let entry = beyond.entry(*cluster).or_default();
            *entry = (*entry).max(more);
        }
    }
    let nodes = nodes + beyond.values().sum::<i64>();
    Usage {
        clusters: u32::try_from(clusters).unwrap_or(u32::MAX),
        nodes: u32::try_from(nodes).unwrap_or(u32::MAX),
        shared_storage_bytes: 0,
    }
}

/// The tenant's usage (all its clusters but `$except`) on `$executor` (a pool or
/// `&mut *tx`, given as an expression evaluated once per query).
macro_rules! usage_on {
    ($executor:expr, $tenant:expr, $except:expr) => {{
        let (clusters, nodes): (i64, i64) =
            sqlx::query_as($crate::store::sql::quotas::CLUSTERS_SQL)
                .bind($tenant)
                .bind($except)
                .fetch_one($executor)
                .await?;
        let scales: Vec<$crate::store::sql::quotas::ScaleRow> =
            sqlx::query_as($crate::store::sql::quotas::SCALES_SQL)
                .bind($tenant)
                .bind($except)
                .fetch_all($executor)
                .await?;
        $crate::store::sql::quotas::usage(clusters, nodes, &scales)
    }};
}

pub(super) use usage_on;

/// Inside a transaction: locks the tenant (Postgres row lock; SQLite has one writer), then
/// refuses with Conflict when one more cluster of `nodes` nodes, besides the tenant's other
/// clusters (all but `except`), would exceed its quota.
macro_rules! admit_in_tx {
    ($tx:ident, $postgres:expr, $tenant:expr, $except:expr, $nodes:expr) => {{
        let lock = if $postgres {
            "SELECT max_clusters, max_nodes FROM tenants WHERE id = $1 FOR UPDATE"
        } else {
            "SELECT max_clusters, max_nodes FROM tenants WHERE id = $1"
        };
        let (max_c, max_n): (Option<i32>, Option<i32>) = sqlx::query_as(lock)
            .bind($tenant)
            .fetch_one(&mut *$tx)
            .await?;
        let used = $crate::store::sql::quotas::usage_on!(&mut *$tx, $tenant, $except);
        let quota = $crate::cluster::Quota {
            max_clusters: max_c.and_then(|v| u32::try_from(v).ok()),
            max_nodes: max_n.and_then(|v| u32::try_from(v).ok()),
            ..$crate::cluster::Quota::default()
        };
        quota.admit(used, $nodes).map_err($crate::Error::Conflict)?;
    }};
}

pub(super) use admit_in_tx;

#[async_trait]
impl QuotaStore for SqlStore {
    async fn quota(&self, tenant_id: Uuid) -> Result<Quota> {
        const SQL: &str = "SELECT max_clusters, max_nodes, cluster_ttl_hours, \
             max_shared_storage_bytes FROM tenants WHERE id = $1";
        type Row = (Option<i32>, Option<i32>, Option<i32>, Option<i64>);
        let row: Option<Row> = on_pool!(self, p => {
            sqlx::query_as(SQL).bind(tenant_id).fetch_optional(p).await?
        });
        let (c, n, t, bytes) = row.ok_or(Error::NotFound("tenant"))?;
        let u = |v: Option<i32>| v.and_then(|v| u32::try_from(v).ok());
        Ok(Quota {
            max_clusters: u(c),
            max_nodes: u(n),
            cluster_ttl_hours: u(t),
            max_shared_storage_bytes: bytes.and_then(|v| u64::try_from(v).ok()),
        })
    }

    async fn set_quota(&self, tenant_id: Uuid, q: &Quota, audit: &AuditEvent) -> Result<()> {
        let i = |v: Option<u32>| v.map(|v| i32::try_from(v).unwrap_or(i32::MAX));
        audited_tx!(self, audit, |tx| {
            let done = sqlx::query(
                "UPDATE tenants SET max_clusters = $2, max_nodes = $3, cluster_ttl_hours = $4, \
                 max_shared_storage_bytes = $5 WHERE id = $1",
            )
            .bind(tenant_id)
            .bind(i(q.max_clusters))
            .bind(i(q.max_nodes))
            .bind(i(q.cluster_ttl_hours))
            .bind(
                q.max_shared_storage_bytes
                    .map(|v| i64::try_from(v).unwrap_or(i64::MAX)),
            )
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() == 0 {
                return Err(Error::NotFound("tenant"));
            }
        });
        Ok(())
    }

    async fn usage(&self, tenant_id: Uuid) -> Result<Usage> {
        const STORAGE_SQL: &str = "SELECT CAST(COALESCE(SUM(CAST(s.bytes AS DOUBLE PRECISION)), 0) \
             AS DOUBLE PRECISION) FROM shared_storage_usage s JOIN clusters c ON c.id = s.cluster_id \
             WHERE c.tenant_id = $1 AND c.deleted_at IS NULL";
        let (used, (bytes,)): (Usage, (f64,)) = on_pool!(self, p => {
            (
                usage_on!(p, tenant_id, Uuid::nil()),
                sqlx::query_as(STORAGE_SQL).bind(tenant_id).fetch_one(p).await?,
            )
        });
        Ok(Usage {
            // `as` saturates (and maps NaN to 0): sums are never computed in integers.
            shared_storage_bytes: bytes.max(0.0) as u64,
            ..used
        })
    }
}
