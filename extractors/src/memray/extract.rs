//! The memray extractor: a capture streamed front to back through the
//! decoder ([`MemrayReader`]) and folded the way memray's reports fold it
//! ([`MemoryFold`]: the heap's high-water mark and what was live at it,
//! what was still allocated at the end — memray's leaks — and everything
//! allocated), written as evidence:
//!
//! * allocation sites as call stacks ([`crate::memray::site_stacks`]) in
//!   `samples` / `frame_totals` / `call_edges`, one pair of metrics per
//!   view, named as pprof's heap profiles name the same ideas:
//!   `memory.alloc_bytes` + `memory.alloc_objects` (every allocation),
//!   `memory.inuse_bytes` + `memory.inuse_objects` (still allocated when
//!   tracking stopped), `memory.peak_bytes` + `memory.peak_objects` (live
//!   at the high-water mark); each sample's `count` is its allocations;
//! * RSS and heap over time as `counters` ([`crate::memray::memory_counters`]).
//!
//! Bounds: the fold holds the live set (one entry per allocation not yet
//! freed, ~80 bytes) and one tally per (site, thread) and view; the decoder
//! holds the capture's stack, code-object and image tables; the memory
//! samples (one per ~10 ms of the run) are held until the end. The record
//! count itself (millions) costs only time. A damaged or cut capture keeps
//! the records before the damage, with a limitation.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::{BufRead, Read};
use std::rc::Rc;

use crate::api::{
    BatchSink, CountingSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary,
    LimitationLog,
};
use crate::format_kind::FormatKind;
use crate::memray::capture_report::{
    metadata, note_stream_notes, open_error, process_name, stream_stop, threads_named, time_span,
};
use crate::memray::events::{AggregatedSite, AllocationEvent, MemrayEvent};
use crate::memray::header::CaptureLayout;
use crate::memray::memory_counters::{HeapMoments, add_memory_counters, ms_to_ns};
use crate::memray::reader::MemrayReader;
use crate::memray::site_stacks::{
    ALLOCATED_METRICS, AT_END_METRICS, AT_PEAK_METRICS, MetricPair, SiteStacks, ThreadStacks,
};
use crate::memray::summary::{MemoryFold, SiteTable};
use crate::stacks::{ReductionSpec, StackAggregator};
use crate::trace_events::builder::TraceBuilder;
use crate::trace_events::emit::{emit_counters, emit_tracks};
use crate::trace_events::emitter::Emitter;
use crate::trace_events::tracks::Ident;

pub const MEMRAY_EXTRACTOR_NAME: &str = "memray";
/// Bumped whenever the rows produced for the same input change.
pub const MEMRAY_EXTRACTOR_VERSION: &str = "1";

/// Events between progress reports and cancellation checks.
const POLL_EVERY: u64 = 4096;

/// Counts the input bytes the decoder pulls (before lz4), for progress.
struct CountingInput<R> {
    inner: R,
    read: Rc<Cell<u64>>,
}

impl<R: Read> Read for CountingInput<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.set(self.read.get().saturating_add(n as u64));
        Ok(n)
    }
}

/// The high-water mark's time, tracked beside the fold with its rule (a
/// new mark when the live bytes reach the best so far).
#[derive(Default)]
struct PeakMoment {
    bytes: u64,
    not_before_ns: Option<u64>,
}

impl PeakMoment {
    fn after(&mut self, live_bytes: u64, not_before_ns: u64) {
        if live_bytes >= self.bytes {
            self.bytes = live_bytes;
            self.not_before_ns = Some(not_before_ns);
        }
    }
}

fn metric_pair(agg: &mut StackAggregator, (bytes, count): (&str, &str)) -> MetricPair {
    let spec = |metric: &str, unit: &str| ReductionSpec {
        metric: metric.to_owned(),
        weight_unit: unit.to_owned(),
        unit: unit.to_owned(),
    };
    MetricPair {
        bytes: agg.metric(spec(bytes, "bytes")),
        count: agg.metric(spec(count, "count")),
    }
}

