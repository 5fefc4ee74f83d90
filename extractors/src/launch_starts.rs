//! Correlation id → earliest host launch start, and which ids a plain
//! direct launch (`cudaLaunchKernel`, not `cudaLaunchKernel_v7000`) had,
//! for the stream-gap reducer's launch latencies.
//!
//! A 2 M-event Nsight export has a million launches; a hash map of starts
//! and a hash set of plain ids took about 54 MB at their peak. CUDA hands
//! out correlation ids in call order and the reducer sees launches in start
//! order, so ids nearly always arrive ascending: they are appended to
//! sorted lists (16 and 8 bytes per launch) and found by binary search.
//! The rare id that arrives below the last one goes to a map, so any order
//! gives the same answers.

use crate::{FastHashMap, FastHashSet};

/// Earliest start per correlation id, and the plain launches' ids.
#[derive(Default)]
pub struct LaunchStarts {
    /// `(correlation, earliest start)`, ascending by correlation, unique.
    sorted: Vec<(i64, i64)>,
    /// Ids that arrived below the last of `sorted`.
    unsorted: FastHashMap<i64, i64>,
    /// Plain launches' ids, ascending, unique.
    plain_sorted: Vec<i64>,
    plain_unsorted: FastHashSet<i64>,
}

impl LaunchStarts {
    /// Records a launch of `correlation` starting at `ts`.
    pub fn record(&mut self, correlation: i64, ts: i64) {
        match self.sorted.last_mut() {
            Some(last) if last.0 == correlation => last.1 = last.1.min(ts),
            Some(last) if last.0 > correlation => {
                match self.sorted.binary_search_by_key(&correlation, |e| e.0) {
                    Ok(at) => self.sorted[at].1 = self.sorted[at].1.min(ts),
                    Err(_) => {
                        let start = self.unsorted.entry(correlation).or_insert(ts);
                        *start = (*start).min(ts);
                    }
                }
            }
            _ => self.sorted.push((correlation, ts)),
        }
    }

    /// The earliest start of a launch with `correlation`.
    pub fn get(&self, correlation: i64) -> Option<i64> {
        match self.sorted.binary_search_by_key(&correlation, |e| e.0) {
            Ok(at) => Some(self.sorted[at].1),
            Err(_) => self.unsorted.get(&correlation).copied(),
        }
    }

    /// Notes that a plain direct launch had `correlation`.
    pub fn mark_plain(&mut self, correlation: i64) {
        match self.plain_sorted.last() {
            Some(&last) if last == correlation => {}
            Some(&last) if last > correlation => {
                if self.plain_sorted.binary_search(&correlation).is_err() {
                    self.plain_unsorted.insert(correlation);
                }
            }
            _ => self.plain_sorted.push(correlation),
        }
    }

    /// Whether a plain direct launch had `correlation`.
    pub fn is_plain(&self, correlation: i64) -> bool {
        self.plain_sorted.binary_search(&correlation).is_ok()
            || self.plain_unsorted.contains(&correlation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same answers as a map and a set, in any arrival order.
    #[test]
    fn answers_equal_a_map_and_a_set_whatever_the_order() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        for disorder in [0, 3, 50, 100] {
            let mut starts = LaunchStarts::default();
            let (mut map, mut set) = (FastHashMap::default(), FastHashSet::default());
            for i in 0..5_000i64 {
                // Mostly ascending ids, some repeated, some out of order.
                let c = if next(100) < disorder {
                    next(5_000) as i64
                } else {
                    i / 2
                };
                let ts = next(1_000_000) as i64 - 500_000;
                starts.record(c, ts);
                let e = map.entry(c).or_insert(ts);
                *e = (*e).min(ts);
                if next(3) == 0 {
                    starts.mark_plain(c);
                    set.insert(c);
                }
            }
            for c in -10..5_010 {
                assert_eq!(starts.get(c), map.get(&c).copied(), "{disorder} {c}");
                assert_eq!(starts.is_plain(c), set.contains(&c), "{disorder} {c}");
            }
            if disorder == 0 {
                assert!(starts.unsorted.is_empty() && starts.plain_unsorted.is_empty());
            }
        }
    }
}
