//! One autoscaling turn: from the settings, what the cluster shows and what KQueen knows,
//! the one thing to do now. The rules, in order:
//!
//! 1. below the minimum: grow to it (as far as the tenant's quota allows);
//! 2. above the maximum: remove one node (the settings were lowered);
//! 3. pods the scheduler cannot place: grow by the nodes they need (`grow`);
//! 4. otherwise: remove one node underused for long enough, if any may go (`shrink`).
//!
//! A decision changes the node count by what it says, removing at most one node; the next
//! turn sees the result. "Underused since" times are kept by the caller between turns: each
//! turn takes them and returns them updated.

use super::turn::count;
pub use super::turn::{Decision, Outcome, Turn, Underused};
use super::{grow, shrink, surplus, usage};

/// Decides one turn (see the module's rules).
pub fn decide(turn: &Turn<'_>) -> Outcome {
    let underused = usage::track(turn);
    let decision = if turn.current < turn.settings.min_nodes {
        below_min(turn)
    } else if turn.current > turn.settings.max_nodes {
        surplus::above_max(turn)
    } else if !turn.observed.pending.is_empty() {
        grow::grow(turn)
    } else {
        shrink::shrink(turn, &underused)
    };
    Outcome {
        decision,
        underused,
    }
}

fn below_min(turn: &Turn<'_>) -> Decision {
    let (current, min) = (turn.current, turn.settings.min_nodes);
    let allowed = turn
        .headroom
        .map_or(min, |h| min.min(current.saturating_add(h)));
    let head = format!(
        "the cluster has {}, below its minimum of {min}",
        count(current, "node")
    );
    if allowed <= current {
        return Decision::hold(format!(
            "{head}, but the tenant's node quota allows no more nodes"
        ));
    }
    let quota = if allowed < min {
        ", as many as the tenant's node quota allows"
    } else {
        ""
    };
    Decision::ScaleUp {
        to: allowed,
        reason: format!(
            "{head}: {} ({current} → {allowed}){quota}",
            count(allowed - current, "more node")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autoscale::fixtures::{node, pending, settings, Case};

    fn up(to: u32) -> Option<u32> {
        Some(to)
    }

    #[test]
    fn below_the_minimum_it_grows_to_it_as_far_as_the_quota_allows() {
        // (current, headroom, target, words)
        let cases = [
            (
                1,
                None,
                up(3),
                "the cluster has 1 node, below its minimum of 3: 2 more nodes (1 → 3)",
            ),
            (
                2,
                Some(5),
                up(3),
                "the cluster has 2 nodes, below its minimum of 3: 1 more node (2 → 3)",
            ),
            (
                1,
                Some(1),
                up(2),
                "(1 → 2), as many as the tenant's node quota allows",
            ),
            (
                1,
                Some(0),
                None,
                "below its minimum of 3, but the tenant's node quota allows no more",
            ),
        ];
        for (current, headroom, target, words) in cases {
            let mut case = Case::new(settings(3, 5), vec![node("a", 0, 0)]).current(current);
            case.headroom = headroom;
            let d = case.decide();
            assert_eq!(d.target(), target, "{d:?}");
            assert!(d.reason().contains(words), "{d:?}");
        }
    }

    #[test]
    fn above_the_maximum_one_node_goes_per_turn_whatever_waits() {
        let nodes = vec![node("a", 3000, 1), node("b", 100, 1), node("c", 2000, 1)];
        let case = Case::new(settings(1, 2), nodes).pending(vec![pending("web-1", 500, 1)]);
        assert_eq!(
            case.decide(),
            Decision::ScaleDown {
                node: "b".into(),
                to: 2,
                reason: "the cluster has 3 nodes, above its maximum of 2: node b is drained \
                         and removed (3 → 2)"
                    .into()
            }
        );
    }

    #[test]
    fn pending_pods_come_before_any_removal() {
        // "a" has been idle long enough to go, but a pod waits: the cluster grows instead.
        let nodes = vec![node("a", 0, 0), node("b", 3500, 1)];
        let case = Case::new(settings(1, 5), nodes)
            .pending(vec![pending("web-1", 3000, 1)])
            .underused("a", 0)
            .at(60);
        assert_eq!(case.decide().target(), Some(3));
        // The idle node's time is kept meanwhile.
        assert_eq!(
            case.outcome().underused.get("a"),
            Some(&crate::autoscale::fixtures::at(0))
        );
    }

    #[test]
    fn over_turns_idle_nodes_go_one_at_a_time_after_the_delay() {
        let nodes = vec![node("a", 500, 1), node("b", 200, 1), node("c", 1000, 2)];
        let mut case = Case::new(settings(1, 5), nodes);
        let mut removed = Vec::new();
        for minute in 0..40 {
            case = case.at(minute);
            let outcome = case.outcome();
            case.underused = outcome.underused;
            if let Decision::ScaleDown { node, to, .. } = outcome.decision {
                // The driver drains it: its pod moves to the first node left.
                let gone = case.observed.nodes.iter().position(|n| n.name == node);
                let gone = gone.map(|i| case.observed.nodes.remove(i));
                let first = &mut case.observed.nodes[0];
                for pod in gone.map(|n| n.movable).unwrap_or_default() {
                    first.requested.add(pod);
                    first.movable.push(pod);
                }
                assert_eq!(to as usize, case.observed.nodes.len());
                removed.push((minute, node));
            }
        }
        // The least used first, once ten minutes are up; the next one turn later (underused
        // all along, its pods fit on the last); then the minimum of 1 keeps the last.
        assert_eq!(removed, [(10, "b".to_owned()), (11, "a".to_owned())]);
        assert_eq!(case.observed.nodes.len(), 1);
    }

    #[test]
    fn a_decision_says_its_reason_and_target() {
        let hold = Decision::hold("nothing to do");
        assert_eq!((hold.reason(), hold.target()), ("nothing to do", None));
        let down = Decision::ScaleDown {
            node: "a".into(),
            to: 2,
            reason: "idle".into(),
        };
        assert_eq!((down.reason(), down.target()), ("idle", Some(2)));
    }
}
