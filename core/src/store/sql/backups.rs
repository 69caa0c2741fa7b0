//! Backups and restores in SQL ([`BackupStore`]): taking or restoring one is queued as an
//! operation in the same transaction that records it.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::applications::claim_ready_cluster;
use super::catalog::{json, to_json};
use super::operations::{insert_events, insert_op};
use super::{Pool, SqlStore, INSERT_AUDIT};
use crate::audit::AuditEvent;
use crate::backup::schedule::BackupSchedule;
use crate::backup::{
    Backup, BackupKind, BackupState, BackupSummary, ListedBackup, Restore, RestoreItem,
};
use crate::cluster::{ClusterEvent, Operation};
use crate::store::BackupStore;
use crate::{Error, Result};

const BACKUP_COLS: &str = "id, tenant_id, cluster_id, kind, state, include_secrets, \
     snapshot_volumes, error, summary, size_bytes, requested_by, created_at, finished_at";

#[derive(FromRow)]
struct ListedRow {
    #[sqlx(flatten)]
    backup: BackupRow,
    cluster_name: String,
    tenant_slug: String,
    cluster_deleted: bool,
}

#[derive(FromRow)]
struct BackupRow {
    id: Uuid,
    tenant_id: Uuid,
    cluster_id: Uuid,
    kind: String,
    state: String,
    include_secrets: bool,
    snapshot_volumes: bool,
    error: Option<String>,
    summary: Option<String>,
    size_bytes: Option<i64>,
    requested_by: String,
    created_at: DateTime<Utc>,
    finished_at: Option<DateTime<Utc>>,
}

impl TryFrom<BackupRow> for Backup {
    type Error = Error;
    fn try_from(r: BackupRow) -> Result<Self> {
        Ok(Backup {
            kind: BackupKind::parse(&r.kind)
                .ok_or_else(|| Error::Corrupt(format!("backup {}: kind", r.id)))?,
            state: BackupState::parse(&r.state)
                .ok_or_else(|| Error::Corrupt(format!("backup {}: state", r.id)))?,
            summary: match &r.summary {
                Some(text) => Some(json::<BackupSummary>("backup", r.id, text)?),
                None => None,
            },
            size_bytes: r.size_bytes.and_then(|n| u64::try_from(n).ok()),
            id: r.id,
            tenant_id: r.tenant_id,
            cluster_id: r.cluster_id,
            include_secrets: r.include_secrets,
            snapshot_volumes: r.snapshot_volumes,
            error: r.error,
            requested_by: r.requested_by,
            created_at: r.created_at,
            finished_at: r.finished_at,
        })
    }
}

const RESTORE_COLS: &str = "id, tenant_id, cluster_id, backup_id, namespaces, state, error, \
     report, requested_by, created_at, finished_at";

#[derive(FromRow)]
struct RestoreRow {
    id: Uuid,
    tenant_id: Uuid,
    cluster_id: Uuid,
    backup_id: Uuid,
    namespaces: String,
    state: String,
    error: Option<String>,
    report: Option<String>,
    requested_by: String,
    created_at: DateTime<Utc>,
    finished_at: Option<DateTime<Utc>>,
}

impl TryFrom<RestoreRow> for Restore {
    type Error = Error;
    fn try_from(r: RestoreRow) -> Result<Self> {
        Ok(Restore {
            state: BackupState::parse(&r.state)
                .ok_or_else(|| Error::Corrupt(format!("restore {}: state", r.id)))?,
            namespaces: json::<Vec<String>>("restore", r.id, &r.namespaces)?,
            report: match &r.report {
                Some(text) => Some(json::<Vec<RestoreItem>>("restore", r.id, text)?),
                None => None,
            },
            id: r.id,
            tenant_id: r.tenant_id,
            cluster_id: r.cluster_id,
            backup_id: r.backup_id,
            error: r.error,
            requested_by: r.requested_by,
            created_at: r.created_at,
            finished_at: r.finished_at,
        })
    }
}

const SCHEDULE_COLS: &str = "cluster_id, tenant_id, every_hours, keep, kind, include_secrets, \
     snapshot_volumes, next_at, updated_by, updated_at";

