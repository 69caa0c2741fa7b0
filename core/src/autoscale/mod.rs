//! Autoscaling of one cluster's worker nodes between a minimum and a maximum, the domain's
//! part only: what a turn decides from what the cluster shows, without reading or writing
//! anything. Pods the scheduler marks Unschedulable make the cluster grow (through the
//! ordinary scale operation, so providers that can `scale`); a node whose pods request less
//! than a threshold of it for long enough is drained and removed, one at a time. The node
//! count never goes below the minimum, above the maximum or past the tenant's node quota, and
//! every decision carries a sentence saying why, for the cluster's timeline.
//!
//! - [`observe`](mod@observe): the cluster's nodes and pods, reduced to what a turn needs;
//! - [`decide`](mod@decide): one turn's decision, in the order of its rules;
//! - `pods`: which pods count, and which would be lost by a drain;
//! - `grow`: how many nodes pending pods need;
//! - `usage` and `shrink`: which nodes are underused, and which of them may go;
//! - `surplus`: which node goes when the cluster is above its maximum;
//! - `fit`: requests against free room (first fit, largest first);
//! - `turn`: what a turn starts from and decides, and the words of its reasons;
//! - `record`: what is kept between turns, node counts over time, and which decisions are news.
//!
//! Nodes that are not Ready: one created less than ten minutes ago is still joining (the
//! pods it will take do not ask for another node); an older one is broken and holds
//! nothing, so pods waiting because of it make the cluster grow, within its maximum. While
//! any worker is not Ready, no node is removed for being underused (its pods are moving, and
//! replacing it is the replace-node operation's job); above the maximum, it is the first to
//! go. Control-plane nodes are not counted, never removed, and never take moved pods.
//!
//! The driver (turns on one replica at a time, reading the cluster, queueing the scale whose
//! operation drains the chosen node, keeping what a turn leaves for the next, writing
//! decisions on the timeline) is the service's (`service::autoscaling`).

pub mod decide;
mod fit;
#[cfg(test)]
mod fixtures;
mod grow;
pub mod observe;
mod pods;
mod record;
mod shrink;
mod surplus;
mod turn;
mod usage;

use std::ops::RangeInclusive;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cluster::{Quota, Usage};
use crate::ValidationError;

pub use decide::{decide, Decision, Outcome, Turn, Underused};
pub use observe::{observe, NodeView, Observation, PendingPod};
pub use record::{is_news, Autoscaling, Sample, HISTORY_DAYS};

/// Node counts a cluster may be kept between (the scale use case's bounds).
pub const NODES: RangeInclusive<u32> = 1..=1000;
/// The utilisation threshold, in percent of a node's allocatable CPU and memory.
pub const UTILISATION: RangeInclusive<u8> = 1..=100;
/// How long a node stays underused before it is removed, in seconds: a minute to a day.
pub const SCALE_DOWN_AFTER_SECS: RangeInclusive<u32> = 60..=86_400;

/// How one cluster is autoscaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutoscaleSettings {
    pub min_nodes: u32,
    pub max_nodes: u32,
    /// A node is underused when the pods on it (DaemonSets aside) request less than this
    /// percentage of both its allocatable CPU and its allocatable memory.
    pub scale_down_utilisation: u8,
    /// How long a node must stay underused before it is removed: short dips of load must not
    /// make nodes come and go.
    pub scale_down_after_secs: u32,
}

impl Default for AutoscaleSettings {
    /// One to ten nodes; a node under half used for ten minutes goes (the values the
    /// Kubernetes cluster autoscaler starts with).
    fn default() -> Self {
        Self {
            min_nodes: 1,
            max_nodes: 10,
            scale_down_utilisation: 50,
            scale_down_after_secs: 600,
        }
    }
}

