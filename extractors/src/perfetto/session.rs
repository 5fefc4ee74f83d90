//! One system-trace decode, whatever reads it: the Perfetto packet reader,
//! and the readers of other kernel and sampling formats (ftrace text,
//! trace-cmd, perf.data) that hand the same [`Decoder`] ftrace bundles and
//! callstack samples. Scheduling replay, thread naming, spilling, tracks,
//! slice reductions and the summary are then the same code for all of
//! them, so a `sched_switch` means one thing whichever tracer wrote it.

use crate::api::{BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary};
use crate::format_kind::FormatKind;
use crate::sorted_runs::TimeOrderedRuns;

use super::decoder::Decoder;
use super::spill::Spilling;

/// Callstack samples held per event of the in-memory budget, both while
/// they wait for thread names and in the aggregator: 16 bytes each where
/// an event takes about 130, so the default budget holds 2 M samples
/// (32 MiB) in each place and the rest goes to spill files.
const SAMPLES_PER_EVENT_OF_BUDGET: usize = 4;

/// Ftrace records held per event of the budget until their replay: about
/// 48 bytes each, so the default holds 1 M (48 MiB).
const FTRACE_RECORDS_PER_EVENT_OF_BUDGET: usize = 2;

/// Counter values held per event of the budget: 32 bytes each, so the
/// default holds 1 M (32 MiB).
const COUNTERS_PER_EVENT_OF_BUDGET: usize = 2;

/// Who read the input, when it was not a Perfetto trace: stamped on the
/// summary instead of the Perfetto extractor.
pub struct ForeignSource {
    pub extractor: &'static str,
    pub extractor_version: &'static str,
    pub format: FormatKind,
    pub producer: String,
    /// Records read (lines, events, samples).
    pub input_events: u64,
    /// Format-specific facts for the summary's metadata.
    pub metadata: std::collections::BTreeMap<String, serde_json::Value>,
}

/// A decoder with its spill budget, fed until [`SystemTrace::finish`].
pub struct SystemTrace<'a> {
    pub d: Decoder,
    spilling: Spilling<'a>,
}

impl<'a> SystemTrace<'a> {
    pub fn new(options: &'a ExtractOptions) -> Self {
        let mut d = Decoder::new(options.max_args_bytes, options.spill_dir.clone());
        if let Some(dir) = options.spill_dir.as_deref() {
            let held = options
                .spill_after_events
                .saturating_mul(SAMPLES_PER_EVENT_OF_BUDGET);
            d.samples.spill_to(dir, held);
            d.agg.spill_samples_to(dir, held);
            let records = options
                .spill_after_events
                .saturating_mul(FTRACE_RECORDS_PER_EVENT_OF_BUDGET);
            d.ftrace.spill_to(dir, records);
            let counters = options
                .spill_after_events
                .saturating_mul(COUNTERS_PER_EVENT_OF_BUDGET);
            d.counter_runs = Some(TimeOrderedRuns::new(dir, "counters", counters));
        }
        let spilling = Spilling::new(options.spill_dir.as_deref(), options.spill_after_events);
        SystemTrace { d, spilling }
    }

    /// Sends finished events to a spill run when the budget is reached.
    pub fn spill_if_due(&mut self) -> Result<(), ExtractError> {
        if let Some(spill) = self.spilling.due(&self.d.p.store)? {
            self.d.spill_finished(spill)?;
        }
        Ok(())
    }

    /// Replays scheduling, resolves tracks and writes every table.
    /// `input` is (bytes read, top-level fields skipped).
    pub fn finish(
        self,
        options: &ExtractOptions,
        sink: &mut dyn BatchSink,
        observer: &dyn ExtractObserver,
        input: (u64, u64),
        source: Option<ForeignSource>,
    ) -> Result<(ExtractionSummary, u64), ExtractError> {
        let SystemTrace {
            mut d,
            mut spilling,
        } = self;
        // Begins still open are final now: unterminated.
        let open: u64 = d.open.values().map(|v| v.len() as u64).sum();
        d.open.clear();
        d.replay_ftrace(&mut spilling)?;
        d.p.log.note_n("unterminated_slice", open, || {
            "a slice begin has no matching end; kept with dur_ns = -1".to_string()
        });
        // Once some counters were spilled, the held ones go out as the last
        // run while every row still carries its slot.
        if let Some(runs) = &mut d.counter_runs
            && runs.spilled()
            && !d.p.counters.is_empty()
        {
            runs.write(&mut d.p.counters);
            d.p.counters = Vec::new();
        }
        let mut spill = spilling.spill;
        match &mut spill {
            Some(spill) => d.spill_rest_and_resolve(spill)?,
            None => {
                d.resolve_tracks();
            }
        }
        d.p.store.arena.finish_writes()?;
        if observer.cancelled() {
            return Err(ExtractError::Cancelled);
        }
        super::write_tables(d, options, sink, observer, spill, input, source)
    }
}
