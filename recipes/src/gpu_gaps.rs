//! Where the GPU waited, and what the host was doing meanwhile: idle gaps
//! per (artifact, device, stream) at least a threshold long, and
//! low-utilization chunks (each device's active span cut into N equal
//! chunks, those whose busy fraction is under a threshold), each with the
//! host activity during it ([`crate::host_activity`]).
//!
//! A gap's host activity is the *launching thread's*: the host call with the
//! correlation id of the activity after the gap ([`crate::gap_launchers`])
//! names the thread whose delay made the gap, and only its slices count. A
//! chunk's is the launcher of the first activity starting in or after it.
//! Without a correlated launch (traces that record none) every host thread
//! counts, and `host_scope` says so.
//!
//! Gaps use the accelerator-launches definition (start minus the running
//! maximum of earlier ends on the stream, when positive — as
//! [`crate::accelerator::stream_gap_rows`]), over kernels, memcpy and
//! memset: a stream copying memory is not idle. A chunk's busy time is the
//! union of the device's activity intervals (every stream) clipped to the
//! chunk. Both are sorted Rust passes over the device rows read once
//! ([`crate::device_pass`]): at 10 M events the window plans and the range
//! join of every row with every chunk took seconds. Only the `limit`
//! longest gaps and `limit` least busy chunks get the host activity.

use std::collections::BTreeMap;

use datafusion::prelude::SessionContext;
use serde::{Deserialize, Serialize};

use crate::common::{ArtifactScope, RecipeResult};
use crate::device_pass::{DeviceOp, DeviceOps, RunningEnd, covered, union_segments};
use crate::gap_launchers::{Launcher, launchers};
use crate::gap_samples::samples_in;
use crate::host_activity::{HostActivity, TimeWindow, host_activity, thread_names};

/// Host slice names reported per gap or chunk.
pub const HOST_TOP: usize = 3;

