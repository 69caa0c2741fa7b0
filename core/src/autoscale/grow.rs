//! How many nodes the pods the scheduler could not place need.
//!
//! A new node is taken to be like the largest worker node there is (most allocatable CPU,
//! then memory), less what its DaemonSets request: that is what the provider adds when it
//! scales one pool. A pod larger than that fits no new node either, so it never makes the
//! cluster grow (more nodes would not help it; it waits, and the reason says so). The others
//! are placed first fit, largest first: first in the nodes still joining (so a turn during a
//! scale-up does not ask again), then in as many new nodes as it takes. The free room of the
//! existing nodes is not counted: the scheduler has just said the pods do not fit there.
//!
//! Nodes still joining are those asked for that have no Node object yet, and workers that
//! are not Ready yet but were created less than [`JOINING`] ago. An older node that is not
//! Ready is taken as broken: it holds nothing (replacing it is the replace-node operation's
//! job), so pods waiting because of it make the cluster grow, within its maximum.

use chrono::Duration;

use super::turn::{count, some_names, Decision, Turn};
use super::{fit, PendingPod};
use crate::inventory::Resources;

/// How long a new node may take to become Ready before it is taken as broken (the cluster
/// autoscaler allows 15 minutes for the machine and the node together; the machine is
/// already there once its Node object is).
pub const JOINING: Duration = Duration::minutes(10);

/// The decision for a turn with pending pods, the count within the settings' bounds.
pub(super) fn grow(turn: &Turn<'_>) -> Decision {
    let (current, max) = (turn.current, turn.settings.max_nodes);
    let pending = &turn.observed.pending;
    let workers = u32::try_from(turn.observed.workers().count()).unwrap_or(u32::MAX);
    let starting = turn
        .observed
        .workers()
        .filter(|n| !n.ready && n.created.is_some_and(|t| turn.now - t < JOINING))
        .count();
    let starting = u32::try_from(starting).unwrap_or(u32::MAX);
    let joining = current.saturating_sub(workers).saturating_add(starting);
    let Some(fresh) = new_node(turn) else {
        return Decision::hold(format!(
            "{}, but no worker node has joined yet to show how much a new one holds",
            waiting(&pending.iter().collect::<Vec<_>>())
        ));
    };
    let (fitting, too_big): (Vec<&PendingPod>, Vec<&PendingPod>) =
        pending.iter().partition(|p| fit::fits(p.requests, fresh));
    if fitting.is_empty() {
        let (they, are) = if too_big.len() == 1 {
            ("it", "is")
        } else {
            ("they", "are")
        };
        return Decision::hold(format!(
            "{}: {they} {are} larger than an empty node, so more nodes would not help",
            waiting(&too_big)
        ));
    }
    let big = match too_big.len() {
        0 => String::new(),
        n => format!(
            "; {} {} larger than an empty node: more nodes would not help {}",
            some_names(too_big.iter().map(|p| p.name.as_str())),
            if n == 1 { "is" } else { "are" },
            if n == 1 { "it" } else { "them" },
        ),
    };
    let head = waiting(&fitting);
    let requests: Vec<Resources> = fitting.iter().map(|p| p.requests).collect();
    let mut rooms = vec![fresh; usize::try_from(joining).unwrap_or(usize::MAX).min(1000)];
    let needed = fit::first_fit(&requests, &mut rooms, Some(fresh)).unwrap_or(0);
    if needed == 0 {
        return Decision::hold(format!(
            "{head}: waiting for the {} still joining{big}",
            count(joining, "node")
        ));
    }
    let want = current.saturating_add(needed);
    let quota = turn
        .headroom
        .map_or(u32::MAX, |h| current.saturating_add(h));
    let to = want.min(max).min(quota);
    let more = count(needed, "more node");
    if to <= current {
        let why = if current >= max {
            format!("the cluster is at its maximum of {max}")
        } else {
            "the tenant's node quota allows no more nodes".to_owned()
        };
        return Decision::hold(format!("{head}: {more} needed, but {why}{big}"));
    }
    let cap = match to < want {
        false => String::new(),
        true if quota < max => {
            format!(", as many as the tenant's node quota allows ({more} needed)")
        }
        true => format!(", capped at the maximum of {max} ({more} needed)"),
    };
    let besides = match joining {
        0 => String::new(),
        n => format!(" besides the {} still joining", count(n, "node")),
    };
    Decision::ScaleUp {
        to,
        reason: format!(
            "{head}: {}{besides} ({current} → {to}){cap}{big}",
            count(to - current, "more node")
        ),
    }
}

