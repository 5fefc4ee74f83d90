//! Sorted, disjoint time segments: every busy figure is the length of a
//! union of intervals, and every idle figure the length of its holes inside
//! a named span. One implementation, so that `busy + idle = span` holds by
//! construction wherever both are reported.

/// Disjoint, sorted segments covering the union of `[start, end)` intervals
/// (empty and reversed intervals add nothing).
pub fn union_segments(mut intervals: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    intervals.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::new();
    for (s, e) in intervals {
        if e <= s {
            continue;
        }
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Total length of sorted, disjoint segments.
pub fn total(segments: &[(i64, i64)]) -> i64 {
    segments
        .iter()
        .fold(0i64, |acc, (s, e)| acc.saturating_add(e - s))
}

/// Length of `[start, end)` covered by `segments` (sorted, disjoint),
/// starting the search at `*from` and leaving it at the first segment that
/// may still reach later windows (windows must come in increasing order).
pub fn covered(segments: &[(i64, i64)], from: &mut usize, start: i64, end: i64) -> i64 {
    while *from < segments.len() && segments[*from].1 <= start {
        *from += 1;
    }
    let mut total = 0;
    for &(s, e) in segments.get(*from..).unwrap_or(&[]) {
        if s >= end {
            break;
        }
        total += e.min(end) - s.max(start);
    }
    total
}

/// Length of `[start, end)` covered by `segments`, for one window in any
/// order (a binary search finds the first segment).
pub fn covered_in(segments: &[(i64, i64)], start: i64, end: i64) -> i64 {
    let mut from = segments.partition_point(|s| s.1 <= start);
    covered(segments, &mut from, start, end)
}

/// The parts of `[start, end)` that `segments` do not cover, in order.
pub fn holes(segments: &[(i64, i64)], start: i64, end: i64) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut at = start;
    let first = segments.partition_point(|s| s.1 <= start);
    for &(s, e) in segments.get(first..).unwrap_or(&[]) {
        if s >= end {
            break;
        }
        if s > at {
            out.push((at, s));
        }
        at = at.max(e);
    }
    if at < end {
        out.push((at, end));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_segments_merge_overlaps_and_drop_empty_intervals() {
        let u = union_segments(vec![(5, 9), (0, 3), (2, 4), (9, 10), (7, 7), (12, 13)]);
        assert_eq!(u, vec![(0, 4), (5, 10), (12, 13)]);
        assert_eq!(total(&u), 10);
        let mut from = 0;
        assert_eq!(covered(&u, &mut from, 0, 2), 2);
        assert_eq!(covered(&u, &mut from, 2, 6), 3);
        assert_eq!(covered(&u, &mut from, 6, 13), 5);
        assert_eq!(covered(&u, &mut from, 13, 20), 0);
        assert_eq!(covered_in(&u, 3, 12), 6);
    }

    #[test]
    fn holes_and_cover_add_up_to_the_span() {
        let u = union_segments(vec![(5, 9), (0, 3), (12, 13)]);
        for (a, b) in [(0, 13), (-4, 20), (4, 12), (6, 8), (13, 30), (1, 2)] {
            let h = holes(&u, a, b);
            assert_eq!(total(&h) + covered_in(&u, a, b), b - a, "span {a}..{b}");
            assert!(h.iter().all(|&(s, e)| s >= a && e <= b && s < e));
        }
        assert_eq!(holes(&u, -1, 14), vec![(-1, 0), (3, 5), (9, 12), (13, 14)]);
    }
}
