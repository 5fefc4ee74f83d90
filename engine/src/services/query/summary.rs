//! `summarize_target`: one call that orients an agent on a run or artifact
//! — what it is, how long it spans, which threads were busy and on what,
//! how busy each GPU was over the steps and why it sat idle, PyTorch steps
//! when present, what the import could not read, and which operations to
//! call next — under one `headline` that leads to the cause
//! ([`super::summary_headline`]). Composed from the other read services,
//! each bounded, so the whole answer stays small; every figure comes from
//! the time-accounting model (`flameox_recipes::time_accounting`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::Result;
use crate::runs;
use crate::services::analyze::{self, HotspotsRequest};
use crate::services::pytorch::{self, PytorchRequest};
use crate::services::summary_gpu::gpu_of;
pub use crate::services::summary_gpu::{GapSummary, GpuSummary};
use crate::services::threads::{self, ThreadsRequest};
use crate::services::{EvidenceStatus, QueryContext, ResolvedScope};
use flameox_recipes::time_accounting::frame_roles::{FrameRole, role};
use flameox_recipes::time_accounting::{NamedSpan, SpanName};

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
/// Shared thread names listed (most-shared first; `list_threads` has all).
const SHARED_NAMES: usize = 3;
/// Busiest host threads whose hotspots are shown.
const HOT_THREADS: usize = 2;
/// Frames per hot thread.
const FRAMES: usize = 4;
/// Frames read per hot thread to find meaningful ones past waits and
/// wrappers (the answer keeps [`FRAMES`]).
const FRAMES_READ: usize = 12;
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

/// One thread or GPU stream, busiest first (by time not spent waiting).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadSummary {
    /// The process's short name (and the page it shows), not its command line.
    pub label: String,
    pub thread: Option<String>,
    pub pid: Option<i64>,
    pub tid: Option<i64>,
    /// In traced calls (a thread: the union of its slices; a GPU stream:
    /// of its own kernels, copies and memsets); null when unknown (a
    /// thread known only from samples).
    pub busy_ns: Option<i64>,
    /// `busy_ns` as a percentage of the trace's span.
    pub busy_pct_of_trace: Option<f64>,
    /// Part of `busy_ns` in waits (wait, sleep, lock, poll, device sync).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_ns: Option<i64>,
    /// Call-stack samples taken on it (left out when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub samples: i64,
    /// Time it ran on a CPU, by the kernel scheduler (system traces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_cpu_ns: Option<i64>,
    /// `on_cpu_ns` as a percentage of the trace's span.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_cpu_pct_of_trace: Option<f64>,
    /// Time it was ready and waited for a CPU (runnable or preempted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runnable_ns: Option<i64>,
}

/// The CPUs of a system trace, by the kernel scheduler.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuSummary {
    /// CPUs that ran a task.
    pub cpus: i64,
    /// Every thread's time on a CPU, summed.
    pub on_cpu_ns: i64,
    /// `on_cpu_ns` as a percentage of the capacity: CPUs × the trace's span.
    pub on_cpu_pct_of_capacity: f64,
    /// Every thread's time ready and waiting for a CPU, summed.
    pub runnable_ns: i64,
    /// The CPUs' time in hard interrupt handlers and in softirqs (cutting
    /// into a task's run or an idle CPU's time; not part of `on_cpu_ns`'s
    /// arithmetic), when the trace records interrupts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupts: Option<InterruptSummary>,
}

/// Interrupt time over the trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterruptSummary {
    pub irq_ns: i64,
    pub softirq_ns: i64,
    /// `irq_ns + softirq_ns` as a percentage of the capacity: CPUs × the
    /// trace's span.
    pub total_pct_of_capacity: f64,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
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
    /// `waiting` (the thread was blocked in it) or `wrapper` (a task
    /// runner or event loop holding other work); absent for work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
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
    /// A sampled profile's hot path: from the root, the heaviest callee at
    /// each step while it holds a fifth of the samples (inclusive, top-down).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hot_path: Vec<flameox_recipes::hot_path::HotStep>,
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

