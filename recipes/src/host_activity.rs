//! What the host was doing during given time windows (GPU idle gaps,
//! low-utilization chunks): the host slices overlapping each window, ranked
//! by the time they themselves spent inside it, and the share of the window
//! covered by host activity. A window may name one thread (the one that
//! launched the device work ending a GPU gap): then only that thread's
//! slices count, for both the ranking and the coverage.
//!
//! A slice's time inside a window is clipped to the window; its *self* time
//! there is that minus the clipped time of its direct children (so a
//! `ProfilerStep#N` that spans the whole gap does not hide the
//! `cudaStreamSynchronize` inside it). Coverage is the union of the clipped
//! host intervals (any thread).
//!
//! One streamed scan of the host rows picks each window's slices in Rust
//! (a window list is small; a range join of millions of host rows with
//! every window on the artifact key cost seconds at 10 M events), and the
//! sums and rankings run over those candidates only.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use datafusion::functions_aggregate::expr_fn::min;
use datafusion::logical_expr::{col, lit};
use datafusion::prelude::{DataFrame, SessionContext};
use serde::{Deserialize, Serialize};

use crate::common::{ArtifactScope, RecipeResult, collect, column, i64_at, string_at, table, utf8};
use crate::device_pass::{Interner, for_each_batch, ints, union_segments};
use flameox_extractors::trace_events::exclusive::{advance, finish};

/// Host-side kinds: what a CPU thread can be busy with. Device rows and
/// instants are left out, and so are scheduler rows (`sched_slice`,
/// `thread_state`) which say where a thread ran, not what it did.
pub const HOST_KINDS: &[&str] = &[
    "cpu_slice",
    "python_function",
    "cpu_op",
    "user_annotation",
    "runtime_api",
    "driver_api",
    "sync",
    "graph_launch",
    "communication",
    "os_runtime",
    "nvtx_range",
];

/// Kineto's category for the profiler's own whole-trace span
/// (`PyTorch Profiler (0)`): it covers everything and explains nothing.
const PROFILER_SPAN: &str = "Trace";

/// One time window to explain; `pid` restricts it to that host process when
/// the artifact has host rows of that pid (Nsight device rows carry the
/// host pid; Kineto's carry the device number, so they are not restricted).
#[derive(Debug, Clone, PartialEq)]
pub struct TimeWindow {
    pub id: i64,
    pub artifact_id: String,
    pub pid: Option<i64>,
    /// Only this thread's slices (a launching thread's tid), when set.
    pub tid: Option<i64>,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// One host slice name on one thread during a window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostSlice {
    pub name: String,
    pub kind: String,
    pub tid: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// Time inside the window not spent in a child slice.
    pub self_overlap_ns: i64,
    /// Time inside the window, children included.
    pub overlap_ns: i64,
    /// Slices of this name on this thread overlapping the window.
    pub slices: i64,
}

/// The host's activity during one window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostActivity {
    /// Union of host activity inside the window (on the window's thread
    /// when it names one, else any thread).
    pub covered_ns: i64,
    /// `covered_ns` over the window length, 0..=1 (0 for an empty window).
    pub covered_share: f64,
    /// Heaviest by self time inside the window first.
    pub top: Vec<HostSlice>,
    /// The CPU samples the window's thread took inside it, when the trace
    /// has timed call-stack samples (`gap_samples`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<HostSamples>,
    /// Where one thread's time in the window went, as shares of the window
    /// that sum to 1: its heaviest calls by self time inside the window
    /// (the deepest call on the stack at each moment), the rest of its
    /// traced calls, and the part in no traced call. Only when the window
    /// names one thread (its launching thread).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub time_shares: Vec<TimeShare>,
    /// What the thread did besides CUDA calls, in words, when that is most
    /// of the window (filled by the service).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_elsewhere: Option<String>,
}

/// A share of a window's time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeShare {
    /// A call's name, `other traced calls` or `in no traced call`.
    pub what: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// 0..=1, three decimals.
    pub share: f64,
}

