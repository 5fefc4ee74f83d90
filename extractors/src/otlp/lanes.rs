//! Lanes: laying one process's spans out on tracks where they nest.
//!
//! Spans are not thread slices: concurrent children of one parent overlap,
//! and an async child may outlive its parent. Nesting by time on one track
//! would invent parents. So each process's spans are laid out on lanes, in
//! start order (parents before children at equal starts): a span goes on
//! its parent's lane when the parent is that lane's innermost open span
//! and contains it, else it starts the lowest free lane (one whose spans
//! have all ended). On every lane, spans then nest exactly as their parent
//! ids say, and a span's self time is its time less its children on its
//! lane; a child on another lane ran concurrently and is not subtracted.
//! Lanes are reused, so their number is the peak concurrency, not the
//! number of traces.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One span as the layout sees it.
#[derive(Debug, Clone, Copy)]
pub struct Interval {
    pub start: i64,
    pub end: i64,
    /// Index of the parent span in the same list, when it is there.
    pub parent: Option<usize>,
    /// Depth along the parent chain (0 for roots): breaks start ties.
    pub depth: u32,
}

/// The order spans are laid out (and numbered) in: start, longer first,
/// shallower first, then input order.
pub fn layout_order(spans: &[Interval]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by_key(|&i| {
        let s = &spans[i];
        (s.start, Reverse(s.end), s.depth, i)
    });
    order
}

/// The lane of every span (indexed like `spans`) and the number of lanes.
pub fn assign_lanes(spans: &[Interval], order: &[usize]) -> (Vec<u32>, u32) {
    let mut lane_of = vec![u32::MAX; spans.len()];
    // Each lane's open spans, innermost last.
    let mut stacks: Vec<Vec<usize>> = Vec::new();
    // Busy lanes by the end of their outermost open span.
    let mut busy: BinaryHeap<Reverse<(i64, u32)>> = BinaryHeap::new();
    let mut free: BinaryHeap<Reverse<u32>> = BinaryHeap::new();
    for &i in order {
        let s = spans[i];
        while let Some(&Reverse((end, lane))) = busy.peek() {
            if end > s.start {
                break;
            }
            busy.pop();
            let stack = &mut stacks[lane as usize];
            // A lane may be pushed again after a new outermost span began
            // on it; only the entry for its current outermost span frees it.
            if stack.first().is_some_and(|&o| spans[o].end == end) {
                stack.clear();
                free.push(Reverse(lane));
            }
        }
        let on_parent_lane = s.parent.and_then(|p| {
            let lane = lane_of[p];
            let stack = stacks.get_mut(lane as usize)?;
            while stack.last().is_some_and(|&k| spans[k].end <= s.start) {
                stack.pop();
            }
            (stack.last() == Some(&p) && spans[p].end >= s.end).then_some(lane)
        });
        let lane = match on_parent_lane {
            Some(lane) => lane,
            None => {
                let lane = match free.pop() {
                    Some(Reverse(lane)) => lane,
                    None => {
                        stacks.push(Vec::new());
                        (stacks.len() - 1) as u32
                    }
                };
                busy.push(Reverse((s.end, lane)));
                lane
            }
        };
        stacks[lane as usize].push(i);
        lane_of[i] = lane;
    }
    (lane_of, stacks.len() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(start: i64, end: i64, parent: Option<usize>, depth: u32) -> Interval {
        Interval {
            start,
            end,
            parent,
            depth,
        }
    }

    fn lanes(spans: &[Interval]) -> (Vec<u32>, u32) {
        assign_lanes(spans, &layout_order(spans))
    }

    #[test]
    fn sequential_children_share_their_parents_lane() {
        let spans = [
            iv(0, 100, None, 0),
            iv(10, 40, Some(0), 1),
            iv(50, 90, Some(0), 1),
            iv(60, 70, Some(2), 2),
        ];
        assert_eq!(lanes(&spans), (vec![0, 0, 0, 0], 1));
    }

    #[test]
    fn concurrent_children_and_outliving_children_get_their_own_lanes() {
        let spans = [
            iv(0, 100, None, 0),
            iv(10, 60, Some(0), 1),
            // Overlaps its sibling: a second lane.
            iv(20, 50, Some(0), 1),
            // Outlives its parent: a lane of its own too.
            iv(90, 150, Some(0), 1),
            // Starts when lane 1 is free again: reused.
            iv(55, 80, Some(0), 1),
        ];
        let (lane, count) = lanes(&spans);
        assert_eq!(lane[0], 0);
        assert_eq!(lane[1], 0);
        assert_eq!(lane[2], 1);
        // Sibling 1 ended at 60 > 55: not its parent's lane; lane 1 freed at 50.
        assert_eq!(lane[4], 1);
        assert_eq!(lane[3], 1, "lane 1 is free again at 90");
        assert_eq!(count, 2);
    }

    #[test]
    fn identical_intervals_nest_parent_first() {
        let spans = [iv(0, 10, Some(1), 1), iv(0, 10, None, 0)];
        let order = layout_order(&spans);
        assert_eq!(order, vec![1, 0]);
        assert_eq!(assign_lanes(&spans, &order), (vec![0, 0], 1));
    }
}
