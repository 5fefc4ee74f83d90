//! What the host did besides CUDA calls, from an Nsight Systems export:
//! - `OSRT_API` (OS runtime tracing: `poll`, `ioctl`, `sem_wait`, …) →
//!   `os_runtime` slices on the calling thread's track (read as the CUDA
//!   calls are, `Reader::read_calls`), so a GPU gap whose launching thread
//!   made no CUDA call shows the system call it sat in;
//! - `COMPOSITE_EVENTS` + `SAMPLING_CALLCHAINS` (CPU IP/backtrace
//!   sampling) → timed call-stack samples under metric `cpu.samples`, one
//!   row per sample with its thread, so hotspots offer the sampled CPU time
//!   and a window (a gap) reads the stacks sampled inside it.
//!
//! Callchains are held per sample id until the stack aggregator exists
//! (after the slices are nested): 16 bytes per frame and 24 per sample.

use super::*;
use crate::stacks::{ReductionSpec, StackAggregator};

pub const OSRT_TABLE: &str = "OSRT_API";
pub const SAMPLES_TABLE: &str = "COMPOSITE_EVENTS";
pub const CALLCHAINS_TABLE: &str = "SAMPLING_CALLCHAINS";

/// CPU samples read from an export, waiting for the stack aggregator.
#[derive(Default)]
pub(super) struct CpuSamples {
    /// Sample id → frames, leaf first: (symbol, module, symbolized).
    chains: FastHashMap<i64, Vec<(u32, Option<u32>, bool)>>,
    /// (time, sample id, thread track).
    samples: Vec<(i64, i64, u32)>,
}

impl CpuSamples {
    pub(super) fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }
}

impl Reader<'_> {
    /// `SAMPLING_CALLCHAINS` and then `COMPOSITE_EVENTS` into `out`.
    pub(super) fn read_cpu_samples(
        &mut self,
        chains: &TableSel,
        samples: &TableSel,
        out: &mut CpuSamples,
    ) -> Result<(), ExtractError> {
        let fields: [&[&str]; 5] = [
            &["id"],
            &["stackDepth"],
            &["symbol"],
            &["module"],
            &["unresolved"],
        ];
        let mut n = 0;
        let mut frames: Vec<(i64, i64, u32, Option<u32>, bool)> = Vec::new();
        let source = self.source;
        source.for_each_row(&chains.table, &fields, &mut |row| {
            self.poll()?;
            n += 1;
            let (Some(id), Some(depth)) = (int(row, 0), int(row, 1)) else {
                return Ok(());
            };
            let symbol = self
                .name_at(row, 2)
                .unwrap_or_else(|| self.p.strings.intern("[unknown frame]"));
            let module = self.name_at(row, 3);
            let resolved = int(row, 4).is_none_or(|u| u == 0);
            frames.push((id, depth, symbol, module, resolved));
            Ok(())
        })?;
        self.count(chains.name, n);
        frames.sort_unstable_by_key(|f| (f.0, f.1));
        for (id, _, symbol, module, resolved) in frames {
            out.chains
                .entry(id)
                .or_default()
                .push((symbol, module, resolved));
        }
        let fields: [&[&str]; 3] = [&["id"], &["start"], &["globalTid"]];
        let mut n = 0;
        source.for_each_row(&samples.table, &fields, &mut |row| {
            self.poll()?;
            n += 1;
            let (Some(id), Some(ts)) = (int(row, 0), int(row, 1)) else {
                return Ok(());
            };
            let track = self.thread_track(int(row, 2));
            out.samples.push((ts, id, track));
            Ok(())
        })?;
        self.count(samples.name, n);
        Ok(())
    }
}

/// Adds the samples to `agg` under `cpu.samples` (after the slices'
/// `trace.wall_ns`, declared first so it keeps metric id 0).
pub(super) fn aggregate_cpu_samples(
    agg: &mut StackAggregator,
    p: &mut TraceBuilder,
    s: CpuSamples,
) {
    agg.metric(ReductionSpec {
        metric: "trace.wall_ns".into(),
        weight_unit: "ns".into(),
        unit: "ns".into(),
    });
    let cpu = agg.metric(ReductionSpec {
        metric: "cpu.samples".into(),
        weight_unit: "samples".into(),
        unit: "samples".into(),
    });
    agg.reserve_unit_samples(cpu, s.samples.len());
    let mut stacks: FastHashMap<i64, u32> = FastHashMap::default();
    let mut threads: FastHashMap<u32, u32> = FastHashMap::default();
    let mut missing = 0u64;
    for (ts, id, track) in s.samples {
        let stack = match stacks.get(&id) {
            Some(&stack) => stack,
            None => {
                let Some(chain) = s.chains.get(&id).filter(|c| !c.is_empty()) else {
                    missing += 1;
                    continue;
                };
                let mut parent = None;
                // Root first: the chain is leaf first.
                for &(symbol, module, resolved) in chain.iter().rev() {
                    let frame = agg.frame(
                        p.strings.get(symbol),
                        None,
                        None,
                        module.map(|m| p.strings.get(m)),
                        "native",
                        resolved,
                    );
                    parent = Some(agg.stack(parent, frame));
                }
                let Some(stack) = parent else {
                    continue;
                };
                stacks.insert(id, stack);
                stack
            }
        };
        let thread = match threads.get(&track) {
            Some(&t) => t,
            None => {
                let info = match p.tracks.list.get(track as usize) {
                    Some(t) => emit::thread_info(p, t),
                    None => continue,
                };
                let t = agg.thread(info);
                threads.insert(track, t);
                t
            }
        };
        agg.add_metric_sample(cpu, stack, thread, Some(ts), 1, 1);
    }
    if missing > 0 {
        p.log.note_n("sample_without_callchain", missing, || {
            "a CPU sample has no callchain rows; skipped".to_string()
        });
    }
}