/// Shares of a window of `length` ns: each of `top` (name, kind, self
/// time inside the window), the rest of `covered`, and the uncovered part.
/// They sum to 1 (up to rounding): self times are clipped to the covered
/// time first.
pub fn time_shares(top: &[(String, String, i64)], covered: i64, length: i64) -> Vec<TimeShare> {
    if length <= 0 {
        return Vec::new();
    }
    let share = |ns: i64| (ns as f64 / length as f64 * 1000.0).round() / 1000.0;
    let mut out = Vec::new();
    let mut left = covered.clamp(0, length);
    for (name, kind, ns) in top {
        let ns = (*ns).min(left);
        if ns <= 0 {
            continue;
        }
        left -= ns;
        out.push(TimeShare {
            what: name.clone(),
            kind: Some(kind.clone()),
            share: share(ns),
        });
    }
    if left > 0 {
        out.push(TimeShare {
            what: "other traced calls".into(),
            kind: None,
            share: share(left),
        });
    }
    let untraced = length - covered.clamp(0, length);
    if untraced > 0 {
        out.push(TimeShare {
            what: "in no traced call".into(),
            kind: None,
            share: share(untraced),
        });
    }
    // Largest first (a stable sort keeps the named calls first on a tie).
    out.sort_by(|a, b| b.share.total_cmp(&a.share));
    out
}

/// One function and how many of the window's samples were in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampledFunction {
    pub function: String,
    pub samples: u64,
}

/// The samples of one window's thread inside it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostSamples {
    pub samples: u64,
    /// Leaf functions, most samples first.
    pub top: Vec<SampledFunction>,
}

/// Host slices (terminated, non-empty) of the windows' artifacts, inside
/// the windows' overall time range. Predicates run on the dictionary
/// columns themselves (once per distinct value, not per row).
async fn host_rows(ctx: &SessionContext, windows: &[TimeWindow]) -> RecipeResult<DataFrame> {
    let artifacts: BTreeSet<&str> = windows.iter().map(|w| w.artifact_id.as_str()).collect();
    let scope = ArtifactScope {
        artifact_ids: artifacts.into_iter().map(str::to_owned).collect(),
    };
    let from = windows.iter().map(|w| w.start_ns).min().unwrap_or(0);
    let to = windows.iter().map(|w| w.end_ns).max().unwrap_or(0);
    let kinds = HOST_KINDS.iter().map(|k| lit(*k)).collect();
    Ok(table(ctx, "trace_events")
        .await?
        .filter(
            scope
                .filter()
                .and(col("kind").in_list(kinds, false))
                .and(
                    col("category")
                        .is_null()
                        .or(col("category").not_eq(lit(PROFILER_SPAN))),
                )
                .and(col("stream").is_null())
                .and(col("dur_ns").gt(lit(0i64)))
                .and(col("ts_ns").lt(lit(to)))
                .and((col("ts_ns") + col("dur_ns")).gt(lit(from))),
        )?
        .select(
            [
                "artifact_id",
                "event_id",
                "ts_ns",
                "dur_ns",
                "name",
                "kind",
                "pid",
                "tid",
                "track_id",
            ]
            .into_iter()
            .map(col)
            .collect::<Vec<_>>(),
        )?)
}

/// A host slice overlapping one window, clipped to it.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    window: usize,
    artifact: u32,
    id: i64,
    name: u32,
    kind: u32,
    tid: Option<i64>,
    track: Option<i64>,
    pid: Option<i64>,
    start: i64,
    end: i64,
    /// The slice's own start and duration (unclipped): its nesting order.
    ts: i64,
    dur: i64,
}

/// Every (window, host slice) overlap, and the (artifact, pid) pairs that
/// have host rows, from one streamed scan.
struct Scan {
    strings: Interner,
    candidates: Vec<Candidate>,
    pids: BTreeSet<(u32, i64)>,
}

