//! A cluster above its maximum (the settings were lowered): one node goes per turn, whatever
//! its use, and whatever waits. Which one: a worker that is not Ready first (nothing runs
//! there), then one whose pods would all survive a drain, then the least used, then by name.
//! Its pods find room as the scheduler can: the maximum is the person's word.

use super::turn::{count, some_names, Decision, Turn};
use super::usage::used_permille;

/// The decision when the cluster has more nodes than its maximum (it was lowered): one node
/// goes, whatever its use — one that is not Ready first, then one whose pods would all
/// survive, then the least used.
pub(super) fn above_max(turn: &Turn<'_>) -> Decision {
    let (current, max) = (turn.current, turn.settings.max_nodes);
    let head = format!("the cluster has {current} nodes, above its maximum of {max}");
    let seen = u32::try_from(turn.observed.workers().count()).unwrap_or(u32::MAX);
    if seen > current {
        // The last one removed has not left yet: naming it (or another) again would take
        // one node too many.
        return Decision::hold(format!(
            "{head}: waiting for {} to leave before removing another",
            count(seen - current, "node")
        ));
    }
    let pick = turn.observed.workers().min_by_key(|n| {
        let used = used_permille(n).unwrap_or(u64::MAX);
        (n.ready, !n.blockers.is_empty(), used, n.name.as_str())
    });
    let Some(node) = pick else {
        return Decision::hold(format!("{head}, but none has joined yet to be removed"));
    };
    let to = current - 1;
    let mut reason = format!(
        "{head}: node {} is drained and removed ({current} → {to})",
        node.name
    );
    if !node.ready {
        reason.push_str("; it is not Ready");
    }
    if !node.blockers.is_empty() {
        let lost = some_names(node.blockers.iter().map(String::as_str));
        reason.push_str(&format!("; this loses {lost}"));
    }
    Decision::ScaleDown {
        node: node.name.clone(),
        to,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autoscale::fixtures::{blocked, node, not_ready, settings, Case};
    use crate::autoscale::NodeView;

    #[test]
    fn above_the_maximum_a_node_that_is_not_ready_goes_first_then_one_losing_nothing() {
        let pick = |nodes: Vec<NodeView>| {
            let case = Case::new(settings(1, 2), nodes);
            match case.decide() {
                Decision::ScaleDown { node, to, reason } => (node, to, reason),
                other => panic!("{other:?}"),
            }
        };
        let three = || vec![node("a", 100, 1), node("b", 2000, 4), node("c", 3000, 8)];
        let mut nodes = three();
        nodes[2] = not_ready(nodes[2].clone());
        let (node, to, reason) = pick(nodes);
        assert_eq!((node.as_str(), to), ("c", 2));
        assert!(reason.ends_with("(3 → 2); it is not Ready"), "{reason}");
        let mut nodes = three();
        nodes[0] = blocked(nodes[0].clone(), "debug");
        assert_eq!(pick(nodes).0, "b");
        let nodes: Vec<NodeView> = three().into_iter().map(|n| blocked(n, "x")).collect();
        let (node, _, reason) = pick(nodes);
        assert_eq!(node, "a");
        assert!(
            reason.ends_with("; this loses shop/x (no controller)"),
            "{reason}"
        );
        let leaving = Case::new(settings(1, 1), three()).current(2).decide();
        assert_eq!(
            leaving.reason(),
            "the cluster has 2 nodes, above its maximum of 1: waiting for 1 node to leave \
             before removing another"
        );
        let none = Case::new(settings(1, 2), Vec::new()).current(3);
        assert!(none
            .decide()
            .reason()
            .ends_with("none has joined yet to be removed"));
    }
}