/// Feeds `event` to the fold with its Python stack made per-thread.
fn fold_event(fold: &mut MemoryFold, threads: &mut ThreadStacks, event: MemrayEvent) {
    let event = match event {
        MemrayEvent::Allocation(a) => MemrayEvent::Allocation(AllocationEvent {
            python_stack: threads.id(a.python_stack, a.tid),
            ..a
        }),
        MemrayEvent::Aggregated(s) => MemrayEvent::Aggregated(AggregatedSite {
            python_stack: threads.id(s.python_stack, s.tid),
            ..s
        }),
        other => other,
    };
    fold.add(&event);
}

/// Extracts a memray capture into stack tables (allocation sites under
/// six metrics), `counters` (`mem.rss`, `mem.heap`) and their `tracks`.
pub fn extract_memray<R: BufRead>(
    input: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let read = Rc::new(Cell::new(0u64));
    let counted = CountingInput {
        inner: input,
        read: Rc::clone(&read),
    };
    let mut reader = MemrayReader::open(counted).map_err(open_error)?;
    let header = reader.header().clone();
    let aggregated = header.layout == CaptureLayout::AggregatedAllocations;
    let mut log = LimitationLog::default();
    let mut fold = MemoryFold::new();
    let mut threads = ThreadStacks::default();
    let mut peak = PeakMoment::default();
    let (mut events, mut folded, mut objects) = (0u64, 0u64, 0u64);
    let stopped = loop {
        if events % POLL_EVERY == 0 {
            observer.bytes_read(read.get());
            if observer.cancelled() {
                return Err(ExtractError::Cancelled);
            }
        }
        let event = match reader.next_event() {
            Ok(Some(event)) => event,
            Ok(None) => break None,
            Err(e) => break Some(e),
        };
        events += 1;
        let moment = match &event {
            MemrayEvent::Allocation(a) => Some(a.not_before_ns),
            MemrayEvent::Deallocation(d) => Some(d.not_before_ns),
            MemrayEvent::Object { .. } => {
                objects += 1;
                None
            }
            _ => None,
        };
        if matches!(
            event,
            MemrayEvent::Allocation(_)
                | MemrayEvent::Deallocation(_)
                | MemrayEvent::Aggregated(_)
                | MemrayEvent::MemorySample { .. }
        ) {
            folded += 1;
        }
        fold_event(&mut fold, &mut threads, event);
        if let Some(t) = moment {
            peak.after(fold.current_heap_bytes(), t);
        }
    };
    observer.bytes_read(read.get());
    if let Some(e) = stopped {
        let why = e.to_string();
        stream_stop(e, &mut log)?;
        if folded == 0 {
            return Err(ExtractError::Parse {
                message: format!("the memray capture holds no readable record: {why}"),
                offset: Some(reader.decoded_offset()),
            });
        }
    } else {
        note_stream_notes(&reader, &header, &mut log);
    }
    let pops = reader.notes().pops_past_stack_bottom;
    log.note_n("frame_pop_past_stack_bottom", pops, || {
        format!("{pops} Python frame pops found an empty stack; ignored")
    });
    log.note_n("object_records_not_read", objects, || {
        "Python object lifetimes (memray --track-object-lifetimes) are not read".to_owned()
    });
    if aggregated {
        log.note("no_allocation_history", || {
            "an --aggregate capture keeps per-site totals at the high-water mark and at exit only: no total allocated (memory.alloc_bytes) and no time of the peak".to_owned()
        });
    }

    let summary = fold.finish(reader.stacks(), usize::MAX);
    let pid = i64::from(header.pid);
    let process = process_name(&header.command_line);
    let mut agg = StackAggregator::new();
    let mut sites = SiteStacks::new(
        reader.stacks(),
        &threads,
        pid,
        header.main_tid,
        process.clone(),
    );
    let mut views: Vec<(&SiteTable, MetricPair)> = Vec::new();
    if let Some(allocated) = &summary.allocated {
        views.push((allocated, metric_pair(&mut agg, ALLOCATED_METRICS)));
    }
    views.push((&summary.at_end, metric_pair(&mut agg, AT_END_METRICS)));
    views.push((&summary.at_peak, metric_pair(&mut agg, AT_PEAK_METRICS)));
    let mut unplaced = 0u64;
    for (table, metrics) in views {
        for site in &table.top_stacks {
            if !sites.add(&mut agg, site, metrics) {
                unplaced += 1;
            }
        }
    }
    // Never expected: every site id the fold reports came from `threads`.
    log.note_n("site_without_stack", unplaced, || {
        format!("{unplaced} allocation sites could not be placed on a stack; left out")
    });
    let native = sites.native_frame_count();
    log.note_n("frames_unsymbolized", native, || {
        format!("{native} native frames are module + address: the capture holds no symbol names (memray resolves them at report time from the traced machine's binaries)")
    });
    let unknown = sites.unknown_code_objects();
    log.note_n("code_object_missing", unknown, || {
        format!(
            "{unknown} Python frames name a code object the capture never described: `{}`",
            crate::memray::site_stacks::UNKNOWN_CODE_OBJECT
        )
    });

    // The fold and this tracker apply one rule to one sequence; the guard
    // keeps a time only for the mark the fold reports.
    let peak_moment = peak
        .not_before_ns
        .filter(|_| !aggregated && summary.peak_heap_bytes > 0)
        .filter(|_| peak.bytes == summary.peak_heap_bytes);
    let end_ns = u64::try_from(header.end_time_ms)
        .ok()
        .filter(|&ms| ms > 0 && reader.notes().ended_with_trailer)
        .map(ms_to_ns);
    let moments = HeapMoments {
        peak: peak_moment.map(|t| {
            (
                i64::try_from(t).unwrap_or(i64::MAX),
                summary.peak_heap_bytes,
            )
        }),
        end: end_ns.map(|t| (t, summary.at_end.total.bytes)),
    };
    let mut trace = TraceBuilder::default();
    if let Some(name) = &process {
        let name = trace.strings.intern(name);
        trace.tracks.process_names.insert(Ident::Int(pid), name);
    }
    let counter_points = add_memory_counters(&mut trace, pid, &summary.memory_over_time, moments);
    let mut em = Emitter::new(options, sink);
    emit_tracks(&mut em, &trace)?;
    emit_counters(&mut em, &trace)?;
    agg.finish_all(
        em.run_id,
        em.artifact_id,
        em.batch_rows,
        &mut CountingSink {
            inner: &mut *em.sink,
            rows: &mut em.rows,
        },
    )?;
    let rows = em.into_rows();

    let mut coverage = BTreeMap::new();
    coverage.insert("thread_identity".to_owned(), true);
    coverage.insert("timestamps".to_owned(), false);
    coverage.insert("symbolized_frames".to_owned(), native == 0);
    coverage.insert("native_stacks".to_owned(), header.native_traces);
    coverage.insert("allocation_history".to_owned(), !aggregated);
    coverage.insert("counters".to_owned(), counter_points > 0);
    let time_span_ns = time_span(&header, &trace);
    Ok(ExtractionSummary {
        extractor: MEMRAY_EXTRACTOR_NAME.to_owned(),
        extractor_version: MEMRAY_EXTRACTOR_VERSION.to_owned(),
        format: FormatKind::Memray.name().to_owned(),
        producer: options
            .producer
            .clone()
            .unwrap_or_else(|| "memray".to_owned()),
        rows,
        time_span_ns,
        tracks: trace.tracks.list.len() as u64,
        coverage,
        limitations: log.into_limitations(),
        metadata: metadata(
            &header,
            &summary,
            &moments,
            reader.is_compressed(),
            threads_named(&reader),
        ),
        input_bytes: reader.decoded_offset(),
        input_events: summary.allocation_records,
        max_event_dur_ns: None,
    })
}

#[cfg(test)]
#[path = "extract_tests.rs"]
mod tests;
