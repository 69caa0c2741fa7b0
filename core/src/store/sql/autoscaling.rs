//! Clusters' autoscaling: settings and what turns leave, and node counts over time.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::catalog::{json, to_json};
use super::inventory::u32_of;
use super::operations::insert_events;
use super::{Pool, SqlStore, INSERT_AUDIT};
use crate::audit::AuditEvent;
use crate::autoscale::{AutoscaleSettings, Autoscaling, Sample};
use crate::store::{AutoscaleStore, AutoscaleTurn};
use crate::{Error, Result};

const COLS: &str = "a.cluster_id, a.tenant_id, a.min_nodes, a.max_nodes, \
     a.scale_down_utilisation, a.scale_down_after_secs, a.underused, a.last_reason, \
     a.last_turn_at, a.updated_by, a.updated_at";

#[derive(FromRow)]
struct Row {
    cluster_id: Uuid,
    tenant_id: Uuid,
    min_nodes: i64,
    max_nodes: i64,
    scale_down_utilisation: i64,
    scale_down_after_secs: i64,
    underused: String,
    last_reason: Option<String>,
    last_turn_at: Option<DateTime<Utc>>,
    updated_by: String,
    updated_at: DateTime<Utc>,
}

impl TryFrom<Row> for Autoscaling {
    type Error = Error;
    fn try_from(r: Row) -> Result<Self> {
        Ok(Autoscaling {
            cluster_id: r.cluster_id,
            tenant_id: r.tenant_id,
            settings: AutoscaleSettings {
                min_nodes: u32_of(r.min_nodes),
                max_nodes: u32_of(r.max_nodes),
                scale_down_utilisation: u8::try_from(r.scale_down_utilisation).map_err(|_| {
                    Error::Corrupt(format!("autoscaling of {}: threshold", r.cluster_id))
                })?,
                scale_down_after_secs: u32_of(r.scale_down_after_secs),
            },
            underused: json("autoscaling of cluster", r.cluster_id, &r.underused)?,
            last_reason: r.last_reason,
            last_turn_at: r.last_turn_at,
            updated_by: r.updated_by,
            updated_at: r.updated_at,
        })
    }
}

#[derive(FromRow)]
struct SampleRow {
    taken_at: DateTime<Utc>,
    wanted: i64,
    nodes: i64,
    ready: i64,
    pending_pods: i64,
}

impl From<SampleRow> for Sample {
    fn from(r: SampleRow) -> Self {
        Sample {
            taken_at: r.taken_at,
            wanted: u32_of(r.wanted),
            nodes: u32_of(r.nodes),
            ready: u32_of(r.ready),
            pending_pods: u32_of(r.pending_pods),
        }
    }
}

#[async_trait]
impl AutoscaleStore for SqlStore {
    async fn put_autoscaling(&self, a: &Autoscaling, audit: &AuditEvent) -> Result<()> {
        let underused = to_json(&a.underused)?;
        audited_tx!(self, audit, |tx| {
            sqlx::query("DELETE FROM autoscaling WHERE cluster_id = $1")
                .bind(a.cluster_id)
                .execute(&mut *tx)
                .await?;
            sqlx::query(
                "INSERT INTO autoscaling (cluster_id, tenant_id, min_nodes, max_nodes, \
                 scale_down_utilisation, scale_down_after_secs, underused, last_reason, \
                 last_turn_at, updated_by, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            )
            .bind(a.cluster_id)
            .bind(a.tenant_id)
            .bind(i64::from(a.settings.min_nodes))
            .bind(i64::from(a.settings.max_nodes))
            .bind(i64::from(a.settings.scale_down_utilisation))
            .bind(i64::from(a.settings.scale_down_after_secs))
            .bind(&underused)
            .bind(&a.last_reason)
            .bind(a.last_turn_at)
            .bind(&a.updated_by)
            .bind(a.updated_at)
            .execute(&mut *tx)
            .await?;
        });
        Ok(())
    }

    async fn remove_autoscaling(&self, cluster_id: Uuid, audit: &AuditEvent) -> Result<bool> {
        let removed;
        audited_tx!(self, audit, |tx| {
            removed = sqlx::query("DELETE FROM autoscaling WHERE cluster_id = $1")
                .bind(cluster_id)
                .execute(&mut *tx)
                .await?
                .rows_affected()
                > 0;
        });
        Ok(removed)
    }

    async fn autoscaling(&self, cluster_id: Uuid) -> Result<Option<Autoscaling>> {
        let sql = format!("SELECT {COLS} FROM autoscaling a WHERE a.cluster_id = $1");
        let row: Option<Row> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(cluster_id).fetch_optional(p).await?
        });
        row.map(TryInto::try_into).transpose()
    }

    async fn autoscaled_clusters(&self, limit: u32) -> Result<Vec<Autoscaling>> {
        // Never turned first, then the longest ago.
        let sql = format!(
            "SELECT {COLS} FROM autoscaling a JOIN clusters c ON c.id = a.cluster_id \
             WHERE c.deleted_at IS NULL \
             ORDER BY (a.last_turn_at IS NOT NULL), a.last_turn_at, a.cluster_id LIMIT $1"
        );
        let rows: Vec<Row> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(i64::from(limit)).fetch_all(p).await?
        });
        rows.into_iter().map(TryInto::try_into).collect()
    }

    async fn record_autoscale_turn(
        &self,
        turn: AutoscaleTurn<'_>,
        keep_since: DateTime<Utc>,
    ) -> Result<()> {
        let underused = to_json(turn.underused)?;
        in_tx!(self, |tx| {
            sqlx::query(
                "UPDATE autoscaling SET underused = $2, last_reason = $3, last_turn_at = $4 \
                 WHERE cluster_id = $1",
            )
            .bind(turn.cluster_id)
            .bind(&underused)
            .bind(turn.reason)
            .bind(turn.at)
            .execute(&mut *tx)
            .await?;
            if let Some(s) = turn.sample {
                sqlx::query(
                    "INSERT INTO autoscaling_samples (cluster_id, taken_at, wanted, nodes, \
                     ready, pending_pods) VALUES ($1, $2, $3, $4, $5, $6) \
                     ON CONFLICT (cluster_id, taken_at) DO NOTHING",
                )
                .bind(turn.cluster_id)
                .bind(s.taken_at)
                .bind(i64::from(s.wanted))
                .bind(i64::from(s.nodes))
                .bind(i64::from(s.ready))
                .bind(i64::from(s.pending_pods))
                .execute(&mut *tx)
                .await?;
            }
            sqlx::query("DELETE FROM autoscaling_samples WHERE cluster_id = $1 AND taken_at < $2")
                .bind(turn.cluster_id)
                .bind(keep_since)
                .execute(&mut *tx)
                .await?;
            insert_events!(tx, turn.event.into_iter());
            tx.commit().await?;
        });
        Ok(())
    }

    async fn autoscale_samples(
        &self,
        cluster_id: Uuid,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Sample>> {
        // The newest `limit`, then put back in time order.
        let rows: Vec<SampleRow> = on_pool!(self, p => {
            sqlx::query_as(
                "SELECT taken_at, wanted, nodes, ready, pending_pods FROM autoscaling_samples \
                 WHERE cluster_id = $1 AND taken_at >= $2 ORDER BY taken_at DESC LIMIT $3",
            )
            .bind(cluster_id)
            .bind(since)
            .bind(i64::from(limit))
            .fetch_all(p)
            .await?
        });
        let mut samples: Vec<Sample> = rows.into_iter().map(Into::into).collect();
        samples.reverse();
        Ok(samples)
    }
}
