//! Operations in SQL: their rows and inserts (shared with the cluster writes that queue
//! them, through [`insert_op!`] and [`insert_events!`]) and the workers' side
//! ([`OperationStore`]: claims with a lease, fenced progress and completion).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::catalog::{json, to_json};
use super::{Pool, SqlStore};
use crate::cluster::{ClusterEvent, Operation, OperationKind, OperationState, OperationTarget};
use crate::store::{ClusterChange, OperationStore};
use crate::{Error, Result};

/// Read from a row, or from a row Postgres wrote as JSON (one statement returning several
/// tables' rows, [`super::cluster_history`]).
#[derive(FromRow, serde::Deserialize)]
pub(super) struct OperationRow {
    id: Uuid,
    cluster_id: Uuid,
    kind: String,
    state: String,
    step: String,
    progress: i32,
    attempts: i32,
    error: Option<String>,
    target: Option<String>,
    checkpoint: String,
    requested_by: String,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    started_at: Option<DateTime<Utc>>,
    finished_at: Option<DateTime<Utc>>,
    deadline_at: DateTime<Utc>,
    run_after: DateTime<Utc>,
    lease_owner: Option<String>,
    lease_expires_at: Option<DateTime<Utc>>,
}

pub(super) const OP_COLS: &str =
    "id, cluster_id, kind, state, step, progress, attempts, error, target, \
     checkpoint, requested_by, created_at, updated_at, started_at, finished_at, deadline_at, \
     run_after, lease_owner, lease_expires_at";

impl TryFrom<OperationRow> for Operation {
    type Error = Error;
    fn try_from(r: OperationRow) -> Result<Self> {
        let corrupt = |what: &str| Error::Corrupt(format!("operation {}: {what}", r.id));
        Ok(Operation {
            kind: OperationKind::parse(&r.kind).ok_or_else(|| corrupt("kind"))?,
            state: OperationState::parse(&r.state).ok_or_else(|| corrupt("state"))?,
            checkpoint: json("operation", r.id, &r.checkpoint)?,
            progress: u8::try_from(r.progress.clamp(0, 100)).unwrap_or(0),
            attempts: u32::try_from(r.attempts).unwrap_or(0),
            id: r.id,
            cluster_id: r.cluster_id,
            step: r.step,
            error: r.error,
            target: r.target.as_deref().map(OperationTarget::from_stored),
            requested_by: r.requested_by,
            created_at: r.created_at,
            updated_at: r.updated_at,
            started_at: r.started_at,
            finished_at: r.finished_at,
            deadline_at: r.deadline_at,
            run_after: r.run_after,
            lease_owner: r.lease_owner,
            lease_expires_at: r.lease_expires_at,
        })
    }
}

#[derive(FromRow, serde::Deserialize)]
pub(super) struct EventRow {
    pub(super) id: Uuid,
    pub(super) cluster_id: Uuid,
    pub(super) operation_id: Option<Uuid>,
    pub(super) occurred_at: DateTime<Utc>,
    pub(super) kind: String,
    pub(super) message: String,
}

pub(crate) const INSERT_EVENT: &str = "INSERT INTO cluster_events \
     (id, cluster_id, operation_id, occurred_at, kind, message) VALUES ($1, $2, $3, $4, $5, $6)";

/// Inserts timeline entries on `$tx`.
macro_rules! insert_events {
    ($tx:ident, $events:expr) => {
        for e in $events {
            sqlx::query($crate::store::sql::operations::INSERT_EVENT)
                .bind(e.id)
                .bind(e.cluster_id)
                .bind(e.operation_id)
                .bind(e.occurred_at)
                .bind(e.kind.as_str())
                .bind(&e.message)
                .execute(&mut *$tx)
                .await?;
        }
    };
}

/// An operation's target as its row keeps it; one that cannot be read is never written.
pub(crate) fn stored_target(op: &Operation) -> Result<Option<String>> {
    match &op.target {
        None => Ok(None),
        Some(t) => t.to_stored().map(Some).ok_or_else(|| {
            Error::Corrupt(format!(
                "operation {}: an unreadable target is not written",
                op.id
            ))
        }),
    }
}

pub(crate) const INSERT_OP: &str =
    "INSERT INTO operations (id, cluster_id, kind, state, step, progress, \
     attempts, error, target, checkpoint, requested_by, created_at, updated_at, deadline_at, \
     run_after) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)";

/// Inserts an operation on `$tx`.
macro_rules! insert_op {
    ($tx:ident, $op:expr, $checkpoint:expr) => {
        sqlx::query($crate::store::sql::operations::INSERT_OP)
            .bind($op.id)
            .bind($op.cluster_id)
            .bind($op.kind.as_str())
            .bind($op.state.as_str())
            .bind(&$op.step)
            .bind(i32::from($op.progress))
            .bind(0_i32)
            .bind(&$op.error)
            .bind($crate::store::sql::operations::stored_target(&$op)?)
            .bind($checkpoint)
            .bind(&$op.requested_by)
            .bind($op.created_at)
            .bind($op.updated_at)
            .bind($op.deadline_at)
            .bind($op.run_after)
            .execute(&mut *$tx)
            .await?
    };
}

