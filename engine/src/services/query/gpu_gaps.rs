//! `analyze gpu-gaps`: where devices sat idle (device gaps over a
//! threshold, each starved, stalled or unlinked) or nearly idle
//! (low-utilization chunks of each device's span), each with what the
//! launching thread was doing, and every device's busy and idle time over
//! a named span. Kept apart from `gpu.rs` so the GPU summaries and this
//! analysis evolve independently.

use flameox_recipes::ArtifactScope;
use flameox_recipes::gpu_gaps::{self, GapOptions, GpuGapsAnswer};
pub use flameox_recipes::host_activity::HostActivity;
use flameox_recipes::kernel_family::readable_name;
use flameox_recipes::time_accounting::{NamedSpan, SpanName};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::{FlameoxError, Result};
use crate::query::run_budgeted;
use crate::services::phase_window::{TimeScope, time_scope, time_window};
use crate::services::{EvidenceStatus, QueryContext, ResolvedScope, answer_status, resolve_scope};

/// Defaults shown in `--help` and used by MCP when a field is absent.
pub const DEFAULT_MIN_GAP_US: f64 = 100.0;
pub const DEFAULT_CHUNKS: usize = 100;
pub const DEFAULT_BELOW: f64 = 0.5;
/// Gaps and chunks returned (each) when the request names no limit.
pub const DEFAULT_LIMIT: usize = 5;
/// Chunks per device at most (the chunk table is built in memory).
pub const MAX_CHUNKS: usize = 10_000;

/// What `analyze_gpu_gaps` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GpuGapsRequest {
    /// Run id (or a unique prefix, or latest) or artifact id (sha256:…).
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// Report device gaps at least this long, in µs (default 100).
    #[schemars(range(min = 0))]
    pub min_gap_us: Option<f64>,
    /// Chunks each device's active span is cut into (default 100).
    #[schemars(range(min = 1, max = 10000))]
    pub chunks: Option<usize>,
    /// Busy fraction under which a chunk is reported (default 0.5).
    #[schemars(range(min = 0, max = 1))]
    pub below: Option<f64>,
    /// Gaps and chunks returned, each (default 5).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// Window start, trace ns (with end_ns).
    pub start_ns: Option<i64>,
    /// Window end (exclusive).
    pub end_ns: Option<i64>,
    /// Phase whose host span is the window, e.g. ProfilerStep#3.
    #[schemars(length(min = 1, max = 200))]
    pub phase: Option<String>,
}

/// The gap rule this answer applies, said in the answer.
pub const GAP_DEFINITION: &str = "A device gap: no stream of the device runs a kernel, copy or set, kept when at least min_gap_ns. starved: the next activity was launched after the gap began (host shows the launching thread until the launch); stalled: it was launched before (queued_for_ns); unlinked: no launch recorded. devices[].idle splits all idle time so; per-stream busy is never summed.";

/// What a window does to gaps and chunks, said in a windowed answer.
const WINDOW_RULE: &str = "gaps are cut to [start_ns, end_ns); the chunks divide the window, not the device's active span";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuGapsResult {
    pub scope: ResolvedScope,
    pub commit_id: String,
    /// The thresholds used.
    pub min_gap_ns: i64,
    pub chunks: usize,
    pub below: f64,
    #[serde(flatten)]
    pub answer: GpuGapsAnswer,
    pub truncated: bool,
    /// What a gap is in this answer (the three GPU answers use one rule).
    #[serde(default)]
    pub gap_definition: String,
    #[serde(flatten)]
    pub time: TimeScope,
    pub evidence: EvidenceStatus,
}

