//! Scheduled backups: tenant admins and operators set a cluster's schedule (every so many
//! hours, keeping the newest so many); the engine's periodic sweep (one replica at a time)
//! queues the backups that are due and removes the scheduled ones past retention.

use chrono::{DateTime, Utc};

use super::{BackupOptions, Backups};
use crate::audit::{action, AuditEvent};
use crate::backup::schedule::{past_retention, BackupSchedule, SCHEDULED_BY};
use crate::cluster::Cluster;
use crate::{Actor, Error, Result};

/// Schedules handled per sweep.
const DUE_PER_SWEEP: u32 = 100;

impl Backups {
    /// A cluster's schedule, if it has one.
    pub async fn schedule(
        &self,
        actor: &Actor,
        cluster_id: &str,
    ) -> Result<Option<BackupSchedule>> {
        let cluster = self
            .authorized(actor, cluster_id, action::BACKUP_VIEW)
            .await?;
        self.deps.store.backup_schedule(cluster.id).await
    }

    /// Sets a cluster's schedule: a backup as `options` ask every `every_hours` (the first at
    /// once when the cluster had none), keeping the newest `keep` scheduled ones.
    pub async fn set_schedule(
        &self,
        actor: &Actor,
        cluster_id: &str,
        every_hours: u32,
        keep: u32,
        options: BackupOptions,
    ) -> Result<BackupSchedule> {
        let cluster = self
            .authorized(actor, cluster_id, action::BACKUP_SCHEDULE)
            .await?;
        let result = async {
            BackupSchedule::check(every_hours, keep)?;
            // What each backup will be, checked now (a key space only of hosted clusters).
            let example = self.backup_for(&cluster, options, SCHEDULED_BY)?;
            let now = crate::clock::now();
            let previous = self.deps.store.backup_schedule(cluster.id).await?;
            let schedule = BackupSchedule {
                cluster_id: cluster.id,
                tenant_id: cluster.tenant_id,
                every_hours,
                keep,
                kind: example.kind,
                include_secrets: example.include_secrets,
                snapshot_volumes: example.snapshot_volumes,
                next_at: BackupSchedule::next_after_change(previous.as_ref(), every_hours, now),
                updated_by: actor.to_string(),
                updated_at: now,
            };
            let audit = AuditEvent::success(actor, action::BACKUP_SCHEDULE, cluster.name.as_str())
                .in_tenant(cluster.tenant_id)
                .with_detail(format!(
                    "every {every_hours} h, keep {keep}, {}",
                    Self::what(&example)
                ));
            self.deps
                .store
                .put_backup_schedule(&schedule, &audit)
                .await?;
            Ok(schedule)
        }
        .await;
        self.guard
            .audited(
                actor,
                action::BACKUP_SCHEDULE,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
                result,
            )
            .await
    }

    /// Removes a cluster's schedule (the backups it took stay). NotFound when it had none.
    pub async fn remove_schedule(&self, actor: &Actor, cluster_id: &str) -> Result<()> {
        let cluster = self
            .authorized(actor, cluster_id, action::BACKUP_SCHEDULE)
            .await?;
        let audit = AuditEvent::success(actor, action::BACKUP_SCHEDULE, cluster.name.as_str())
            .in_tenant(cluster.tenant_id)
            .with_detail("schedule removed");
        let result = match self
            .deps
            .store
            .remove_backup_schedule(cluster.id, &audit)
            .await
        {
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::NotFound("backup schedule")),
            Err(e) => Err(e),
        };
        self.guard
            .audited(
                actor,
                action::BACKUP_SCHEDULE,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
                result,
            )
            .await
    }

    /// Queues the backups due at `now` and removes scheduled backups past retention; how many
    /// were queued. A cluster that is not Ready, or busy with a backup, waits for its next
    /// turn. Run by the engine's periodic sweep.
    pub async fn run_schedules(&self, now: DateTime<Utc>) -> Result<usize> {
        let due = self
            .deps
            .store
            .due_backup_schedules(now, DUE_PER_SWEEP)
            .await?;
        let mut queued = 0;
        for schedule in due {
            let next = now + chrono::Duration::hours(i64::from(schedule.every_hours));
            self.deps
                .store
                .set_backup_schedule_next(schedule.cluster_id, next)
                .await?;
            let cluster = match self.deps.store.cluster(schedule.cluster_id).await {
                Ok(c) => c,
                Err(Error::NotFound(_)) => continue,
                Err(e) => return Err(e),
            };
            match self.queue_scheduled(&cluster, &schedule).await {
                Ok(()) => queued += 1,
                Err(Error::Conflict(why)) => {
                    tracing::info!(cluster = %cluster.name, why, "scheduled backup skipped")
                }
                Err(e) => {
                    tracing::warn!(cluster = %cluster.name, error = %e, "scheduled backup failed")
                }
            }
            if let Err(e) = self.prune(&cluster, schedule.keep).await {
                tracing::warn!(cluster = %cluster.name, error = %e, "backup retention failed");
            }
        }
        Ok(queued)
    }

    async fn queue_scheduled(&self, cluster: &Cluster, schedule: &BackupSchedule) -> Result<()> {
        let options = BackupOptions {
            kind: schedule.kind,
            include_secrets: schedule.include_secrets,
            snapshot_volumes: schedule.snapshot_volumes,
        };
        let backup = self.backup_for(cluster, options, SCHEDULED_BY)?;
        self.queue(&Actor::system(), cluster, backup)
            .await
            .map(|_| ())
    }

    /// Removes the scheduled backups of `cluster` past the newest `keep`: record, archive,
    /// sealed Secrets (a backup being restored waits for the next sweep).
    async fn prune(&self, cluster: &Cluster, keep: u32) -> Result<()> {
        let backups = self.deps.store.backups_of(cluster.id).await?;
        for id in past_retention(&backups, keep) {
            let Some(backup) = backups.iter().find(|b| b.id == id) else {
                continue;
            };
            let audit = AuditEvent::success(
                &Actor::system(),
                action::BACKUP_DELETE,
                cluster.name.as_str(),
            )
            .in_tenant(cluster.tenant_id)
            .with_detail(format!("backup {id}: past the schedule's retention"));
            match self.remove(backup, &audit).await {
                Ok(()) => {
                    tracing::info!(cluster = %cluster.name, backup = %id, "scheduled backup past retention removed")
                }
                Err(Error::Conflict(why)) => {
                    tracing::info!(cluster = %cluster.name, backup = %id, why, "scheduled backup kept for now")
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
