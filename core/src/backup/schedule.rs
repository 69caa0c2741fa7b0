//! Scheduled backups: one schedule per cluster, a backup every few hours, the newest few of
//! them kept. Backups taken by hand are never removed by a schedule.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Backup, BackupKind, BackupState};
use crate::ValidationError;

/// Who scheduled backups are requested by (their `requested_by`).
pub const SCHEDULED_BY: &str = "schedule";
/// Hours between backups: at least 1, at most 30 days.
pub const EVERY_HOURS: std::ops::RangeInclusive<u32> = 1..=720;
/// Scheduled backups kept: at least 1, at most 100.
pub const KEEP: std::ops::RangeInclusive<u32> = 1..=100;

/// A cluster's backup schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupSchedule {
    pub cluster_id: Uuid,
    pub tenant_id: Uuid,
    pub every_hours: u32,
    pub keep: u32,
    /// What each backup copies.
    pub kind: BackupKind,
    pub include_secrets: bool,
    /// A VolumeSnapshot of every claim with each backup.
    pub snapshot_volumes: bool,
    /// When the next backup is due.
    pub next_at: DateTime<Utc>,
    pub updated_by: String,
    pub updated_at: DateTime<Utc>,
}

impl BackupSchedule {
    /// Checks the figures a person typed.
    pub fn check(every_hours: u32, keep: u32) -> Result<(), ValidationError> {
        if !EVERY_HOURS.contains(&every_hours) {
            return Err(ValidationError::new(
                "every_hours",
                format!(
                    "must be between {} and {} hours",
                    EVERY_HOURS.start(),
                    EVERY_HOURS.end()
                ),
            ));
        }
        if !KEEP.contains(&keep) {
            return Err(ValidationError::new(
                "keep",
                format!("must be between {} and {}", KEEP.start(), KEEP.end()),
            ));
        }
        Ok(())
    }

    /// When the next backup is due after a change at `now`: at once for a new schedule; for
    /// a changed one, when it was due, but no later than one new period from now.
    pub fn next_after_change(
        previous: Option<&BackupSchedule>,
        every_hours: u32,
        now: DateTime<Utc>,
    ) -> DateTime<Utc> {
        match previous {
            None => now,
            Some(p) => p
                .next_at
                .min(now + chrono::Duration::hours(i64::from(every_hours))),
        }
    }
}

/// The backups retention removes: of `backups` (one cluster's, any order), the finished ones
/// the schedule took, past the newest `keep`.
pub fn past_retention(backups: &[Backup], keep: u32) -> Vec<Uuid> {
    let mut scheduled: Vec<&Backup> = backups
        .iter()
        .filter(|b| b.requested_by == SCHEDULED_BY && b.state != BackupState::Running)
        .collect();
    scheduled.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
    scheduled
        .into_iter()
        .skip(usize::try_from(keep).unwrap_or(usize::MAX))
        .map(|b| b.id)
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn backup(by: &str, state: BackupState, minutes_ago: i64) -> Backup {
        let mut b = Backup::new(Uuid::nil(), Uuid::nil(), false, by);
        b.state = state;
        b.created_at = crate::clock::now() - chrono::Duration::minutes(minutes_ago);
        b
    }

    #[test]
    fn retention_keeps_the_newest_scheduled_backups_and_never_a_manual_one() {
        let list = vec![
            backup(SCHEDULED_BY, BackupState::Succeeded, 30),
            backup(SCHEDULED_BY, BackupState::Succeeded, 10),
            backup("olga", BackupState::Succeeded, 90),
            backup(SCHEDULED_BY, BackupState::Failed, 60),
            backup(SCHEDULED_BY, BackupState::Succeeded, 120),
            backup(SCHEDULED_BY, BackupState::Running, 1),
        ];
        let gone = past_retention(&list, 2);
        assert_eq!(
            gone,
            [list[3].id, list[4].id],
            "the two oldest scheduled ones"
        );
        assert!(past_retention(&list, 4).is_empty());
    }

    #[test]
    fn figures_are_checked_and_the_next_run_follows_a_change() {
        assert!(BackupSchedule::check(24, 7).is_ok());
        assert_eq!(
            BackupSchedule::check(0, 7).unwrap_err().field,
            "every_hours"
        );
        assert_eq!(
            BackupSchedule::check(721, 7).unwrap_err().field,
            "every_hours"
        );
        assert_eq!(BackupSchedule::check(24, 0).unwrap_err().field, "keep");
        assert_eq!(BackupSchedule::check(24, 101).unwrap_err().field, "keep");
        let now = crate::clock::now();
        assert_eq!(BackupSchedule::next_after_change(None, 24, now), now);
        let old = BackupSchedule {
            cluster_id: Uuid::nil(),
            tenant_id: Uuid::nil(),
            every_hours: 24,
            keep: 7,
            kind: BackupKind::Resources,
            include_secrets: false,
            snapshot_volumes: false,
            next_at: now + chrono::Duration::hours(20),
            updated_by: "olga".into(),
            updated_at: now,
        };
        assert_eq!(
            BackupSchedule::next_after_change(Some(&old), 1, now),
            now + chrono::Duration::hours(1),
            "a shorter period brings the next backup closer"
        );
        assert_eq!(
            BackupSchedule::next_after_change(Some(&old), 48, now),
            old.next_at,
            "a longer one does not push it away"
        );
    }
}