pub(super) use {insert_events, insert_op};

#[async_trait]
impl OperationStore for SqlStore {
    async fn claim_operation(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<Operation>> {
        // The outer WHERE repeats the lease test: Postgres re-checks it on the locked row.
        let pick = "SELECT id FROM operations WHERE state IN ('pending', 'running') \
             AND run_after <= $2 AND (lease_expires_at IS NULL OR lease_expires_at < $2) \
             ORDER BY run_after, created_at LIMIT 1";
        let lock = match self.pool {
            Pool::Postgres(_) => " FOR UPDATE SKIP LOCKED",
            Pool::Sqlite(_) => "",
        };
        let sql = format!(
            "UPDATE operations SET state = 'running', lease_owner = $1, lease_expires_at = $3, \
             attempts = attempts + 1, started_at = COALESCE(started_at, $2), updated_at = $2 \
             WHERE id = ({pick}{lock}) \
             AND (lease_expires_at IS NULL OR lease_expires_at < $2) RETURNING {OP_COLS}"
        );
        let row: Option<OperationRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(owner).bind(now).bind(lease_until).fetch_optional(p).await?
        });
        row.map(TryInto::try_into).transpose()
    }

    async fn renew_lease(&self, id: Uuid, owner: &str, lease_until: DateTime<Utc>) -> Result<bool> {
        const SQL: &str = "UPDATE operations SET lease_expires_at = $3 \
             WHERE id = $1 AND lease_owner = $2 AND state = 'running'";
        let n = on_pool!(self, p => {
            sqlx::query(SQL).bind(id).bind(owner).bind(lease_until).execute(p).await?.rows_affected()
        });
        Ok(n == 1)
    }

    async fn save_progress(
        &self,
        id: Uuid,
        owner: &str,
        step: &str,
        progress: u8,
        checkpoint: &serde_json::Value,
        events: &[ClusterEvent],
    ) -> Result<bool> {
        let checkpoint = to_json(checkpoint)?;
        in_tx!(self, |tx| {
            let done = sqlx::query(
                "UPDATE operations SET step = $3, progress = $4, checkpoint = $5, updated_at = $6 \
                 WHERE id = $1 AND lease_owner = $2 AND state = 'running'",
            )
            .bind(id)
            .bind(owner)
            .bind(step)
            .bind(i32::from(progress))
            .bind(&checkpoint)
            .bind(crate::clock::now())
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() == 0 {
                return Ok(false);
            }
            insert_events!(tx, events);
            tx.commit().await?;
        });
        Ok(true)
    }

    async fn reschedule(
        &self,
        id: Uuid,
        owner: &str,
        run_after: DateTime<Utc>,
        checkpoint: &serde_json::Value,
        events: &[ClusterEvent],
    ) -> Result<bool> {
        let checkpoint = to_json(checkpoint)?;
        in_tx!(self, |tx| {
            let done = sqlx::query(
                "UPDATE operations SET run_after = $3, checkpoint = $4, lease_owner = NULL, \
                 lease_expires_at = NULL, updated_at = $5 \
                 WHERE id = $1 AND lease_owner = $2 AND state = 'running'",
            )
            .bind(id)
            .bind(owner)
            .bind(run_after)
            .bind(&checkpoint)
            .bind(crate::clock::now())
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() == 0 {
                return Ok(false);
            }
            insert_events!(tx, events);
            tx.commit().await?;
        });
        Ok(true)
    }

    async fn finish_operation(
        &self,
        id: Uuid,
        owner: &str,
        state: OperationState,
        error: Option<&str>,
        change: &ClusterChange,
        events: &[ClusterEvent],
        now: DateTime<Utc>,
    ) -> Result<bool> {
        let pstate = change.provisioner_state.as_ref().map(to_json).transpose()?;
        let params = change.parameters.as_ref().map(to_json).transpose()?;
        let progress: i32 = if state == OperationState::Succeeded {
            100
        } else {
            -1
        };
        in_tx!(self, |tx| {
            let cluster_id: Option<Uuid> = sqlx::query_scalar(
                "UPDATE operations SET state = $3, error = $4, finished_at = $5, updated_at = $5, \
                 progress = CASE WHEN $6 >= 0 THEN $6 ELSE progress END, \
                 lease_owner = NULL, lease_expires_at = NULL \
                 WHERE id = $1 AND lease_owner = $2 AND state = 'running' RETURNING cluster_id",
            )
            .bind(id)
            .bind(owner)
            .bind(state.as_str())
            .bind(error)
            .bind(now)
            .bind(progress)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(cluster_id) = cluster_id else {
                return Ok(false);
            };
            sqlx::query(
                "UPDATE clusters SET state = COALESCE($2, state), \
                 error = CASE WHEN $3 THEN $4 ELSE error END, \
                 endpoint = COALESCE($5, endpoint), \
                 provisioner_state = COALESCE($6, provisioner_state), \
                 node_count = COALESCE($7, node_count), \
                 parameters = COALESCE($8, parameters), \
                 deleted_at = CASE WHEN $9 THEN $10 ELSE deleted_at END, \
                 updated_at = $10 WHERE id = $1",
            )
            .bind(cluster_id)
            .bind(change.state.map(|s| s.as_str()))
            .bind(change.error.is_some())
            .bind(change.error.clone().flatten())
            .bind(&change.endpoint)
            .bind(&pstate)
            .bind(
                change
                    .node_count
                    .map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
            )
            .bind(&params)
            .bind(change.deleted)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            insert_events!(tx, events);
            tx.commit().await?;
        });
        Ok(true)
    }

    async fn unfinished_operations(&self, limit: u32) -> Result<Vec<Operation>> {
        let sql = format!(
            "SELECT {OP_COLS} FROM operations WHERE state IN ('pending', 'running') \
             ORDER BY created_at LIMIT $1"
        );
        let rows: Vec<OperationRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(i64::from(limit)).fetch_all(p).await?
        });
        rows.into_iter().map(TryInto::try_into).collect()
    }

    async fn operation_counts(&self) -> Result<Vec<(OperationKind, OperationState, u64)>> {
        const SQL: &str = "SELECT kind, state, COUNT(*) FROM operations GROUP BY kind, state \
             ORDER BY kind, state";
        let rows: Vec<(String, String, i64)> = on_pool!(self, p => {
            sqlx::query_as(SQL).fetch_all(p).await?
        });
        rows.into_iter()
            .map(|(kind, state, n)| {
                let kind = OperationKind::parse(&kind)
                    .ok_or_else(|| Error::Corrupt(format!("operation kind '{kind}'")))?;
                let state = OperationState::parse(&state)
                    .ok_or_else(|| Error::Corrupt(format!("operation state '{state}'")))?;
                Ok((kind, state, u64::try_from(n).unwrap_or_default()))
            })
            .collect()
    }
}

