//! Where the devices sat idle, why, and what the host was doing meanwhile.
//!
//! A gap is a *device gap* ([`crate::time_accounting::devices`]): a stretch
//! in which no stream of the device ran a kernel, copy or memset. A stream
//! idle while another stream of the same device works is no gap (per-stream
//! busy time is reported per stream and never summed). Each gap is
//! classified by the queue state when it began — `starved` (the next
//! activity's launch call started after the gap began: the host was late),
//! `stalled` (it was already queued: a dependency held it), `unlinked` (no
//! launch recorded) — and devices carry their idle time split the same way
//! over a named span.
//!
//! A gap's host activity is the *launching thread's* ([`crate::gap_launchers`]):
//! for a starved gap, what it did from the gap's start until it issued the
//! launch (the time it was late); for a stalled or unlinked gap, during the
//! whole gap. Without a correlated launch every host thread counts, and
//! `host_scope` says so. Low-utilization chunks (each device's span, or the
//! window, cut into N equal chunks, those whose busy fraction is under a
//! threshold) keep the launcher of the first activity in or after them.
//!
//! All sorted Rust passes over the device rows read once
//! ([`crate::device_pass`]); only the `limit` longest gaps and `limit`
//! least busy chunks get the host activity.

use std::collections::{BTreeMap, HashMap};

use datafusion::prelude::SessionContext;
use serde::{Deserialize, Serialize};

use crate::common::{ArtifactScope, RecipeResult};
use crate::device_pass::{DeviceOps, covered};
use crate::gap_launchers::{Launcher, launchers};
use crate::gap_samples::samples_in;
use crate::gap_stalls::stream_waits_before;
use crate::host_activity::{HostActivity, TimeWindow, host_activity, thread_names};
use crate::time_accounting::devices::{
    DeviceActivity, DeviceGap, DeviceTime, GapClass, LaunchStarts, device_activity, device_time,
};
use crate::time_accounting::spans::{NamedSpan, SpanName};

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
    pub window: Option<NamedSpan>,
    /// Each artifact's trace span (the span device time is of without a
    /// window; a device of an artifact not listed uses its active span).
    pub trace_spans: BTreeMap<String, (i64, i64)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuGap {
    /// Empty (and left out) when the scope has one artifact.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub artifact_id: String,
    pub device: Option<i64>,
    /// When the device's last activity before the gap ended (cut to the window).
    pub start_ns: i64,
    /// When its next activity started (cut to the window).
    pub end_ns: i64,
    pub duration_ns: i64,
    /// `starved`, `stalled` or `unlinked` (see the answer's `gap_definition`).
    pub class: GapClass,
    /// The activity that ended at the gap's start (the smallest name on a tie).
    pub prev_op: Option<String>,
    /// The activity that ended the gap, and its stream.
    pub next_op: String,
    pub next_stream: Option<i64>,
    /// The host call that launched `next_op` (same correlation id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launched_by: Option<Launcher>,
    /// Starved: how long after the gap began the launch call started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_late_ns: Option<i64>,
    /// Stalled: how long `next_op` had been queued (since its launch call
    /// started) when it began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_for_ns: Option<i64>,
    /// Stalled: what held the queued work, as far as the trace records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited_on: Option<String>,
    /// Whose activity `host` shows: `launching_thread`, or `all_threads`
    /// when no launch of `next_op` was recorded.
    pub host_scope: String,
    /// The stretch `host` covers: the gap's start until the launch
    /// (`until_launch`, starved gaps) or the whole gap (`gap`).
    pub host_window: String,
    pub host: HostActivity,
}

/// Gaps of one class among those reported (≥ the threshold).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassTotal {
    pub gaps: u64,
    pub total_ns: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceEntry {
    #[serde(flatten)]
    pub time: DeviceTime,
    /// The device's active span (first activity start, last activity end).
    pub active_start_ns: i64,
    pub active_end_ns: i64,
    /// Chunks the active span (or the window) was cut into (fewer than
    /// asked when it is shorter than that many ns; 0 for an empty span).
    pub chunks: i64,
    pub chunks_below: i64,
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
    /// Device gaps at least `min_gap_ns` long, all of them.
    pub gaps_found: u64,
    pub gaps_total_ns: i64,
    /// Those gaps by class.
    pub gaps_by_class: BTreeMap<GapClass, ClassTotal>,
    /// The longest `limit` gaps, longest first.
    pub gaps: Vec<GpuGap>,
    /// Per device: busy and idle over the named span, idle by why.
    pub devices: Vec<DeviceEntry>,
    /// Chunks under the threshold, all devices.
    pub low_utilization_found: u64,
    /// The `limit` least busy of them, least busy first.
    pub low_utilization: Vec<LowUtilizationChunk>,
}

