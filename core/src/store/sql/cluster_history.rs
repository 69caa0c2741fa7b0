//! A cluster's history as its page reads it: operations, timeline and shared-storage reading.
//!
//! SQLite runs the three reads on one connection (one hand-back to the pool). Postgres runs
//! them as one statement whose columns are the rows as JSON: one round trip for the reads and
//! one for sqlx's test of the connection handed back, instead of four.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::operations::{EventRow, OperationRow, OP_COLS};
use super::shared_storage::{storage, StorageRow, STORAGE_OF};
use super::timeline::{event, operations_of_sql, NEWEST_EVENTS};
use super::{Pool, SqlStore};
use crate::store::{ClusterHistory, ClusterHistoryStore};
use crate::{Error, Result};

type Rows = (Vec<OperationRow>, Vec<EventRow>, Option<StorageRow>);

#[async_trait]
impl ClusterHistoryStore for SqlStore {
    async fn history_of(
        &self,
        cluster_id: Uuid,
        operations: u32,
        events: u32,
        with_storage: bool,
    ) -> Result<ClusterHistory> {
        let (ops, evs, reading) = match &self.pool {
            Pool::Sqlite(p) => {
                let mut c = p.acquire().await?;
                let ops = sqlx::query_as(&operations_of_sql())
                    .bind(cluster_id)
                    .bind(i64::from(operations))
                    .fetch_all(&mut *c)
                    .await?;
                let evs = sqlx::query_as(NEWEST_EVENTS)
                    .bind(cluster_id)
                    .bind(i64::from(events))
                    .fetch_all(&mut *c)
                    .await?;
                let reading = match with_storage {
                    true => {
                        sqlx::query_as(STORAGE_OF)
                            .bind(cluster_id)
                            .fetch_optional(&mut *c)
                            .await?
                    }
                    false => None,
                };
                (ops, evs, reading)
            }
            Pool::Postgres(p) => {
                let (ops, evs, reading): (String, String, Option<String>) =
                    sqlx::query_as(&postgres_sql())
                        .bind(cluster_id)
                        .bind(i64::from(operations))
                        .bind(i64::from(events))
                        .bind(with_storage)
                        .fetch_one(p)
                        .await?;
                from_json(cluster_id, &ops, &evs, reading.as_deref())?
            }
        };
        Ok(ClusterHistory {
            operations: ops
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_>>()?,
            events: evs.into_iter().map(event).collect::<Result<_>>()?,
            shared_storage: reading.map(storage),
        })
    }
}

/// The three reads in one Postgres statement (`$1` the cluster, `$2` operations, `$3` events,
/// `$4` whether to read the shared-storage reading), each as JSON text.
pub(super) fn postgres_sql() -> String {
    format!(
        "SELECT \
         (SELECT coalesce(json_agg(o ORDER BY o.created_at DESC, o.id DESC), '[]') FROM \
          (SELECT {OP_COLS} FROM operations WHERE cluster_id = $1 \
           ORDER BY created_at DESC, id DESC LIMIT $2) o)::text, \
         (SELECT coalesce(json_agg(e ORDER BY e.id), '[]') FROM \
          (SELECT id, cluster_id, operation_id, occurred_at, kind, message FROM cluster_events \
           WHERE cluster_id = $1 ORDER BY id DESC LIMIT $3) e)::text, \
         (SELECT json_build_array(s.keys, s.bytes, s.writable, s.measured_at) \
          FROM shared_storage_usage s WHERE $4 AND s.cluster_id = $1)::text"
    )
}

/// The rows of [`postgres_sql`]'s answer.
fn from_json(cluster: Uuid, ops: &str, evs: &str, reading: Option<&str>) -> Result<Rows> {
    let corrupt = |what: &str, e: serde_json::Error| {
        Error::Corrupt(format!("cluster {cluster}: {what} read as JSON: {e}"))
    };
    let reading = reading
        .map(serde_json::from_str::<(i64, i64, bool, DateTime<Utc>)>)
        .transpose()
        .map_err(|e| corrupt("shared storage", e))?;
    Ok((
        serde_json::from_str(ops).map_err(|e| corrupt("operations", e))?,
        serde_json::from_str(evs).map_err(|e| corrupt("timeline", e))?,
        reading,
    ))
}