/// Test hooks: move a cluster's clock-driven dates instead of waiting for them.
#[cfg(any(test, feature = "testing"))]
impl SqlStore {
    /// Sets the deadline of the cluster's unfinished operations.
    pub async fn testing_set_deadline(&self, cluster: Uuid, at: DateTime<Utc>) -> Result<()> {
        const SQL: &str = "UPDATE operations SET deadline_at = $2 \
             WHERE cluster_id = $1 AND state IN ('pending', 'running')";
        on_pool!(self, p => sqlx::query(SQL).bind(cluster).bind(at).execute(p).await.map(|_| ())?);
        Ok(())
    }

    /// Writes `raw` as the stored target of the cluster's unfinished operations (as an older
    /// KQueen, or a person, would have left it).
    pub async fn testing_set_target(&self, cluster: Uuid, raw: &str) -> Result<()> {
        const SQL: &str = "UPDATE operations SET target = $2 \
             WHERE cluster_id = $1 AND state IN ('pending', 'running')";
        on_pool!(self, p => sqlx::query(SQL).bind(cluster).bind(raw).execute(p).await.map(|_| ())?);
        Ok(())
    }

    /// Writes `raw` as the checkpoint of the cluster's unfinished operations.
    pub async fn testing_set_checkpoint(&self, cluster: Uuid, raw: &str) -> Result<()> {
        const SQL: &str = "UPDATE operations SET checkpoint = $2 \
             WHERE cluster_id = $1 AND state IN ('pending', 'running')";
        on_pool!(self, p => sqlx::query(SQL).bind(cluster).bind(raw).execute(p).await.map(|_| ())?);
        Ok(())
    }

    /// Runs the migration that made targets tagged JSON again (over rows a test wrote).
    pub async fn testing_migrate_targets(&self) -> Result<()> {
        match &self.pool {
            Pool::Sqlite(p) => {
                let sql = include_str!(
                    "../../../../migrations/sqlite/20261129000001_operation_targets.sql"
                );
                sqlx::raw_sql(sql).execute(p).await?;
            }
            Pool::Postgres(p) => {
                let sql = include_str!(
                    "../../../../migrations/postgres/20261129000001_operation_targets.sql"
                );
                sqlx::raw_sql(sql).execute(p).await?;
            }
        }
        Ok(())
    }

    /// Sets when the cluster's time-to-live runs out.
    pub async fn testing_set_expiry(&self, cluster: Uuid, at: DateTime<Utc>) -> Result<()> {
        const SQL: &str = "UPDATE clusters SET expires_at = $2 WHERE id = $1";
        on_pool!(self, p => sqlx::query(SQL).bind(cluster).bind(at).execute(p).await.map(|_| ())?);
        Ok(())
    }
}