fn options(req: &GpuGapsRequest, limit: usize, window: Option<NamedSpan>) -> Result<GapOptions> {
    let min_gap_us = req.min_gap_us.unwrap_or(DEFAULT_MIN_GAP_US);
    if !min_gap_us.is_finite() || !(0.0..=1e12).contains(&min_gap_us) {
        return Err(FlameoxError::invalid_argument(
            "min_gap_us",
            "must be a number of µs in 0..=1e12",
        ));
    }
    let chunks = req.chunks.unwrap_or(DEFAULT_CHUNKS);
    if !(1..=MAX_CHUNKS).contains(&chunks) {
        return Err(FlameoxError::invalid_argument(
            "chunks",
            format!("{chunks} is outside 1..={MAX_CHUNKS}"),
        ));
    }
    let below = req.below.unwrap_or(DEFAULT_BELOW);
    if !below.is_finite() || !(0.0..=1.0).contains(&below) {
        return Err(FlameoxError::invalid_argument(
            "below",
            "must be a busy fraction in 0..=1",
        ));
    }
    Ok(GapOptions {
        min_gap_ns: (min_gap_us * 1000.0).round() as i64,
        chunks,
        below,
        limit,
        window,
        trace_spans: Default::default(),
    })
}

/// Host kinds that are CUDA calls (the work a launching thread does for
/// the device).
const CUDA_CALL_KINDS: [&str; 4] = ["runtime_api", "driver_api", "sync", "graph_launch"];

/// When the launching thread spent most of `idle_ns` outside CUDA calls,
/// what it did instead: its heaviest other call, or how much of the time
/// no call was recorded and what the CPU samples there were in.
fn busy_elsewhere(host: &HostActivity, idle_ns: i64) -> Option<String> {
    if idle_ns <= 0 {
        return None;
    }
    let pct = |ns: i64| (ns as f64 * 100.0 / idle_ns as f64).round().min(100.0);
    if let Some(top) = host.top.first()
        && !CUDA_CALL_KINDS.contains(&top.kind.as_str())
        && top.self_overlap_ns * 2 >= idle_ns
    {
        return Some(format!(
            "no CUDA call for most of it: {} in {} ({}), {:.0} %",
            crate::units::duration_ns(top.self_overlap_ns),
            top.name,
            top.kind,
            pct(top.self_overlap_ns)
        ));
    }
    if host.covered_share >= 0.5 {
        return None;
    }
    let mut text = format!(
        "no call recorded on the launching thread for {:.0} % of it",
        100.0 - (host.covered_share * 100.0).round()
    );
    match &host.samples {
        Some(s) if s.samples > 0 => {
            if let Some(f) = s.top.first() {
                text.push_str(&format!(
                    "; {} CPU samples there, most in {} ({})",
                    s.samples, f.function, f.samples
                ));
            }
        }
        _ => text.push_str("; no CPU sample there says what it ran"),
    }
    Some(text)
}

pub async fn gpu_gaps(qc: &QueryContext<'_>, req: &GpuGapsRequest) -> Result<GpuGapsResult> {
    gpu_gaps_over(qc, req, None).await
}

