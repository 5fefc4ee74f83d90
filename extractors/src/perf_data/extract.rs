//! The perf.data extractor: the decoder's samples and task events become
//! flameox evidence through the shared system-trace builder
//! ([`SystemTrace`]), so one file with both call-chain samples and sched
//! tracepoints gives both. Samples with call chains are timed call-stack
//! samples under `cpu.samples` (one per sample, as Perfetto's
//! `perf_sample`s are); tracepoint samples are kernel events interpreted
//! once ([`KernelEventFeed`]: `sched_switch`, `sched_waking`, … become
//! `sched_slice` and `thread_state` rows); `COMM`/`FORK` records name
//! threads and processes. Every rule applied is a typed limitation
//! ([`super::recording_facts`]).
//!
//! Memory: the decoder holds one round of records (at most 500,000 or
//! 256 MiB), the maps and the thread table; here, one interned frame per
//! distinct address, and the builder's events, samples and ftrace records
//! within the import's spill budget (spilled past it).

use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use crate::api::{BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary};
use crate::format_kind::FormatKind;
use crate::kernel_events::KernelEventFeed;
use crate::perfetto::session::{ForeignSource, SystemTrace};

use super::error::PerfDataError;
use super::model::{PerfDataOptions, PerfDataSummary, PerfEvent, PerfSample};
use super::recording_facts::{is_cpu_time_event, note_limitations, recording_metadata};
use super::sample_stacks::SampleStacks;
use super::session::read_perf_data;

pub const PERF_DATA_EXTRACTOR_NAME: &str = "perf_data";
/// Bumped whenever the rows produced for the same input change.
pub const PERF_DATA_EXTRACTOR_VERSION: &str = "1";

/// Decoded events between cancellation checks.
const POLL_EVERY: u64 = 4096;

/// The stored file, counting the bytes read (progress: the feature
/// sections after the records are read first, so the count is capped at
/// the file's size) and refusing to read once the import is cancelled, so
/// the decoder stops at its next read.
struct WatchedFile<'a, R> {
    inner: R,
    read: u64,
    len: u64,
    observer: &'a dyn ExtractObserver,
    stop: &'a Cell<bool>,
}

impl<R: Read> Read for WatchedFile<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.stop.get() || self.observer.cancelled() {
            self.stop.set(true);
            return Err(std::io::Error::other("extraction was cancelled"));
        }
        let n = self.inner.read(buf)?;
        self.read = self.read.saturating_add(n as u64);
        self.observer.bytes_read(self.read.min(self.len));
        Ok(n)
    }
}

impl<R: Seek> Seek for WatchedFile<'_, R> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

/// What the decoded events become, and the counts the summary needs.
#[derive(Default)]
struct Conversion {
    feed: KernelEventFeed,
    stacks: SampleStacks,
    /// Call-stack samples per event index.
    stack_samples: BTreeMap<usize, u64>,
    /// Samples without a time, kept at the previous sample's time.
    untimed: u64,
    last_ts: i64,
    events: u64,
}

impl Conversion {
    fn apply(&mut self, trace: &mut SystemTrace<'_>, event: PerfEvent) {
        match event {
            PerfEvent::Sample(s) => self.sample(trace, &s),
            PerfEvent::Comm { pid, tid, name, .. } => {
                trace.d.name_thread(tid, Some(pid), Some(name.to_string()));
                if pid == tid {
                    trace.d.name_process(pid, name.to_string());
                }
            }
            PerfEvent::Fork { pid, tid, .. } => trace.d.name_thread(tid, Some(pid), None),
            // Maps are the decoder's; losses and throttling are counted in
            // its summary.
            PerfEvent::Exit { .. }
            | PerfEvent::Mmap { .. }
            | PerfEvent::Lost { .. }
            | PerfEvent::Throttle { .. } => {}
        }
    }

    fn sample(&mut self, trace: &mut SystemTrace<'_>, s: &PerfSample) {
        if s.tracepoint_id.is_some() {
            // Undecoded tracepoints are counted by the decoder.
            if let Some(ev) = &s.kernel_event {
                self.feed.feed(trace, ev);
            }
            return;
        }
        let ts = match s.ts_ns.and_then(|t| i64::try_from(t).ok()) {
            Some(t) => {
                self.last_ts = t;
                t
            }
            None => {
                self.untimed += 1;
                self.last_ts
            }
        };
        let stack = self.stacks.stack(&mut trace.d.agg, &s.callchain);
        let pid = s.pid.filter(|&p| p > 0).unwrap_or(0);
        let tid = s.tid.filter(|&t| t > 0).unwrap_or(0);
        if tid > 0 {
            let entry = trace.d.threads.entry(tid).or_insert((None, None));
            if entry.0.is_none() && pid > 0 {
                entry.0 = Some(pid);
            }
            if entry.1.is_none() {
                entry.1 = s.comm.as_deref().map(str::to_owned);
            }
        }
        trace
            .d
            .push_sample(ts, stack, i64::from(pid), i64::from(tid));
        *self.stack_samples.entry(s.attr_index).or_insert(0) += 1;
    }
}

fn decode_error(e: PerfDataError) -> ExtractError {
    match e {
        PerfDataError::UnsupportedVersion { found, supported } => {
            ExtractError::UnsupportedVersion {
                format: FormatKind::PerfData.name(),
                found,
                supported: supported.to_owned(),
            }
        }
        PerfDataError::Io(source) if source.kind() != std::io::ErrorKind::UnexpectedEof => {
            ExtractError::Io(source)
        }
        other => ExtractError::Parse {
            message: other.to_string(),
            offset: None,
        },
    }
}

