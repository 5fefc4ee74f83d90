//! `summarize_target`: one call that orients an agent on a run or artifact
//! — what it is, how long it spans, which threads were busy and on what,
//! whether the GPU sat idle and why, PyTorch steps when present, what the
//! import could not read, and which operations to call next. Composed from
//! the other read services, each bounded, so the whole answer stays small.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::Result;
use crate::runs;
use crate::services::analyze::{self, HotspotsRequest};
use crate::services::gpu_gaps::{self, GpuGapsRequest};
use crate::services::pytorch::{self, PytorchRequest};
use crate::services::threads::{self, ThreadsRequest};
use crate::services::{QueryContext, ResolvedScope};

/// What `summarize_target` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SummaryRequest {
    /// Run id (or a unique prefix, or latest) or artifact id (sha256:…).
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
}

/// Threads listed, busiest first.
const THREADS: usize = 5;
/// Busiest host threads whose hotspots are shown.
const HOT_THREADS: usize = 2;
/// Frames per hot thread.
const FRAMES: usize = 5;
/// Longest GPU gaps shown.
const GAPS: usize = 3;
/// Longest names kept in full in this answer (a C++ kernel name can run to
/// kilobytes; the drill-downs give it whole).
const NAME_CHARS: usize = 120;

/// One input of the target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputSummary {
    pub artifact_id: String,
    pub name: String,
    pub kind: String,
    pub producer: Option<String>,
    pub bytes: u64,
}

/// One thread or GPU stream, busiest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadSummary {
    pub label: String,
    pub thread: Option<String>,
    pub pid: Option<i64>,
    pub tid: Option<i64>,
    pub busy_ns: i64,
    /// Busy time as a percentage of the trace's span.
    pub busy_pct_of_span: f64,
    pub samples: i64,
}

/// A frame of a hot thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameSummary {
    /// The reference the drill-downs accept.
    pub frame: String,
    pub function: String,
    pub self_value: i64,
    /// Self value as a percentage of the thread's total self value.
    pub self_pct_of_thread: f64,
}

/// The heaviest frames of one busy thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HotThread {
    pub label: String,
    pub thread: Option<String>,
    pub tid: Option<i64>,
    pub metric: String,
    pub unit: String,
    pub frames: Vec<FrameSummary>,
    /// Other metrics this thread's evidence has (e.g. `cpu.samples`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub other_metrics: Vec<String>,
}

/// GPU idle time, when the target has device activity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSummary {
    /// Stream gaps of at least `min_gap_ns`: count and total.
    pub gaps: u64,
    pub gaps_total_ns: i64,
    pub min_gap_ns: i64,
    /// The longest gaps: when, how long, who launched the work after it,
    /// and what that thread did meanwhile.
    pub longest: Vec<GapSummary>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GapSummary {
    pub start_ns: i64,
    pub duration_ns: i64,
    pub stream: Option<i64>,
    /// The activity after the gap (shortened).
    pub next_activity: String,
    /// The thread that launched it, when the trace correlates launches.
    pub launched_by: Option<String>,
    /// What that thread (or, without a launcher, any host thread) did most
    /// during the gap.
    pub host_top: Option<String>,
    /// Share of the gap the host thread(s) were busy, 0..=1.
    pub host_busy_share: f64,
}

/// PyTorch profiler steps, when present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepsSummary {
    pub steps: usize,
    pub median_step_ns: i64,
    pub longest_step: Option<String>,
    pub longest_step_ns: i64,
}

pub use crate::services::NextCall;

/// The answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryResult {
    pub scope: ResolvedScope,
    pub inputs: Vec<InputSummary>,
    /// First event start to last event end, ns.
    pub span_ns: Option<(i64, i64)>,
    pub duration_ns: i64,
    /// Threads and GPU streams in the target (all of them).
    pub threads_total: u64,
    pub threads: Vec<ThreadSummary>,
    /// Thread names carried by several threads (`name: who, who`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shared_thread_names: Vec<String>,
    pub hot_threads: Vec<HotThread>,
    pub gpu: Option<GpuSummary>,
    pub pytorch_steps: Option<StepsSummary>,
    /// What the import could not read, and what that means, in words.
    pub caveats: Vec<String>,
    pub next: Vec<NextCall>,
}