/// The page a browser trace loaded and the renderer that showed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageSummary {
    pub url: String,
    pub pid: Option<i64>,
    /// Its main thread.
    pub tid: Option<i64>,
    pub thread: Option<String>,
    /// Load milestones of its navigation (DOMContentLoaded, load, first
    /// paints), as offsets from the navigation's start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub milestones: Vec<flameox_recipes::page_urls::Milestone>,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryResult {
    pub scope: ResolvedScope,
    /// Where the time went, in one line that leads to the cause: device
    /// busy and idle by why (GPU traces), the page's renderer (browser
    /// traces), the hottest meaningful frame of the busiest thread (never
    /// a wait or a task wrapper); every share names its span.
    pub headline: String,
    /// The inputs, at most 4 (a run of one trace per rank holds many).
    pub inputs: Vec<InputSummary>,
    /// Inputs in all, when `inputs` leaves some out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs_total: Option<usize>,
    /// First event start to last event end, ns.
    pub span_ns: Option<(i64, i64)>,
    pub duration_ns: i64,
    /// Threads and GPU streams in the target (all of them).
    pub threads_total: u64,
    pub threads: Vec<ThreadSummary>,
    /// Thread names carried by several threads (`name: who, who`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shared_thread_names: Vec<String>,
    /// The page a browser trace loaded, when it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<PageSummary>,
    pub hot_threads: Vec<HotThread>,
    /// CPU use by the kernel scheduler, when the target has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuSummary>,
    pub gpu: Option<GpuSummary>,
    pub pytorch_steps: Option<StepsSummary>,
    /// What the import could not read, and what that means, in words.
    pub caveats: Vec<String>,
    pub next: Vec<NextCall>,
    /// Whether the target has events to orient on (the thread listing's
    /// status: `empty` for a target with no threads, with its reason; its
    /// limitations are `scope.limitations`).
    pub evidence: EvidenceStatus,
}