async fn scan(ctx: &SessionContext, windows: &[TimeWindow]) -> RecipeResult<Scan> {
    let mut strings = Interner::default();
    // Windows by artifact id, each list by start.
    let mut by_artifact: HashMap<u32, Vec<(usize, i64, i64)>> = HashMap::new();
    for (i, w) in windows.iter().enumerate() {
        by_artifact
            .entry(strings.id(&w.artifact_id))
            .or_default()
            .push((i, w.start_ns, w.end_ns));
    }
    for list in by_artifact.values_mut() {
        list.sort_by_key(|w| w.1);
    }
    let mut out = Scan {
        strings,
        candidates: Vec::new(),
        pids: BTreeSet::new(),
    };
    for_each_batch(host_rows(ctx, windows).await?, |batch| {
        let artifact = out.strings.column(column(batch, "artifact_id")?)?;
        let pid = ints(column(batch, "pid")?)?;
        let ts = ints(column(batch, "ts_ns")?)?;
        let dur = ints(column(batch, "dur_ns")?)?;
        let mut hits: Vec<(usize, usize, i64, i64)> = Vec::new();
        for row in 0..batch.num_rows() {
            let Some(a) = artifact[row] else { continue };
            if let Some(p) = pid[row] {
                out.pids.insert((a, p));
            }
            let (start, end) = (
                ts[row].unwrap_or(0),
                ts[row].unwrap_or(0) + dur[row].unwrap_or(0),
            );
            for &(w, w_start, w_end) in by_artifact.get(&a).map_or(&[][..], Vec::as_slice) {
                if w_start >= end {
                    break;
                }
                if w_end > start {
                    hits.push((row, w, start.max(w_start), end.min(w_end)));
                }
            }
        }
        if hits.is_empty() {
            return Ok(());
        }
        let name = out.strings.column(column(batch, "name")?)?;
        let kind = out.strings.column(column(batch, "kind")?)?;
        let id = ints(column(batch, "event_id")?)?;
        let tid = ints(column(batch, "tid")?)?;
        let track = ints(column(batch, "track_id")?)?;
        let empty = out.strings.id("");
        for (row, window, start, end) in hits {
            out.candidates.push(Candidate {
                window,
                artifact: artifact[row].unwrap_or(empty),
                id: id[row].unwrap_or(0),
                name: name[row].unwrap_or(empty),
                kind: kind[row].unwrap_or(empty),
                tid: tid[row],
                track: track[row],
                pid: pid[row],
                start,
                end,
                ts: ts[row].unwrap_or(0),
                dur: dur[row].unwrap_or(0),
            });
        }
        Ok(())
    })
    .await?;
    Ok(out)
}

/// One slice name on one thread during one window.
#[derive(Debug, Default, Clone, Copy)]
struct NameSums {
    self_overlap: i64,
    overlap: i64,
    slices: i64,
}