impl AutoscaleSettings {
    /// Checks the figures a person typed; the error names the field to show it at.
    pub fn check(&self) -> Result<(), ValidationError> {
        let between = |field, range: &RangeInclusive<u32>, unit: &str| {
            ValidationError::new(
                field,
                format!(
                    "must be between {} and {}{unit}",
                    range.start(),
                    range.end()
                ),
            )
        };
        if !NODES.contains(&self.min_nodes) {
            return Err(between("min_nodes", &NODES, ""));
        }
        if !NODES.contains(&self.max_nodes) {
            return Err(between("max_nodes", &NODES, ""));
        }
        if self.max_nodes < self.min_nodes {
            return Err(ValidationError::new(
                "max_nodes",
                format!("must be at least the minimum ({})", self.min_nodes),
            ));
        }
        if !UTILISATION.contains(&self.scale_down_utilisation) {
            return Err(ValidationError::new(
                "scale_down_utilisation",
                "must be a percentage between 1 and 100",
            ));
        }
        if !SCALE_DOWN_AFTER_SECS.contains(&self.scale_down_after_secs) {
            return Err(between(
                "scale_down_after_secs",
                &SCALE_DOWN_AFTER_SECS,
                " seconds (a minute to a day)",
            ));
        }
        Ok(())
    }

    /// How long a node must stay underused before it is removed.
    pub fn scale_down_after(&self) -> Duration {
        Duration::from_secs(u64::from(self.scale_down_after_secs))
    }
}

/// The nodes a tenant may still add under its quota; `None` when it has no node quota.
pub fn quota_headroom(quota: &Quota, usage: Usage) -> Option<u32> {
    quota.max_nodes.map(|max| max.saturating_sub(usage.nodes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(f: impl FnOnce(&mut AutoscaleSettings)) -> Result<(), ValidationError> {
        let mut s = AutoscaleSettings::default();
        f(&mut s);
        s.check()
    }

    #[test]
    fn the_defaults_are_valid() {
        let s = AutoscaleSettings::default();
        assert_eq!(s.check(), Ok(()));
        assert_eq!(s.scale_down_after(), Duration::from_secs(600));
    }

    #[test]
    fn each_figure_is_checked_and_named() {
        type Change = fn(&mut AutoscaleSettings);
        let cases: [(Change, &str, &str); 8] = [
            (|s| s.min_nodes = 0, "min_nodes", "between 1 and 1000"),
            (|s| s.max_nodes = 1001, "max_nodes", "between 1 and 1000"),
            (|s| s.max_nodes = 0, "max_nodes", "between 1 and 1000"),
            (
                |s| (s.min_nodes, s.max_nodes) = (5, 4),
                "max_nodes",
                "at least the minimum (5)",
            ),
            (
                |s| s.scale_down_utilisation = 0,
                "scale_down_utilisation",
                "1 and 100",
            ),
            (
                |s| s.scale_down_utilisation = 101,
                "scale_down_utilisation",
                "1 and 100",
            ),
            (
                |s| s.scale_down_after_secs = 59,
                "scale_down_after_secs",
                "60 and 86400",
            ),
            (
                |s| s.scale_down_after_secs = 86_401,
                "scale_down_after_secs",
                "a day",
            ),
        ];
        for (change, field, words) in cases {
            let err = with(change).err();
            assert_eq!(err.as_ref().map(|e| e.field), Some(field), "{err:?}");
            assert!(err.is_some_and(|e| e.message.contains(words)), "{field}");
        }
    }

    #[test]
    fn the_bounds_themselves_are_accepted() {
        let cases: [fn(&mut AutoscaleSettings); 4] = [
            |s| (s.min_nodes, s.max_nodes) = (1000, 1000),
            |s| (s.min_nodes, s.max_nodes) = (3, 3),
            |s| (s.scale_down_utilisation, s.scale_down_after_secs) = (100, 60),
            |s| (s.scale_down_utilisation, s.scale_down_after_secs) = (1, 86_400),
        ];
        for change in cases {
            assert_eq!(with(change), Ok(()));
        }
    }

    #[test]
    fn headroom_is_what_the_quota_leaves() {
        let quota = |max_nodes| Quota {
            max_nodes,
            ..Quota::default()
        };
        let used = |nodes| Usage {
            nodes,
            ..Usage::default()
        };
        assert_eq!(quota_headroom(&quota(None), used(40)), None);
        assert_eq!(quota_headroom(&quota(Some(10)), used(7)), Some(3));
        // Over quota already (lowered since): no room, not an underflow.
        assert_eq!(quota_headroom(&quota(Some(10)), used(12)), Some(0));
    }
}