#[derive(Debug, Clone, PartialEq)]
pub struct GapOptions {
    /// Gaps at least this long (ns) are reported.
    pub min_gap_ns: i64,
    /// Chunks each device's active span is cut into.
    pub chunks: usize,
    /// Chunks busy less than this fraction (0..=1) are low-utilization.
    pub below: f64,
    /// Gaps and chunks returned (each).
    pub limit: usize,
    /// Only `[start, end)`: gaps are cut to it, and it (not each device's
    /// active span) is what the chunks divide.
    pub window: Option<(i64, i64)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuGap {
    /// Empty (and left out) when the scope has one artifact.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub artifact_id: String,
    pub device: Option<i64>,
    pub stream: Option<i64>,
    /// The running maximum of earlier ends on the stream.
    pub start_ns: i64,
    /// The start of the activity after the gap.
    pub end_ns: i64,
    pub duration_ns: i64,
    /// The activity that ended at `start_ns` (the smallest name on a tie).
    pub before: Option<String>,
    pub after: String,
    /// The host call that launched `after` (same correlation id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launched_by: Option<Launcher>,
    /// Whose activity `host` shows: `launching_thread`, or `all_threads`
    /// when no launch of `after` was recorded.
    pub host_scope: String,
    pub host: HostActivity,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceSpan {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub artifact_id: String,
    pub device: Option<i64>,
    /// First activity start to last activity end on the device.
    pub start_ns: i64,
    pub end_ns: i64,
    /// Chunks the span was cut into (fewer than asked when the span is
    /// shorter than that many ns; 0 for an empty span).
    pub chunks: i64,
    pub chunks_below: i64,
    /// The device's span as a share of its trace's span (first to last
    /// event of any kind), in percent; utilization and chunks are of the
    /// device span only (filled by the service, which knows the trace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_pct_of_trace: Option<f64>,
    /// How much of the trace passed, in percent, before the device's first
    /// activity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starts_at_pct_of_trace: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LowUtilizationChunk {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub artifact_id: String,
    pub device: Option<i64>,
    /// 0-based position in the device's span.
    pub chunk: i64,
    pub start_ns: i64,
    pub end_ns: i64,
    pub busy_ns: i64,
    pub busy_fraction: f64,
    /// The host call that launched the first activity starting in or after
    /// the chunk (same correlation id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launched_by: Option<Launcher>,
    /// Whose activity `host` shows: `launching_thread` or `all_threads`.
    pub host_scope: String,
    pub host: HostActivity,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuGapsAnswer {
    /// Kernels, memcpy or memset rows were found in scope.
    pub has_device_activity: bool,
    /// Gaps at least `min_gap_ns` long, all of them.
    pub gaps_found: u64,
    pub gaps_total_ns: i64,
    /// The longest `limit` gaps, longest first.
    pub gaps: Vec<GpuGap>,
    pub devices: Vec<DeviceSpan>,
    /// Chunks under the threshold, all devices.
    pub low_utilization_found: u64,
    /// The `limit` least busy of them, least busy first.
    pub low_utilization: Vec<LowUtilizationChunk>,
}

pub async fn gpu_gaps(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    options: &GapOptions,
) -> RecipeResult<GpuGapsAnswer> {
    let mut ops = DeviceOps::read(ctx, scope).await?;
    let (gaps_found, gaps_total_ns, mut gaps, gap_pids, gap_correlations) =
        longest_gaps(&mut ops, options);
    let (spans, pids) = device_spans(&mut ops, options.window);
    let (devices, low_utilization_found, mut chunks) = low_utilization(options, &spans);

    // The launching thread of the activity that ended each gap, and of the
    // first activity starting in or after each chunk.
    let chunk_correlations = next_correlations(&ops, &chunks);
    let keyed = |artifact: &str, c: &Option<i64>| c.map(|c| (artifact.to_owned(), c));
    let wanted: Vec<(String, i64)> = gaps
        .iter()
        .zip(&gap_correlations)
        .filter_map(|(g, c)| keyed(&g.artifact_id, c))
        .chain(
            chunks
                .iter()
                .zip(&chunk_correlations)
                .filter_map(|(k, c)| keyed(&k.artifact_id, c)),
        )
        .collect();
    let launched = launchers(ctx, &wanted).await?;
    let find = |artifact: &str, c: &Option<i64>| -> Option<Launcher> {
        c.and_then(|c| launched.get(&(artifact.to_owned(), c)).cloned())
    };
    for (g, c) in gaps.iter_mut().zip(&gap_correlations) {
        g.launched_by = find(&g.artifact_id, c);
        g.host_scope = scope_word(g.launched_by.as_ref()).into();
    }
    for (k, c) in chunks.iter_mut().zip(&chunk_correlations) {
        k.launched_by = find(&k.artifact_id, c);
        k.host_scope = scope_word(k.launched_by.as_ref()).into();
    }

    // One host join for every window (gaps first, then chunks).
    let mut windows = Vec::new();
    for (i, g) in gaps.iter().enumerate() {
        let launcher = g.launched_by.as_ref().filter(|l| l.tid.is_some());
        windows.push(TimeWindow {
            id: i as i64,
            artifact_id: g.artifact_id.clone(),
            pid: launcher
                .and_then(|l| l.pid)
                .or(gap_pids.get(i).copied().flatten()),
            tid: launcher.and_then(|l| l.tid),
            start_ns: g.start_ns,
            end_ns: g.end_ns,
        });
    }
    for (i, c) in chunks.iter().enumerate() {
        let launcher = c.launched_by.as_ref().filter(|l| l.tid.is_some());
        windows.push(TimeWindow {
            id: (gaps.len() + i) as i64,
            artifact_id: c.artifact_id.clone(),
            pid: launcher.and_then(|l| l.pid).or(pids
                .get(&(c.artifact_id.clone(), c.device))
                .copied()
                .flatten()),
            tid: launcher.and_then(|l| l.tid),
            start_ns: c.start_ns,
            end_ns: c.end_ns,
        });
    }
    let mut host = host_activity(ctx, &windows, HOST_TOP).await?;
    for (id, sampled) in samples_in(ctx, &windows, HOST_TOP).await? {
        host.entry(id).or_default().samples = Some(sampled);
    }
    for (i, g) in gaps.iter_mut().enumerate() {
        g.host = host.remove(&(i as i64)).unwrap_or_default();
    }
    let launchers_named = gaps.iter().map(|g| &g.launched_by);
    if launchers_named
        .chain(chunks.iter().map(|c| &c.launched_by))
        .any(Option::is_some)
    {
        let names = thread_names(ctx).await?;
        let name = |artifact: &str, l: &mut Option<Launcher>| {
            if let Some(l) = l.as_mut() {
                l.thread = l
                    .track
                    .and_then(|t| names.get(&(artifact.to_owned(), t)).cloned().flatten());
            }
        };
        for g in &mut gaps {
            name(&g.artifact_id, &mut g.launched_by);
        }
        for c in &mut chunks {
            name(&c.artifact_id, &mut c.launched_by);
        }
    }
    let offset = gaps.len();
    for (i, c) in chunks.iter_mut().enumerate() {
        c.host = host.remove(&((offset + i) as i64)).unwrap_or_default();
    }
    // A launching thread's slices all run on it: `launched_by` names it once.
    for (launcher, host) in gaps
        .iter_mut()
        .map(|g| (&g.launched_by, &mut g.host))
        .chain(chunks.iter_mut().map(|c| (&c.launched_by, &mut c.host)))
    {
        if launcher.as_ref().is_some_and(|l| l.tid.is_some()) {
            host.top.iter_mut().for_each(|s| s.thread = None);
        }
    }
    Ok(GpuGapsAnswer {
        has_device_activity: !spans.is_empty(),
        gaps_found,
        gaps_total_ns,
        gaps,
        devices,
        low_utilization_found,
        low_utilization: chunks,
    })
}

/// Count, total, the longest gaps, and per gap the pid and correlation id
/// of the activity after it.
type Gaps = (u64, i64, Vec<GpuGap>, Vec<Option<i64>>, Vec<Option<i64>>);

/// One gap before its strings are read: where, how long, the activity
/// ending at its start and the one starting at its end.
struct RawGap {
    op: DeviceOp,
    start: i64,
    /// The next activity's start, or the window's end when that is sooner.
    end: i64,
    before: Option<u32>,
}

/// Count and total of gaps ≥ the threshold, and the longest `limit` with
/// the activity before and after each (and the pid of the one after).
/// Per stream in `(ts_ns, event_id)` order, a gap is the start minus the
/// running maximum of earlier ends; the activity before it is the smallest
/// name among the rows ending exactly there (only earlier rows can: a later
/// row starts after the gap's start).
fn longest_gaps(ops: &mut DeviceOps, options: &GapOptions) -> Gaps {
    let mut raw: Vec<RawGap> = Vec::new();
    let (mut found, mut total) = (0u64, 0i64);
    let strings = std::mem::take(&mut ops.strings);
    let streams = ops.groups(DeviceOp::stream_order, |r| (r.artifact, r.device, r.stream));
    for stream in streams {
        let mut reached = RunningEnd::default();
        for op in stream {
            if let Some(start) = reached.end {
                let (start, end) = match options.window {
                    Some((a, b)) => (start.max(a), op.ts.min(b)),
                    None => (start, op.ts),
                };
                let gap = end - start;
                if gap > 0 && gap >= options.min_gap_ns {
                    found += 1;
                    total += gap;
                    raw.push(RawGap {
                        op: *op,
                        start,
                        end,
                        before: reached.name,
                    });
                }
            }
            reached.add(op.end, op.name, &strings);
        }
    }
    raw.sort_unstable_by(|a, b| {
        (b.end - b.start)
            .cmp(&(a.end - a.start))
            .then_with(|| strings.cmp(a.op.artifact, b.op.artifact))
            .then_with(|| {
                (a.op.device, a.op.stream, a.op.ts).cmp(&(b.op.device, b.op.stream, b.op.ts))
            })
    });
    raw.truncate(options.limit);
    let gaps = raw
        .iter()
        .map(|g| GpuGap {
            artifact_id: strings.get(g.op.artifact).to_owned(),
            device: g.op.device,
            stream: g.op.stream,
            start_ns: g.start,
            end_ns: g.end,
            duration_ns: g.end - g.start,
            before: g.before.map(|n| strings.get(n).to_owned()),
            after: strings.get(g.op.name).to_owned(),
            launched_by: None,
            host_scope: "all_threads".into(),
            host: HostActivity::default(),
        })
        .collect();
    let pids = raw.iter().map(|g| g.op.pid).collect();
    let correlations = raw.iter().map(|g| g.op.correlation).collect();
    ops.strings = strings;
    (found, total, gaps, pids, correlations)
}

/// Per (artifact, device): first start, last end, and the chunks' busy
/// time. Devices in (artifact, device) order.
struct Span {
    artifact_id: String,
    device: Option<i64>,
    start: i64,
    end: i64,
    /// Union of the device's activity, sorted disjoint segments.
    busy: Vec<(i64, i64)>,
}

type Spans = (Vec<Span>, BTreeMap<(String, Option<i64>), Option<i64>>);

/// Per (artifact, device): first start, last end and the union of its
/// activity; and the device's pid when all its rows share one.
/// With a window, each span is the window itself.
fn device_spans(ops: &mut DeviceOps, window: Option<(i64, i64)>) -> Spans {
    let strings = std::mem::take(&mut ops.strings);
    let (mut out, mut pids) = (Vec::new(), BTreeMap::new());
    // Stream order groups a device's rows too (and the rows are already in
    // it after the gaps pass, which the sort detects in one sweep).
    for device in ops.groups(DeviceOp::stream_order, |r| (r.artifact, r.device)) {
        let Some(first) = device.first() else {
            continue;
        };
        let artifact_id = strings.get(first.artifact).to_owned();
        let known: Vec<i64> = device.iter().filter_map(|r| r.pid).collect();
        let pid = match (known.iter().min(), known.iter().max()) {
            (Some(a), Some(b)) if a == b => Some(*a),
            _ => None,
        };
        pids.insert((artifact_id.clone(), first.device), pid);
        let (start, end) = window.unwrap_or((
            device.iter().map(|r| r.ts).min().unwrap_or(0),
            device.iter().map(|r| r.end).max().unwrap_or(0),
        ));
        out.push(Span {
            artifact_id,
            device: first.device,
            start,
            end,
            busy: union_segments(device.iter().map(|r| (r.ts, r.end)).collect()),
        });
    }
    out.sort_by(|a, b| (&a.artifact_id, a.device).cmp(&(&b.artifact_id, b.device)));
    ops.strings = strings;
    (out, pids)
}

type LowUse = (Vec<DeviceSpan>, u64, Vec<LowUtilizationChunk>);

/// Per device span, `n = min(chunks, len)` chunks `[start + i·len/n, start
/// + (i+1)·len/n)` (none empty), each busy for the part of the device's
/// activity union inside it; the chunks under `below`, least busy first.
fn low_utilization(options: &GapOptions, spans: &[Span]) -> LowUse {
    let (mut devices, mut below) = (Vec::new(), Vec::new());
    for span in spans {
        let len = i128::from(span.end) - i128::from(span.start);
        let n = (options.chunks as i128).min(len.max(0));
        let mut from = 0;
        let mut chunks_below = 0;
        for i in 0..n {
            let start = (i128::from(span.start) + i * len / n) as i64;
            let end = (i128::from(span.start) + (i + 1) * len / n) as i64;
            let busy_ns = covered(&span.busy, &mut from, start, end);
            let busy_fraction = busy_ns as f64 / (end - start) as f64;
            if busy_fraction < options.below {
                chunks_below += 1;
                below.push(LowUtilizationChunk {
                    artifact_id: span.artifact_id.clone(),
                    device: span.device,
                    chunk: i as i64,
                    start_ns: start,
                    end_ns: end,
                    busy_ns,
                    busy_fraction,
                    launched_by: None,
                    host_scope: "all_threads".into(),
                    host: HostActivity::default(),
                });
            }
        }
        devices.push(DeviceSpan {
            artifact_id: span.artifact_id.clone(),
            device: span.device,
            start_ns: span.start,
            end_ns: span.end,
            chunks: n as i64,
            chunks_below,
            span_pct_of_trace: None,
            starts_at_pct_of_trace: None,
        });
    }
    let found = below.len() as u64;
    below.sort_by(|a, b| {
        a.busy_fraction.total_cmp(&b.busy_fraction).then_with(|| {
            (&a.artifact_id, a.device, a.chunk).cmp(&(&b.artifact_id, b.device, b.chunk))
        })
    });
    below.truncate(options.limit);
    (devices, found, below)
}

/// `launching_thread` when a launcher with a thread is known, else
/// `all_threads`.
fn scope_word(launcher: Option<&Launcher>) -> &'static str {
    if launcher.is_some_and(|l| l.tid.is_some()) {
        "launching_thread"
    } else {
        "all_threads"
    }
}

/// Per chunk, the correlation id of the first device activity on its device
/// starting at or after the chunk's start (the work that ended the lull).
/// The rows are in stream order after [`device_spans`]: a binary search per
/// (chunk, stream) finds each stream's next activity; the earliest wins.
fn next_correlations(ops: &DeviceOps, chunks: &[LowUtilizationChunk]) -> Vec<Option<i64>> {
    let mut best: Vec<Option<(i64, i64, Option<i64>)>> = vec![None; chunks.len()];
    if chunks.is_empty() {
        return Vec::new();
    }
    let artifacts: Vec<Option<u32>> = chunks
        .iter()
        .map(|c| ops.strings.find(&c.artifact_id))
        .collect();
    for stream in ops
        .rows
        .chunk_by(|a, b| (a.artifact, a.device, a.stream) == (b.artifact, b.device, b.stream))
    {
        let Some(first) = stream.first() else {
            continue;
        };
        for (i, c) in chunks.iter().enumerate() {
            if artifacts[i] != Some(first.artifact) || c.device != first.device {
                continue;
            }
            let at = stream.partition_point(|r| r.ts < c.start_ns);
            if let Some(op) = stream.get(at)
                && best[i].is_none_or(|(ts, id, _)| (op.ts, op.event_id) < (ts, id))
            {
                best[i] = Some((op.ts, op.event_id, op.correlation));
            }
        }
    }
    best.into_iter()
        .map(|b| b.and_then(|(_, _, c)| c))
        .collect()
}
