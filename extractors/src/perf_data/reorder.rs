//! Puts records back in time order the way perf does. `perf record` writes
//! each CPU's buffer in turn, so records from different CPUs interleave out
//! of order, but never across two `FINISHED_ROUND` records: at each round
//! end, everything up to the newest time seen before the *previous* round
//! end can be released. Only one or two rounds are held at a time.

use std::collections::BTreeMap;

/// A time-ordering buffer of `T`s (a map keyed by time and arrival, so
/// each push and release is logarithmic whatever the records do).
#[derive(Debug)]
pub struct RoundReorder<T> {
    /// `(time, arrival)` → `(weight, item)`.
    pending: BTreeMap<(u64, u64), (usize, T)>,
    /// Sum of the pending items' weights.
    weight: usize,
    /// Newest time pushed so far.
    max_seen: u64,
    /// Release up to this time at the next round end.
    next_flush: u64,
    seq: u64,
}

impl<T> Default for RoundReorder<T> {
    fn default() -> Self {
        RoundReorder {
            pending: BTreeMap::new(),
            weight: 0,
            max_seen: 0,
            next_flush: 0,
            seq: 0,
        }
    }
}

impl<T> RoundReorder<T> {
    /// Adds an item of `weight` (its size, say); `None` (a record without
    /// a time) keeps its place after the newest time seen so far.
    pub fn push(&mut self, time: Option<u64>, weight: usize, item: T) {
        let t = time.unwrap_or(self.max_seen);
        self.max_seen = self.max_seen.max(t);
        self.pending.insert((t, self.seq), (weight, item));
        self.weight = self.weight.saturating_add(weight);
        self.seq = self.seq.wrapping_add(1);
    }

    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// The pending items' total weight.
    pub fn weight(&self) -> usize {
        self.weight
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// A `FINISHED_ROUND`: releases, in time order, what can no longer be
    /// overtaken.
    pub fn finish_round(&mut self, mut out: impl FnMut(T)) {
        let limit = self.next_flush;
        self.next_flush = self.max_seen;
        self.release(Some(limit), &mut out);
    }

    /// Releases everything (end of input), in time order.
    pub fn finish(&mut self, mut out: impl FnMut(T)) {
        self.release(None, &mut out);
    }

    fn release(&mut self, limit: Option<u64>, out: &mut impl FnMut(T)) {
        while let Some(entry) = self.pending.first_entry() {
            if limit.is_some_and(|l| entry.key().0 > l) {
                break;
            }
            let (weight, item) = entry.remove();
            self.weight = self.weight.saturating_sub(weight);
            out(item);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_in_time_order_one_round_late() {
        let mut r = RoundReorder::default();
        let mut got = Vec::new();
        r.push(Some(5), 1, "a5");
        r.push(Some(3), 1, "b3");
        r.push(None, 1, "c-untimed");
        r.finish_round(|x| got.push(x));
        assert!(got.is_empty(), "nothing is safe after the first round");
        r.push(Some(4), 1, "d4");
        r.push(Some(9), 1, "e9");
        r.finish_round(|x| got.push(x));
        assert_eq!(got, vec!["b3", "d4", "a5", "c-untimed"]);
        r.push(Some(6), 1, "f6");
        r.finish(|x| got.push(x));
        assert_eq!(got, vec!["b3", "d4", "a5", "c-untimed", "f6", "e9"]);
        assert!(r.is_empty());
        assert_eq!(r.weight(), 0);
    }
}
