//! Requests against room, the way the scheduler counts them: a pod fits a node when its CPU
//! and its memory requests both fit what the node has left. Placing many pods is first fit,
//! largest first: close enough to what the scheduler ends up doing to count nodes, and it
//! never finds room that is not there.

use crate::inventory::Resources;

/// Whether `need` fits in `room`.
pub(super) fn fits(need: Resources, room: Resources) -> bool {
    need.cpu_millis <= room.cpu_millis && need.memory_bytes <= room.memory_bytes
}

/// `a` less `b`, none below zero.
pub(super) fn less(a: Resources, b: Resources) -> Resources {
    Resources {
        cpu_millis: a.cpu_millis.saturating_sub(b.cpu_millis),
        memory_bytes: a.memory_bytes.saturating_sub(b.memory_bytes),
    }
}

/// Places every request, largest first (by CPU, then memory), in the first of `rooms` it
/// fits, taking what it uses from that room. A request that fits none opens a new room of
/// size `fresh` at the end, when one is given. Returns how many rooms were opened, or `None`
/// when a request fits nowhere (callers leave out what is larger than `fresh` beforehand).
pub(super) fn first_fit(
    requests: &[Resources],
    rooms: &mut Vec<Resources>,
    fresh: Option<Resources>,
) -> Option<u32> {
    let mut sorted = requests.to_vec();
    sorted.sort_by_key(|r| std::cmp::Reverse((r.cpu_millis, r.memory_bytes)));
    let mut opened = 0;
    for need in sorted {
        let room = match rooms.iter_mut().find(|r| fits(need, **r)) {
            Some(room) => room,
            None => {
                let fresh = fresh.filter(|f| fits(need, *f))?;
                opened += 1;
                rooms.push(fresh);
                rooms.last_mut()?
            }
        };
        *room = less(*room, need);
    }
    Some(opened)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(cpu_millis: u64, gib: u64) -> Resources {
        Resources {
            cpu_millis,
            memory_bytes: gib << 30,
        }
    }

    #[test]
    fn both_cpu_and_memory_must_fit() {
        assert!(fits(r(1000, 1), r(1000, 1)));
        assert!(!fits(r(1001, 1), r(1000, 4)));
        assert!(!fits(r(500, 5), r(1000, 4)));
        assert_eq!(less(r(500, 1), r(1000, 0)), r(0, 1));
    }

    #[test]
    fn new_rooms_are_opened_only_when_nothing_has_room() {
        // Four 4-core nodes' worth of pods, largest first: 3+1, 3+1, 2+2 → three rooms.
        let pods = [
            r(1000, 1),
            r(3000, 1),
            r(2000, 1),
            r(3000, 1),
            r(1000, 1),
            r(2000, 1),
        ];
        let mut rooms = Vec::new();
        assert_eq!(first_fit(&pods, &mut rooms, Some(r(4000, 16))), Some(3));
        assert_eq!(rooms, [r(0, 14), r(0, 14), r(0, 14)]);
    }

    #[test]
    fn existing_rooms_are_used_first() {
        let mut rooms = vec![r(2000, 2), r(1000, 8)];
        let pods = [r(1000, 4), r(2000, 1), r(500, 1)];
        assert_eq!(first_fit(&pods, &mut rooms, Some(r(4000, 16))), Some(1));
        // 2 cores → the first room, 1 core → the second; half a core fits neither any more.
        assert_eq!(rooms, [r(0, 1), r(0, 4), r(3500, 15)]);
    }

    #[test]
    fn without_fresh_rooms_everything_must_fit_where_it_is() {
        let mut rooms = vec![r(1000, 4), r(1000, 4)];
        assert_eq!(
            first_fit(&[r(1000, 2), r(1000, 2)], &mut rooms, None),
            Some(0)
        );
        let mut rooms = vec![r(1000, 4), r(1000, 4)];
        assert_eq!(first_fit(&[r(1500, 1)], &mut rooms, None), None);
        assert_eq!(first_fit(&[], &mut Vec::new(), None), Some(0));
    }

    #[test]
    fn a_request_larger_than_a_fresh_room_fits_nowhere() {
        let mut rooms = Vec::new();
        assert_eq!(
            first_fit(&[r(8000, 1)], &mut rooms, Some(r(4000, 16))),
            None
        );
    }
}
