//! What clusters keep in storage shared between clusters, as last measured.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::operations::insert_events;
use super::{Pool, SqlStore, INSERT_AUDIT};
use crate::audit::AuditEvent;
use crate::cluster::storage_quota::{ClusterStorage, TenantStorage};
use crate::cluster::ClusterEvent;
use crate::provisioner::SharedStorage;
use crate::store::SharedStorageStore;
use crate::Result;

/// A stored count read back (never negative; a negative one would be corruption, read as 0).
fn count(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// A cluster's last shared-storage reading (`$1` the cluster).
pub(super) const STORAGE_OF: &str =
    "SELECT keys, bytes, writable, measured_at FROM shared_storage_usage WHERE cluster_id = $1";

/// A row of [`STORAGE_OF`]: keys, bytes, writable, measured at.
pub(super) type StorageRow = (i64, i64, bool, DateTime<Utc>);

/// A stored reading read back.
pub(super) fn storage((keys, bytes, writable, at): StorageRow) -> (SharedStorage, DateTime<Utc>) {
    (
        SharedStorage {
            keys: count(keys),
            bytes: count(bytes),
            writable,
        },
        at,
    )
}

#[async_trait]
impl SharedStorageStore for SqlStore {
    async fn put_shared_storage(
        &self,
        cluster_id: Uuid,
        usage: &SharedStorage,
        at: DateTime<Utc>,
    ) -> Result<()> {
        const SQL: &str = "INSERT INTO shared_storage_usage (cluster_id, keys, bytes, writable, \
             measured_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (cluster_id) DO UPDATE SET \
             keys = excluded.keys, bytes = excluded.bytes, writable = excluded.writable, \
             measured_at = excluded.measured_at";
        let i = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        on_pool!(self, p => {
            sqlx::query(SQL)
                .bind(cluster_id)
                .bind(i(usage.keys))
                .bind(i(usage.bytes))
                .bind(usage.writable)
                .bind(at)
                .execute(p)
                .await?;
        });
        Ok(())
    }

    async fn shared_storage(
        &self,
        cluster_id: Uuid,
    ) -> Result<Option<(SharedStorage, DateTime<Utc>)>> {
        let row: Option<StorageRow> = on_pool!(self, p => {
            sqlx::query_as(STORAGE_OF).bind(cluster_id).fetch_optional(p).await?
        });
        Ok(row.map(storage))
    }

    async fn tenant_storage(&self) -> Result<Vec<TenantStorage>> {
        const SQL: &str = "SELECT t.id, t.slug, t.max_shared_storage_bytes, c.id, c.name, \
             s.keys, s.bytes, s.writable FROM shared_storage_usage s \
             JOIN clusters c ON c.id = s.cluster_id JOIN tenants t ON t.id = c.tenant_id \
             WHERE c.deleted_at IS NULL ORDER BY t.slug, c.name";
        type Row = (Uuid, String, Option<i64>, Uuid, String, i64, i64, bool);
        let rows: Vec<Row> = on_pool!(self, p => sqlx::query_as(SQL).fetch_all(p).await?);
        let mut tenants: Vec<TenantStorage> = Vec::new();
        for (tenant_id, slug, quota, cluster_id, cluster, keys, bytes, writable) in rows {
            let c = ClusterStorage {
                cluster_id,
                cluster,
                keys: count(keys),
                bytes: count(bytes),
                writable,
            };
            match tenants.last_mut() {
                Some(t) if t.tenant_id == tenant_id => t.clusters.push(c),
                _ => tenants.push(TenantStorage {
                    tenant_id,
                    tenant: slug,
                    quota: quota.and_then(|q| u64::try_from(q).ok()),
                    clusters: vec![c],
                }),
            }
        }
        Ok(tenants)
    }

    async fn record_storage_switch(
        &self,
        cluster_id: Uuid,
        writable: bool,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<()> {
        audited_tx!(self, audit, |tx| {
            sqlx::query("UPDATE shared_storage_usage SET writable = $2 WHERE cluster_id = $1")
                .bind(cluster_id)
                .bind(writable)
                .execute(&mut *tx)
                .await?;
            insert_events!(tx, [event]);
        });
        Ok(())
    }
}
