//! Upgrades in waves: rollouts and their clusters.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::catalog::{json, to_json};
use super::inventory::u32_of;
use super::{Pool, SqlStore, INSERT_AUDIT};
use crate::audit::AuditEvent;
use crate::rollout::{MemberState, MemberTally, Rollout, RolloutMember, RolloutState};
use crate::store::{MemberChange, RolloutChange, RolloutStore};
use crate::{Error, Result};

/// Rows inserted per statement (8 binds each: far below either dialect's limit).
const CHUNK: usize = 500;

/// A rollout's columns and its tally, from `rollouts r`.
const ROLLOUT_COLS: &str = "r.id, r.tenant_id, r.target_version, r.wave_size, r.filter, \
     r.state, r.wave, r.waves, r.reason, r.created_by, r.created_at, r.updated_at, \
     (SELECT COUNT(*) FROM rollout_clusters m WHERE m.rollout_id = r.id AND m.state = 'waiting') AS waiting, \
     (SELECT COUNT(*) FROM rollout_clusters m WHERE m.rollout_id = r.id AND m.state = 'upgrading') AS upgrading, \
     (SELECT COUNT(*) FROM rollout_clusters m WHERE m.rollout_id = r.id AND m.state = 'upgraded') AS upgraded, \
     (SELECT COUNT(*) FROM rollout_clusters m WHERE m.rollout_id = r.id AND m.state = 'failed') AS failed, \
     (SELECT COUNT(*) FROM rollout_clusters m WHERE m.rollout_id = r.id AND m.state = 'skipped') AS skipped";

const MEMBER_COLS: &str = "rollout_id, cluster_id, cluster_name, tenant_id, tenant_slug, wave, \
     position, from_version, state, operation_id, reason, updated_at";

/// Open rollouts' clusters that have not ended, from `rollout_clusters rc JOIN rollouts r`.
const OPEN_MEMBER: &str =
    "r.state IN ('running', 'paused') AND rc.state IN ('waiting', 'upgrading')";

#[derive(FromRow)]
struct RolloutRow {
    id: Uuid,
    tenant_id: Option<Uuid>,
    target_version: String,
    wave_size: i64,
    filter: String,
    state: String,
    wave: i64,
    waves: i64,
    reason: Option<String>,
    created_by: String,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    waiting: i64,
    upgrading: i64,
    upgraded: i64,
    failed: i64,
    skipped: i64,
}

impl TryFrom<RolloutRow> for Rollout {
    type Error = Error;
    fn try_from(r: RolloutRow) -> Result<Self> {
        Ok(Rollout {
            filter: json("rollout", r.id, &r.filter)?,
            state: RolloutState::parse(&r.state)
                .ok_or_else(|| Error::Corrupt(format!("rollout {}: state", r.id)))?,
            id: r.id,
            tenant_id: r.tenant_id,
            target_version: r.target_version,
            wave_size: u32_of(r.wave_size),
            wave: u32_of(r.wave),
            waves: u32_of(r.waves),
            reason: r.reason,
            created_by: r.created_by,
            created_at: r.created_at,
            updated_at: r.updated_at,
            tally: MemberTally {
                waiting: u32_of(r.waiting),
                upgrading: u32_of(r.upgrading),
                upgraded: u32_of(r.upgraded),
                failed: u32_of(r.failed),
                skipped: u32_of(r.skipped),
            },
        })
    }
}

#[derive(FromRow)]
struct MemberRow {
    rollout_id: Uuid,
    cluster_id: Uuid,
    cluster_name: String,
    tenant_id: Uuid,
    tenant_slug: String,
    wave: i64,
    position: i64,
    from_version: String,
    state: String,
    operation_id: Option<Uuid>,
    reason: Option<String>,
    updated_at: DateTime<Utc>,
}

impl TryFrom<MemberRow> for RolloutMember {
    type Error = Error;
    fn try_from(r: MemberRow) -> Result<Self> {
        Ok(RolloutMember {
            state: MemberState::parse(&r.state).ok_or_else(|| {
                Error::Corrupt(format!(
                    "rollout {} cluster {}: state",
                    r.rollout_id, r.cluster_id
                ))
            })?,
            rollout_id: r.rollout_id,
            cluster_id: r.cluster_id,
            cluster_name: r.cluster_name,
            tenant_id: r.tenant_id,
            tenant_slug: r.tenant_slug,
            wave: u32_of(r.wave),
            position: u32_of(r.position),
            from_version: r.from_version,
            operation_id: r.operation_id,
            reason: r.reason,
            updated_at: r.updated_at,
        })
    }
}