/// Orients on a target in one bounded answer.
pub async fn summarize(qc: &QueryContext<'_>, req: &SummaryRequest) -> Result<SummaryResult> {
    let listed = threads::list_threads(
        qc,
        &ThreadsRequest {
            target: req.target.clone(),
            process: None,
            limit: Some(LISTED),
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
        .filter(|t| {
            t.thread.busy_ns.unwrap_or(0) > 0
                || t.thread.samples > 0
                || t.thread.on_cpu_ns.unwrap_or(0) > 0
        })
        .take(THREADS)
        .map(|t| ThreadSummary {
            label: short_label(&t.thread),
            thread: t.thread.thread_name.clone(),
            pid: t.thread.pid,
            tid: t.thread.tid,
            busy_ns: t.thread.busy_ns,
            busy_pct_of_trace: t.busy_pct_of_trace,
            waiting_ns: t.thread.waiting_ns,
            samples: t.thread.samples,
            on_cpu_ns: t.thread.on_cpu_ns,
            on_cpu_pct_of_trace: t.on_cpu_pct_of_trace,
            runnable_ns: t.thread.runnable_ns,
        })
        .collect();
    let cpu = cpu_of(&listed, duration_ns);
    let mut page = page_of(&listed.rows);
    if let Some(p) = page.as_mut() {
        p.milestones = milestones_of(qc, &scope, &p.url).await;
    }
    let mut hot_threads = Vec::new();
    // Busy host threads by time not spent waiting; those with a tid
    // first-class (a pseudo-thread such as Kineto's whole-trace `PyTorch
    // Profiler` span explains nothing); a browser's page renderer first.
    // A thread that mostly waited (an event handler in `poll`) is no hot
    // thread: at least a tenth of its traced time must be work.
    // and a thread working under 1 % of the trace explains nothing of it.
    let span_ns = listed.span_ns.map_or(0, |(a, b)| b.saturating_sub(a));
    let busy = |t: &&threads::ThreadEntry| {
        let busy = t.thread.busy_ns.unwrap_or(0);
        let working = busy - t.thread.waiting_ns.unwrap_or(0);
        t.thread.kind == "thread"
            && ((busy > 0 && working * 10 >= busy && working * 100 >= span_ns)
                || t.thread.samples > 0)
    };
    let with_tid = listed
        .rows
        .iter()
        .filter(busy)
        .any(|t| t.thread.tid.is_some());
    let mut host: Vec<&threads::ThreadEntry> = listed
        .rows
        .iter()
        .filter(busy)
        .filter(|t| !with_tid || t.thread.tid.is_some())
        .collect();
    // Frames explain traced calls and samples: the threads with most of
    // those first (the listing puts time on CPU before samples).
    host.sort_by_key(|t| {
        let working = t.thread.busy_ns.unwrap_or(0) - t.thread.waiting_ns.unwrap_or(0);
        std::cmp::Reverse((working, t.thread.samples))
    });
    if let Some(p) = &page {
        host.sort_by_key(|t| !(t.thread.pid == p.pid && t.thread.tid == p.tid));
    }
    for t in host.into_iter().take(HOT_THREADS) {
        let who = Who {
            label: short_label(&t.thread),
            thread: t.thread.thread_name.clone(),
            tid: t.thread.tid,
        };
        let request = HotspotsRequest {
            target: target.clone(),
            thread: t.thread.tid.map(|tid| tid.to_string()),
            process: t.thread.pid.map(|pid| pid.to_string()),
            limit: Some(FRAMES_READ),
            ..Default::default()
        };
        hot_threads.extend(hot_thread(qc, &request, who).await);
    }
    if hot_threads.is_empty() {
        // Profiles without threads (folded stacks, one-thread pprof).
        let request = HotspotsRequest {
            target: target.clone(),
            limit: Some(FRAMES_READ),
            ..Default::default()
        };
        let who = Who {
            label: "all threads".into(),
            thread: None,
            tid: None,
        };
        hot_threads.extend(hot_thread(qc, &request, who).await);
    }
    let torch = inputs.iter().any(|i| {
        i.producer
            .as_deref()
            .is_some_and(|p| p.contains("torch") || p.contains("kineto"))
    });
    let (pytorch_steps, steps_span) = if torch {
        steps_of(qc, &target).await.unzip()
    } else {
        (None, None)
    };
    let has_gpu = listed.rows.iter().any(|t| t.thread.kind == "gpu_stream")
        || listed.total > listed.rows.len() as u64;
    let gpu = if has_gpu {
        gpu_of(qc, &target, steps_span, scope.artifact_ids.len() > 1).await
    } else {
        None
    };
    let caveats = caveats_of(qc, &scope, listed.shared_names_total, span.is_some());
    let shared_thread_names = listed
        .shared_names
        .iter()
        .take(SHARED_NAMES)
        .map(|s| {
            let shown: Vec<&str> = s.threads.iter().take(2).map(String::as_str).collect();
            let more = s.threads_total.saturating_sub(shown.len());
            if more > 0 {
                format!("{}: {} and {more} more", s.thread_name, shown.join(", "))
            } else {
                format!("{}: {}", s.thread_name, shown.join(", "))
            }
        })
        .collect();
    let next = next_calls(
        &target,
        &hot_threads,
        gpu.as_ref(),
        &listed.shared_names,
        span.is_some(),
        cpu.is_some(),
    );
    let inputs_total = (inputs.len() > INPUTS_SHOWN).then_some(inputs.len());
    let mut inputs = inputs;
    inputs.truncate(INPUTS_SHOWN);
    let mut result = SummaryResult {
        scope,
        headline: String::new(),
        inputs,
        inputs_total,
        span_ns: span,
        duration_ns,
        threads_total: listed.total,
        threads,
        shared_thread_names,
        page,
        hot_threads,
        cpu,
        gpu,
        pytorch_steps,
        caveats,
        next,
        evidence: EvidenceStatus {
            // Said once: `scope.limitations` lists them and `caveats`
            // explains them (the answer's 7 KiB budget).
            limitations: Vec::new(),
            ..listed.evidence.clone()
        },
    };
    result.headline = super::summary_headline::headline(&result);
    Ok(result)
}

/// Inputs listed (`inputs_total` counts them all).
const INPUTS_SHOWN: usize = 4;

/// Threads read from `list_threads`: enough to find the page's renderer.
const LISTED: usize = 50;

/// A thread's label: the process's short name and pid, then the page it
/// shows (`list_threads` makes it; the command line stays in
/// `process_name` there).
fn short_label(t: &flameox_recipes::threads::ThreadRow) -> String {
    t.label.clone()
}

/// The page of a browser trace: the renderer main thread whose process
/// loaded a document (a file or web page before a `chrome:` or
/// `about:` one), busiest first.
fn page_of(rows: &[threads::ThreadEntry]) -> Option<PageSummary> {
    let rank = |url: &str| {
        if url.starts_with("http") || url.starts_with("file:") {
            0
        } else {
            1
        }
    };
    rows.iter()
        .filter(|t| t.thread.kind == "thread")
        .filter_map(|t| t.thread.url.as_ref().map(|u| (rank(u), t)))
        .filter(|(_, t)| {
            t.thread
                .thread_name
                .as_deref()
                .is_some_and(|n| n.contains("RendererMain") || n.contains("Main"))
        })
        .min_by_key(|(r, t)| (*r, std::cmp::Reverse(t.thread.busy_ns.unwrap_or(0))))
        .map(|(_, t)| PageSummary {
            url: t.thread.url.clone().unwrap_or_default(),
            pid: t.thread.pid,
            tid: t.thread.tid,
            thread: t.thread.thread_name.clone(),
            milestones: Vec::new(),
        })
}

/// The load milestones of the page's navigation (none when unreadable).
async fn milestones_of(
    qc: &QueryContext<'_>,
    scope: &ResolvedScope,
    url: &str,
) -> Vec<flameox_recipes::page_urls::Milestone> {
    let Ok(session) = qc.session(None) else {
        return Vec::new();
    };
    let artifacts = flameox_recipes::ArtifactScope {
        artifact_ids: scope.artifact_ids.clone(),
    };
    crate::query::run_budgeted(
        &session,
        flameox_recipes::page_urls::milestones(&session.ctx, &artifacts, url),
    )
    .await
    .unwrap_or_default()
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
    if hot.rows.iter().all(|r| r.self_value <= 0) {
        return None;
    }
    // The meaningful frames first kept, then waits and wrappers, up to
    // FRAMES in the heaviest-first order.
    // A frame with no self value is on the thread's stacks but no top
    // frame: its callers and callees say more (the drill-downs give them).
    let mut frames: Vec<FrameSummary> = hot
        .rows
        .iter()
        .filter(|r| r.self_value > 0)
        .map(|r| FrameSummary {
            frame: r.frame.clone(),
            function: shorten(&r.function),
            self_value: r.self_value,
            self_pct_of_thread: r.self_pct,
            role: match role(&r.function, r.category.as_deref()) {
                FrameRole::Work => None,
                FrameRole::Waiting => Some("waiting".into()),
                FrameRole::Wrapper => Some("wrapper".into()),
            },
        })
        .collect();
    let work = frames.iter().filter(|f| f.role.is_none()).count();
    let mut others_kept = FRAMES.saturating_sub(work.min(FRAMES)).max(1);
    frames.retain(|f| {
        f.role.is_none()
            || (others_kept > 0 && {
                others_kept -= 1;
                true
            })
    });
    frames.truncate(FRAMES);
    let hot_path = if hot.unit == "ns" {
        Vec::new()
    } else {
        hot_path_of(qc, &request.target, &hot.metric, who.tid).await
    };
    Some(HotThread {
        hot_path,
        label: who.label,
        thread: who.thread,
        tid: who.tid,
        other_metrics: hot
            .available_metrics
            .iter()
            .filter(|m| **m != hot.metric)
            .cloned()
            .collect(),
        frames,
        metric: hot.metric,
        unit: hot.unit,
    })
}

/// The hot path of a sampled thread (or of all samples), empty when the
/// stacks cannot be read.
async fn hot_path_of(
    qc: &QueryContext<'_>,
    target: &str,
    metric: &str,
    tid: Option<i64>,
) -> Vec<flameox_recipes::hot_path::HotStep> {
    let Ok(session) = qc.session(None) else {
        return Vec::new();
    };
    let Ok(scope) = crate::services::resolve_scope(qc.ws, &session.snapshot, target) else {
        return Vec::new();
    };
    let artifacts = flameox_recipes::ArtifactScope {
        artifact_ids: scope.artifact_ids,
    };
    let keep =
        tid.map(|t| datafusion::logical_expr::col("tid").eq(datafusion::logical_expr::lit(t)));
    crate::query::run_budgeted(
        &session,
        flameox_recipes::hot_path::hot_path(&session.ctx, &artifacts, metric, keep.as_ref()),
    )
    .await
    .unwrap_or_default()
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

/// The profiler steps, and the span from the first step's start to the
/// last step's end (the span a GPU's busy share is of).
async fn steps_of(qc: &QueryContext<'_>, target: &str) -> Option<(StepsSummary, NamedSpan)> {
    let request = PytorchRequest {
        target: target.to_owned(),
        limit: Some(1),
    };
    let answer = pytorch::pytorch(qc, &request).await.ok()?.answer;
    if answer.steps.is_empty() {
        return None;
    }
    let first = answer.steps.iter().min_by_key(|s| s.ts_ns)?;
    let last = answer.steps.iter().max_by_key(|s| s.ts_ns + s.dur_ns)?;
    // One step, or one step per rank (the same name on each): its name.
    let label = if first.name == last.name {
        first.name.clone()
    } else {
        format!("{}..{}", first.name, last.name)
    };
    let span = NamedSpan::new(
        SpanName::Steps,
        Some(label),
        first.ts_ns,
        last.ts_ns + last.dur_ns,
    );
    let mut durations: Vec<i64> = answer.steps.iter().map(|s| s.dur_ns).collect();
    durations.sort_unstable();
    let longest = answer.steps.iter().max_by_key(|s| s.dur_ns);
    Some((
        StepsSummary {
            steps: answer.steps.len(),
            median_step_ns: durations[durations.len() / 2],
            longest_step: longest.map(|s| s.name.clone()),
            longest_step_ns: longest.map_or(0, |s| s.dur_ns),
        },
        span,
    ))
}

/// The import's limitations in words, with counts.
fn caveats_of(
    qc: &QueryContext<'_>,
    scope: &ResolvedScope,
    shared: usize,
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
    if shared > 0 {
        out.push(format!(
            "{shared} thread name(s) are carried by several threads: filter by tid (or process) to keep them apart"
        ));
    }
    if !has_span {
        out.push("no timed events: only aggregate stacks or measurements".into());
    }
    out.truncate(8);
    out
}

/// CPU use over the trace, when the target has scheduler evidence.
fn cpu_of(listed: &threads::ThreadsResult, duration_ns: i64) -> Option<CpuSummary> {
    let cpus = listed.cpus?;
    let capacity = (cpus as f64) * (duration_ns as f64);
    let pct = |ns: i64| {
        if capacity > 0.0 {
            (ns as f64 * 10_000.0 / capacity).round() / 100.0
        } else {
            0.0
        }
    };
    let on_cpu_ns = listed.on_cpu_total_ns?;
    let interrupts =
        listed
            .irq_total_ns
            .zip(listed.softirq_total_ns)
            .map(|(irq_ns, softirq_ns)| InterruptSummary {
                irq_ns,
                softirq_ns,
                total_pct_of_capacity: pct(irq_ns + softirq_ns),
            });
    Some(CpuSummary {
        cpus,
        on_cpu_ns,
        on_cpu_pct_of_capacity: pct(on_cpu_ns),
        runnable_ns: listed.runnable_total_ns.unwrap_or(0),
        interrupts,
    })
}

fn next_calls(
    target: &str,
    hot: &[HotThread],
    gpu: Option<&GpuSummary>,
    shared: &[threads::SharedName],
    timed: bool,
    cpu: bool,
) -> Vec<NextCall> {
    let mut next = Vec::new();
    // A diagnosed anti-pattern first: it names a fix.
    let diagnosed = gpu.and_then(|g| g.diagnoses.first());
    if let Some(d) = diagnosed {
        let mut arguments = json!({ "target": target, "limit": 3 });
        if let Some(section) = d.section {
            arguments["section"] = json!(section);
        }
        next.push(NextCall {
            operation: d.operation.clone(),
            arguments,
            why: format!("the numbers behind {} and what surrounds them", d.rule),
        });
    }
    // The GPU's idle time first on a GPU trace: it is the headline there.
    if gpu.is_some_and(|g| g.gaps > 0)
        && diagnosed.is_none_or(|d| d.operation != "analyze_gpu_gaps")
    {
        next.push(NextCall {
            operation: "analyze_gpu_gaps".into(),
            arguments: json!({ "target": target, "limit": 3 }),
            why: "the longest device gaps, starved or stalled, with what the launching thread did"
                .into(),
        });
    }
    // Drill into the heaviest meaningful frame (never a wait or a wrapper).
    if let Some(t) = hot.first()
        && let Some(f) = t.frames.iter().find(|f| f.role.is_none())
    {
        let mut args = json!({ "target": target, "frame": f.frame, "limit": 5 });
        if let Some(tid) = t.tid {
            args["thread"] = json!(tid.to_string());
        }
        if timed {
            next.push(NextCall {
                operation: "get_frame_instances".into(),
                arguments: args.clone(),
                why: format!("the longest occurrences of {}", f.function),
            });
        }
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
    if hot.iter().all(|t| t.frames.is_empty()) && cpu {
        next.push(NextCall {
            operation: "list_threads".into(),
            arguments: json!({ "target": target }),
            why: "every thread's time on CPU and time waiting for a CPU (runnable)".into(),
        });
        return next;
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
    cut_to(name, NAME_CHARS)
}

/// A name inside a sentence: cut to [`BRIEF_CHARS`] characters.
pub(crate) fn brief(name: &str) -> String {
    cut_to(name, BRIEF_CHARS)
}

fn cut_to(name: &str, chars: usize) -> String {
    if name.chars().count() <= chars {
        return name.to_owned();
    }
    let mut out: String = name.chars().take(chars - 1).collect();
    out.push('…');
    out
}

/// Longest name kept inside a sentence (a cause, the headline).
const BRIEF_CHARS: usize = 60;
