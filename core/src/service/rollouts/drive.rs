//! The rollout driver: at each turn it follows the upgrades under way, starts the waiting
//! clusters of the wave under way, and moves the rollout on (next wave, paused at a failure,
//! completed). Every write is conditional on the state it read, so two turns at once (the
//! periodic job and a resume) never start one cluster twice.

use chrono::Duration;
use uuid::Uuid;

use super::candidates::version_of;
use super::Rollouts;
use crate::audit::{action, AuditEvent};
use crate::cluster::{OperationKind, OperationState, OperationTarget};
use crate::rollout::advance::{self, Next, Seen, Start};
use crate::rollout::{MemberState, Rollout, RolloutMember, RolloutState};
use crate::service::clusters::Via;
use crate::store::{MemberChange, RolloutChange};
use crate::{Actor, Error, Result};

/// How long a cluster may be marked upgrading without its operation (the turn that queued
/// it stopped in between) before it is tried again.
const UNQUEUED_GRACE: i64 = 120;

impl Rollouts {
    /// One turn over every rollout that needs one; returns how many upgrades it started.
    /// Failures of one rollout are logged and the others go on.
    pub async fn drive(&self) -> Result<usize> {
        let mut started = 0;
        for id in self.deps.store.driven_rollouts().await? {
            match self.drive_rollout(id).await {
                Ok(n) => started += n,
                Err(e) => tracing::warn!(rollout = %id, error = %e, "a rollout's turn failed"),
            }
        }
        Ok(started)
    }

    /// One turn of rollout `id`; returns how many upgrades it started.
    pub(super) async fn drive_rollout(&self, id: Uuid) -> Result<usize> {
        let store = &self.deps.store;
        let mut rollout = store.rollout(id).await?;
        let mut failures = Vec::new();
        for m in store.rollout_members(id).await? {
            if m.state == MemberState::Upgrading {
                if let Some(failure) = self.follow(&m).await? {
                    failures.push(failure);
                }
            }
        }
        let mut started = 0;
        while rollout.state == RolloutState::Running {
            let members = store.rollout_members(id).await?;
            // Clusters of earlier waves tried again on a resume are due too.
            for m in members
                .iter()
                .filter(|m| m.wave <= rollout.wave && m.state == MemberState::Waiting)
            {
                match self.start_member(&rollout, m).await? {
                    Ok(true) => started += 1,
                    Ok(false) => {}
                    Err(failure) => failures.push(failure),
                }
            }
            let states = store.rollout_members(id).await?;
            let ended = advance::wave_ended(
                states
                    .iter()
                    .filter(|m| m.wave <= rollout.wave)
                    .map(|m| m.state),
            );
            let next = advance::next(rollout.state, rollout.wave, rollout.waves, ended, &failures);
            let (state, wave, reason) = match next {
                Next::Stay => break,
                Next::Pause(why) => (RolloutState::Paused, rollout.wave, Some(why)),
                Next::NextWave => (RolloutState::Running, rollout.wave + 1, None),
                Next::Complete => {
                    let mut tally = crate::rollout::MemberTally::default();
                    states.iter().for_each(|m| tally.count(m.state));
                    let summary = advance::summary(&tally);
                    (RolloutState::Completed, rollout.waves, Some(summary))
                }
            };
            let now = crate::clock::now();
            let change = RolloutChange {
                state,
                wave: Some(wave),
                reason: reason.as_deref(),
                at: now,
            };
            // Pauses and ends are in the audit trail; a new wave is on the clusters' timelines.
            let audit = match state {
                RolloutState::Running => None,
                _ => Some(self.system_audit(&rollout, state, reason.as_deref())),
            };
            if !store
                .move_rollout(id, &[RolloutState::Running], &change, audit.as_ref())
                .await?
            {
                // Paused or aborted meanwhile: the next turn sees it.
                break;
            }
            rollout.state = state;
            rollout.wave = wave;
            failures.clear();
        }
        Ok(started)
    }

    /// The audit event of a pause at a failure or an end, which the system decides.
    fn system_audit(
        &self,
        rollout: &Rollout,
        state: RolloutState,
        reason: Option<&str>,
    ) -> AuditEvent {
        let verb = match state {
            RolloutState::Paused => action::ROLLOUT_PAUSE,
            _ => action::ROLLOUT_COMPLETE,
        };
        let mut audit = AuditEvent::success(&Actor::system(), verb, rollout.id.to_string())
            .with_detail(reason.unwrap_or_default());
        audit.tenant_id = rollout.tenant_id;
        audit
    }

