//! Self (exclusive) time by ownership: each instant of a track belongs to
//! the most recently started slice still open at that instant. For slices
//! that nest properly this is a slice's duration minus its children's;
//! for slices that overlap without nesting (a child that outlives its
//! parent, as Chromium's `devtools.timeline` frames and profiler step
//! annotations do) it still gives every instant to exactly one slice, so a
//! track's self times sum to the length of the union of its slices — never
//! more, which subtracting clipped children did not guarantee (an
//! enclosing frame whose direct child ended early kept the time the
//! overlapping slice also held).
//!
//! Both nesting passes — in memory ([`super::nesting`]) and over spilled
//! runs ([`super::external`]) — keep a stack of open slices in start order
//! and call [`advance`] before each new slice and [`finish`] at the track's end.

/// Credits the time from `*cursor` to `t` to the slices of `stack` that own
/// it: at each instant, the topmost entry whose `end` is after it. The
/// cursor starts unset (the track's first slice sets it) and moves to `t`.
pub fn advance<E>(
    cursor: &mut Option<i64>,
    stack: &mut [E],
    t: i64,
    end: impl Fn(&E) -> i64,
    mut credit: impl FnMut(&mut E, i64),
) {
    let Some(mut at) = *cursor else {
        *cursor = Some(t);
        return;
    };
    while at < t {
        let Some(k) = stack.iter().rposition(|e| end(e) > at) else {
            break;
        };
        let until = end(&stack[k]).min(t);
        // Saturating: a damaged trace's stamps can lie further apart than
        // an i64 of nanoseconds holds (structured fuzz, seed 1 case 4000).
        credit(&mut stack[k], until.saturating_sub(at));
        at = until;
    }
    *cursor = Some(at.max(t));
}

/// Credits the rest of a track at its end: up to the latest finite end
/// among `stack`'s entries (unterminated slices end at `i64::MAX` and own
/// no time past their track's last end).
pub fn finish<E>(
    cursor: &mut Option<i64>,
    stack: &mut [E],
    end: impl Fn(&E) -> i64,
    credit: impl FnMut(&mut E, i64),
) {
    let last = stack.iter().map(&end).filter(|&e| e != i64::MAX).max();
    if let Some(last) = last {
        advance(cursor, stack, last, end, credit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(start, end)` slices in start order → their exclusive times.
    fn exclusive(slices: &[(i64, i64)]) -> Vec<i64> {
        let mut own = vec![0i64; slices.len()];
        let mut stack: Vec<usize> = Vec::new();
        let mut cursor = None;
        for (i, &(s, _)) in slices.iter().enumerate() {
            advance(
                &mut cursor,
                &mut stack,
                s,
                |&k| slices[k].1,
                |&mut k, ns| own[k] += ns,
            );
            while stack.last().is_some_and(|&k| slices[k].1 <= s) {
                stack.pop();
            }
            stack.push(i);
        }
        finish(
            &mut cursor,
            &mut stack,
            |&k| slices[k].1,
            |&mut k, ns| own[k] += ns,
        );
        own
    }

    #[test]
    fn nested_slices_keep_duration_minus_children() {
        assert_eq!(
            exclusive(&[(0, 10), (2, 4), (5, 9), (6, 7)]),
            vec![4, 2, 3, 1]
        );
    }

    #[test]
    fn a_child_outliving_its_parent_takes_the_overlap_once() {
        // A [0,10) holds B [2,4); C [3,20) starts inside B and outlives
        // both: A 2 + B 1 + C 17 = 20, the union.
        let own = exclusive(&[(0, 10), (2, 4), (3, 20)]);
        assert_eq!(own, vec![2, 1, 17]);
        assert_eq!(own.iter().sum::<i64>(), 20);
        // Disjoint slices and a gap between them.
        assert_eq!(exclusive(&[(0, 5), (8, 10)]), vec![5, 2]);
    }

    /// Structured fuzz, seed 1 case 4000: stamps near both ends of i64.
    #[test]
    fn stamps_further_apart_than_an_i64_saturate() {
        let own = exclusive(&[(i64::MIN + 1, i64::MAX - 1), (i64::MAX - 2, i64::MAX - 1)]);
        assert_eq!(own, vec![i64::MAX, 1]);
    }

    #[test]
    fn unterminated_slices_own_nothing_past_the_last_end() {
        let own = exclusive(&[(0, i64::MAX), (2, 4)]);
        assert_eq!(own, vec![2, 2]);
    }
}