/// Orients on a target in one bounded answer.
pub async fn summarize(qc: &QueryContext<'_>, req: &SummaryRequest) -> Result<SummaryResult> {
    let listed = threads::list_threads(
        qc,
        &ThreadsRequest {
            target: req.target.clone(),
            process: None,
            limit: Some(THREADS.max(HOT_THREADS)),
        },
    )
    .await?;
    let scope = listed.scope.clone();
    // Every later call names the resolved id, so `latest` cannot move under
    // the answer.
    let target = scope
        .run_id
        .clone()
        .unwrap_or_else(|| scope.requested.clone());
    let inputs = inputs_of(qc, &scope)?;
    let span = listed.span_ns;
    let duration_ns = span.map_or(0, |(a, b)| b.saturating_sub(a));
    let threads: Vec<ThreadSummary> = listed
        .rows
        .iter()
        .take(THREADS)
        .map(|t| ThreadSummary {
            label: t.thread.label.clone(),
            thread: t.thread.thread_name.clone(),
            pid: t.thread.pid,
            tid: t.thread.tid,
            busy_ns: t.thread.busy_ns,
            busy_pct_of_span: t.busy_pct_of_span,
            samples: t.thread.samples,
        })
        .collect();
    let mut hot_threads = Vec::new();
    // Busy host threads; those with a tid first-class (a pseudo-thread such
    // as Kineto's whole-trace `PyTorch Profiler` span explains nothing).
    let busy = |t: &&threads::ThreadEntry| {
        t.thread.kind == "thread" && (t.thread.busy_ns > 0 || t.thread.samples > 0)
    };
    let with_tid = listed
        .rows
        .iter()
        .filter(busy)
        .any(|t| t.thread.tid.is_some());
    let host: Vec<_> = listed
        .rows
        .iter()
        .filter(busy)
        .filter(|t| !with_tid || t.thread.tid.is_some())
        .take(HOT_THREADS)
        .collect();
    for t in &host {
        let who = Who {
            label: t.thread.label.clone(),
            thread: t.thread.thread_name.clone(),
            tid: t.thread.tid,
        };
        let request = HotspotsRequest {
            target: target.clone(),
            thread: t.thread.tid.map(|tid| tid.to_string()),
            process: t.thread.pid.map(|pid| pid.to_string()),
            limit: Some(FRAMES),
            ..Default::default()
        };
        hot_threads.extend(hot_thread(qc, &request, who).await);
    }
    if hot_threads.is_empty() {
        // Profiles without threads (folded stacks, one-thread pprof).
        let request = HotspotsRequest {
            target: target.clone(),
            limit: Some(FRAMES),
            ..Default::default()
        };
        let who = Who {
            label: "all threads".into(),
            thread: None,
            tid: None,
        };
        hot_threads.extend(hot_thread(qc, &request, who).await);
    }
    let has_gpu = listed.rows.iter().any(|t| t.thread.kind == "gpu_stream")
        || listed.total > listed.rows.len() as u64;
    let gpu = if has_gpu {
        gpu_of(qc, &target).await
    } else {
        None
    };
    let torch = inputs.iter().any(|i| {
        i.producer
            .as_deref()
            .is_some_and(|p| p.contains("torch") || p.contains("kineto"))
    });
    let pytorch_steps = if torch {
        steps_of(qc, &target).await
    } else {
        None
    };
    let caveats = caveats_of(qc, &scope, &listed.shared_names, span.is_some());
    let shared_thread_names = listed
        .shared_names
        .iter()
        .take(5)
        .map(|s| {
            let shown: Vec<&str> = s.threads.iter().take(3).map(String::as_str).collect();
            let more = s.threads.len().saturating_sub(shown.len());
            if more > 0 {
                format!("{}: {} and {more} more", s.thread_name, shown.join(", "))
            } else {
                format!("{}: {}", s.thread_name, shown.join(", "))
            }
        })
        .collect();
    let next = next_calls(&target, &hot_threads, gpu.as_ref(), &listed.shared_names);
    Ok(SummaryResult {
        scope,
        inputs,
        span_ns: span,
        duration_ns,
        threads_total: listed.total,
        threads,
        shared_thread_names,
        hot_threads,
        gpu,
        pytorch_steps,
        caveats,
        next,
    })
}

