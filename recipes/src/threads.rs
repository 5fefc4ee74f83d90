//! Processes and threads of a scope: who is there and how busy, so that a
//! question can name one thread (and see when a name means several).
//!
//! Thread rows come from `tracks` (identity and names) with per-track
//! totals from `trace_events` and per-thread sample counts from `samples`.
//! Busy and waiting time are the time-accounting model's
//! ([`crate::time_accounting`]): a thread's busy time is the union of the
//! slices on its own tracks (async tracks count events, never time), a GPU
//! stream's the union of its kernels, copies and memsets (not the
//! annotations that span them). A thread known only from samples has no
//! busy time (`None`: unknown, not idle). GPU stream tracks are rows of
//! their own, labelled by device and stream. Tracks are few (one per thread
//! or stream), so they are joined here after DataFusion has reduced the
//! events to one row per track.

use std::collections::BTreeMap;

use datafusion::functions_aggregate::expr_fn::{count, max, min, sum};
use datafusion::logical_expr::{col, lit, when};
use serde::{Deserialize, Serialize};

use crate::common::{
    ArtifactScope, RecipeResult, collect, column, i64_at, string_at, table, u64_at,
};
use crate::thread_sources::{
    merge_pidless_threads, sample_counts, sample_span, sample_thread_names, stream_busy,
};
use crate::time_accounting::scheduler::scheduler_times;
use crate::time_accounting::threads::track_times;

/// What to list.
#[derive(Debug, Clone)]
pub struct ThreadQuery {
    pub scope: ArtifactScope,
    /// A pid, or a process name (exact).
    pub process: Option<String>,
}

/// One thread (or GPU stream) of the scope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadRow {
    /// `thread` (a host thread) or `gpu_stream`.
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tid: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_name: Option<String>,
    /// What tells this thread apart when names repeat (a GPU's device and
    /// stream; the process name and pid of a thread, and the page a
    /// renderer shows).
    pub label: String,
    /// The page its process shows (Chromium renderers: the last
    /// outermost-main-frame navigation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Slices and instants on its tracks.
    pub events: u64,
    /// Union of its slices (a thread) or of its kernels, copies and memsets
    /// (a GPU stream); `None` when it has no timed events (only samples).
    pub busy_ns: Option<i64>,
    /// Union of its slices whose frame is a wait (wait, sleep, lock, poll,
    /// a device synchronization): part of `busy_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_ns: Option<i64>,
    /// Call-stack samples taken on it (`trace.*` weights, slices seen as
    /// stacks, are not samples).
    pub samples: i64,
    /// Time it ran on a CPU, by the kernel scheduler (system traces only;
    /// see [`crate::time_accounting::scheduler`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_cpu_ns: Option<i64>,
    /// Time it was ready to run and waited for a CPU (runnable or
    /// preempted), by the kernel scheduler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runnable_ns: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_ts_ns: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_end_ns: Option<i64>,
}

/// Every thread of the scope, busiest first (then by samples, events).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadAnswer {
    pub rows: Vec<ThreadRow>,
    /// First event start and last event end over the scope (the share
    /// denominator), when there are events; else the first and last timed
    /// sample.
    pub span_ns: Option<(i64, i64)>,
    /// CPUs that ran a task, when the scope has scheduler evidence (the
    /// capacity on-CPU time is a share of: CPUs × the span).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<i64>,
    /// Every thread's time on a CPU, summed, when there is scheduler
    /// evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_cpu_total_ns: Option<i64>,
    /// Every thread's time ready and waiting for a CPU, summed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runnable_total_ns: Option<i64>,
    /// The CPUs' time in hard interrupt handlers, when the scope has
    /// interrupt evidence (it cut into a task's time on CPU or an idle
    /// CPU's; neither added to nor taken from any thread's time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_total_ns: Option<i64>,
    /// The CPUs' time in softirqs, likewise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub softirq_total_ns: Option<i64>,
}

/// A row's identity: kind, pid, then tid (threads) or device and stream.
pub(crate) type RowKey = (String, Option<i64>, Option<i64>, Option<i64>);

