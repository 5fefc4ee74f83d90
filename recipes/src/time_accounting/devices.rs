//! Device time: one device's busy time is the union of its kernels, copies
//! and memsets over all of its streams; its idle time is a named span minus
//! that; every idle stretch between two activities is a *device gap*, and
//! each gap is classified by the queue state when it began:
//!
//! - `starved`: the activity that ended the gap had not been launched yet
//!   when the device went idle (its launch call started after the gap
//!   began): the host was late.
//! - `stalled`: it had been launched before the gap began — the work was
//!   queued and the device still did not run it (a stream or event
//!   dependency, a sync, another device or process).
//! - `unlinked`: no launch call with its correlation id was recorded, so
//!   the queue state is unknown.
//!
//! Before the device's first activity and after its last there is no next
//! (or previous) work to speak of: those stretches are counted apart.
//! Per-stream busy figures are kept per stream and never summed: three
//! streams idle for the same millisecond are one idle millisecond of the
//! device, or none when a fourth was busy.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::intervals::{covered_in, union_segments};
use super::spans::NamedSpan;
use crate::device_pass::{DeviceOp, DeviceOps, RunningEnd};

/// Why a device gap happened (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GapClass {
    Starved,
    Stalled,
    Unlinked,
}

impl GapClass {
    /// The class of a gap starting at `gap_start` whose next activity's
    /// launch call started at `launch_ts` (None: no launch recorded).
    pub fn of(gap_start: i64, launch_ts: Option<i64>) -> GapClass {
        match launch_ts {
            None => GapClass::Unlinked,
            Some(t) if t > gap_start => GapClass::Starved,
            Some(_) => GapClass::Stalled,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            GapClass::Starved => "starved",
            GapClass::Stalled => "stalled",
            GapClass::Unlinked => "unlinked",
        }
    }
}

/// One stretch with no activity on any stream of a device, between two
/// activities (unclipped).
#[derive(Debug, Clone, Copy)]
pub struct DeviceGap {
    pub start: i64,
    pub end: i64,
    /// The activity that started at `end` (the earliest by `(ts, event_id)`).
    pub next: DeviceOp,
    /// The name of the activity that ended at `start` (smallest on a tie).
    pub prev_name: Option<u32>,
}

/// One stream: its id, the union of its own activity, how many activities.
pub type StreamActivity = (Option<i64>, Vec<(i64, i64)>, u64);

/// One device of one artifact: its activity's union, extent and gaps.
#[derive(Debug, Clone)]
pub struct DeviceActivity {
    pub artifact: u32,
    pub device: Option<i64>,
    /// Sorted, disjoint union of every activity of every stream.
    pub busy: Vec<(i64, i64)>,
    /// First activity start and last activity end (the device's active span).
    pub first: i64,
    pub last: i64,
    pub gaps: Vec<DeviceGap>,
    /// Per stream: the union of its own activity and how many activities.
    pub streams: Vec<StreamActivity>,
    /// The device's pid when all its rows share one.
    pub pid: Option<i64>,
}

/// Every device of `ops`, in (artifact string, device) order. Sorts the
/// rows into device order.
pub fn device_activity(ops: &mut DeviceOps) -> Vec<DeviceActivity> {
    let strings = std::mem::take(&mut ops.strings);
    let mut out = Vec::new();
    for rows in ops.groups(DeviceOp::device_order, |r| (r.artifact, r.device)) {
        let Some(first) = rows.first() else {
            continue;
        };
        let mut reached = RunningEnd::default();
        let mut gaps = Vec::new();
        for op in rows {
            if let Some(end) = reached.end
                && op.ts > end
            {
                gaps.push(DeviceGap {
                    start: end,
                    end: op.ts,
                    next: *op,
                    prev_name: reached.name,
                });
            }
            reached.add(op.end, op.name, &strings);
        }
        let mut by_stream: HashMap<Option<i64>, StreamActivity> = HashMap::new();
        for op in rows {
            let slot = by_stream
                .entry(op.stream)
                .or_insert_with(|| (op.stream, Vec::new(), 0));
            slot.1.push((op.ts, op.end));
            slot.2 += 1;
        }
        let mut streams: Vec<StreamActivity> = by_stream
            .into_values()
            .map(|(stream, intervals, n)| (stream, union_segments(intervals), n))
            .collect();
        streams.sort_by_key(|s| s.0);
        let pids: Vec<i64> = rows.iter().filter_map(|r| r.pid).collect();
        let pid = match (pids.iter().min(), pids.iter().max()) {
            (Some(a), Some(b)) if a == b => Some(*a),
            _ => None,
        };
        out.push(DeviceActivity {
            artifact: first.artifact,
            device: first.device,
            busy: union_segments(rows.iter().map(|r| (r.ts, r.end)).collect()),
            first: rows.iter().map(|r| r.ts).min().unwrap_or(0),
            last: rows.iter().map(|r| r.end).max().unwrap_or(0),
            gaps,
            streams,
            pid,
        });
    }
    out.sort_by(|a, b| {
        strings
            .cmp(a.artifact, b.artifact)
            .then_with(|| a.device.cmp(&b.device))
    });
    ops.strings = strings;
    out
}