/// Which thread a hot-thread entry is about.
struct Who {
    label: String,
    thread: Option<String>,
    tid: Option<i64>,
}

/// The heaviest frames of one thread (or of all), when it has any.
async fn hot_thread(
    qc: &QueryContext<'_>,
    request: &HotspotsRequest,
    who: Who,
) -> Option<HotThread> {
    let hot = analyze::analyze_hotspots(qc, request).await.ok()?;
    if hot.rows.is_empty() {
        return None;
    }
    Some(HotThread {
        label: who.label,
        thread: who.thread,
        tid: who.tid,
        other_metrics: hot
            .available_metrics
            .iter()
            .filter(|m| **m != hot.metric)
            .cloned()
            .collect(),
        frames: hot
            .rows
            .iter()
            .map(|r| FrameSummary {
                frame: r.frame.clone(),
                function: shorten(&r.function),
                self_value: r.self_value,
                self_pct_of_thread: r.self_pct,
            })
            .collect(),
        metric: hot.metric,
        unit: hot.unit,
    })
}

fn inputs_of(qc: &QueryContext<'_>, scope: &ResolvedScope) -> Result<Vec<InputSummary>> {
    if let Some(run_id) = &scope.run_id {
        let run = runs::read_run(qc.ws, run_id)?;
        return Ok(run
            .artifacts
            .iter()
            .map(|a| InputSummary {
                artifact_id: a.artifact_id.clone(),
                name: a.original_name.clone(),
                kind: a.kind.clone(),
                producer: a.producer.clone(),
                bytes: a.bytes,
            })
            .collect());
    }
    let mut out = Vec::new();
    for id in &scope.artifact_ids {
        let record = crate::store::read_artifact(qc.ws, id)?;
        out.push(InputSummary {
            artifact_id: record.artifact_id.clone(),
            name: record.original_name.clone(),
            kind: record.kind.clone(),
            producer: None,
            bytes: record.bytes,
        });
    }
    Ok(out)
}

async fn gpu_of(qc: &QueryContext<'_>, target: &str) -> Option<GpuSummary> {
    let request = GpuGapsRequest {
        target: target.to_owned(),
        limit: Some(GAPS),
        ..Default::default()
    };
    let gaps = gpu_gaps::gpu_gaps(qc, &request).await.ok()?;
    if !gaps.answer.has_device_activity {
        return None;
    }
    Some(GpuSummary {
        gaps: gaps.answer.gaps_found,
        gaps_total_ns: gaps.answer.gaps_total_ns,
        min_gap_ns: gaps.min_gap_ns,
        longest: gaps
            .answer
            .gaps
            .iter()
            .map(|g| GapSummary {
                start_ns: g.start_ns,
                duration_ns: g.duration_ns,
                stream: g.stream,
                next_activity: shorten(&g.after),
                launched_by: g.launched_by.as_ref().map(|l| {
                    let who = l.thread.clone().unwrap_or_else(|| "thread".into());
                    match l.tid {
                        Some(tid) => format!("{who} (tid {tid}) via {}", l.name),
                        None => format!("{who} via {}", l.name),
                    }
                }),
                host_top: g.host.top.first().map(|s| shorten(&s.name)),
                host_busy_share: (g.host.covered_share * 1000.0).round() / 1000.0,
            })
            .collect(),
    })
}

