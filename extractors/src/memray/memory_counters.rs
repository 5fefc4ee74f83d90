//! A memray capture's memory over time as `counters` in bytes on counter
//! tracks of the traced process, the series `analyze_memory` reads:
//!
//! * `mem.rss`: the resident set size memray's background thread sampled
//!   (every ~10 ms; Perfetto's process RSS series has the same name);
//! * `mem.heap`: the bytes memray's hooks saw live at each of those
//!   samples, plus two points the samples miss: the high-water mark, at
//!   the time of the last sample before the allocation that reached it (a
//!   lower bound: allocation records carry no time), and what was still
//!   allocated when tracking stopped, at the capture's end time.
//!
//! Timestamps are Unix nanoseconds (memray writes milliseconds).

use crate::memray::summary::MemoryPoint;
use crate::trace_events::builder::TraceBuilder;
use crate::trace_events::store::CounterRow;
use crate::trace_events::tracks::Ident;

pub const RSS_SERIES: &str = "mem.rss";
pub const HEAP_SERIES: &str = "mem.heap";

/// The heap's two moments the samples do not show.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeapMoments {
    /// (time lower bound in ns, bytes) of the high-water mark.
    pub peak: Option<(i64, u64)>,
    /// (end of tracking in ns, bytes still allocated then).
    pub end: Option<(i64, u64)>,
}

/// Milliseconds since the epoch as ns.
pub fn ms_to_ns(ms: u64) -> i64 {
    i64::try_from(ms)
        .unwrap_or(i64::MAX)
        .saturating_mul(1_000_000)
}

fn value(bytes: u64) -> f64 {
    // Exact below 2^53 bytes (8 PiB).
    bytes as f64
}

/// Adds the memory series of process `pid` to `trace`; returns the
/// points written.
pub fn add_memory_counters(
    trace: &mut TraceBuilder,
    pid: i64,
    points: &[MemoryPoint],
    moments: HeapMoments,
) -> usize {
    let process = Ident::Int(pid);
    let unit = trace.bytes_unit;
    let rss_name = trace.strings.intern(RSS_SERIES);
    let heap_name = trace.strings.intern(HEAP_SERIES);
    let before = trace.counters.len();
    if !points.is_empty() {
        let rss = trace.tracks.counter_track(process, rss_name);
        for p in points {
            trace.counters.push(CounterRow {
                track: rss,
                ts: ms_to_ns(p.ms_since_epoch),
                value: value(p.rss_bytes),
                name: rss_name,
                unit,
            });
        }
    }
    let heap_points = points
        .iter()
        .map(|p| (ms_to_ns(p.ms_since_epoch), p.heap_bytes))
        .chain(moments.peak)
        .chain(moments.end);
    let mut heap = None;
    for (ts, bytes) in heap_points {
        let track = *heap.get_or_insert_with(|| trace.tracks.counter_track(process, heap_name));
        trace.counters.push(CounterRow {
            track,
            ts,
            value: value(bytes),
            name: heap_name,
            unit,
        });
    }
    trace.counters.len() - before
}