/// Totals per track from `trace_events`.
#[derive(Default, Clone, Copy)]
struct TrackTotals {
    events: u64,
    /// Events that are the profiler's own recording span (Kineto's
    /// `PyTorch Profiler (N)`): a track with those and no other busy time
    /// (its instants aside) is no thread.
    profiler_spans: u64,
    /// Time in slices other than the profiler's own span (the track is a
    /// thread only when this is not 0).
    slices_ns: i64,
    first: Option<i64>,
    last: Option<i64>,
}

pub(crate) fn merge_span(a: Option<i64>, b: Option<i64>, pick: fn(i64, i64) -> i64) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(pick(x, y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Lists the scope's threads and GPU streams.
pub async fn threads(
    ctx: &datafusion::prelude::SessionContext,
    query: &ThreadQuery,
) -> RecipeResult<ThreadAnswer> {
    let per_track = table(ctx, "trace_events")
        .await?
        .filter(query.scope.filter())?
        .aggregate(
            vec![col("artifact_id"), col("track_id")],
            vec![
                count(lit(1)).alias("events"),
                sum(when(col("kind").eq(lit("profiler_span")), lit(1i64)).otherwise(lit(0i64))?)
                    .alias("profiler_spans"),
                sum(when(
                    col("depth")
                        .eq(lit(0))
                        .and(col("dur_ns").gt(lit(0i64)))
                        .and(col("kind").not_eq(lit("profiler_span"))),
                    col("dur_ns"),
                )
                .otherwise(lit(0i64))?)
                .alias("slices_ns"),
                min(col("ts_ns")).alias("first"),
                max(col("ts_ns")
                    + when(col("dur_ns").gt(lit(0i64)), col("dur_ns")).otherwise(lit(0i64))?)
                .alias("last"),
            ],
        )?;
    let mut totals: BTreeMap<(String, u64), TrackTotals> = BTreeMap::new();
    for batch in collect(per_track).await? {
        for i in 0..batch.num_rows() {
            let artifact = string_at(column(&batch, "artifact_id")?, i).unwrap_or_default();
            let Some(track) = u64_at(column(&batch, "track_id")?, i) else {
                continue;
            };
            totals.insert(
                (artifact, track),
                TrackTotals {
                    events: i64_at(column(&batch, "events")?, i).unwrap_or(0).max(0) as u64,
                    profiler_spans: i64_at(column(&batch, "profiler_spans")?, i)
                        .unwrap_or(0)
                        .max(0) as u64,
                    slices_ns: i64_at(column(&batch, "slices_ns")?, i).unwrap_or(0),
                    first: i64_at(column(&batch, "first")?, i),
                    last: i64_at(column(&batch, "last")?, i),
                },
            );
        }
    }
    let span_first = totals.values().filter_map(|t| t.first).min();
    let span_last = totals.values().filter_map(|t| t.last).max();
    let samples = sample_counts(ctx, &query.scope).await?;
    let times = track_times(ctx, &query.scope).await?;
    let streams = stream_busy(ctx, &query.scope).await?;
    let scheduler = scheduler_times(ctx, &query.scope).await?;
    let mut counted_states = std::collections::BTreeSet::new();

    let tracks = table(ctx, "tracks").await?.filter(
        query.scope.filter().and(
            col("kind")
                .eq(lit("thread"))
                .or(col("kind").eq(lit("gpu_stream")))
                .or(col("kind").eq(lit("async")))
                .or(col("kind").eq(lit("thread_state"))),
        ),
    )?;
    let mut rows: BTreeMap<RowKey, ThreadRow> = BTreeMap::new();
    let mut counted_streams = std::collections::BTreeSet::new();
    for batch in collect(tracks).await? {
        for i in 0..batch.num_rows() {
            let artifact = string_at(column(&batch, "artifact_id")?, i).unwrap_or_default();
            let kind = string_at(column(&batch, "kind")?, i).unwrap_or_default();
            let track = u64_at(column(&batch, "track_id")?, i).unwrap_or(0);
            let pid = i64_at(column(&batch, "pid")?, i);
            let tid = i64_at(column(&batch, "tid")?, i);
            let device = i64_at(column(&batch, "device")?, i);
            let stream = i64_at(column(&batch, "stream")?, i);
            let process_name = string_at(column(&batch, "process_name")?, i);
            // Async and thread-state tracks are named for what they hold,
            // not for the thread.
            let track_name = string_at(column(&batch, "name")?, i)
                .filter(|_| kind == "thread" || kind == "gpu_stream");
            let thread_name = string_at(column(&batch, "thread_name")?, i).or(track_name);
            let gpu = kind == "gpu_stream";
            if kind == "async" && tid.is_none() {
                continue;
            }
            let key = if gpu {
                ("gpu_stream".to_owned(), pid, device, stream)
            } else {
                ("thread".to_owned(), pid, tid, None)
            };
            let t = totals
                .get(&(artifact.clone(), track))
                .copied()
                .unwrap_or_default();
            if t.profiler_spans > 0 && t.slices_ns == 0 {
                continue;
            }
            let time = times
                .get(&(artifact.clone(), track))
                .copied()
                .unwrap_or_default();
            let row = rows.entry(key).or_insert_with(|| ThreadRow {
                kind: if gpu { "gpu_stream" } else { "thread" }.to_owned(),
                pid,
                tid: if gpu { None } else { tid },
                process_name: process_name.clone(),
                thread_name: None,
                label: String::new(),
                url: None,
                events: 0,
                busy_ns: None,
                waiting_ns: None,
                samples: 0,
                on_cpu_ns: None,
                runnable_ns: None,
                first_ts_ns: None,
                last_end_ns: None,
            });
            row.events += t.events;
            if kind == "thread_state"
                && let Some(tid) = tid
                && counted_states.insert((artifact.clone(), tid))
                && let Some(st) = scheduler.threads.get(&(artifact.clone(), tid))
            {
                row.on_cpu_ns = Some(row.on_cpu_ns.unwrap_or(0).saturating_add(st.on_cpu_ns));
                row.runnable_ns = Some(row.runnable_ns.unwrap_or(0).saturating_add(st.runnable_ns));
            }
            // Async tracks overlap the thread's own slices: their events
            // count, their time does not. A stream's time is its device
            // activity's union, not its annotations'.
            if gpu {
                // Once per (artifact, device, stream), however many tracks.
                let key = (artifact.clone(), device, stream);
                let busy = if counted_streams.insert(key.clone()) {
                    streams.get(&key).copied().unwrap_or(0)
                } else {
                    0
                };
                row.busy_ns = Some(row.busy_ns.unwrap_or(0).saturating_add(busy));
            } else if kind == "thread" {
                row.busy_ns = Some(row.busy_ns.unwrap_or(0).saturating_add(time.busy_ns));
                if time.waiting_ns > 0 {
                    row.waiting_ns =
                        Some(row.waiting_ns.unwrap_or(0).saturating_add(time.waiting_ns));
                }
            }
            row.first_ts_ns = merge_span(row.first_ts_ns, t.first, i64::min);
            row.last_end_ns = merge_span(row.last_end_ns, t.last, i64::max);
            if row.thread_name.is_none() && kind != "async" {
                // A thread-state track carries the thread's name only in
                // its `thread_name` column.
                row.thread_name = thread_name;
            }
            if row.process_name.is_none() {
                row.process_name = process_name;
            }
            row.label = if gpu {
                match (device, stream) {
                    (Some(d), Some(s)) => format!("GPU {d} stream {s}"),
                    (Some(d), None) => format!("GPU {d}"),
                    _ => "GPU".to_owned(),
                }
            } else {
                // A thread known only from the scheduler (no process) is
                // labelled by its own name.
                let process = short_process_name(
                    row.process_name
                        .as_deref()
                        .or(row.thread_name.as_deref().filter(|_| pid.is_none()))
                        .unwrap_or("process"),
                );
                match pid {
                    Some(p) => format!("{process} (pid {p})"),
                    None => process,
                }
            };
        }
    }
    let sampled_names = if samples.is_empty() {
        BTreeMap::new()
    } else {
        sample_thread_names(ctx, &query.scope).await?
    };
    for ((pid, tid), n) in samples {
        let key = ("thread".to_owned(), pid, tid, None);
        // A thread known only from samples is named by its stacks' rows.
        let (thread_name, process_name) =
            sampled_names.get(&(pid, tid)).cloned().unwrap_or_default();
        let process = process_name.as_deref().map(short_process_name);
        let label = match (process, pid) {
            (Some(name), Some(p)) => format!("{name} (pid {p})"),
            (Some(name), None) => name,
            (None, Some(p)) => format!("process (pid {p})"),
            (None, None) => "process".to_owned(),
        };
        let row = rows.entry(key).or_insert_with(|| ThreadRow {
            kind: "thread".to_owned(),
            pid,
            tid,
            process_name,
            thread_name,
            label,
            url: None,
            events: 0,
            busy_ns: None,
            waiting_ns: None,
            samples: 0,
            on_cpu_ns: None,
            runnable_ns: None,
            first_ts_ns: None,
            last_end_ns: None,
        });
        row.samples += n;
    }
    merge_pidless_threads(&mut rows);
    let urls = crate::page_urls::page_urls(ctx, &query.scope).await?;
    for row in rows.values_mut().filter(|r| r.kind == "thread") {
        if let Some(url) = row.pid.and_then(|p| urls.get(&p)) {
            row.label = format!("{} {url}", row.label);
            row.url = Some(url.clone());
        }
    }
    let mut rows: Vec<ThreadRow> = rows
        .into_values()
        .filter(|r| match &query.process {
            None => true,
            Some(p) => match p.parse::<i64>() {
                Ok(pid) => r.pid == Some(pid) || r.process_name.as_deref() == Some(p),
                Err(_) => r.process_name.as_deref() == Some(p.as_str()),
            },
        })
        .filter(|r| r.events > 0 || r.samples > 0)
        .collect();
    // Busiest first by time that is work (waiting counts last), then by
    // samples and events.
    // then by time on CPU (system traces), samples and events.
    let working = |r: &ThreadRow| r.busy_ns.unwrap_or(0) - r.waiting_ns.unwrap_or(0);
    rows.sort_by(|a, b| {
        (
            working(b),
            b.busy_ns,
            b.on_cpu_ns,
            b.samples,
            b.events,
            a.pid,
            a.tid,
        )
            .cmp(&(
                working(a),
                a.busy_ns,
                a.on_cpu_ns,
                a.samples,
                a.events,
                b.pid,
                b.tid,
            ))
    });
    Ok(ThreadAnswer {
        rows,
        span_ns: match span_first.zip(span_last) {
            Some(span) => Some(span),
            None => sample_span(ctx, &query.scope).await?,
        },
        cpus: scheduler.cpus(),
        on_cpu_total_ns: (!scheduler.threads.is_empty())
            .then(|| scheduler.threads.values().map(|t| t.on_cpu_ns).sum()),
        runnable_total_ns: (!scheduler.threads.is_empty())
            .then(|| scheduler.threads.values().map(|t| t.runnable_ns).sum()),
        irq_total_ns: scheduler.interrupts.map(|i| i.irq_ns),
        softirq_total_ns: scheduler.interrupts.map(|i| i.softirq_ns),
    })
}

/// Longest process name kept in a label (a command line is not a name).
const PROCESS_CHARS: usize = 40;

/// A process's short name: a command line becomes its program's name, or
/// what a Chromium child says it is (`--type=renderer` → `renderer`); a
/// long name is cut.
pub fn short_process_name(name: &str) -> String {
    let first = name.split_whitespace().next().unwrap_or(name);
    let kind = name
        .split_whitespace()
        .find_map(|w| w.strip_prefix("--type="));
    let base = match kind {
        Some(kind) if first.contains('/') => kind,
        _ if name.contains(' ') && first.contains('/') => first.rsplit('/').next().unwrap_or(first),
        _ => name,
    };
    let mut short: String = base.chars().take(PROCESS_CHARS).collect();
    if base.chars().count() > PROCESS_CHARS {
        short.push('…');
    }
    short
}
