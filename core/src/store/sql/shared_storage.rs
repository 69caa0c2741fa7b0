//! What clusters keep in storage shared between clusters, as last measured.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Pool, SqlStore};
use crate::provisioner::SharedStorage;
use crate::store::SharedStorageStore;
use crate::Result;

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
        const SQL: &str = "SELECT keys, bytes, writable, measured_at FROM shared_storage_usage \
             WHERE cluster_id = $1";
        let row: Option<(i64, i64, bool, DateTime<Utc>)> = on_pool!(self, p => {
            sqlx::query_as(SQL).bind(cluster_id).fetch_optional(p).await?
        });
        let u = |v: i64| u64::try_from(v).unwrap_or(0);
        Ok(row.map(|(keys, bytes, writable, at)| {
            (
                SharedStorage {
                    keys: u(keys),
                    bytes: u(bytes),
                    writable,
                },
                at,
            )
        }))
    }
}