/// The analysis with `over` as its named window when given (the summary's
/// profiler steps), in place of the request's window or phase.
pub(crate) async fn gpu_gaps_over(
    qc: &QueryContext<'_>,
    req: &GpuGapsRequest,
    over: Option<NamedSpan>,
) -> Result<GpuGapsResult> {
    // Each gap and chunk carries its host activity: 5 of each by default
    // keeps the answer near the agents' byte budget (`agent_budgets.rs`).
    let limit = qc
        .ws
        .config
        .row_limit(Some(req.limit.unwrap_or(DEFAULT_LIMIT)))?;
    let window = time_window(req.start_ns, req.end_ns)?;
    options(req, limit, None)?;
    let session = qc.session(None)?;
    let scope = resolve_scope(qc.ws, &session.snapshot, &req.target)?;
    let (window, phase) = time_scope(&session, &scope, req.phase.as_deref(), window).await?;
    let named = over.clone().or(window.map(|(a, b)| match &phase {
        Some(p) => NamedSpan::new(SpanName::Phase, Some(p.name.clone()), a, b),
        None => NamedSpan::new(SpanName::Window, None, a, b),
    }));
    let window = over.as_ref().map(|s| (s.start_ns, s.end_ns)).or(window);
    let mut options = options(req, limit, named)?;
    for artifact in &scope.artifact_ids {
        if let Some(span) = session
            .snapshot
            .generations_for(artifact)
            .find_map(|g| g.summary.time_span_ns)
            .filter(|(a, b)| b > a)
        {
            options.trace_spans.insert(artifact.clone(), span);
        }
    }
    let artifacts = ArtifactScope {
        artifact_ids: scope.artifact_ids.clone(),
    };
    let answer = run_budgeted(
        &session,
        gpu_gaps::gpu_gaps(&session.ctx, &artifacts, &options),
    )
    .await?;
    let mut evidence = answer_status(&session.snapshot, &scope, answer.has_device_activity, false);
    if !answer.has_device_activity && evidence.status == "empty" {
        // No device rows: the trace may not have recorded them.
        evidence = EvidenceStatus::new("partial", "accelerator_tracks_missing").with_next(
            "get_run",
            json!({ "target": scope.run_id.as_deref().unwrap_or(&scope.requested) }),
        );
    }
    let mut answer = answer;
    // Templated kernel names run to kilobytes: each gap lists them read as
    // their family (get_trace_window gives them whole).
    for gap in &mut answer.gaps {
        gap.next_op = readable_name(&gap.next_op);
        gap.prev_op = gap.prev_op.as_deref().map(readable_name);
        for slice in &mut gap.host.top {
            slice.name = readable_name(&slice.name);
        }
        for share in &mut gap.host.time_shares {
            share.what = readable_name(&share.what);
        }
    }
    for chunk in &mut answer.low_utilization {
        for slice in &mut chunk.host.top {
            slice.name = readable_name(&slice.name);
        }
    }
    for host in answer
        .gaps
        .iter_mut()
        .map(|g| &mut g.host)
        .chain(answer.low_utilization.iter_mut().map(|c| &mut c.host))
    {
        for f in host.samples.iter_mut().flat_map(|s| s.top.iter_mut()) {
            f.function = readable_name(&f.function);
        }
    }
    for gap in &mut answer.gaps {
        if gap.host_scope == "launching_thread" {
            let window = match (&gap.launched_by, gap.host_window.as_str()) {
                (Some(l), "until_launch") => l.ts_ns.clamp(gap.start_ns, gap.end_ns) - gap.start_ns,
                _ => gap.duration_ns,
            };
            gap.host.busy_elsewhere = busy_elsewhere(&gap.host, window);
        }
    }
    for chunk in &mut answer.low_utilization {
        if chunk.host_scope == "launching_thread" {
            let idle = (chunk.end_ns - chunk.start_ns) - chunk.busy_ns;
            chunk.host.busy_elsewhere = busy_elsewhere(&chunk.host, idle.max(0));
        }
    }
    if scope.artifact_ids.len() == 1 {
        // The scope names the one artifact; each row need not repeat it.
        answer.gaps.iter_mut().for_each(|g| g.artifact_id.clear());
        answer
            .devices
            .iter_mut()
            .for_each(|d| d.time.artifact_id.clear());
        answer
            .low_utilization
            .iter_mut()
            .for_each(|c| c.artifact_id.clear());
    }
    Ok(GpuGapsResult {
        commit_id: session.snapshot.commit_id().to_owned(),
        scope,
        min_gap_ns: options.min_gap_ns,
        chunks: options.chunks,
        below: options.below,
        truncated: (answer.gaps.len() as u64) < answer.gaps_found
            || (answer.low_utilization.len() as u64) < answer.low_utilization_found,
        answer,
        gap_definition: GAP_DEFINITION.to_owned(),
        time: TimeScope::new(window, phase, WINDOW_RULE),
        evidence,
    })
}
