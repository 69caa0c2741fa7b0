//! A cluster's timeline: its operations and events, as the cluster page reads them.

use async_trait::async_trait;
use uuid::Uuid;

use super::operations::{insert_events, EventRow, OperationRow, OP_COLS};
use super::{Pool, SqlStore};
use crate::cluster::{ClusterEvent, EventKind, Operation};
use crate::store::TimelineStore;
use crate::{Error, Result};

#[async_trait]
impl TimelineStore for SqlStore {
    async fn append_events(&self, events: &[ClusterEvent]) -> Result<()> {
        in_tx!(self, |tx| {
            insert_events!(tx, events);
            tx.commit().await?;
        });
        Ok(())
    }

    async fn operations_of(&self, cluster_id: Uuid, limit: u32) -> Result<Vec<Operation>> {
        let sql = operations_of_sql();
        let rows: Vec<OperationRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(cluster_id).bind(i64::from(limit)).fetch_all(p).await?
        });
        rows.into_iter().map(TryInto::try_into).collect()
    }

    async fn operation(&self, id: Uuid) -> Result<Operation> {
        let sql = format!("SELECT {OP_COLS} FROM operations WHERE id = $1");
        let row: Option<OperationRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(id).fetch_optional(p).await?
        });
        row.ok_or(Error::NotFound("operation"))?.try_into()
    }

    async fn events_of(
        &self,
        cluster_id: Uuid,
        after: Option<Uuid>,
        limit: u32,
    ) -> Result<Vec<ClusterEvent>> {
        let rows: Vec<EventRow> = match after {
            Some(after) => {
                const SQL: &str =
                    "SELECT id, cluster_id, operation_id, occurred_at, kind, message \
                     FROM cluster_events WHERE cluster_id = $1 AND id > $2 ORDER BY id LIMIT $3";
                on_pool!(self, p => {
                    sqlx::query_as(SQL).bind(cluster_id).bind(after).bind(i64::from(limit)).fetch_all(p).await?
                })
            }
            None => on_pool!(self, p => {
                sqlx::query_as(NEWEST_EVENTS).bind(cluster_id).bind(i64::from(limit)).fetch_all(p).await?
            }),
        };
        rows.into_iter().map(event).collect()
    }
}

/// A cluster's newest operations, newest first (`$1` the cluster, `$2` how many).
pub(super) fn operations_of_sql() -> String {
    format!(
        "SELECT {OP_COLS} FROM operations WHERE cluster_id = $1 \
         ORDER BY created_at DESC, id DESC LIMIT $2"
    )
}

/// A cluster's newest timeline entries, returned oldest first (`$1` the cluster, `$2` how
/// many).
pub(super) const NEWEST_EVENTS: &str = "SELECT * FROM (SELECT id, cluster_id, operation_id, \
     occurred_at, kind, message FROM cluster_events WHERE cluster_id = $1 ORDER BY id DESC \
     LIMIT $2) e ORDER BY id";

/// A stored timeline entry read back.
pub(super) fn event(r: EventRow) -> Result<ClusterEvent> {
    Ok(ClusterEvent {
        kind: EventKind::parse(&r.kind)
            .ok_or_else(|| Error::Corrupt(format!("event {}: kind", r.id)))?,
        id: r.id,
        cluster_id: r.cluster_id,
        operation_id: r.operation_id,
        occurred_at: r.occurred_at,
        message: r.message,
    })
}