/// Extracts a stored perf.data file (file mode is read by offset).
pub fn extract_perf_data(
    path: &Path,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let file = std::fs::File::open(path).map_err(ExtractError::Io)?;
    let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    let stop = Cell::new(false);
    let reader = WatchedFile {
        inner: BufReader::with_capacity(1 << 16, file),
        read: 0,
        len: bytes,
        observer,
        stop: &stop,
    };
    let mut trace = SystemTrace::new(options);
    let mut conv = Conversion::default();
    let mut failure: Option<ExtractError> = None;
    let decoded = read_perf_data(reader, &PerfDataOptions::default(), |event| {
        if stop.get() {
            return;
        }
        conv.events += 1;
        if conv.events.is_multiple_of(POLL_EVERY) && observer.cancelled() {
            stop.set(true);
            return;
        }
        conv.apply(&mut trace, event);
        if let Err(e) = trace.spill_if_due() {
            failure = Some(e);
            stop.set(true);
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    if stop.get() || observer.cancelled() {
        return Err(ExtractError::Cancelled);
    }
    let summary = decoded.map_err(decode_error)?;
    observer.bytes_read(bytes);
    if summary.samples == 0 {
        return Err(ExtractError::Parse {
            message: format!(
                "no sample in the perf.data ({} records read{})",
                summary.record_counts.values().sum::<u64>(),
                if summary.complete {
                    String::new()
                } else {
                    format!(
                        "; the records end early: {}",
                        summary.notes.first().map_or("", String::as_str)
                    )
                }
            ),
            offset: None,
        });
    }
    name_remaining_threads(&mut trace, &summary);
    note_limitations(&mut trace.d.p.log, &summary);
    let metadata = conversion_metadata(&mut trace, &conv, &summary);
    let source = ForeignSource {
        extractor: PERF_DATA_EXTRACTOR_NAME,
        extractor_version: PERF_DATA_EXTRACTOR_VERSION,
        format: FormatKind::PerfData,
        producer: "perf".to_owned(),
        input_events: summary.record_counts.values().sum(),
        metadata,
    };
    trace
        .finish(options, sink, observer, (bytes, 0), Some(source))
        .map(|(summary, _)| summary)
}

/// Threads and processes the records named but no `COMM` event reached
/// (a name inherited at a fork): from the decoder's final thread table.
fn name_remaining_threads(trace: &mut SystemTrace<'_>, summary: &PerfDataSummary) {
    for (&tid, info) in &summary.threads {
        let entry = trace.d.threads.entry(tid).or_insert((None, None));
        if entry.0.is_none() {
            entry.0 = info.pid;
        }
        if entry.1.is_none() {
            entry.1 = info.comm.as_deref().map(str::to_owned);
        }
        if info.pid == Some(tid)
            && let Some(name) = &info.comm
            && !trace.d.process_names.contains_key(&tid)
        {
            trace.d.name_process(tid, name.to_string());
        }
    }
}

/// The summary's metadata, and the limitations of the conversion's own
/// rules (which event `cpu.samples` counts, unnamed frames).
fn conversion_metadata(
    trace: &mut SystemTrace<'_>,
    conv: &Conversion,
    summary: &PerfDataSummary,
) -> BTreeMap<String, serde_json::Value> {
    let log = &mut trace.d.p.log;
    let mut metadata = recording_metadata(summary);
    let sampled: Vec<(&str, bool, u64)> = conv
        .stack_samples
        .iter()
        .filter_map(|(&i, &n)| {
            let ev = summary.events.get(i)?;
            Some((&*ev.name, is_cpu_time_event(&ev.attr), n))
        })
        .collect();
    for &(name, cpu_time, n) in &sampled {
        if !cpu_time {
            log.note_n("sampled_event_not_cpu_time", n, || {
                format!(
                    "cpu.samples counts samples of `{name}`, which is not a CPU clock or cycles event: one sample per period of that event (see metadata.events)"
                )
            });
        }
    }
    if sampled.len() > 1 {
        log.note("mixed_sampled_events", || {
            format!(
                "cpu.samples adds up samples of {} events ({}); metadata.cpu_samples_events has each one's count",
                sampled.len(),
                sampled.iter().map(|s| s.0).collect::<Vec<_>>().join(", ")
            )
        });
    }
    if !sampled.is_empty() {
        let by_event: BTreeMap<&str, u64> = sampled.iter().map(|&(n, _, c)| (n, c)).collect();
        metadata.insert("cpu_samples_events".to_owned(), serde_json::json!(by_event));
        metadata.insert(
            "frames".to_owned(),
            serde_json::json!({
                "symbolized": conv.stacks.symbolized_frames,
                "unsymbolized": conv.stacks.unsymbolized_frames,
            }),
        );
    }
    log.note_n("sample_without_timestamp", conv.untimed, || {
        "a sample has no time (its event did not record PERF_SAMPLE_TIME); kept at the previous sample's time".to_owned()
    });
    log.note_n(
        "sample_without_frames",
        conv.stacks.samples_without_frames,
        || {
            format!(
                "a sample recorded no address; its stack is `{}`",
                super::sample_stacks::NO_FRAMES
            )
        },
    );
    log.note_n("frames_unsymbolized", conv.stacks.unsymbolized_frames, || {
        "distinct frame addresses without a function name (their file is not on this machine or has another build id; kernel frames need the recording's kernel running): named module+0xoffset, see metadata.symbol_sources".to_owned()
    });
    if conv.feed.events > 0 {
        metadata.extend(conv.feed.metadata());
    }
    metadata
}

#[cfg(test)]
#[path = "extract_tests.rs"]
mod tests;
