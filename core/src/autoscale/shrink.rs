//! Which underused node may go, and when (underused: see `usage`). One node goes at a time,
//! and only when:
//! - the cluster is as KQueen asked: no node is still joining or leaving;
//! - every worker node is Ready: while one is not, its pods are moving or about to, and
//!   replacing it is the replace-node operation's job, not a reason to shrink;
//! - it has been underused for the whole delay, no pod on it would be lost (see `pods`),
//!   and its pods fit, first fit, in what the other Ready, uncordoned workers have left.
//!
//! Of the nodes that may go, the least used goes (then by name, so turns agree).

use chrono::Duration;

use super::turn::{count, some_names, span, Decision, Turn, Underused};
use super::usage::{shares, used_permille};
use super::{fit, NodeView};

/// The decision for a turn with no pending pod, the count within the settings' bounds.
pub(super) fn shrink(turn: &Turn<'_>, underused: &Underused) -> Decision {
    let (current, min) = (turn.current, turn.settings.min_nodes);
    let threshold = turn.settings.scale_down_utilisation;
    let workers: Vec<&NodeView> = turn.observed.workers().collect();
    let seen = u32::try_from(workers.len()).unwrap_or(u32::MAX);
    if seen < current {
        return Decision::hold(format!(
            "waiting for the {} asked for to join before removing any",
            count(current - seen, "node")
        ));
    }
    if seen > current {
        return Decision::hold(format!(
            "waiting for {} to leave before removing another",
            count(seen - current, "node")
        ));
    }
    if let Some(down) = workers.iter().find(|n| !n.ready) {
        return Decision::hold(format!(
            "node {} is not Ready: no node is removed until it is Ready again or replaced",
            down.name
        ));
    }
    let mut candidates: Vec<(&NodeView, u64)> = workers
        .iter()
        .filter(|n| underused.contains_key(&n.name))
        .filter_map(|n| used_permille(n).map(|u| (*n, u)))
        .collect();
    candidates.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.name.cmp(&b.0.name)));
    let Some((least, _)) = candidates.first() else {
        return Decision::hold(format!(
            "no pod waits and no node is under {threshold}% used"
        ));
    };
    if current <= min {
        return Decision::hold(format!(
            "node {} is under {threshold}% used, but the cluster is at its minimum of {min}",
            least.name
        ));
    }
    let mut first_obstacle = None;
    for (node, _) in &candidates {
        let since = underused.get(&node.name).copied().unwrap_or(turn.now);
        match obstacle(turn, node, &workers, turn.now - since) {
            Some(why) => {
                first_obstacle.get_or_insert(why);
            }
            None => {
                let to = current - 1;
                let (cpu, memory) = shares(node);
                let pods = match node.movable.len() {
                    0 => "it runs no pods".to_owned(),
                    n => format!("its {} fit on the other nodes", count(n as u64, "pod")),
                };
                return Decision::ScaleDown {
                    node: node.name.clone(),
                    to,
                    reason: format!(
                        "node {} has been under {threshold}% used for {} (CPU {}%, memory {}%) \
                         and {pods}: it is drained and removed ({current} → {to})",
                        node.name,
                        span(turn.now - since),
                        cpu / 10,
                        memory / 10
                    ),
                };
            }
        }
    }
    Decision::hold(first_obstacle.unwrap_or_default())
}