/// Idle time of a device inside a span, by why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IdleBreakdown {
    /// Before the device's first activity (inside the span).
    pub before_first_activity_ns: i64,
    /// Device gaps whose next activity was launched after the gap began.
    pub starved_ns: i64,
    /// Device gaps whose next activity was already queued.
    pub stalled_ns: i64,
    /// Device gaps whose next activity has no recorded launch.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unlinked_ns: i64,
    /// After the device's last activity (inside the span).
    pub after_last_activity_ns: i64,
    /// Device gaps overlapping the span (any length).
    pub gaps: u64,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

/// One stream's own busy time inside the span (never summed with others).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamTime {
    pub stream: Option<i64>,
    /// Union of this stream's kernels, copies and memsets inside the span.
    pub busy_ns: i64,
    pub busy_pct_of_span: f64,
    pub activities: u64,
}

/// One device's time inside a named span.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceTime {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub artifact_id: String,
    pub device: Option<i64>,
    /// The span every figure here is of.
    pub span: NamedSpan,
    /// Union of kernels, copies and memsets of every stream, inside the span.
    pub busy_ns: i64,
    /// `span.dur_ns - busy_ns`.
    pub idle_ns: i64,
    pub busy_pct_of_span: f64,
    pub idle_pct_of_span: f64,
    /// `idle_ns` by why: the parts sum to it.
    pub idle: IdleBreakdown,
    /// Per stream, busiest first (at most [`STREAMS_SHOWN`]).
    pub streams: Vec<StreamTime>,
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub streams_total: u64,
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

/// Streams listed per device.
pub const STREAMS_SHOWN: usize = 4;

/// A percentage with two decimals, 0 for an empty denominator.
pub fn pct(part: i64, whole: i64) -> f64 {
    if whole > 0 {
        (part as f64 * 10_000.0 / whole as f64).round() / 100.0
    } else {
        0.0
    }
}

/// The launch call start of each `(artifact, correlation)`.
pub type LaunchStarts = HashMap<(u32, i64), i64>;

/// The class of a gap, from the launch of its next activity.
pub fn classify(gap: &DeviceGap, launches: &LaunchStarts) -> GapClass {
    let launch = gap
        .next
        .correlation
        .and_then(|c| launches.get(&(gap.next.artifact, c)).copied());
    GapClass::of(gap.start, launch)
}

