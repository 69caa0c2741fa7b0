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
pub(super) const USAGE_SQL: &str =
    "SELECT COUNT(*), COALESCE(SUM(CASE WHEN s.target > c.node_count \
     THEN s.target ELSE c.node_count END), 0) \
     FROM clusters c LEFT JOIN (SELECT cluster_id, MAX(CAST(target AS INTEGER)) AS target \
       FROM operations WHERE kind = 'scale' AND state IN ('pending', 'running') \
       GROUP BY cluster_id) s ON s.cluster_id = c.id \
     WHERE c.tenant_id = $1 AND c.deleted_at IS NULL AND c.id <> $2";

pub(super) fn usage(clusters: i64, nodes: i64) -> Usage {
    Usage {
        clusters: u32::try_from(clusters).unwrap_or(u32::MAX),
        nodes: u32::try_from(nodes).unwrap_or(u32::MAX),
        shared_storage_bytes: 0,
    }
}

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
        let (used_c, used_n): (i64, i64) = sqlx::query_as($crate::store::sql::quotas::USAGE_SQL)
            .bind($tenant)
            .bind($except)
            .fetch_one(&mut *$tx)
            .await?;
        let quota = $crate::cluster::Quota {
            max_clusters: max_c.and_then(|v| u32::try_from(v).ok()),
            max_nodes: max_n.and_then(|v| u32::try_from(v).ok()),
            ..$crate::cluster::Quota::default()
        };
        quota
            .admit($crate::store::sql::quotas::usage(used_c, used_n), $nodes)
            .map_err($crate::Error::Conflict)?;
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
        let ((c, n), (bytes,)): ((i64, i64), (f64,)) = on_pool!(self, p => {
            (
                sqlx::query_as(USAGE_SQL).bind(tenant_id).bind(Uuid::nil()).fetch_one(p).await?,
                sqlx::query_as(STORAGE_SQL).bind(tenant_id).fetch_one(p).await?,
            )
        });
        Ok(Usage {
            // `as` saturates (and maps NaN to 0): sums are never computed in integers.
            shared_storage_bytes: bytes.max(0.0) as u64,
            ..usage(c, n)
        })
    }
}