#[async_trait]
impl RolloutStore for SqlStore {
    async fn create_rollout(
        &self,
        r: &Rollout,
        members: &[RolloutMember],
        audit: &AuditEvent,
    ) -> Result<()> {
        let filter = to_json(&r.filter)?;
        let postgres = matches!(self.pool, Pool::Postgres(_));
        audited_tx!(self, audit, |tx| {
            // One rollout is recorded at a time, so that the check below sees every other
            // (SQLite's transactions take the write lock first).
            if postgres {
                sqlx::query("SELECT pg_advisory_xact_lock(7403001)")
                    .execute(&mut *tx)
                    .await?;
            }
            for chunk in members.chunks(CHUNK) {
                let marks: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
                let sql = format!(
                    "SELECT rc.cluster_name, r.id FROM rollout_clusters rc \
                     JOIN rollouts r ON r.id = rc.rollout_id \
                     WHERE {OPEN_MEMBER} AND rc.cluster_id IN ({}) LIMIT 1",
                    marks.join(", ")
                );
                let mut q = sqlx::query_as::<_, (String, Uuid)>(&sql);
                for m in chunk {
                    q = q.bind(m.cluster_id);
                }
                if let Some((name, other)) = q.fetch_optional(&mut *tx).await? {
                    return Err(Error::Conflict(format!(
                        "{name} is part of rollout {other}, which has not ended: abort it, or \
                         leave {name} out"
                    )));
                }
            }
            sqlx::query(
                "INSERT INTO rollouts (id, tenant_id, target_version, wave_size, filter, state, \
                 wave, waves, reason, created_by, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            )
            .bind(r.id)
            .bind(r.tenant_id)
            .bind(&r.target_version)
            .bind(i64::from(r.wave_size))
            .bind(&filter)
            .bind(r.state.as_str())
            .bind(i64::from(r.wave))
            .bind(i64::from(r.waves))
            .bind(&r.reason)
            .bind(&r.created_by)
            .bind(r.created_at)
            .bind(r.updated_at)
            .execute(&mut *tx)
            .await?;
            for chunk in members.chunks(CHUNK) {
                let mut qb = sqlx::QueryBuilder::new(
                    "INSERT INTO rollout_clusters (rollout_id, cluster_id, cluster_name, \
                     tenant_id, tenant_slug, wave, position, from_version, state, updated_at) ",
                );
                qb.push_values(chunk, |mut b, m| {
                    b.push_bind(m.rollout_id)
                        .push_bind(m.cluster_id)
                        .push_bind(&m.cluster_name)
                        .push_bind(m.tenant_id)
                        .push_bind(&m.tenant_slug)
                        .push_bind(i64::from(m.wave))
                        .push_bind(i64::from(m.position))
                        .push_bind(&m.from_version)
                        .push_bind(m.state.as_str())
                        .push_bind(m.updated_at);
                });
                qb.build().execute(&mut *tx).await?;
            }
        });
        Ok(())
    }

    async fn rollout(&self, id: Uuid) -> Result<Rollout> {
        let sql = format!("SELECT {ROLLOUT_COLS} FROM rollouts r WHERE r.id = $1");
        let row: Option<RolloutRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(id).fetch_optional(p).await?
        });
        row.ok_or(Error::NotFound("rollout"))?.try_into()
    }

    async fn rollouts(&self, tenants: Option<&[Uuid]>, limit: u32) -> Result<Vec<Rollout>> {
        let ids = tenants.unwrap_or_default();
        let clause = match tenants {
            None => "1 = 1".to_owned(),
            Some([]) => return Ok(Vec::new()),
            Some(_) => {
                let marks: Vec<String> = (2..ids.len() + 2).map(|i| format!("${i}")).collect();
                format!("r.tenant_id IN ({})", marks.join(", "))
            }
        };
        let sql = format!(
            "SELECT {ROLLOUT_COLS} FROM rollouts r WHERE {clause} \
             ORDER BY r.created_at DESC, r.id DESC LIMIT $1"
        );
        let rows: Vec<RolloutRow> = on_pool!(self, p => {
            let mut q = sqlx::query_as(&sql).bind(i64::from(limit));
            for t in ids {
                q = q.bind(*t);
            }
            q.fetch_all(p).await?
        });
        rows.into_iter().map(TryInto::try_into).collect()
    }

    async fn rollout_members(&self, id: Uuid) -> Result<Vec<RolloutMember>> {
        let sql = format!(
            "SELECT {MEMBER_COLS} FROM rollout_clusters WHERE rollout_id = $1 \
             ORDER BY wave, position"
        );
        let rows: Vec<MemberRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(id).fetch_all(p).await?
        });
        rows.into_iter().map(TryInto::try_into).collect()
    }

    async fn clusters_in_rollouts(&self) -> Result<Vec<(Uuid, Uuid)>> {
        let sql = format!(
            "SELECT rc.cluster_id, r.id FROM rollout_clusters rc \
             JOIN rollouts r ON r.id = rc.rollout_id WHERE {OPEN_MEMBER}"
        );
        Ok(on_pool!(self, p => {
            sqlx::query_as(&sql).fetch_all(p).await?
        }))
    }

    async fn driven_rollouts(&self) -> Result<Vec<Uuid>> {
        let sql = "SELECT r.id FROM rollouts r WHERE r.state = 'running' OR EXISTS \
                   (SELECT 1 FROM rollout_clusters rc WHERE rc.rollout_id = r.id \
                   AND rc.state = 'upgrading') ORDER BY r.created_at";
        let rows: Vec<(Uuid,)> = on_pool!(self, p => {
            sqlx::query_as(sql).fetch_all(p).await?
        });
        Ok(rows.into_iter().map(|r| r.0).collect())
    }

    async fn move_rollout(
        &self,
        id: Uuid,
        from: &[RolloutState],
        c: &RolloutChange<'_>,
        audit: Option<&AuditEvent>,
    ) -> Result<bool> {
        if from.is_empty() {
            return Ok(false);
        }
        let marks: Vec<String> = (6..from.len() + 6).map(|i| format!("${i}")).collect();
        let sql = format!(
            "UPDATE rollouts SET state = $2, wave = COALESCE($3, wave), reason = $4, updated_at = $5 \
             WHERE id = $1 AND state IN ({})",
            marks.join(", ")
        );
        let mut moved = false;
        in_tx!(self, |tx| {
            let mut q = sqlx::query(&sql)
                .bind(id)
                .bind(c.state.as_str())
                .bind(c.wave.map(i64::from))
                .bind(c.reason)
                .bind(c.at);
            for s in from {
                q = q.bind(s.as_str());
            }
            if q.execute(&mut *tx).await?.rows_affected() == 1 {
                moved = true;
                if c.state == RolloutState::Aborted {
                    sqlx::query(
                        "UPDATE rollout_clusters SET state = 'skipped', \
                         reason = 'the rollout was aborted', updated_at = $2 \
                         WHERE rollout_id = $1 AND state = 'waiting'",
                    )
                    .bind(id)
                    .bind(c.at)
                    .execute(&mut *tx)
                    .await?;
                }
                if let Some(a) = audit {
                    audit_insert!(a).execute(&mut *tx).await?;
                }
                tx.commit().await?;
            }
        });
        Ok(moved)
    }

    async fn move_member(
        &self,
        rollout: Uuid,
        cluster: Uuid,
        from: MemberState,
        c: &MemberChange<'_>,
    ) -> Result<bool> {
        let done = on_pool!(self, p => {
            sqlx::query(
                "UPDATE rollout_clusters SET state = $4, \
                 operation_id = CASE WHEN $4 = 'waiting' THEN NULL \
                 ELSE COALESCE($5, operation_id) END, reason = $6, updated_at = $7 \
                 WHERE rollout_id = $1 AND cluster_id = $2 AND state = $3",
            )
            .bind(rollout)
            .bind(cluster)
            .bind(from.as_str())
            .bind(c.state.as_str())
            .bind(c.operation_id)
            .bind(c.reason)
            .bind(c.at)
            .execute(p)
            .await?
            .rows_affected()
        });
        Ok(done == 1)
    }
}
