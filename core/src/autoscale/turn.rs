//! What an autoscaling turn starts from and what it decides, and the words its reasons are
//! made of: shared by the rules (`grow`, `shrink`, `surplus`, `usage`) and `decide`, which
//! orders them.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::{AutoscaleSettings, Observation};

/// Node name → when it was first seen underused, without a break since.
pub type Underused = BTreeMap<String, DateTime<Utc>>;

/// What a turn decides. The reason is a sentence for the cluster's timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Ask the provider for `to` nodes.
    ScaleUp { to: u32, reason: String },
    /// Drain `node`, then ask the provider for `to` nodes (one fewer than now).
    ScaleDown {
        node: String,
        to: u32,
        reason: String,
    },
    /// Change nothing now.
    Hold { reason: String },
}

impl Decision {
    pub fn reason(&self) -> &str {
        match self {
            Self::ScaleUp { reason, .. }
            | Self::ScaleDown { reason, .. }
            | Self::Hold { reason } => reason,
        }
    }

    /// The node count asked for, unless it holds.
    pub fn target(&self) -> Option<u32> {
        match self {
            Self::ScaleUp { to, .. } | Self::ScaleDown { to, .. } => Some(*to),
            Self::Hold { .. } => None,
        }
    }

    pub(super) fn hold(reason: impl Into<String>) -> Self {
        Self::Hold {
            reason: reason.into(),
        }
    }
}

/// What a turn starts from.
#[derive(Debug, Clone, Copy)]
pub struct Turn<'a> {
    pub settings: &'a AutoscaleSettings,
    pub observed: &'a Observation,
    /// The cluster's node count as KQueen knows it (what its provider was last asked for).
    pub current: u32,
    /// Nodes the tenant may still add under its quota ([`super::quota_headroom`]); `None`:
    /// no node quota.
    pub headroom: Option<u32>,
    /// What the previous turn returned (empty the first time).
    pub underused: &'a Underused,
    pub now: DateTime<Utc>,
}

/// A turn's decision, and the "underused since" times to keep for the next turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub decision: Decision,
    pub underused: Underused,
}

/// "1 node", "3 nodes".
pub(super) fn count(n: impl Into<u64>, thing: &str) -> String {
    match n.into() {
        1 => format!("1 {thing}"),
        n => format!("{n} {thing}s"),
    }
}

/// The first three names, then "…": "web-1, web-2, web-3, …".
pub(super) fn some_names<'n>(names: impl IntoIterator<Item = &'n str>) -> String {
    let mut names = names.into_iter();
    let mut shown: Vec<&str> = names.by_ref().take(3).collect();
    if names.next().is_some() {
        shown.push("…");
    }
    shown.join(", ")
}

/// A length of time as a person says it: "45 s", "10 min", "1 h 30 min".
pub(super) fn span(d: chrono::Duration) -> String {
    let secs = d.num_seconds().max(0);
    match (secs / 3600, secs % 3600 / 60) {
        (0, 0) => format!("{secs} s"),
        (0, m) => format!("{m} min"),
        (h, 0) => format!("{h} h"),
        (h, m) => format!("{h} h {m} min"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_for_people() {
        assert_eq!(count(1u32, "node"), "1 node");
        assert_eq!(count(0u32, "pod"), "0 pods");
        assert_eq!(some_names(["a", "b"]), "a, b");
        assert_eq!(some_names(["a", "b", "c", "d"]), "a, b, c, …");
        let span_of = |s| span(chrono::Duration::seconds(s));
        assert_eq!(
            [
                span_of(45),
                span_of(600),
                span_of(3600),
                span_of(5400),
                span_of(-3)
            ],
            ["45 s", "10 min", "1 h", "1 h 30 min", "0 s"]
        );
    }
}
