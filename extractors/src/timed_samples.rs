//! Timestamped samples a [`crate::stacks::StackAggregator`] keeps until it
//! writes the `samples` table, in as few bytes as they allow.
//!
//! A sampling profiler's millions of samples all weigh 1 and count 1, so
//! those are kept per metric as `(ts, stack, thread)` — 16 bytes — and any
//! other sample as a 32-byte [`TimedSample`]. Each list is sorted in place
//! at the end and read back merged in one global order.
//!
//! With a spill folder ([`TimedSamples::spill_to`]) at most a budget of
//! samples is held: each time it fills, the lists are sorted and written
//! as one run ([`crate::sorted_runs`], records in
//! [`crate::timed_sample_runs`]), and the end writes what is still held as
//! the last run and merges them all.

use std::io;
use std::path::Path;

use crate::sorted_runs::RunSpill;

/// The `samples` table's row order of a sample: time, stack, thread,
/// metric, weight, count.
pub type SampleOrder = (i64, u32, u32, u16, i64, u32);

/// A sample with a timestamp. Its count is per sample (1 in every
/// extractor) and kept as `u32`: negative counts as 0, larger ones at
/// `u32::MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
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
    pub fn order(&self) -> SampleOrder {
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
    /// Where runs go, and how many samples are held before one is written.
    spill: Option<RunSpill<TimedSample>>,
    held: usize,
}

impl TimedSamples {
    /// Holds at most `held` samples from now on; the rest go to sorted
    /// runs in `dir`.
    pub fn spill_to(&mut self, dir: &Path, held: usize) {
        self.spill = Some(RunSpill::new(dir, "samples", held));
    }

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
        self.held += 1;
        if self.spill.as_ref().is_some_and(|s| s.full(self.held)) {
            self.write_run();
        }
    }

    /// Sorts what is held and writes it as one run (a failure is kept for
    /// [`Self::sorted_all`] and the samples stay held).
    fn write_run(&mut self) {
        self.sort();
        let Some(spill) = &mut self.spill else { return };
        if spill.write(merged(&self.other, &self.unit)) {
            self.other.clear();
            self.unit.iter_mut().for_each(Vec::clear);
            self.held = 0;
        }
    }

    fn unit_list(&mut self, metric: u16) -> &mut Vec<UnitSample> {
        let index = usize::from(metric);
        if self.unit.len() <= index {
            self.unit.resize_with(index + 1, Vec::new);
        }
        &mut self.unit[index]
    }

    /// Makes room for `additional` weight-1 samples of `metric` at once
    /// (no more than the spill budget).
    pub fn reserve_unit(&mut self, metric: u16, additional: usize) {
        let additional = match &self.spill {
            Some(spill) => additional.min(spill.budget().saturating_sub(self.held)),
            None => additional,
        };
        self.unit_list(metric).reserve_exact(additional);
    }

    /// Sorts every list in place, for [`Self::sorted`].
    fn sort(&mut self) {
        self.other.sort_unstable_by_key(TimedSample::order);
        for list in &mut self.unit {
            list.sort_unstable_by_key(|u| (u.ts, u.stack, u.thread));
        }
    }

    /// Every sample in the `samples` table's order, spilled ones included.
    pub fn sorted_all(
        &mut self,
    ) -> io::Result<Box<dyn Iterator<Item = io::Result<TimedSample>> + '_>> {
        if self.spill.as_ref().is_some_and(RunSpill::spilled) && self.held > 0 {
            self.write_run();
        }
        self.sort();
        let merge = match &mut self.spill {
            Some(spill) => spill.merge()?,
            None => None,
        };
        Ok(match merge {
            Some(runs) => Box::new(runs),
            None => Box::new(merged(&self.other, &self.unit).map(Ok)),
        })
    }
}

/// The held samples in the `samples` table's order (lists sorted).
fn merged<'a>(other: &'a [TimedSample], unit: &'a [Vec<UnitSample>]) -> Merged<'a> {
    Merged {
        other,
        unit,
        other_at: 0,
        unit_at: vec![0; unit.len()],
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
    other: &'a [TimedSample],
    unit: &'a [Vec<UnitSample>],
    other_at: usize,
    unit_at: Vec<usize>,
}

impl Iterator for Merged<'_> {
    type Item = TimedSample;

    fn next(&mut self) -> Option<TimedSample> {
        // `None` source = the other list, `Some(m)` = metric m's unit list.
        let mut best: Option<(TimedSample, Option<usize>)> =
            self.other.get(self.other_at).map(|s| (*s, None));
        for (metric, list) in self.unit.iter().enumerate() {
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

    fn all_sorted(samples: &mut TimedSamples) -> Vec<TimedSample> {
        samples
            .sorted_all()
            .unwrap()
            .collect::<io::Result<_>>()
            .unwrap()
    }

    /// A deterministic mix with ties on time, stack and thread across
    /// metrics, weights and counts.
    fn mixed(n: usize) -> Vec<TimedSample> {
        let mut all = Vec::new();
        let mut x: u64 = 7;
        for _ in 0..n {
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
        all
    }

    #[test]
    fn merged_lists_come_out_as_one_sort_of_every_sample() {
        let all = mixed(2_000);
        let mut samples = TimedSamples::default();
        samples.reserve_unit(2, 10);
        for s in &all {
            samples.push(*s);
        }
        let mut expected = all.clone();
        expected.sort_by_key(TimedSample::order);
        assert_eq!(all_sorted(&mut samples), expected);
        // Unit samples were kept apart: the other list is a third or so.
        assert!(samples.other.len() < all.len() / 2);
    }

    #[test]
    fn spilled_runs_merge_with_the_held_samples_in_the_same_order() {
        let dir = crate::spill_compare::spill_dir("timed-samples");
        let all = mixed(2_000);
        let mut expected = all.clone();
        expected.sort_by_key(TimedSample::order);
        for budget in [1, 7, 333, 1_999, 2_000, 5_000] {
            let mut samples = TimedSamples::default();
            samples.spill_to(&dir, budget);
            samples.reserve_unit(1, 1 << 20);
            assert!(samples.unit[1].capacity() <= budget, "reserve capped");
            for s in &all {
                samples.push(*s);
            }
            assert!(samples.held < budget, "budget {budget}");
            assert_eq!(
                samples.spill.as_ref().is_some_and(RunSpill::spilled),
                budget <= all.len(),
                "budget {budget}"
            );
            assert_eq!(all_sorted(&mut samples), expected, "budget {budget}");
        }
        crate::spill_compare::assert_no_spill_files_left(&dir);
    }

    #[test]
    fn a_spill_that_cannot_be_written_fails_the_read_not_the_push() {
        let mut samples = TimedSamples::default();
        samples.spill_to(Path::new("/nonexistent/flameox/spill"), 2);
        for s in mixed(10) {
            samples.push(s);
        }
        assert_eq!(samples.held, 10, "kept in memory");
        assert!(samples.sorted_all().is_err());
    }

    #[test]
    fn empty_and_single_list_merges() {
        let mut samples = TimedSamples::default();
        assert_eq!(all_sorted(&mut samples).len(), 0);
        samples.push(sample(5, 1, 1, 1, 1, 1));
        samples.push(sample(3, 1, 1, 1, 1, 1));
        let ts: Vec<_> = all_sorted(&mut samples)
            .iter()
            .map(|s| (s.ts, s.metric))
            .collect();
        assert_eq!(ts, [(3, 1), (5, 1)]);
    }
}