    /// Follows an upgrading cluster's operation; returns "cluster: reason" when it failed.
    async fn follow(&self, m: &RolloutMember) -> Result<Option<String>> {
        let now = crate::clock::now();
        let Some(op_id) = m.operation_id else {
            if now - m.updated_at > Duration::seconds(UNQUEUED_GRACE) {
                self.move_member(
                    m,
                    MemberState::Waiting,
                    None,
                    Some("its upgrade was not queued (interrupted); trying again"),
                )
                .await?;
            }
            return Ok(None);
        };
        let (state, why) = match self.deps.store.operation(op_id).await {
            Ok(op) => match op.state {
                OperationState::Succeeded => (MemberState::Upgraded, None),
                OperationState::Failed => (
                    MemberState::Failed,
                    Some(op.error.unwrap_or_else(|| "the upgrade failed".into())),
                ),
                OperationState::Pending | OperationState::Running => return Ok(None),
            },
            Err(Error::NotFound(_)) => (
                MemberState::Failed,
                Some("its upgrade operation is gone".to_owned()),
            ),
            Err(e) => return Err(e),
        };
        let moved = self.move_member(m, state, None, why.as_deref()).await?;
        Ok(match (moved, why) {
            (true, Some(why)) if state == MemberState::Failed => {
                Some(format!("{}: {why}", m.cluster_name))
            }
            _ => None,
        })
    }

    /// Starts a waiting cluster's upgrade if it is due: Ok(true) when queued, Err("cluster:
    /// reason") when it failed.
    async fn start_member(
        &self,
        rollout: &Rollout,
        m: &RolloutMember,
    ) -> Result<std::result::Result<bool, String>> {
        let target = &rollout.target_version;
        let cluster = match self.deps.store.cluster(m.cluster_id).await {
            Ok(c) => Some(c),
            Err(Error::NotFound(_)) => None,
            Err(e) => return Err(e),
        };
        let seen = match &cluster {
            None => Seen::Gone,
            Some(c) => {
                let busy = self
                    .deps
                    .store
                    .operations_of(c.id, 1)
                    .await?
                    .first()
                    .is_some_and(|op| !op.is_finished());
                Seen::Cluster {
                    state: c.state,
                    version: version_of(c, Some(m.from_version.as_str()).filter(|v| !v.is_empty())),
                    error: c.error.clone(),
                    busy,
                }
            }
        };
        let fail = |why: &str| format!("{}: {why}", m.cluster_name);
        match (advance::start(&seen, target), cluster) {
            (Start::Queue, Some(cluster)) => {
                // Claimed first: only one turn queues it.
                if !self
                    .move_member(m, MemberState::Upgrading, None, None)
                    .await?
                {
                    return Ok(Ok(false));
                }
                // The timeline names the cluster's own wave (an earlier one's, when a resume
                // retries it).
                let own_wave = Rollout {
                    wave: m.wave,
                    ..rollout.clone()
                };
                let queued = self
                    .clusters
                    .try_enqueue(
                        &Actor::system(),
                        &cluster,
                        OperationKind::Upgrade,
                        Some(OperationTarget::Version(target.clone())),
                        action::CLUSTER_UPGRADE,
                        Via::Rollout(&own_wave),
                    )
                    .await;
                let claimed = RolloutMember {
                    state: MemberState::Upgrading,
                    ..m.clone()
                };
                match queued {
                    Ok(op) => {
                        self.move_member(&claimed, MemberState::Upgrading, Some(op.id), None)
                            .await?;
                        Ok(Ok(true))
                    }
                    Err(e) if e.is_client_error() => {
                        let why = e.to_string();
                        self.move_member(&claimed, MemberState::Failed, None, Some(&why))
                            .await?;
                        Ok(Err(fail(&why)))
                    }
                    Err(e) => {
                        // The store did not answer: waiting again, the next turn retries.
                        self.move_member(&claimed, MemberState::Waiting, None, None)
                            .await?;
                        Err(e)
                    }
                }
            }
            (Start::Queue, None) => Ok(Ok(false)),
            (Start::Wait(why), _) => {
                if m.reason.as_deref() != Some(why.as_str()) {
                    self.move_member(m, MemberState::Waiting, None, Some(&why))
                        .await?;
                }
                Ok(Ok(false))
            }
            (Start::Skip(why), _) => {
                self.move_member(m, MemberState::Skipped, None, Some(&why))
                    .await?;
                Ok(Ok(false))
            }
            (Start::Fail(why), _) => {
                let moved = self
                    .move_member(m, MemberState::Failed, None, Some(&why))
                    .await?;
                Ok(if moved { Err(fail(&why)) } else { Ok(false) })
            }
        }
    }

    /// Moves `m` from the state it was read in; false when it had moved meanwhile.
    async fn move_member(
        &self,
        m: &RolloutMember,
        state: MemberState,
        operation_id: Option<Uuid>,
        reason: Option<&str>,
    ) -> Result<bool> {
        let change = MemberChange {
            state,
            operation_id,
            reason,
            at: crate::clock::now(),
        };
        self.deps
            .store
            .move_member(m.rollout_id, m.cluster_id, m.state, &change)
            .await
    }
}
