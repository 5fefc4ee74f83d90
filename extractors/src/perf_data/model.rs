//! What the perf.data decoder hands out: samples with resolved call
//! chains, thread-name and task events in time order, and a summary of the
//! recording — a neutral model, independent of how flameox stores it.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::kernel_events::model::KernelEvent;

use super::address_space::ThreadInfo;
use super::attrs::EventInfo;
use super::features::PerfMeta;
use super::frames::Frame;
use super::kernel_symbols::KernelSymbolStatus;
use super::symbols::SymbolSource;

/// Choices for [`super::session::read_perf_data`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfDataOptions {
    /// Name user-space frames from the mapped ELF files on this machine
    /// (when their build ids match the recorded ones).
    pub resolve_symbols: bool,
    /// Name kernel frames from `/proc/kallsyms` (when the running kernel's
    /// build id is the recorded one).
    pub kernel_symbols: bool,
    /// Decode tracepoint samples into [`KernelEvent`]s.
    pub decode_tracepoints: bool,
}

impl Default for PerfDataOptions {
    fn default() -> Self {
        PerfDataOptions {
            resolve_symbols: true,
            kernel_symbols: true,
            decode_tracepoints: true,
        }
    }
}

/// One `PERF_RECORD_SAMPLE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfSample {
    /// Index into [`PerfDataSummary::events`].
    pub attr_index: usize,
    pub event_name: Arc<str>,
    /// Event-clock nanoseconds (`perf script` shows them as seconds).
    pub ts_ns: Option<u64>,
    pub pid: Option<i32>,
    pub tid: Option<i32>,
    pub cpu: Option<u32>,
    pub period: Option<u64>,
    pub ip: Option<u64>,
    pub addr: Option<u64>,
    /// The thread's name at the sample (from `COMM`/`FORK` records).
    pub comm: Option<Arc<str>>,
    /// Innermost frame first; context markers removed.
    pub callchain: Vec<Frame>,
    /// `PERF_SAMPLE_RAW` bytes.
    pub raw: Option<Vec<u8>>,
    /// The tracepoint id (`attr.config`) for tracepoint events.
    pub tracepoint_id: Option<u64>,
    /// The decoded tracepoint record, when the tracing data has its format.
    pub kernel_event: Option<KernelEvent>,
}

/// What the decoder reports, in time order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PerfEvent {
    /// Boxed: a sample is far larger than the other events.
    Sample(Box<PerfSample>),
    /// A thread got a name; `exec` when from an exec.
    Comm {
        ts_ns: Option<u64>,
        pid: i32,
        tid: i32,
        name: Arc<str>,
        exec: bool,
    },
    Fork {
        ts_ns: u64,
        pid: i32,
        ppid: i32,
        tid: i32,
        ptid: i32,
    },
    Exit {
        ts_ns: u64,
        pid: i32,
        ppid: i32,
        tid: i32,
        ptid: i32,
    },
    /// A mapping was recorded (`pid == -1`: kernel).
    Mmap {
        ts_ns: Option<u64>,
        pid: i32,
        start: u64,
        len: u64,
        pgoff: u64,
        filename: String,
    },
    /// The kernel dropped records (`samples == false`: `LOST`, counts
    /// records of any kind) or samples (`LOST_SAMPLES`).
    Lost {
        ts_ns: Option<u64>,
        count: u64,
        samples: bool,
    },
    /// Sampling was throttled (`true`) or resumed.
    Throttle { ts_ns: Option<u64>, throttled: bool },
}

/// What the whole file held, returned when decoding ends.
#[derive(Debug, Clone, Default)]
pub struct PerfDataSummary {
    pub pipe_mode: bool,
    pub big_endian: bool,
    pub meta: PerfMeta,
    pub events: Vec<EventInfo>,
    pub samples: u64,
    /// Samples per entry of `events`.
    pub samples_per_event: Vec<u64>,
    /// Records by `PERF_RECORD_*` type.
    pub record_counts: BTreeMap<u32, u64>,
    pub lost_records: u64,
    pub lost_samples: u64,
    pub throttles: u64,
    /// Records whose body did not hold what their type says (skipped).
    pub malformed_records: u64,
    /// Samples whose event id matched no event (skipped).
    pub samples_without_event: u64,
    /// Tracepoint samples the formats did not decode.
    pub tracepoints_not_decoded: u64,
    pub tracepoint_formats: usize,
    pub threads: BTreeMap<i32, ThreadInfo>,
    /// How each user module's symbols were found (or why not).
    pub symbol_sources: Vec<(String, SymbolSource)>,
    pub kernel_symbols: Option<KernelSymbolStatus>,
    /// Everything the decoder skipped or doubted, in words.
    pub notes: Vec<String>,
    /// The data section was read to its end without damage.
    pub complete: bool,
}

impl PerfDataSummary {
    /// Adds a note, up to a cap (a damaged file cannot grow the list).
    pub fn note(&mut self, text: impl Into<String>) {
        const MAX_NOTES: usize = 200;
        if self.notes.len() < MAX_NOTES {
            self.notes.push(text.into());
        } else if self.notes.len() == MAX_NOTES {
            self.notes.push("further notes left out".to_owned());
        }
    }
}
