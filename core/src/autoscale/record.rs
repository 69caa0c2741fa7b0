//! What KQueen keeps of a cluster's autoscaling: its settings and what the last turn left for
//! the next ([`Autoscaling`]), the node counts seen over time ([`Sample`], the chart), and
//! when a decision is news for the timeline ([`is_news`]).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{AutoscaleSettings, Observation, Underused};

/// Days of node counts kept (and charted).
pub const HISTORY_DAYS: i64 = 7;

/// A cluster's autoscaling, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Autoscaling {
    pub cluster_id: Uuid,
    pub tenant_id: Uuid,
    pub settings: AutoscaleSettings,
    /// What the last turn returned: node name → underused since.
    pub underused: Underused,
    /// The last turn's decision, in words.
    pub last_reason: Option<String>,
    pub last_turn_at: Option<DateTime<Utc>>,
    pub updated_by: String,
    pub updated_at: DateTime<Utc>,
}

/// A cluster's node counts at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub taken_at: DateTime<Utc>,
    /// What KQueen asked the provider for.
    pub wanted: u32,
    /// Worker nodes in the cluster.
    pub nodes: u32,
    /// … of which Ready.
    pub ready: u32,
    /// Pods the scheduler could place on no node.
    pub pending_pods: u32,
}

impl Sample {
    /// The counts a turn saw, at `now`.
    pub fn of(observed: &Observation, wanted: u32, now: DateTime<Utc>) -> Self {
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Self {
            taken_at: now,
            wanted,
            nodes: count(observed.workers().count()),
            ready: count(observed.workers().filter(|n| n.ready).count()),
            pending_pods: count(observed.pending.len()),
        }
    }

    /// Whether the counts differ from `earlier`'s (the time aside): only changes are kept.
    pub fn differs_from(&self, earlier: &Sample) -> bool {
        (self.wanted, self.nodes, self.ready, self.pending_pods)
            != (
                earlier.wanted,
                earlier.nodes,
                earlier.ready,
                earlier.pending_pods,
            )
    }
}

/// Units of the lengths of time reasons carry ("for 3 min", "after 10 min").
const TIME_UNITS: [&str; 3] = ["s", "min", "h"];

/// Whether `reason` says something `last` did not: figures aside, so that a node underused
/// "for 3 min", then "for 4 min", makes one timeline entry, not one per turn. Decisions that
/// change the node count are always written (their operation is news of its own).
pub fn is_news(last: Option<&str>, reason: &str) -> bool {
    last.is_none_or(|last| gist(last) != gist(reason))
}

/// A reason with its numbers (and the time units after them) masked.
fn gist(reason: &str) -> String {
    let mut out = Vec::new();
    let mut after_number = false;
    for word in reason.split_whitespace() {
        let bare = word.trim_end_matches(|c: char| c.is_ascii_punctuation());
        let tail = &word[bare.len()..];
        let numeric = !bare.is_empty()
            && bare
                .chars()
                .all(|c| c.is_ascii_digit() || c == '.' || c == '%');
        if numeric {
            // "1 h 30 min" is one length of time: one mask.
            if out.last().is_some_and(|w| w == "#") {
                out.pop();
            }
            out.push(format!("#{tail}"));
            after_number = true;
        } else if after_number && TIME_UNITS.contains(&bare) {
            // "10 min," → "#,": the unit goes with its number.
            if let Some(last) = out.last_mut() {
                last.push_str(tail);
            }
            after_number = false;
        } else {
            out.push(word.to_owned());
            after_number = false;
        }
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autoscale::fixtures::{node, not_ready, pending};

    #[test]
    fn only_what_changes_in_words_is_news() {
        let waiting = |t: &str| {
            format!(
                "node w-2 has been under 50% used for {t}: it is removed after 10 min if it \
                 stays so"
            )
        };
        assert!(is_news(None, &waiting("45 s")));
        for (a, b) in [("45 s", "3 min"), ("3 min", "1 h 30 min"), ("2 h", "3 h")] {
            assert!(!is_news(Some(&waiting(a)), &waiting(b)), "{a} → {b}");
        }
        // Another node, another rule, another cause: news.
        assert!(is_news(
            Some(&waiting("3 min")),
            &waiting("3 min").replace("w-2", "w-3")
        ));
        assert!(is_news(
            Some(&waiting("3 min")),
            "no pod waits and no node is under 50% used"
        ));
        assert!(!is_news(
            Some("no pod waits and no node is under 50% used"),
            "no pod waits and no node is under 50% used"
        ));
    }

    #[test]
    fn a_sample_counts_workers_their_readiness_and_waiting_pods() {
        let mut observed = Observation {
            nodes: vec![node("a", 0, 0), not_ready(node("b", 0, 0))],
            pending: vec![pending("web-1", 100, 1)],
        };
        let mut control = node("cp", 0, 0);
        control.control_plane = true;
        observed.nodes.push(control);
        let now = Utc::now();
        let s = Sample::of(&observed, 3, now);
        assert_eq!((s.wanted, s.nodes, s.ready, s.pending_pods), (3, 2, 1, 1));
        let later = Sample {
            taken_at: now + chrono::Duration::minutes(1),
            ..s
        };
        assert!(!later.differs_from(&s));
        assert!(Sample { ready: 2, ..later }.differs_from(&s));
        assert!(Sample { wanted: 4, ..later }.differs_from(&s));
    }
}