/// A new node's room: the largest worker's allocatable less its DaemonSets' requests.
fn new_node(turn: &Turn<'_>) -> Option<Resources> {
    turn.observed
        .workers()
        .filter(|n| n.allocatable.cpu_millis > 0 && n.allocatable.memory_bytes > 0)
        .max_by_key(|n| (n.allocatable.cpu_millis, n.allocatable.memory_bytes))
        .map(|n| fit::less(n.allocatable, n.daemon))
}

/// "3 pods cannot be scheduled (web-1, web-2, web-3)".
fn waiting(pods: &[&PendingPod]) -> String {
    format!(
        "{} cannot be scheduled ({})",
        count(u64::try_from(pods.len()).unwrap_or(u64::MAX), "pod"),
        some_names(pods.iter().map(|p| p.name.as_str()))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autoscale::fixtures::{at, node, pending, res, settings, Case};
    use crate::autoscale::NodeView;

    /// Three busy 4-core nodes.
    fn busy() -> Vec<NodeView> {
        vec![node("a", 3500, 8), node("b", 3500, 8), node("c", 3500, 8)]
    }

    fn pods(n: usize, cpu_millis: u64, gib: u64) -> Vec<PendingPod> {
        (1..=n)
            .map(|i| pending(&format!("web-{i}"), cpu_millis, gib))
            .collect()
    }

    #[test]
    fn enough_nodes_for_the_pending_pods_within_max_and_quota() {
        // (pending pods, max, quota headroom, node count asked for or None: hold)
        let cases = [
            (pods(1, 500, 1), 10, None, Some(4)),
            // Four 1-core pods per new node.
            (pods(6, 1000, 1), 10, None, Some(5)),
            // Memory decides as much as CPU: two 7 GiB pods per 16 GiB node.
            (pods(5, 100, 7), 10, None, Some(6)),
            (pods(3, 3000, 1), 10, None, Some(6)),
            (pods(3, 3000, 1), 4, None, Some(4)),
            (pods(3, 3000, 1), 10, Some(2), Some(5)),
            (pods(3, 3000, 1), 10, Some(9), Some(6)),
            (pods(3, 3000, 1), 3, None, None),
            (pods(3, 3000, 1), 10, Some(0), None),
            // Pods requesting nothing (held back by something else) still need a node.
            (pods(2, 0, 0), 10, None, Some(4)),
        ];
        for (pending, max, headroom, target) in cases {
            let mut case = Case::new(settings(1, max), busy()).pending(pending.clone());
            case.headroom = headroom;
            let d = case.decide();
            assert_eq!(
                d.target(),
                target,
                "{pending:?} max {max} quota {headroom:?}: {d:?}"
            );
            if let Some(to) = target {
                assert!(
                    to <= max && to <= headroom.map_or(u32::MAX, |h| 3 + h),
                    "{d:?}"
                );
            }
        }
    }

    #[test]
    fn the_reason_names_the_pods_and_the_cap() {
        let case = Case::new(settings(1, 5), busy()).pending(pods(4, 3000, 1));
        assert_eq!(
            case.decide(),
            Decision::ScaleUp {
                to: 5,
                reason: "4 pods cannot be scheduled (web-1, web-2, web-3, …): 2 more nodes \
                         (3 → 5), capped at the maximum of 5 (4 more nodes needed)"
                    .into()
            }
        );
        let quota = Case::new(settings(1, 10), busy())
            .pending(pods(1, 3000, 1))
            .headroom(0);
        assert_eq!(
            quota.decide().reason(),
            "1 pod cannot be scheduled (web-1): 1 more node needed, but the tenant's node \
             quota allows no more nodes"
        );
        let at_max = Case::new(settings(1, 3), busy()).pending(pods(1, 3000, 1));
        assert!(at_max
            .decide()
            .reason()
            .ends_with("but the cluster is at its maximum of 3"));
        let by_quota = Case::new(settings(1, 10), busy())
            .pending(pods(3, 3000, 1))
            .headroom(1);
        assert!(by_quota
            .decide()
            .reason()
            .ends_with("as many as the tenant's node quota allows (3 more nodes needed)"));
    }

    #[test]
    fn a_pod_larger_than_any_node_never_makes_the_cluster_grow() {
        let huge = pending("huge-0", 16_000, 1);
        let alone = Case::new(settings(1, 10), busy()).pending(vec![huge.clone()]);
        assert_eq!(
            alone.decide(),
            Decision::hold(
                "1 pod cannot be scheduled (huge-0): it is larger than an empty node, so more \
                 nodes would not help"
            )
        );
        // With others, only they count.
        let mixed = Case::new(settings(1, 10), busy()).pending(vec![
            huge,
            pending("web-1", 1000, 1),
            pending("big", 100, 32),
        ]);
        let d = mixed.decide();
        assert_eq!(d.target(), Some(4));
        assert!(
            d.reason().ends_with(
                "; huge-0, big are larger than an empty node: more nodes would not help them"
            ),
            "{d:?}"
        );
    }

    #[test]
    fn a_new_node_is_the_largest_worker_less_its_daemonsets() {
        let mut nodes = busy();
        nodes[1].allocatable = res(8000, 32);
        nodes[1].daemon = res(1000, 1);
        // A control-plane node, however big, is not what the provider adds.
        let mut cp = node("cp", 0, 0);
        cp.control_plane = true;
        cp.allocatable = res(64_000, 256);
        nodes.push(cp);
        let case = |cpu| Case::new(settings(1, 10), nodes.clone()).pending(pods(1, cpu, 1));
        assert_eq!(case(7000).decide().target(), Some(4));
        assert_eq!(case(7001).decide().target(), None);
    }

    #[test]
    fn nodes_still_joining_take_pending_pods_first() {
        // Five nodes asked for, three joined: two 4-core nodes are on their way.
        let case = |n| {
            Case::new(settings(1, 10), busy())
                .current(5)
                .pending(pods(n, 2000, 1))
        };
        assert_eq!(
            case(4).decide(),
            Decision::hold(
                "4 pods cannot be scheduled (web-1, web-2, web-3, …): waiting for the 2 nodes \
                 still joining"
            )
        );
        let more = case(5).decide();
        assert_eq!(more.target(), Some(6));
        assert!(more
            .reason()
            .contains("1 more node besides the 2 nodes still joining (5 → 6)"));
    }

    #[test]
    fn a_node_not_ready_is_joining_for_ten_minutes_then_broken() {
        let case = |created: Option<i64>| {
            let mut nodes = busy();
            nodes.push(node("d", 0, 0));
            nodes[3].ready = false;
            nodes[3].created = created.map(at);
            Case::new(settings(1, 10), nodes)
                .pending(pods(1, 2000, 1))
                .at(20)
        };
        let joining = case(Some(11)).decide();
        assert!(
            joining
                .reason()
                .ends_with("waiting for the 1 node still joining"),
            "{joining:?}"
        );
        // Created ten minutes ago, or at an unknown time, and still not Ready: broken, the
        // pod needs a new node.
        assert_eq!(case(Some(10)).decide().target(), Some(5));
        assert_eq!(case(None).decide().target(), Some(5));
    }

    #[test]
    fn without_a_worker_node_there_is_nothing_to_size_a_new_one_on() {
        let case = Case::new(settings(1, 10), Vec::new())
            .current(2)
            .pending(pods(1, 100, 1));
        assert!(case
            .decide()
            .reason()
            .ends_with("no worker node has joined yet to show how much a new one holds"));
    }
}