/// Per window: its host activity, the `top` slice names by self time.
pub async fn host_activity(
    ctx: &SessionContext,
    windows: &[TimeWindow],
    top: usize,
) -> RecipeResult<BTreeMap<i64, HostActivity>> {
    let mut out: BTreeMap<i64, HostActivity> = windows
        .iter()
        .map(|w| (w.id, HostActivity::default()))
        .collect();
    if windows.is_empty() {
        return Ok(out);
    }
    let Scan {
        strings,
        candidates,
        pids,
    } = scan(ctx, windows).await?;
    // A window's pid only restricts when it is a host pid of its artifact.
    let restrict: Vec<Option<i64>> = windows
        .iter()
        .map(|w| {
            let artifact = strings.find(&w.artifact_id)?;
            w.pid.filter(|p| pids.contains(&(artifact, *p)))
        })
        .collect();
    let candidates: Vec<Candidate> = candidates
        .into_iter()
        .filter(|c| restrict[c.window].is_none_or(|p| c.pid == Some(p)))
        .filter(|c| windows[c.window].tid.is_none_or(|t| c.tid == Some(t)))
        .collect();

    // Self time inside the window: the time each slice owned there (the
    // most recently started slice still open at each instant, per track:
    // `flameox_extractors::trace_events::exclusive`), so overlapping slices
    // that do not nest are not counted twice.
    let mut per_window: Vec<Vec<&Candidate>> = vec![Vec::new(); windows.len()];
    for c in &candidates {
        per_window[c.window].push(c);
    }
    let threads = thread_names(ctx).await?;
    for (w, mut list) in windows.iter().zip(per_window) {
        let covered: i64 = union_segments(list.iter().map(|c| (c.start, c.end)).collect())
            .iter()
            .map(|(s, e)| e - s)
            .sum();
        list.sort_by_key(|c| (c.artifact, c.track, c.ts, -c.dur, c.id));
        let mut owned = vec![0i64; list.len()];
        for track in (0..list.len()).collect::<Vec<usize>>().chunk_by(|&a, &b| {
            (list[a].artifact, list[a].track) == (list[b].artifact, list[b].track)
        }) {
            let mut stack: Vec<usize> = Vec::new();
            let mut cursor = None;
            for &k in track {
                advance(
                    &mut cursor,
                    &mut stack,
                    list[k].start,
                    |&j| list[j].end,
                    |&mut j, ns| {
                        owned[j] += ns;
                    },
                );
                while stack.last().is_some_and(|&j| list[j].end <= list[k].start) {
                    stack.pop();
                }
                stack.push(k);
            }
            finish(
                &mut cursor,
                &mut stack,
                |&j| list[j].end,
                |&mut j, ns| {
                    owned[j] += ns;
                },
            );
        }
        type NameKey = (u32, Option<i64>, Option<i64>, u32, u32);
        let mut names: HashMap<NameKey, NameSums> = HashMap::new();
        for (c, own) in list.iter().zip(&owned) {
            let sums = names
                .entry((c.artifact, c.track, c.tid, c.name, c.kind))
                .or_default();
            sums.self_overlap += own;
            sums.overlap += c.end - c.start;
            sums.slices += 1;
        }
        let mut ranked: Vec<(NameKey, NameSums)> = names
            .into_iter()
            .filter(|(_, s)| s.self_overlap > 0)
            .collect();
        ranked.sort_by(|(a, x), (b, y)| {
            y.self_overlap
                .cmp(&x.self_overlap)
                .then(y.overlap.cmp(&x.overlap))
                .then_with(|| strings.cmp(a.3, b.3))
                .then(a.2.cmp(&b.2))
                .then_with(|| strings.cmp(a.4, b.4))
                .then_with(|| strings.cmp(a.0, b.0))
                .then(a.1.cmp(&b.1))
        });
        ranked.truncate(top);
        let length = w.end_ns - w.start_ns;
        let Some(entry) = out.get_mut(&w.id) else {
            continue;
        };
        entry.covered_ns = covered;
        entry.covered_share = if length > 0 {
            covered as f64 / length as f64
        } else {
            0.0
        };
        if w.tid.is_some() {
            let top: Vec<(String, String, i64)> = ranked
                .iter()
                .map(|((_, _, _, name, kind), s)| {
                    (
                        strings.get(*name).to_owned(),
                        strings.get(*kind).to_owned(),
                        s.self_overlap,
                    )
                })
                .collect();
            entry.time_shares = time_shares(&top, covered, length);
        }
        entry.top = ranked
            .into_iter()
            .map(|((artifact, track, tid, name, kind), s)| HostSlice {
                name: strings.get(name).to_owned(),
                kind: strings.get(kind).to_owned(),
                tid,
                thread: track.and_then(|t| {
                    threads
                        .get(&(strings.get(artifact).to_owned(), t))
                        .cloned()
                        .flatten()
                }),
                self_overlap_ns: s.self_overlap,
                overlap_ns: s.overlap,
                slices: s.slices,
            })
            .collect();
    }
    Ok(out)
}

/// Thread name of each (artifact, track) (the smallest when several).
pub(crate) async fn thread_names(
    ctx: &SessionContext,
) -> RecipeResult<BTreeMap<(String, i64), Option<String>>> {
    let threads = table(ctx, "tracks").await?.aggregate(
        vec![
            utf8("artifact_id").alias("t_artifact"),
            col("track_id").alias("t_track"),
        ],
        vec![min(col("thread_name")).alias("thread")],
    )?;
    let mut out = BTreeMap::new();
    for batch in collect(threads).await? {
        for i in 0..batch.num_rows() {
            if let (Some(a), Some(t)) = (
                string_at(column(&batch, "t_artifact")?, i),
                i64_at(column(&batch, "t_track")?, i),
            ) {
                out.insert((a, t), string_at(column(&batch, "thread")?, i));
            }
        }
    }
    Ok(out)
}
