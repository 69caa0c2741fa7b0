//! How much of a node its workload pods request, and since when a node is underused: below
//! the threshold of both its allocatable CPU and memory. The time is remembered from turn
//! to turn, and forgotten as soon as the node is used again, cordoned, or not Ready (a node
//! that comes back starts its delay over). A node whose allocatable is unknown is never
//! underused: nothing says it is idle.

use super::turn::{Turn, Underused};
use super::NodeView;

/// The "underused since" times after this turn: kept for nodes still underused, started
/// now for newly underused ones, dropped for the rest.
pub(super) fn track(turn: &Turn<'_>) -> Underused {
    let limit = u64::from(turn.settings.scale_down_utilisation) * 10;
    turn.observed
        .workers()
        .filter(|n| n.takes_pods() && used_permille(n).is_some_and(|u| u < limit))
        .map(|n| {
            let since = turn.underused.get(&n.name).copied().unwrap_or(turn.now);
            (n.name.clone(), since.min(turn.now))
        })
        .collect()
}

/// The larger of its CPU and memory shares, in thousandths; none when its allocatable is
/// unknown.
pub(super) fn used_permille(node: &NodeView) -> Option<u64> {
    let a = node.allocatable;
    (a.cpu_millis > 0 && a.memory_bytes > 0).then(|| {
        let (cpu, memory) = shares(node);
        cpu.max(memory)
    })
}

/// Its CPU and memory requested, in thousandths of its allocatable.
pub(super) fn shares(node: &NodeView) -> (u64, u64) {
    let share = |used: u64, of: u64| {
        let s = u128::from(used) * 1000 / u128::from(of.max(1));
        u64::try_from(s).unwrap_or(u64::MAX)
    };
    let (r, a) = (node.requested, node.allocatable);
    (
        share(r.cpu_millis, a.cpu_millis),
        share(r.memory_bytes, a.memory_bytes),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autoscale::fixtures::{at, cordoned, node, not_ready, res, settings, Case};

    #[test]
    fn underused_times_start_stay_and_reset() {
        let mut cp = node("cp", 0, 0);
        cp.control_plane = true;
        let mut unknown = node("unknown", 0, 0);
        unknown.allocatable = res(0, 16);
        let nodes = vec![
            node("idle", 1000, 4),
            node("kept", 0, 0),
            // Exactly half is not under half; a little less is.
            node("half", 2000, 1),
            node("almost", 1999, 1),
            node("memory", 100, 9),
            cordoned(node("cordoned", 0, 0)),
            not_ready(node("down", 0, 0)),
            cp,
            unknown,
        ];
        let mut case = Case::new(settings(1, 10), nodes).at(20);
        for name in ["kept", "half", "cordoned", "down", "gone"] {
            case = case.underused(name, 3);
        }
        let kept: Vec<_> = case.outcome().underused.into_iter().collect();
        assert_eq!(
            kept,
            [
                ("almost".to_owned(), at(20)),
                ("idle".to_owned(), at(20)),
                ("kept".to_owned(), at(3)),
            ]
        );
    }

    #[test]
    fn shares_are_thousandths_of_the_allocatable() {
        let n = node("a", 1000, 2);
        assert_eq!(shares(&n), (250, 125));
        assert_eq!(used_permille(&n), Some(250));
        let mut unknown = n.clone();
        unknown.allocatable = res(4000, 0);
        assert_eq!(used_permille(&unknown), None);
    }
}
