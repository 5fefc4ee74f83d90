//! Per-kernel launch latencies kept by phase, eight bytes per kernel, for
//! the `launch_latency` table the stream-gap reducer writes at the end.
//!
//! A 10 M-event trace has millions of kernels; holding `(phase,
//! Option<latency>)` per kernel and sorting it at the end cost 24 bytes per
//! kernel plus the sort's copy. Kernels are grouped by phase as they
//! arrive, nulls are only counted (they sort last and are all equal), and
//! a kernel whose launch has not been seen yet keeps a slot that is filled
//! — or turned into a null — when the input has been read.

use crate::launch_starts::LaunchStarts;

/// Latencies of one phase's kernels.
#[derive(Default)]
struct PhaseLatencies {
    values: Vec<i64>,
    nulls: u64,
}

/// A kernel whose launch was not seen when it arrived.
struct Pending {
    phase: u32,
    slot: usize,
    correlation: i64,
    kernel_ts: i64,
}

/// Every kernel's latency, grouped by phase id.
#[derive(Default)]
pub struct KernelLatencies {
    phases: Vec<PhaseLatencies>,
    pending: Vec<Pending>,
    kernels: u64,
}

impl KernelLatencies {
    /// Kernels recorded so far.
    pub fn kernel_count(&self) -> u64 {
        self.kernels
    }

    fn phase(&mut self, phase: u32) -> &mut PhaseLatencies {
        let index = phase as usize;
        if self.phases.len() <= index {
            self.phases.resize_with(index + 1, PhaseLatencies::default);
        }
        &mut self.phases[index]
    }

    /// Records a kernel of `phase`: its latency when its launch is known,
    /// else a slot resolved by [`Self::resolve`] through `correlation`.
    pub fn push(&mut self, phase: u32, latency: Option<i64>, correlation: Option<i64>, ts: i64) {
        self.kernels += 1;
        let entry = self.phase(phase);
        match (latency, correlation) {
            (Some(latency), _) => entry.values.push(latency),
            (None, None) => entry.nulls += 1,
            (None, Some(correlation)) => {
                let slot = entry.values.len();
                entry.values.push(0);
                self.pending.push(Pending {
                    phase,
                    slot,
                    correlation,
                    kernel_ts: ts,
                });
            }
        }
    }

    /// Fills the pending slots from the earliest launch start of each
    /// correlation id; kernels without a launch become nulls.
    pub fn resolve(&mut self, launch_starts: &LaunchStarts) {
        let mut unlaunched: Vec<(u32, usize)> = Vec::new();
        for p in std::mem::take(&mut self.pending) {
            match launch_starts.get(p.correlation) {
                Some(start) => {
                    if let Some(value) = self
                        .phases
                        .get_mut(p.phase as usize)
                        .and_then(|e| e.values.get_mut(p.slot))
                    {
                        *value = p.kernel_ts.saturating_sub(start);
                    }
                }
                None => unlaunched.push((p.phase, p.slot)),
            }
        }
        // Highest slot first, so each removal leaves the others in place.
        unlaunched.sort_unstable_by(|a, b| b.cmp(a));
        for (phase, slot) in unlaunched {
            if let Some(entry) = self.phases.get_mut(phase as usize)
                && slot < entry.values.len()
            {
                entry.values.swap_remove(slot);
                entry.nulls += 1;
            }
        }
    }

    /// Every kernel as `(phase, latency)`, phases in `order`, latencies
    /// ascending and nulls last within a phase; consumes the values.
    pub fn into_sorted(self, order: &[u32]) -> impl Iterator<Item = (u32, Option<i64>)> {
        let mut phases = self.phases;
        let mut groups = Vec::with_capacity(order.len());
        for &phase in order {
            if let Some(entry) = phases.get_mut(phase as usize) {
                let mut values = std::mem::take(&mut entry.values);
                values.sort_unstable();
                groups.push((phase, values, entry.nulls));
            }
        }
        groups.into_iter().flat_map(|(phase, values, nulls)| {
            values
                .into_iter()
                .map(move |v| (phase, Some(v)))
                .chain(std::iter::repeat_n((phase, None), nulls as usize))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_by_phase_order_then_latency_with_nulls_last_and_late_launches_filled() {
        let mut l = KernelLatencies::default();
        l.push(1, Some(30), Some(1), 100);
        l.push(0, None, None, 5);
        l.push(1, None, Some(9), 200); // launch comes later in the input
        l.push(0, Some(7), Some(2), 50);
        l.push(1, None, Some(8), 300); // never launched
        l.push(1, Some(10), Some(3), 120);
        l.push(2, None, Some(9), 400);
        assert_eq!(l.kernel_count(), 7);
        let mut starts = LaunchStarts::default();
        starts.record(9, 150);
        l.resolve(&starts);
        let rows: Vec<_> = l.into_sorted(&[2, 0, 1]).collect();
        assert_eq!(
            rows,
            [
                (2, Some(250)),
                (0, Some(7)),
                (0, None),
                (1, Some(10)),
                (1, Some(30)),
                (1, Some(50)),
                (1, None),
            ]
        );
    }

    #[test]
    fn several_unlaunched_kernels_of_one_phase_all_become_nulls() {
        let mut l = KernelLatencies::default();
        for (i, c) in [4, 5, 6, 7].into_iter().enumerate() {
            l.push(0, None, Some(c), i as i64 * 10);
        }
        l.push(0, Some(3), Some(1), 1);
        let mut starts = LaunchStarts::default();
        starts.record(6, 0);
        l.resolve(&starts);
        let rows: Vec<_> = l.into_sorted(&[0]).collect();
        assert_eq!(
            rows,
            [(0, Some(3)), (0, Some(20)), (0, None), (0, None), (0, None)]
        );
    }
}
