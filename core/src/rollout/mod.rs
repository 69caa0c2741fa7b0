//! Upgrades in waves (rollouts): a target Kubernetes version brought to the clusters a filter
//! picks (tenant, provider, current version), a few at a time. The plan splits them into waves
//! of `wave_size`; a wave starts when the one before it has ended (every cluster upgraded and
//! Ready, failed, or skipped), and the first failure pauses the rollout with its reason: the
//! clusters of later waves wait until someone resumes (the failed ones stay failed; resuming
//! retries those that are Ready again) or aborts (upgrades under way finish, nothing new
//! starts). Clusters are upgraded by the ordinary upgrade operation, so every upgrade is on
//! its cluster's timeline and in the audit trail.
//!
//! - [`plan`]: which clusters, in which wave, and which are left out and why;
//! - [`advance`]: what the driver does at each turn (pure decisions, tested here);
//! - [`version`]: comparing Kubernetes versions as KQueen stores them (`1.33`, `v1.33.2`).
//!
//! The use cases (who may, the driver) are in `service/rollouts/`.

pub mod advance;
pub mod plan;
pub mod version;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

crate::cluster::string_enum!(
    /// Where a rollout is.
    RolloutState {
        /// Upgrading wave after wave.
        Running = "running",
        /// Stopped at a failure (or by someone): upgrades under way finish, no new one
        /// starts until it is resumed.
        Paused = "paused",
        /// Every wave ended.
        Completed = "completed",
        /// Stopped for good: upgrades under way finish, the clusters still waiting are
        /// skipped.
        Aborted = "aborted",
    }
);

impl RolloutState {
    /// Whether it may still start upgrades (after a resume for a paused one).
    pub fn is_open(self) -> bool {
        matches!(self, Self::Running | Self::Paused)
    }
}

crate::cluster::string_enum!(
    /// Where one cluster of a rollout is.
    MemberState {
        /// Its wave has not started, or it waits for its cluster to be free.
        Waiting = "waiting",
        /// Its upgrade operation runs.
        Upgrading = "upgrading",
        /// Upgraded and Ready.
        Upgraded = "upgraded",
        /// Its upgrade failed or could not be queued (the reason says why).
        Failed = "failed",
        /// Left alone: deleted, already at the version, or the rollout was aborted.
        Skipped = "skipped",
    }
);

impl MemberState {
    /// Whether nothing more happens to it in this rollout (a failed one may be retried by a
    /// resume).
    pub fn is_ended(self) -> bool {
        matches!(self, Self::Upgraded | Self::Failed | Self::Skipped)
    }
}

/// Which clusters a rollout takes: every filter that is set must match.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolloutFilter {
    /// Tenant slug.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Provider name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The clusters' current version, or its start (`1.20` takes 1.20.x).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// The largest wave.
pub const MAX_WAVE_SIZE: u32 = 100;

/// Clusters one rollout takes at most.
pub const MAX_CLUSTERS: usize = 5_000;

/// A rollout: a target version brought to the clusters of a filter, wave after wave.
#[derive(Debug, Clone, PartialEq)]
pub struct Rollout {
    pub id: Uuid,
    /// The tenant it is limited to (a tenant admin's rollout); None: the whole fleet
    /// (operators).
    pub tenant_id: Option<Uuid>,
    pub target_version: String,
    pub wave_size: u32,
    pub filter: RolloutFilter,
    pub state: RolloutState,
    /// The wave under way (0-based); the number of waves when completed.
    pub wave: u32,
    pub waves: u32,
    /// Why it is paused or aborted, or how it ended.
    pub reason: Option<String>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// How many of its clusters are where (read with it).
    pub tally: MemberTally,
}

/// How many clusters of a rollout are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberTally {
    pub waiting: u32,
    pub upgrading: u32,
    pub upgraded: u32,
    pub failed: u32,
    pub skipped: u32,
}

impl MemberTally {
    pub fn total(&self) -> u32 {
        self.waiting + self.upgrading + self.upgraded + self.failed + self.skipped
    }

    /// Percent of the clusters whose part has ended.
    pub fn percent_done(&self) -> u8 {
        let total = self.total();
        if total == 0 {
            return 100;
        }
        let ended = self.upgraded + self.failed + self.skipped;
        u8::try_from(ended * 100 / total).unwrap_or(100)
    }

    pub fn count(&mut self, state: MemberState) {
        match state {
            MemberState::Waiting => self.waiting += 1,
            MemberState::Upgrading => self.upgrading += 1,
            MemberState::Upgraded => self.upgraded += 1,
            MemberState::Failed => self.failed += 1,
            MemberState::Skipped => self.skipped += 1,
        }
    }
}

/// One cluster of a rollout.
#[derive(Debug, Clone, PartialEq)]
pub struct RolloutMember {
    pub rollout_id: Uuid,
    pub cluster_id: Uuid,
    pub cluster_name: String,
    pub tenant_id: Uuid,
    pub tenant_slug: String,
    /// Its wave (0-based) and place in it.
    pub wave: u32,
    pub position: u32,
    /// The version it ran when planned.
    pub from_version: String,
    pub state: MemberState,
    /// Its upgrade operation, once queued.
    pub operation_id: Option<Uuid>,
    /// Why it failed, was skipped, or waits.
    pub reason: Option<String>,
    pub updated_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tally_counts_and_says_how_far_it_is() {
        let mut t = MemberTally::default();
        assert_eq!(t.percent_done(), 100);
        for s in [
            MemberState::Waiting,
            MemberState::Upgrading,
            MemberState::Upgraded,
            MemberState::Failed,
        ] {
            t.count(s);
        }
        assert_eq!(t.total(), 4);
        assert_eq!(t.percent_done(), 50);
        assert!(MemberState::Skipped.is_ended() && !MemberState::Upgrading.is_ended());
        assert!(RolloutState::Paused.is_open() && !RolloutState::Aborted.is_open());
    }

    #[test]
    fn a_filter_keeps_only_what_is_set() {
        let f = RolloutFilter {
            version: Some("1.20".into()),
            ..RolloutFilter::default()
        };
        let text = serde_json::to_string(&f).unwrap_or_default();
        assert_eq!(text, r#"{"version":"1.20"}"#);
        assert_eq!(serde_json::from_str::<RolloutFilter>(&text).ok(), Some(f));
    }
}