/// Why an underused node may not go yet, if it may not.
fn obstacle(
    turn: &Turn<'_>,
    node: &NodeView,
    workers: &[&NodeView],
    for_: Duration,
) -> Option<String> {
    let threshold = turn.settings.scale_down_utilisation;
    let after = Duration::seconds(i64::from(turn.settings.scale_down_after_secs));
    let name = &node.name;
    if for_ < after {
        return Some(format!(
            "node {name} has been under {threshold}% used for {}: it is removed after {} if it \
             stays so",
            span(for_),
            span(after)
        ));
    }
    if !node.blockers.is_empty() {
        return Some(format!(
            "node {name} is under {threshold}% used, but removing it would lose {}",
            some_names(node.blockers.iter().map(String::as_str))
        ));
    }
    let mut rooms: Vec<_> = workers
        .iter()
        .filter(|w| w.name != node.name && w.takes_pods())
        .map(|w| w.free())
        .collect();
    fit::first_fit(&node.movable, &mut rooms, None)
        .is_none()
        .then(|| {
            format!("node {name} is under {threshold}% used, but its pods fit on no other node")
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autoscale::fixtures::{at, blocked, cordoned, node, not_ready, res, settings, Case};

    #[test]
    fn a_node_goes_only_once_underused_for_the_whole_delay() {
        let case = |now| {
            Case::new(settings(1, 10), vec![node("a", 100, 1), node("b", 3000, 8)])
                .underused("a", 0)
                .at(now)
        };
        assert_eq!(
            case(9).decide(),
            Decision::hold(
                "node a has been under 50% used for 9 min: it is removed after 10 min if it \
                 stays so"
            )
        );
        assert_eq!(
            case(10).decide(),
            Decision::ScaleDown {
                node: "a".into(),
                to: 1,
                reason: "node a has been under 50% used for 10 min (CPU 2%, memory 6%) and its \
                         1 pod fit on the other nodes: it is drained and removed (2 → 1)"
                    .into()
            }
        );
    }

    #[test]
    fn a_node_used_again_starts_its_delay_over() {
        let mut case = Case::new(settings(1, 10), vec![node("a", 100, 1), node("b", 3000, 8)]);
        let turn = |case: &mut Case, minute, load| {
            case.observed.nodes[0].requested = res(load, 1);
            case.now = at(minute);
            let outcome = case.outcome();
            case.underused = outcome.underused;
            outcome.decision
        };
        turn(&mut case, 0, 100);
        assert!(turn(&mut case, 8, 3000).target().is_none());
        assert!(case.underused.is_empty());
        turn(&mut case, 9, 100);
        assert!(turn(&mut case, 18, 100).target().is_none());
        assert_eq!(turn(&mut case, 19, 100).target(), Some(1));
    }

    #[test]
    fn never_below_the_minimum() {
        let nodes = vec![node("a", 0, 0), node("b", 0, 0)];
        let case = Case::new(settings(2, 10), nodes)
            .underused("a", 0)
            .underused("b", 0)
            .at(60);
        assert_eq!(
            case.decide(),
            Decision::hold("node a is under 50% used, but the cluster is at its minimum of 2")
        );
    }

    #[test]
    fn the_least_used_node_that_may_go_goes() {
        let case = |nodes: Vec<NodeView>| {
            let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
            let mut case = Case::new(settings(1, 10), nodes).at(60);
            for n in names {
                case = case.underused(&n, 0);
            }
            case.decide()
        };
        let node_of = |d: Decision| match d {
            Decision::ScaleDown { node, .. } => node,
            other => other.reason().to_owned(),
        };
        let three = || vec![node("a", 1000, 2), node("b", 200, 1), node("c", 600, 1)];
        assert_eq!(node_of(case(three())), "b");
        // The least used would lose a pod: the next one goes.
        let mut nodes = three();
        nodes[1] = blocked(nodes[1].clone(), "debug");
        assert_eq!(node_of(case(nodes)), "c");
        // None may go: the least used one's obstacle is the reason.
        let nodes: Vec<NodeView> = three().into_iter().map(|n| blocked(n, "debug")).collect();
        assert_eq!(
            node_of(case(nodes)),
            "node b is under 50% used, but removing it would lose shop/debug (no controller)"
        );
    }

    #[test]
    fn its_pods_must_fit_on_the_ready_uncordoned_others() {
        // "a" at 40% could only go to "c", which is cordoned; "b" is full.
        let nodes = vec![
            node("a", 1600, 1),
            node("b", 3900, 15),
            cordoned(node("c", 0, 0)),
        ];
        let case = Case::new(settings(1, 10), nodes).underused("a", 0).at(60);
        assert_eq!(
            case.decide(),
            Decision::hold("node a is under 50% used, but its pods fit on no other node")
        );
    }

    #[test]
    fn nothing_goes_while_a_node_is_not_ready_or_the_count_is_moving() {
        let nodes = || vec![node("a", 0, 0), node("b", 0, 0), node("c", 3000, 8)];
        let mut sick = nodes();
        sick[2] = not_ready(sick[2].clone());
        let cases = [
            (
                Case::new(settings(1, 10), sick),
                "node c is not Ready: no node is removed until it is Ready again or replaced",
            ),
            (
                Case::new(settings(1, 10), nodes()).current(4),
                "waiting for the 1 node asked for to join before removing any",
            ),
            (
                Case::new(settings(1, 10), nodes()).current(2),
                "waiting for 1 node to leave before removing another",
            ),
        ];
        for (case, reason) in cases {
            let case = case.underused("a", 0).underused("b", 0).at(60);
            assert_eq!(case.decide(), Decision::hold(reason));
        }
        let busy = Case::new(settings(1, 10), vec![node("a", 3000, 1)]);
        assert_eq!(
            busy.decide(),
            Decision::hold("no pod waits and no node is under 50% used")
        );
    }
}