#[derive(FromRow)]
struct ScheduleRow {
    cluster_id: Uuid,
    tenant_id: Uuid,
    every_hours: i64,
    keep: i64,
    kind: String,
    include_secrets: bool,
    snapshot_volumes: bool,
    next_at: DateTime<Utc>,
    updated_by: String,
    updated_at: DateTime<Utc>,
}

impl TryFrom<ScheduleRow> for BackupSchedule {
    type Error = Error;
    fn try_from(r: ScheduleRow) -> Result<Self> {
        Ok(Self {
            kind: BackupKind::parse(&r.kind).ok_or_else(|| {
                Error::Corrupt(format!("backup schedule of {}: kind", r.cluster_id))
            })?,
            snapshot_volumes: r.snapshot_volumes,
            cluster_id: r.cluster_id,
            tenant_id: r.tenant_id,
            every_hours: u32::try_from(r.every_hours).unwrap_or(1),
            keep: u32::try_from(r.keep).unwrap_or(1),
            include_secrets: r.include_secrets,
            next_at: r.next_at,
            updated_by: r.updated_by,
            updated_at: r.updated_at,
        })
    }
}

#[async_trait]
impl BackupStore for SqlStore {
    async fn queue_backup(
        &self,
        backup: &Backup,
        op: &Operation,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<()> {
        let checkpoint = to_json(&op.checkpoint)?;
        audited_tx!(self, audit, |tx| {
            claim_ready_cluster!(tx, backup.cluster_id, op.created_at);
            let running: Option<(Uuid,)> = sqlx::query_as(
                "SELECT id FROM backups WHERE cluster_id = $1 AND state = 'running' LIMIT 1",
            )
            .bind(backup.cluster_id)
            .fetch_optional(&mut *tx)
            .await?;
            if running.is_some() {
                return Err(Error::Conflict(
                    "a backup of this cluster is being taken already".into(),
                ));
            }
            sqlx::query(
                "INSERT INTO backups (id, tenant_id, cluster_id, kind, state, include_secrets, \
                 snapshot_volumes, requested_by, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(backup.id)
            .bind(backup.tenant_id)
            .bind(backup.cluster_id)
            .bind(backup.kind.as_str())
            .bind(backup.state.as_str())
            .bind(backup.include_secrets)
            .bind(backup.snapshot_volumes)
            .bind(&backup.requested_by)
            .bind(backup.created_at)
            .execute(&mut *tx)
            .await?;
            insert_op!(tx, op, &checkpoint);
            insert_events!(tx, [event]);
        });
        Ok(())
    }

    async fn backup(&self, id: Uuid) -> Result<Backup> {
        let sql = format!("SELECT {BACKUP_COLS} FROM backups WHERE id = $1");
        let row: Option<BackupRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(id).fetch_optional(p).await?
        });
        row.ok_or(Error::NotFound("backup"))?.try_into()
    }

