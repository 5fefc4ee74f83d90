//! Timestamped samples a [`crate::stacks::StackAggregator`] keeps until it
//! writes the `samples` table, in as few bytes as they allow.
//!
//! A sampling profiler's millions of samples all weigh 1 and count 1, so
//! those are kept per metric as `(ts, stack, thread)` — 16 bytes — and any
//! other sample as a 32-byte [`TimedSample`]. Each list is sorted in place
//! at the end and read back merged in one global order.

/// A sample with a timestamp. Its count is per sample (1 in every
/// extractor) and kept as `u32`: negative counts as 0, larger ones at
/// `u32::MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedSample {
    pub ts: i64,
    pub weight: i64,
    pub stack: u32,
    pub thread: u32,
    pub count: u32,
    pub metric: u16,
}

impl TimedSample {
    /// The `samples` table's row order.
    fn order(&self) -> (i64, u32, u32, u16, i64, u32) {
        (
            self.ts,
            self.stack,
            self.thread,
            self.metric,
            self.weight,
            self.count,
        )
    }
}

/// A sample of weight 1 and count 1; its metric is its list's.
#[derive(Debug, Clone, Copy)]
struct UnitSample {
    ts: i64,
    stack: u32,
    thread: u32,
}

/// Every timed sample of one aggregator.
#[derive(Default)]
pub struct TimedSamples {
    other: Vec<TimedSample>,
    /// Weight-1, count-1 samples, by metric id.
    unit: Vec<Vec<UnitSample>>,
}

impl TimedSamples {
    pub fn push(&mut self, sample: TimedSample) {
        if sample.weight == 1 && sample.count == 1 {
            self.unit_list(sample.metric).push(UnitSample {
                ts: sample.ts,
                stack: sample.stack,
                thread: sample.thread,
            });
        } else {
            self.other.push(sample);
        }
    }

    fn unit_list(&mut self, metric: u16) -> &mut Vec<UnitSample> {
        let index = usize::from(metric);
        if self.unit.len() <= index {
            self.unit.resize_with(index + 1, Vec::new);
        }
        &mut self.unit[index]
    }

    /// Makes room for `additional` weight-1 samples of `metric` at once.
    pub fn reserve_unit(&mut self, metric: u16, additional: usize) {
        self.unit_list(metric).reserve_exact(additional);
    }

    /// Sorts every list in place, for [`Self::sorted`].
    pub fn sort(&mut self) {
        self.other.sort_unstable_by_key(TimedSample::order);
        for list in &mut self.unit {
            list.sort_unstable_by_key(|u| (u.ts, u.stack, u.thread));
        }
    }

    /// Every sample in the `samples` table's order (after [`Self::sort`]).
    pub fn sorted(&self) -> impl Iterator<Item = TimedSample> + '_ {
        Merged {
            samples: self,
            other_at: 0,
            unit_at: vec![0; self.unit.len()],
        }
    }

    /// Every sample, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = TimedSample> + '_ {
        let units = self
            .unit
            .iter()
            .enumerate()
            .flat_map(|(metric, list)| list.iter().map(move |u| unit_sample(u, metric as u16)));
        self.other.iter().copied().chain(units)
    }
}

fn unit_sample(u: &UnitSample, metric: u16) -> TimedSample {
    TimedSample {
        ts: u.ts,
        weight: 1,
        stack: u.stack,
        thread: u.thread,
        count: 1,
        metric,
    }
}

/// The merge of the sorted lists (a few: one per metric and the rest).
struct Merged<'a> {
    samples: &'a TimedSamples,
    other_at: usize,
    unit_at: Vec<usize>,
}

impl Iterator for Merged<'_> {
    type Item = TimedSample;

    fn next(&mut self) -> Option<TimedSample> {
        // `None` source = the other list, `Some(m)` = metric m's unit list.
        let mut best: Option<(TimedSample, Option<usize>)> =
            self.samples.other.get(self.other_at).map(|s| (*s, None));
        for (metric, list) in self.samples.unit.iter().enumerate() {
            let Some(u) = list.get(self.unit_at[metric]) else {
                continue;
            };
            let candidate = unit_sample(u, metric as u16);
            if best.is_none_or(|(b, _)| candidate.order() < b.order()) {
                best = Some((candidate, Some(metric)));
            }
        }
        let (sample, source) = best?;
        match source {
            None => self.other_at += 1,
            Some(metric) => self.unit_at[metric] += 1,
        }
        Some(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(
        ts: i64,
        stack: u32,
        thread: u32,
        weight: i64,
        count: u32,
        metric: u16,
    ) -> TimedSample {
        TimedSample {
            ts,
            weight,
            stack,
            thread,
            count,
            metric,
        }
    }

    #[test]
    fn merged_lists_come_out_as_one_sort_of_every_sample() {
        let mut all = Vec::new();
        // A deterministic mix with ties on time, stack and thread across
        // metrics, weights and counts.
        let mut x: u64 = 7;
        for _ in 0..2_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = (x >> 33) as u32;
            let unit = !r.is_multiple_of(3);
            all.push(sample(
                i64::from(r % 50),
                r % 4,
                (r >> 8) % 3,
                if unit { 1 } else { i64::from(r % 5) },
                if unit { 1 } else { (r >> 4) % 3 },
                ((r >> 12) % 3) as u16,
            ));
        }
        let mut samples = TimedSamples::default();
        samples.reserve_unit(2, 10);
        for s in &all {
            samples.push(*s);
        }
        samples.sort();
        let merged: Vec<_> = samples.sorted().collect();
        let mut expected = all.clone();
        expected.sort_by_key(TimedSample::order);
        assert_eq!(merged, expected);
        let mut unordered: Vec<_> = samples.iter().collect();
        unordered.sort_by_key(TimedSample::order);
        assert_eq!(unordered, expected);
        // Unit samples were kept apart: the other list is a third or so.
        assert!(samples.other.len() < all.len() / 2);
    }

    #[test]
    fn empty_and_single_list_merges() {
        let mut samples = TimedSamples::default();
        samples.sort();
        assert_eq!(samples.sorted().count(), 0);
        samples.push(sample(5, 1, 1, 1, 1, 1));
        samples.push(sample(3, 1, 1, 1, 1, 1));
        samples.sort();
        let ts: Vec<_> = samples.sorted().map(|s| (s.ts, s.metric)).collect();
        assert_eq!(ts, [(3, 1), (5, 1)]);
    }
}