async fn steps_of(qc: &QueryContext<'_>, target: &str) -> Option<StepsSummary> {
    let request = PytorchRequest {
        target: target.to_owned(),
        limit: Some(1),
    };
    let answer = pytorch::pytorch(qc, &request).await.ok()?.answer;
    if answer.steps.is_empty() {
        return None;
    }
    let mut durations: Vec<i64> = answer.steps.iter().map(|s| s.dur_ns).collect();
    durations.sort_unstable();
    let longest = answer.steps.iter().max_by_key(|s| s.dur_ns);
    Some(StepsSummary {
        steps: answer.steps.len(),
        median_step_ns: durations[durations.len() / 2],
        longest_step: longest.map(|s| s.name.clone()),
        longest_step_ns: longest.map_or(0, |s| s.dur_ns),
    })
}

/// The import's limitations in words, with counts.
fn caveats_of(
    qc: &QueryContext<'_>,
    scope: &ResolvedScope,
    shared: &[threads::SharedName],
    has_span: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(snapshot) = crate::catalog::pin_head(qc.ws) {
        for id in &scope.artifact_ids {
            for generation in snapshot.generations_for(id) {
                for l in &generation.summary.limitations {
                    let line = if l.count > 1 {
                        format!("{} ({} times)", l.message, l.count)
                    } else {
                        l.message.clone()
                    };
                    if !out.contains(&line) {
                        out.push(line);
                    }
                }
            }
        }
    }
    if !shared.is_empty() {
        out.push(format!(
            "{} thread name(s) are carried by several threads: filter by tid (or process) to keep them apart",
            shared.len()
        ));
    }
    if !has_span {
        out.push("no timed events: only aggregate stacks or measurements".into());
    }
    out.truncate(8);
    out
}

fn next_calls(
    target: &str,
    hot: &[HotThread],
    gpu: Option<&GpuSummary>,
    shared: &[threads::SharedName],
) -> Vec<NextCall> {
    let mut next = Vec::new();
    if let Some(t) = hot.first()
        && let Some(f) = t.frames.first()
    {
        let mut args = json!({ "target": target, "frame": f.frame, "limit": 5 });
        if let Some(tid) = t.tid {
            args["thread"] = json!(tid.to_string());
        }
        next.push(NextCall {
            operation: "get_frame_instances".into(),
            arguments: args.clone(),
            why: format!("the longest occurrences of {}", f.function),
        });
        next.push(NextCall {
            operation: "get_frame_callers".into(),
            arguments: {
                args["limit"] = json!(10);
                args
            },
            why: format!("what called {} on that thread", f.function),
        });
        if let Some(m) = t.other_metrics.first() {
            next.push(NextCall {
                operation: "analyze_hotspots".into(),
                arguments: json!({ "target": target, "metric": m }),
                why: format!("the same ranking by {m}"),
            });
        }
    }
    if gpu.is_some_and(|g| g.gaps > 0) {
        next.push(NextCall {
            operation: "analyze_gpu_gaps".into(),
            arguments: json!({ "target": target, "limit": 5 }),
            why: "the longest GPU gaps and least busy stretches, with the launching thread's activity".into(),
        });
    }
    if !shared.is_empty() || hot.len() > 1 {
        next.push(NextCall {
            operation: "list_threads".into(),
            arguments: json!({ "target": target }),
            why: "all threads with pid and tid, to filter by one".into(),
        });
    }
    next
}

/// A name cut to [`NAME_CHARS`] characters (with `…`).
pub(crate) fn shorten(name: &str) -> String {
    if name.chars().count() <= NAME_CHARS {
        return name.to_owned();
    }
    let mut out: String = name.chars().take(NAME_CHARS - 1).collect();
    out.push('…');
    out
}
