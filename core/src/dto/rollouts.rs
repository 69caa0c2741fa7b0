//! Upgrades in waves (rollouts) as the REST API and the portal send them. Waves travel
//! numbered from 1, as the reasons and timelines the core writes count them ("wave 2 of 3");
//! the core counts from 0.

use kqueen_dto::rollouts;

use crate::rollout::plan::{Candidate, Excluded, Plan};
use crate::rollout::{MemberState, Rollout, RolloutMember, RolloutState};
use crate::service::RolloutView;

impl From<Candidate> for rollouts::RolloutCandidate {
    fn from(c: Candidate) -> Self {
        Self {
            id: c.cluster_id.to_string(),
            name: c.name,
            tenant: c.tenant,
            provider: c.provider,
            version: c.version,
            state: c.state,
            production: c.production,
        }
    }
}

impl From<Excluded> for rollouts::RolloutExcluded {
    fn from(e: Excluded) -> Self {
        Self {
            cluster: e.cluster.into(),
            reason: e.reason,
        }
    }
}

impl From<Plan> for rollouts::RolloutPlan {
    fn from(p: Plan) -> Self {
        Self {
            waves: p
                .waves
                .into_iter()
                .map(|w| w.into_iter().map(Into::into).collect())
                .collect(),
            excluded: p.excluded.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<RolloutState> for rollouts::RolloutState {
    fn from(s: RolloutState) -> Self {
        match s {
            RolloutState::Running => Self::Running,
            RolloutState::Paused => Self::Paused,
            RolloutState::Completed => Self::Completed,
            RolloutState::Aborted => Self::Aborted,
        }
    }
}

impl From<MemberState> for rollouts::RolloutClusterState {
    fn from(s: MemberState) -> Self {
        match s {
            MemberState::Waiting => Self::Waiting,
            MemberState::Upgrading => Self::Upgrading,
            MemberState::Upgraded => Self::Upgraded,
            MemberState::Failed => Self::Failed,
            MemberState::Skipped => Self::Skipped,
        }
    }
}

impl From<Rollout> for rollouts::Rollout {
    fn from(r: Rollout) -> Self {
        let t = r.tally;
        Self {
            id: r.id.to_string(),
            tenant: r.filter.tenant,
            provider: r.filter.provider,
            version: r.filter.version,
            target_version: r.target_version,
            wave_size: r.wave_size,
            state: r.state.into(),
            // A completed rollout's core wave is `waves`: it names its last.
            wave: r.wave.saturating_add(1).min(r.waves),
            waves: r.waves,
            reason: r.reason,
            created_by: r.created_by,
            created_at: r.created_at.to_rfc3339(),
            updated_at: r.updated_at.to_rfc3339(),
            progress: rollouts::RolloutProgress {
                waiting: t.waiting,
                upgrading: t.upgrading,
                upgraded: t.upgraded,
                failed: t.failed,
                skipped: t.skipped,
                total: t.total(),
                percent: t.percent_done(),
            },
        }
    }
}

impl From<RolloutMember> for rollouts::RolloutCluster {
    fn from(m: RolloutMember) -> Self {
        Self {
            cluster_id: m.cluster_id.to_string(),
            cluster: m.cluster_name,
            tenant: m.tenant_slug,
            wave: m.wave.saturating_add(1),
            from_version: m.from_version,
            state: m.state.into(),
            operation: m.operation_id.map(|id| id.to_string()),
            reason: m.reason,
            updated_at: m.updated_at.to_rfc3339(),
        }
    }
}

impl From<RolloutView> for rollouts::RolloutDetail {
    fn from(v: RolloutView) -> Self {
        Self {
            rollout: v.rollout.into(),
            clusters: v.members.into_iter().map(Into::into).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waves_travel_from_one_and_a_completed_rollout_names_its_last() {
        let now = chrono::Utc::now();
        let mut r = Rollout {
            id: uuid::Uuid::nil(),
            tenant_id: None,
            target_version: "1.21".into(),
            wave_size: 2,
            filter: Default::default(),
            state: RolloutState::Running,
            wave: 0,
            waves: 3,
            reason: None,
            created_by: "tim".into(),
            created_at: now,
            updated_at: now,
            tally: Default::default(),
        };
        assert_eq!(rollouts::Rollout::from(r.clone()).wave, 1);
        r.wave = 3;
        r.state = RolloutState::Completed;
        let out = rollouts::Rollout::from(r);
        assert_eq!(
            (out.wave, out.waves, out.state),
            (3, 3, rollouts::RolloutState::Completed)
        );
        assert_eq!(out.progress.percent, 100);
    }
}
