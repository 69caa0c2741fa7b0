//! What the rollout driver decides at each turn, apart from reading and writing: whether a
//! waiting cluster's upgrade starts, and whether the rollout pauses, moves to its next wave
//! or has ended.

use std::cmp::Ordering;

use super::{version, MemberState, MemberTally, RolloutState};
use crate::cluster::ClusterState;

/// A waiting cluster as the driver finds it when its wave is under way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// Deleted since the plan.
    Gone,
    Cluster {
        state: ClusterState,
        version: Option<String>,
        /// Why it is in Error, when it is.
        error: Option<String>,
        /// Another operation of it has not ended (a backup, a scale, …).
        busy: bool,
    },
}

/// What becomes of a waiting cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// Queue its upgrade now.
    Queue,
    /// Not yet: it is busy (the reason is shown).
    Wait(String),
    Skip(String),
    Fail(String),
}

/// Whether the upgrade of a waiting cluster to `target` starts.
pub fn start(seen: &Seen, target: &str) -> Start {
    let Seen::Cluster {
        state,
        version: running,
        error,
        busy,
    } = seen
    else {
        return Start::Skip("the cluster was deleted".into());
    };
    if let Some(v) = running.as_deref() {
        match version::compare(v, target) {
            Some(Ordering::Equal) => return Start::Skip(format!("it runs {v} already")),
            Some(Ordering::Greater) => {
                return Start::Skip(format!("it runs {v}, newer than {target}"))
            }
            _ => {}
        }
    }
    match state {
        ClusterState::Ready if !busy => Start::Queue,
        ClusterState::Ready | ClusterState::Updating | ClusterState::Provisioning => {
            Start::Wait("waits for the operation under way on the cluster to end".into())
        }
        other => Start::Fail(match error {
            Some(e) => format!("the cluster is {}: {e}", other.label()),
            None => format!("the cluster is {}", other.label()),
        }),
    }
}

/// What the rollout does after a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    Stay,
    /// Paused by this turn's failures (the reason names them).
    Pause(String),
    /// Its current wave ended: the next one starts.
    NextWave,
    /// Its last wave ended.
    Complete,
}

/// The rollout's next step: `ended` says whether every cluster of the current wave has
/// ended, `failures` what failed during this turn ("cluster: reason").
pub fn next(state: RolloutState, wave: u32, waves: u32, ended: bool, failures: &[String]) -> Next {
    if state != RolloutState::Running {
        return Next::Stay;
    }
    if !failures.is_empty() {
        return Next::Pause(format!(
            "wave {} of {waves}: {}",
            wave + 1,
            failures.join("; ")
        ));
    }
    match (ended, wave + 1 < waves) {
        (false, _) => Next::Stay,
        (true, true) => Next::NextWave,
        (true, false) => Next::Complete,
    }
}

/// How a rollout ended, in words: "6 upgraded, 1 failed".
pub fn summary(tally: &MemberTally) -> String {
    let mut parts = vec![format!("{} upgraded", tally.upgraded)];
    if tally.failed > 0 {
        parts.push(format!("{} failed", tally.failed));
    }
    if tally.skipped > 0 {
        parts.push(format!("{} skipped", tally.skipped));
    }
    parts.join(", ")
}

/// Whether every member state of a wave has ended.
pub fn wave_ended(states: impl IntoIterator<Item = MemberState>) -> bool {
    states.into_iter().all(MemberState::is_ended)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(state: ClusterState, version: &str, busy: bool) -> Seen {
        Seen::Cluster {
            state,
            version: Some(version.into()),
            error: Some("etcd is gone".into()),
            busy,
        }
    }

    #[test]
    fn a_waiting_cluster_starts_waits_is_skipped_or_fails() {
        assert_eq!(
            start(&seen(ClusterState::Ready, "1.20", false), "1.21"),
            Start::Queue
        );
        assert!(matches!(
            start(&seen(ClusterState::Ready, "1.20", true), "1.21"),
            Start::Wait(_)
        ));
        assert!(matches!(
            start(&seen(ClusterState::Updating, "1.20", false), "1.21"),
            Start::Wait(_)
        ));
        assert_eq!(
            start(&seen(ClusterState::Ready, "v1.21.3", false), "1.21"),
            Start::Skip("it runs v1.21.3 already".into())
        );
        assert_eq!(
            start(&seen(ClusterState::Error, "1.20", false), "1.21"),
            Start::Fail("the cluster is Error: etcd is gone".into())
        );
        assert_eq!(
            start(&Seen::Gone, "1.21"),
            Start::Skip("the cluster was deleted".into())
        );
    }

    #[test]
    fn a_failure_pauses_an_ended_wave_moves_on_the_last_completes() {
        let run = RolloutState::Running;
        let failed = vec!["b2: the API server did not become ready".to_owned()];
        assert_eq!(
            next(run, 1, 3, false, &failed),
            Next::Pause("wave 2 of 3: b2: the API server did not become ready".into())
        );
        assert_eq!(next(run, 1, 3, false, &[]), Next::Stay);
        assert_eq!(next(run, 1, 3, true, &[]), Next::NextWave);
        assert_eq!(next(run, 2, 3, true, &[]), Next::Complete);
        // Paused or aborted: the driver only follows what runs.
        assert_eq!(next(RolloutState::Paused, 1, 3, true, &[]), Next::Stay);
        assert_eq!(next(RolloutState::Aborted, 1, 3, true, &failed), Next::Stay);
        assert!(wave_ended([MemberState::Upgraded, MemberState::Failed]));
        assert!(!wave_ended([MemberState::Upgraded, MemberState::Waiting]));
    }

    #[test]
    fn the_summary_names_what_happened() {
        let tally = MemberTally {
            upgraded: 5,
            failed: 1,
            ..MemberTally::default()
        };
        assert_eq!(summary(&tally), "5 upgraded, 1 failed");
    }
}