    async fn backups_of(&self, cluster_id: Uuid) -> Result<Vec<Backup>> {
        let sql = format!(
            "SELECT {BACKUP_COLS} FROM backups WHERE cluster_id = $1 \
             ORDER BY created_at DESC, id DESC"
        );
        let rows: Vec<BackupRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(cluster_id).fetch_all(p).await?
        });
        rows.into_iter().map(TryInto::try_into).collect()
    }

    async fn finish_backup(
        &self,
        id: Uuid,
        result: std::result::Result<(&BackupSummary, u64), &str>,
        now: DateTime<Utc>,
    ) -> Result<()> {
        match result {
            Ok((summary, size)) => {
                let summary = to_json(summary)?;
                let size = i64::try_from(size).unwrap_or(i64::MAX);
                on_pool!(self, p => sqlx::query(
                    "UPDATE backups SET state = 'succeeded', error = NULL, summary = $2, \
                     size_bytes = $3, finished_at = $4 WHERE id = $1",
                ).bind(id).bind(summary).bind(size).bind(now).execute(p).await.map(|_| ())?);
            }
            Err(reason) => {
                on_pool!(self, p => sqlx::query(
                    "UPDATE backups SET state = 'failed', error = $2, finished_at = $3 \
                     WHERE id = $1",
                ).bind(id).bind(reason).bind(now).execute(p).await.map(|_| ())?);
            }
        }
        Ok(())
    }

    async fn queue_restore(
        &self,
        restore: &Restore,
        op: &Operation,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<()> {
        let checkpoint = to_json(&op.checkpoint)?;
        let namespaces = to_json(&restore.namespaces)?;
        audited_tx!(self, audit, |tx| {
            claim_ready_cluster!(tx, restore.cluster_id, op.created_at);
            let running: Option<(Uuid,)> = sqlx::query_as(
                "SELECT id FROM restores WHERE cluster_id = $1 AND state = 'running' LIMIT 1",
            )
            .bind(restore.cluster_id)
            .fetch_optional(&mut *tx)
            .await?;
            if running.is_some() {
                return Err(Error::Conflict(
                    "a restore into this cluster is running already".into(),
                ));
            }
            sqlx::query(
                "INSERT INTO restores (id, tenant_id, cluster_id, backup_id, namespaces, state, \
                 requested_by, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(restore.id)
            .bind(restore.tenant_id)
            .bind(restore.cluster_id)
            .bind(restore.backup_id)
            .bind(namespaces)
            .bind(restore.state.as_str())
            .bind(&restore.requested_by)
            .bind(restore.created_at)
            .execute(&mut *tx)
            .await?;
            insert_op!(tx, op, &checkpoint);
            insert_events!(tx, [event]);
        });
        Ok(())
    }

    async fn restore(&self, id: Uuid) -> Result<Restore> {
        let sql = format!("SELECT {RESTORE_COLS} FROM restores WHERE id = $1");
        let row: Option<RestoreRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(id).fetch_optional(p).await?
        });
        row.ok_or(Error::NotFound("restore"))?.try_into()
    }

    async fn finish_restore(
        &self,
        id: Uuid,
        result: std::result::Result<&[RestoreItem], &str>,
        now: DateTime<Utc>,
    ) -> Result<()> {
        match result {
            Ok(items) => {
                let report = to_json(&items)?;
                on_pool!(self, p => sqlx::query(
                    "UPDATE restores SET state = 'succeeded', error = NULL, report = $2, \
                     finished_at = $3 WHERE id = $1",
                ).bind(id).bind(report).bind(now).execute(p).await.map(|_| ())?);
            }
            Err(reason) => {
                on_pool!(self, p => sqlx::query(
                    "UPDATE restores SET state = 'failed', error = $2, finished_at = $3 \
                     WHERE id = $1",
                ).bind(id).bind(reason).bind(now).execute(p).await.map(|_| ())?);
            }
        }
        Ok(())
    }

    async fn remove_backup(&self, id: Uuid, audit: &AuditEvent) -> Result<()> {
        audited_tx!(self, audit, |tx| {
            let state: Option<(String,)> =
                sqlx::query_as("SELECT state FROM backups WHERE id = $1")
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await?;
            match state {
                None => return Err(Error::NotFound("backup")),
                Some((s,)) if s == BackupState::Running.as_str() => {
                    return Err(Error::Conflict(
                        "the backup is still being taken: wait for it to end".into(),
                    ))
                }
                Some(_) => {}
            }
            let restoring: Option<(Uuid,)> = sqlx::query_as(
                "SELECT id FROM restores WHERE backup_id = $1 AND state = 'running' LIMIT 1",
            )
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
            if restoring.is_some() {
                return Err(Error::Conflict(
                    "the backup is being restored: wait for the restore to end".into(),
                ));
            }
            // Its finished restores go with it (their outcome stays in the clusters'
            // timelines and the audit log).
            sqlx::query("DELETE FROM restores WHERE backup_id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            sqlx::query("DELETE FROM backups WHERE id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
        });
        Ok(())
    }

    async fn backups_in(&self, tenants: Option<&[Uuid]>, limit: u32) -> Result<Vec<ListedBackup>> {
        let cols: String = BACKUP_COLS
            .split(", ")
            .map(|c| format!("b.{c}"))
            .collect::<Vec<_>>()
            .join(", ");
        let scope = match tenants {
            None => String::new(),
            Some([]) => return Ok(Vec::new()),
            Some(ids) => {
                let ps: Vec<String> = (0..ids.len()).map(|i| format!("${}", i + 2)).collect();
                format!("WHERE b.tenant_id IN ({})", ps.join(", "))
            }
        };
        let sql = format!(
            "SELECT {cols}, c.name AS cluster_name, t.slug AS tenant_slug, \
             c.deleted_at IS NOT NULL AS cluster_deleted \
             FROM backups b JOIN clusters c ON c.id = b.cluster_id \
             JOIN tenants t ON t.id = b.tenant_id {scope} \
             ORDER BY b.created_at DESC, b.id DESC LIMIT $1"
        );
        let ids = tenants.unwrap_or_default();
        let rows: Vec<ListedRow> = on_pool!(self, p => {
            let mut q = sqlx::query_as(&sql).bind(i64::from(limit));
            for id in ids {
                q = q.bind(*id);
            }
            q.fetch_all(p).await?
        });
        rows.into_iter()
            .map(|r| {
                Ok(ListedBackup {
                    cluster_name: r.cluster_name,
                    tenant_slug: r.tenant_slug,
                    cluster_deleted: r.cluster_deleted,
                    backup: r.backup.try_into()?,
                })
            })
            .collect()
    }

    async fn put_backup_schedule(
        &self,
        schedule: &BackupSchedule,
        audit: &AuditEvent,
    ) -> Result<()> {
        audited_tx!(self, audit, |tx| {
            sqlx::query("DELETE FROM backup_schedules WHERE cluster_id = $1")
                .bind(schedule.cluster_id)
                .execute(&mut *tx)
                .await?;
            sqlx::query(
                "INSERT INTO backup_schedules (cluster_id, tenant_id, every_hours, keep, kind, \
                 include_secrets, snapshot_volumes, next_at, updated_by, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .bind(schedule.cluster_id)
            .bind(schedule.tenant_id)
            .bind(i64::from(schedule.every_hours))
            .bind(i64::from(schedule.keep))
            .bind(schedule.kind.as_str())
            .bind(schedule.include_secrets)
            .bind(schedule.snapshot_volumes)
            .bind(schedule.next_at)
            .bind(&schedule.updated_by)
            .bind(schedule.updated_at)
            .execute(&mut *tx)
            .await?;
        });
        Ok(())
    }

    async fn remove_backup_schedule(&self, cluster_id: Uuid, audit: &AuditEvent) -> Result<bool> {
        let removed;
        audited_tx!(self, audit, |tx| {
            removed = sqlx::query("DELETE FROM backup_schedules WHERE cluster_id = $1")
                .bind(cluster_id)
                .execute(&mut *tx)
                .await?
                .rows_affected()
                > 0;
        });
        Ok(removed)
    }

    async fn backup_schedule(&self, cluster_id: Uuid) -> Result<Option<BackupSchedule>> {
        let sql = format!("SELECT {SCHEDULE_COLS} FROM backup_schedules WHERE cluster_id = $1");
        let row: Option<ScheduleRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(cluster_id).fetch_optional(p).await?
        });
        row.map(TryInto::try_into).transpose()
    }

    async fn due_backup_schedules(
        &self,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<BackupSchedule>> {
        let sql = format!(
            "SELECT {SCHEDULE_COLS} FROM backup_schedules s WHERE s.next_at <= $1 \
             AND EXISTS (SELECT 1 FROM clusters c WHERE c.id = s.cluster_id \
             AND c.deleted_at IS NULL) ORDER BY s.next_at LIMIT $2"
        );
        let rows: Vec<ScheduleRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(now).bind(i64::from(limit)).fetch_all(p).await?
        });
        rows.into_iter().map(TryInto::try_into).collect()
    }

    async fn set_backup_schedule_next(
        &self,
        cluster_id: Uuid,
        next_at: DateTime<Utc>,
    ) -> Result<()> {
        on_pool!(self, p => sqlx::query(
            "UPDATE backup_schedules SET next_at = $2 WHERE cluster_id = $1",
        ).bind(cluster_id).bind(next_at).execute(p).await.map(|_| ())?);
        Ok(())
    }
}