/// A reported gap before its strings and host activity are filled.
struct Picked {
    device: usize,
    gap: DeviceGap,
    start: i64,
    end: i64,
}

pub async fn gpu_gaps(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    options: &GapOptions,
) -> RecipeResult<GpuGapsAnswer> {
    let mut ops = DeviceOps::read(ctx, scope).await?;
    let devices = device_activity(&mut ops);
    let window = options.window.as_ref().map(|w| (w.start_ns, w.end_ns));
    let cut = |g: &DeviceGap| match window {
        Some((a, b)) => (g.start.max(a), g.end.min(b)),
        None => (g.start, g.end),
    };

    // Every gap inside the window needs its class (the idle split covers
    // them all): the launches of every next activity, found in one scan.
    let wanted: Vec<(String, i64)> = devices
        .iter()
        .flat_map(|d| d.gaps.iter())
        .filter(|g| {
            let (s, e) = cut(g);
            e > s
        })
        .filter_map(|g| {
            g.next
                .correlation
                .map(|c| (ops.strings.get(g.next.artifact).to_owned(), c))
        })
        .collect();
    let launched = launchers(ctx, &wanted).await?;
    let mut starts = LaunchStarts::new();
    for ((artifact, c), l) in &launched {
        if let Some(a) = ops.strings.find(artifact) {
            starts.insert((a, *c), l.ts_ns);
        }
    }

    // Reported gaps: at least the threshold, longest first.
    let (mut found, mut total) = (0u64, 0i64);
    let mut by_class: BTreeMap<GapClass, ClassTotal> = BTreeMap::new();
    let mut picked: Vec<Picked> = Vec::new();
    for (i, d) in devices.iter().enumerate() {
        for g in &d.gaps {
            let (s, e) = cut(g);
            if e <= s || e - s < options.min_gap_ns {
                continue;
            }
            found += 1;
            total += e - s;
            let class = crate::time_accounting::devices::classify(g, &starts);
            let slot = by_class.entry(class).or_default();
            slot.gaps += 1;
            slot.total_ns += e - s;
            picked.push(Picked {
                device: i,
                gap: *g,
                start: s,
                end: e,
            });
        }
    }
    picked.sort_unstable_by(|a, b| {
        (b.end - b.start)
            .cmp(&(a.end - a.start))
            .then_with(|| {
                ops.strings
                    .cmp(devices[a.device].artifact, devices[b.device].artifact)
            })
            .then_with(|| {
                (devices[a.device].device, a.start).cmp(&(devices[b.device].device, b.start))
            })
    });
    picked.truncate(options.limit);

    let mut gaps: Vec<GpuGap> = picked
        .iter()
        .map(|p| {
            let d = &devices[p.device];
            let artifact_id = ops.strings.get(d.artifact).to_owned();
            let launcher = p
                .gap
                .next
                .correlation
                .and_then(|c| launched.get(&(artifact_id.clone(), c)).cloned());
            let class = GapClass::of(p.gap.start, launcher.as_ref().map(|l| l.ts_ns));
            let (host_late_ns, queued_for_ns) = match (&launcher, class) {
                (Some(l), GapClass::Starved) => (Some(l.ts_ns - p.gap.start), None),
                (Some(l), GapClass::Stalled) => (None, Some(p.gap.end - l.ts_ns)),
                _ => (None, None),
            };
            GpuGap {
                artifact_id,
                device: d.device,
                start_ns: p.start,
                end_ns: p.end,
                duration_ns: p.end - p.start,
                class,
                prev_op: p.gap.prev_name.map(|n| ops.strings.get(n).to_owned()),
                next_op: ops.strings.get(p.gap.next.name).to_owned(),
                next_stream: p.gap.next.stream,
                launched_by: launcher,
                host_late_ns,
                queued_for_ns,
                waited_on: None,
                host_scope: "all_threads".into(),
                host_window: "gap".into(),
                host: HostActivity::default(),
            }
        })
        .collect();
    for g in &mut gaps {
        g.host_scope = scope_word(g.launched_by.as_ref()).into();
    }
    stalled_causes(ctx, &mut gaps).await?;

    let spans: Vec<NamedSpan> = devices
        .iter()
        .map(|d| span_of(d, ops.strings.get(d.artifact), options))
        .collect();
    let (entries, low_utilization_found, mut chunks) =
        low_utilization(options, &devices, &spans, &starts, &ops);
    let chunk_correlations = next_correlations(&ops, &devices, &chunks);
    let wanted: Vec<(String, i64)> = chunks
        .iter()
        .zip(&chunk_correlations)
        .filter_map(|(k, c)| c.map(|c| (k.artifact_id.clone(), c)))
        .collect();
    let chunk_launchers = launchers(ctx, &wanted).await?;
    for (k, c) in chunks.iter_mut().zip(&chunk_correlations) {
        k.launched_by = c.and_then(|c| chunk_launchers.get(&(k.artifact_id.clone(), c)).cloned());
        k.host_scope = scope_word(k.launched_by.as_ref()).into();
    }

    // One host scan for every window (gaps first, then chunks).
    let mut windows = Vec::new();
    for (i, (g, p)) in gaps.iter_mut().zip(&picked).enumerate() {
        let launcher = g.launched_by.as_ref().filter(|l| l.tid.is_some());
        let mut end = g.end_ns;
        if let (GapClass::Starved, Some(l)) = (g.class, g.launched_by.as_ref()) {
            end = l.ts_ns.clamp(g.start_ns, g.end_ns);
            g.host_window = "until_launch".into();
        }
        windows.push(TimeWindow {
            id: i as i64,
            artifact_id: g.artifact_id.clone(),
            pid: launcher.and_then(|l| l.pid).or(devices[p.device].pid),
            tid: launcher.and_then(|l| l.tid),
            start_ns: g.start_ns,
            end_ns: end,
        });
    }
    let device_pid: HashMap<(String, Option<i64>), Option<i64>> = devices
        .iter()
        .map(|d| ((ops.strings.get(d.artifact).to_owned(), d.device), d.pid))
        .collect();
    for (i, c) in chunks.iter().enumerate() {
        let launcher = c.launched_by.as_ref().filter(|l| l.tid.is_some());
        windows.push(TimeWindow {
            id: (gaps.len() + i) as i64,
            artifact_id: c.artifact_id.clone(),
            pid: launcher.and_then(|l| l.pid).or(device_pid
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
    let offset = gaps.len();
    for (i, c) in chunks.iter_mut().enumerate() {
        c.host = host.remove(&((offset + i) as i64)).unwrap_or_default();
    }
    if gaps
        .iter()
        .map(|g| &g.launched_by)
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
        has_device_activity: !devices.is_empty(),
        gaps_found: found,
        gaps_total_ns: total,
        gaps_by_class: by_class,
        gaps,
        devices: entries,
        low_utilization_found,
        low_utilization: chunks,
    })
}

/// The span a device's time is of: the window, else its artifact's trace,
/// else its own active span.
fn span_of(d: &DeviceActivity, artifact: &str, options: &GapOptions) -> NamedSpan {
    if let Some(w) = &options.window {
        return w.clone();
    }
    match options.trace_spans.get(artifact) {
        Some(&(a, b)) => NamedSpan::new(SpanName::Trace, None, a.min(d.first), b.max(d.last)),
        None => NamedSpan::new(SpanName::DeviceActive, None, d.first, d.last),
    }
}

/// What held each stalled gap's queued work, as far as the trace says: a
/// CUDA graph's own dependencies, or a stream-wait call the launching
/// thread made before the launch.
async fn stalled_causes(ctx: &SessionContext, gaps: &mut [GpuGap]) -> RecipeResult<()> {
    let asked: Vec<(String, Option<i64>, i64)> = gaps
        .iter()
        .filter(|g| g.class == GapClass::Stalled)
        .filter_map(|g| {
            g.launched_by
                .as_ref()
                .map(|l| (g.artifact_id.clone(), l.tid, l.ts_ns))
        })
        .collect();
    let waits = stream_waits_before(ctx, &asked).await?;
    for g in gaps.iter_mut().filter(|g| g.class == GapClass::Stalled) {
        let Some(l) = &g.launched_by else { continue };
        let graph = l.name.contains("GraphLaunch");
        let wait = waits
            .get(&(g.artifact_id.clone(), l.tid, l.ts_ns))
            .copied()
            .flatten();
        let mut why = Vec::new();
        if graph {
            why.push("its CUDA graph's own dependencies (launched by a graph launch)".to_owned());
        }
        if let Some(before) = wait {
            why.push(format!(
                "a stream-wait-event call {} µs before its launch on the launching thread",
                (before as f64 / 1000.0).round()
            ));
        }
        if why.is_empty() {
            why.push(
                "a dependency the trace does not record (an event, another stream, device or process)"
                    .to_owned(),
            );
        }
        g.waited_on = Some(why.join("; "));
    }
    Ok(())
}

type LowUse = (Vec<DeviceEntry>, u64, Vec<LowUtilizationChunk>);

/// Per device, its time over its span and `n = min(chunks, len)` chunks of
/// its active span (or the window) `[start + i·len/n, start + (i+1)·len/n)`,
/// each busy for the part of the device's activity union inside it; the
/// chunks under `below`, least busy first.
fn low_utilization(
    options: &GapOptions,
    devices: &[DeviceActivity],
    spans: &[NamedSpan],
    starts: &LaunchStarts,
    ops: &DeviceOps,
) -> LowUse {
    let (mut entries, mut below) = (Vec::new(), Vec::new());
    for (d, span) in devices.iter().zip(spans) {
        let artifact_id = ops.strings.get(d.artifact).to_owned();
        let (start, end) = match &options.window {
            Some(w) => (w.start_ns, w.end_ns),
            None => (d.first, d.last),
        };
        let len = i128::from(end) - i128::from(start);
        let n = (options.chunks as i128).min(len.max(0));
        let mut from = 0;
        let mut chunks_below = 0;
        for i in 0..n {
            let a = (i128::from(start) + i * len / n) as i64;
            let b = (i128::from(start) + (i + 1) * len / n) as i64;
            let busy_ns = covered(&d.busy, &mut from, a, b);
            let busy_fraction = busy_ns as f64 / (b - a) as f64;
            if busy_fraction < options.below {
                chunks_below += 1;
                below.push(LowUtilizationChunk {
                    artifact_id: artifact_id.clone(),
                    device: d.device,
                    chunk: i as i64,
                    start_ns: a,
                    end_ns: b,
                    busy_ns,
                    busy_fraction,
                    launched_by: None,
                    host_scope: "all_threads".into(),
                    host: HostActivity::default(),
                });
            }
        }
        entries.push(DeviceEntry {
            time: device_time(d, &artifact_id, span, starts),
            active_start_ns: d.first,
            active_end_ns: d.last,
            chunks: n as i64,
            chunks_below,
        });
    }
    let found = below.len() as u64;
    below.sort_by(|a, b| {
        a.busy_fraction.total_cmp(&b.busy_fraction).then_with(|| {
            (&a.artifact_id, a.device, a.chunk).cmp(&(&b.artifact_id, b.device, b.chunk))
        })
    });
    below.truncate(options.limit);
    (entries, found, below)
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
/// The rows are in device order after [`device_activity`].
fn next_correlations(
    ops: &DeviceOps,
    devices: &[DeviceActivity],
    chunks: &[LowUtilizationChunk],
) -> Vec<Option<i64>> {
    let by_device: HashMap<(&str, Option<i64>), (i64, i64)> = devices
        .iter()
        .map(|d| ((ops.strings.get(d.artifact), d.device), (d.first, d.last)))
        .collect();
    chunks
        .iter()
        .map(|c| {
            by_device.get(&(c.artifact_id.as_str(), c.device))?;
            let artifact = ops.strings.find(&c.artifact_id)?;
            let at = ops.rows.partition_point(|r| {
                (r.artifact, r.device, r.ts) < (artifact, c.device, c.start_ns)
            });
            ops.rows
                .get(at)
                .filter(|r| r.artifact == artifact && r.device == c.device)
                .and_then(|r| r.correlation)
        })
        .collect()
}