/// A device's time inside `span`.
pub fn device_time(
    device: &DeviceActivity,
    artifact_id: &str,
    span: &NamedSpan,
    launches: &LaunchStarts,
) -> DeviceTime {
    let (a, b) = (span.start_ns, span.end_ns);
    let busy_ns = covered_in(&device.busy, a, b);
    let length = span.dur_ns;
    let mut idle = IdleBreakdown {
        before_first_activity_ns: (device.first.min(b) - a).max(0),
        after_last_activity_ns: (b - device.last.max(a)).max(0),
        ..IdleBreakdown::default()
    };
    if device.first >= b || device.last <= a {
        // No activity inside the span: all of it is before or after.
        idle.after_last_activity_ns = if device.last <= a { length } else { 0 };
        idle.before_first_activity_ns = length - idle.after_last_activity_ns;
    }
    for gap in &device.gaps {
        let (s, e) = (gap.start.max(a), gap.end.min(b));
        if e <= s {
            continue;
        }
        idle.gaps += 1;
        let slot = match classify(gap, launches) {
            GapClass::Starved => &mut idle.starved_ns,
            GapClass::Stalled => &mut idle.stalled_ns,
            GapClass::Unlinked => &mut idle.unlinked_ns,
        };
        *slot += e - s;
    }
    let mut streams: Vec<StreamTime> = device
        .streams
        .iter()
        .map(|(stream, segments, n)| {
            let busy = covered_in(segments, a, b);
            StreamTime {
                stream: *stream,
                busy_ns: busy,
                busy_pct_of_span: pct(busy, length),
                activities: *n,
            }
        })
        .collect();
    streams.sort_by(|x, y| y.busy_ns.cmp(&x.busy_ns).then(x.stream.cmp(&y.stream)));
    let streams_total = streams.len() as u64;
    streams.truncate(STREAMS_SHOWN);
    DeviceTime {
        artifact_id: artifact_id.to_owned(),
        device: device.device,
        span: span.clone(),
        busy_ns,
        idle_ns: length - busy_ns,
        busy_pct_of_span: pct(busy_ns, length),
        idle_pct_of_span: pct(length - busy_ns, length),
        idle,
        streams,
        streams_total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time_accounting::spans::SpanName;

    fn op(
        strings: &mut crate::device_pass::Interner,
        stream: i64,
        ts: i64,
        end: i64,
        c: i64,
    ) -> DeviceOp {
        DeviceOp {
            artifact: strings.id("a"),
            device: Some(0),
            stream: Some(stream),
            pid: Some(1),
            event_id: ts,
            ts,
            end,
            name: strings.id(&format!("k{ts}")),
            kind: strings.id("kernel"),
            correlation: Some(c),
        }
    }

    /// Two streams overlapping, three gaps: one starved (launched late),
    /// one stalled (queued long before), one unlinked.
    #[test]
    fn busy_is_the_union_over_streams_and_idle_parts_sum_to_idle() {
        let mut ops = DeviceOps::default();
        let rows = vec![
            op(&mut ops.strings, 7, 10, 20, 1),
            op(&mut ops.strings, 8, 15, 30, 2),
            op(&mut ops.strings, 7, 40, 50, 3),
            op(&mut ops.strings, 8, 60, 70, 4),
            op(&mut ops.strings, 7, 80, 90, 99),
        ];
        ops.rows = rows;
        let artifact = ops.strings.id("a");
        let devices = device_activity(&mut ops);
        assert_eq!(devices.len(), 1);
        let d = &devices[0];
        assert_eq!(d.busy, vec![(10, 30), (40, 50), (60, 70), (80, 90)]);
        assert_eq!(d.gaps.len(), 3);
        let mut launches = LaunchStarts::new();
        launches.insert((artifact, 3), 35); // after the gap began at 30: starved
        launches.insert((artifact, 4), 5); // long before: stalled
        let span = NamedSpan::new(SpanName::Trace, None, 0, 100);
        let t = device_time(d, "a", &span, &launches);
        assert_eq!(t.busy_ns, 50);
        assert_eq!(t.idle_ns, 50);
        assert_eq!(t.idle.before_first_activity_ns, 10);
        assert_eq!(t.idle.after_last_activity_ns, 10);
        assert_eq!(
            (t.idle.starved_ns, t.idle.stalled_ns, t.idle.unlinked_ns),
            (10, 10, 10)
        );
        let i = &t.idle;
        let parts = i.before_first_activity_ns
            + i.starved_ns
            + i.stalled_ns
            + i.unlinked_ns
            + i.after_last_activity_ns;
        assert_eq!(parts, t.idle_ns);
        // Per stream, never summed: 7 is busy 30 of 100, 8 is busy 25.
        assert_eq!(t.streams[0].busy_ns, 30);
        assert_eq!(t.streams[1].busy_ns, 25);
        // A window cuts the gaps and leaves the sum intact.
        let w = NamedSpan::new(SpanName::Window, None, 25, 65);
        let t = device_time(d, "a", &w, &launches);
        assert_eq!(t.busy_ns, 5 + 10 + 5);
        assert_eq!(t.idle.starved_ns + t.idle.stalled_ns, 20);
        assert_eq!(
            t.idle.before_first_activity_ns + t.idle.after_last_activity_ns,
            0
        );
        assert_eq!(t.idle_ns, 20);
        // A span with no activity is all before (or after) it.
        let late = NamedSpan::new(SpanName::Window, None, 95, 120);
        let t = device_time(d, "a", &late, &launches);
        assert_eq!((t.busy_ns, t.idle.after_last_activity_ns), (0, 25));
    }
}
