//! Analysis and drill-down services: hotspots, callers/callees, example
//! stacks, folded stacks and trace windows, each paged by a signed keyset
//! cursor pinned to its commit.

use datafusion::functions_aggregate::expr_fn::max;
use datafusion::logical_expr::col;
use flameox_recipes::drilldown::{
    self, Direction, NeighborQuery, NeighborRow, ResolvedFrame, StackExample,
};
use flameox_recipes::hotspots::{self, HotspotQuery, HotspotRow};
use flameox_recipes::thread_scope;
use flameox_recipes::window::{self, WindowEvent, WindowQuery};
use flameox_recipes::window_stacks::WindowSource;
use flameox_recipes::{ArtifactScope, common};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::cursor::CursorCodec;
use crate::error::{FlameoxError, Result};
use crate::query::{PinnedSession, run_budgeted};
use crate::services::narrower::{Narrowing, narrow};
use crate::services::phase_window::{PhaseScope, TimeScope, time_scope, time_window};
use crate::services::window_count;
use crate::services::{
    EvidenceStatus, QueryContext, ResolvedScope, answer_status, check_id, resolve_scope,
};

/// What `analyze_hotspots` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HotspotsRequest {
    /// Run id (or a unique prefix, or latest) or artifact id (sha256:…).
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// Metric; default the artifact's primary one (answers list the others).
    #[schemars(length(max = 64))]
    pub metric: Option<String>,
    /// Only this thread: tid or exact name.
    #[schemars(length(max = 200))]
    pub thread: Option<String>,
    /// Only this process: pid or exact name.
    #[schemars(length(max = 200))]
    pub process: Option<String>,
    /// Window start, trace ns (with end_ns).
    pub start_ns: Option<i64>,
    /// Window end (exclusive).
    pub end_ns: Option<i64>,
    /// Phase whose host span is the window, e.g. ProfilerStep#3.
    #[schemars(length(min = 1, max = 200))]
    pub phase: Option<String>,
    /// Rows per page (default 20).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// next_cursor of the previous page.
    #[schemars(length(min = 1, max = 4096))]
    pub cursor: Option<String>,
    /// One row per source line (default: per function, lines merged).
    #[serde(default)]
    pub by_line: bool,
}

impl HotspotsRequest {
    /// The window, when both ends are given (one end alone is refused).
    pub fn window(&self) -> Result<Option<(i64, i64)>> {
        time_window(self.start_ns, self.end_ns)
    }
}

/// A page of hotspots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HotspotsResult {
    pub scope: ResolvedScope,
    /// The phase the answer was scoped to and the window it stood for.
    pub phase: Option<PhaseScope>,
    pub commit_id: String,
    pub metric: String,
    pub unit: String,
    pub available_metrics: Vec<String>,
    /// Sum of self values over every matching frame (the % denominator).
    pub total_self: i64,
    pub rows: Vec<HotspotRow>,
    pub total: u64,
    pub returned: usize,
    pub truncated: bool,
    pub next_cursor: Option<String>,
    pub evidence: EvidenceStatus,
}

/// Pins the cursor's commit (or HEAD) and decodes the cursor's key.
pub(super) fn pin_for_cursor(
    qc: &QueryContext<'_>,
    family: &str,
    params: &Value,
    cursor: Option<&str>,
) -> Result<(PinnedSession, CursorCodec, Option<Value>)> {
    let codec = CursorCodec::new(qc.ws.cursor_key()?);
    match cursor {
        Some(text) => {
            let payload = codec.decode(text, family, params)?;
            let session = qc.session(Some(&payload.commit))?;
            Ok((session, codec, Some(payload.key)))
        }
        None => Ok((qc.session(None)?, codec, None)),
    }
}

/// Callers, callees (`Some`) or stack examples (`None`) of one artifact.
fn frame_narrowing(req: &FrameRequest, direction: Option<Direction>) -> Narrowing<'_> {
    let operation = match direction {
        Some(Direction::Callers) => "get_frame_callers",
        Some(Direction::Callees) => "get_frame_callees",
        None => "get_stack_examples",
    };
    Narrowing::Scope {
        operation,
        target: &req.target,
        keep: json!({
            "frame": req.frame, "thread": req.thread, "process": req.process,
            "metric": req.metric, "limit": req.limit, "start_ns": req.start_ns,
            "end_ns": req.end_ns, "phase": req.phase,
        }),
        advice: None,
    }
}

/// A cursor whose signed position does not decode.
pub(super) fn stale_key() -> FlameoxError {
    FlameoxError::new(
        crate::error::ErrorCode::StaleCursor,
        "the cursor's position is malformed",
    )
}

/// Top frames by self value.
pub async fn analyze_hotspots(
    qc: &QueryContext<'_>,
    req: &HotspotsRequest,
) -> Result<HotspotsResult> {
    hotspots_page(qc, req)
        .await
        .map_err(|e| narrow(qc, e, Narrowing::Hotspots(req)))
}

async fn hotspots_page(qc: &QueryContext<'_>, req: &HotspotsRequest) -> Result<HotspotsResult> {
    let limit = qc.ws.config.row_limit(req.limit)?;
    let window = req.window()?;
    let params = json!({
        "target": req.target, "metric": req.metric, "thread": req.thread,
        "process": req.process, "window": window, "phase": req.phase,
        "by_line": req.by_line,
    });
    let (session, codec, key) = pin_for_cursor(qc, "hotspots", &params, req.cursor.as_deref())?;
    let scope = resolve_scope(qc.ws, &session.snapshot, &req.target)?;
    let (window, phase) = time_scope(&session, &scope, req.phase.as_deref(), window).await?;
    let after = match key {
        Some(k) => Some(serde_json::from_value::<(i64, String)>(k).map_err(|_| stale_key())?),
        None => None,
    };
    let query = HotspotQuery {
        scope: ArtifactScope {
            artifact_ids: scope.artifact_ids.clone(),
        },
        metric: req.metric.clone().or_else(|| {
            primary_metric(
                &session,
                &ArtifactScope {
                    artifact_ids: scope.artifact_ids.clone(),
                },
            )
        }),
        thread: req.thread.clone(),
        process: req.process.clone(),
        window,
        limit,
        after,
        by_line: req.by_line,
    };
    let answer = run_budgeted(&session, hotspots::hotspots(&session.ctx, &query)).await?;
    let next_cursor = match (answer.has_more, answer.rows.last()) {
        (true, Some(last)) => Some(codec.encode(
            "hotspots",
            session.snapshot.commit_id(),
            &params,
            json!([last.self_value, last.frame]),
        )?),
        _ => None,
    };
    let filtered = req.thread.is_some() || req.process.is_some() || window.is_some();
    let evidence = answer_status(&session.snapshot, &scope, answer.total_frames > 0, filtered);
    Ok(HotspotsResult {
        commit_id: session.snapshot.commit_id().to_owned(),
        scope,
        phase,
        metric: answer.metric,
        unit: answer.unit,
        available_metrics: answer.available_metrics,
        total_self: answer.total_self,
        returned: answer.rows.len(),
        rows: answer.rows,
        total: answer.total_frames,
        truncated: answer.has_more,
        next_cursor,
        evidence,
    })
}

/// What `get_frame_callers` and `get_frame_callees` ask.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FrameRequest {
    /// Run id (or a unique prefix, or latest) or artifact id (sha256:…).
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// A frame: its key (a hotspot row's `frame`, whole or its first 8 characters) or its function's name.
    #[schemars(length(min = 1, max = 200))]
    pub frame: String,
    /// Only this thread: tid or exact name.
    #[schemars(length(max = 200))]
    pub thread: Option<String>,
    /// Only this process: pid or exact name.
    #[schemars(length(max = 200))]
    pub process: Option<String>,
    /// Window start, trace ns (with end_ns).
    pub start_ns: Option<i64>,
    /// Window end (exclusive).
    pub end_ns: Option<i64>,
    /// Phase whose host span is the window, e.g. ProfilerStep#3.
    #[schemars(length(min = 1, max = 200))]
    pub phase: Option<String>,
    /// Metric; default the artifact's primary one (answers list the others).
    #[schemars(length(max = 64))]
    pub metric: Option<String>,
    /// Rows per page (default 20).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// next_cursor of the previous page.
    #[schemars(length(min = 1, max = 4096))]
    pub cursor: Option<String>,
}

/// What `get_stack_examples` asks (one page: the heaviest stacks).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StackExamplesRequest {
    /// Run id (or a unique prefix, or latest) or artifact id (sha256:…).
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// A frame: its key (a hotspot row's `frame`, whole or its first 8 characters) or its function's name.
    #[schemars(length(min = 1, max = 200))]
    pub frame: String,
    /// Only this thread: tid or exact name.
    #[schemars(length(max = 200))]
    pub thread: Option<String>,
    /// Only this process: pid or exact name.
    #[schemars(length(max = 200))]
    pub process: Option<String>,
    /// Window start, trace ns (with end_ns).
    pub start_ns: Option<i64>,
    /// Window end (exclusive).
    pub end_ns: Option<i64>,
    /// Phase whose host span is the window, e.g. ProfilerStep#3.
    #[schemars(length(min = 1, max = 200))]
    pub phase: Option<String>,
    /// Metric the stacks are weighed by; default the artifact's primary one.
    #[schemars(length(max = 64))]
    pub metric: Option<String>,
    /// Stacks returned (default 5).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

impl From<StackExamplesRequest> for FrameRequest {
    fn from(r: StackExamplesRequest) -> Self {
        FrameRequest {
            target: r.target,
            frame: r.frame,
            thread: r.thread,
            process: r.process,
            start_ns: r.start_ns,
            end_ns: r.end_ns,
            phase: r.phase,
            metric: r.metric,
            limit: r.limit,
            cursor: None,
        }
    }
}

/// Callers or callees of a frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NeighborsResult {
    pub scope: ResolvedScope,
    pub commit_id: String,
    pub direction: Direction,
    pub frame: ResolvedFrame,
    pub metric: String,
    /// The threads a `thread`/`process` scope covered (several when a name
    /// is shared); absent for the whole target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<Vec<String>>,
    pub rows: Vec<NeighborRow>,
    pub total: u64,
    pub returned: usize,
    pub truncated: bool,
    pub next_cursor: Option<String>,
    #[serde(flatten)]
    pub time: TimeScope,
    pub evidence: EvidenceStatus,
}

/// The metric the extractor of every artifact in scope names as primary
/// (`metadata.primary_metric`), when they agree: an Nsight export's wall
/// time over the CPU samples it also carries.
pub(crate) fn primary_metric(session: &PinnedSession, scope: &ArtifactScope) -> Option<String> {
    let mut named = scope.artifact_ids.iter().map(|a| {
        session
            .snapshot
            .generations_for(a)
            .find_map(|g| g.summary.metadata.get("primary_metric"))
            .and_then(Value::as_str)
    });
    let first = named.next().flatten()?;
    named.all(|m| m == Some(first)).then(|| first.to_owned())
}

/// The requested metric, else the scope's primary one, else the first of
/// the preferred defaults the scope has.
pub(crate) async fn default_metric(
    session: &PinnedSession,
    scope: &ArtifactScope,
    requested: Option<&str>,
) -> Result<String> {
    let available = run_budgeted(session, hotspots::available_metrics(&session.ctx, scope)).await?;
    let primary = primary_metric(session, scope).filter(|m| available.contains(m));
    hotspots::choose_metric(requested.or(primary.as_deref()), &available)
        .map_err(|e| crate::query::recipe_error(e, &session.budget))
}

/// A target resolved against a pinned session, its artifacts, and a frame
/// (key or exact function name) resolved in them: what every drill-down
/// starts from.
pub(crate) async fn frame_in_target(
    qc: &QueryContext<'_>,
    session: &PinnedSession,
    target: &str,
    frame: &str,
) -> Result<(ResolvedScope, ArtifactScope, ResolvedFrame)> {
    let scope = resolve_scope(qc.ws, &session.snapshot, target)?;
    let artifacts = ArtifactScope {
        artifact_ids: scope.artifact_ids.clone(),
    };
    let resolved = run_budgeted(
        session,
        drilldown::resolve_frame(&session.ctx, &artifacts, frame),
    )
    .await?;
    Ok((scope, artifacts, resolved))
}

/// The threads a drill-down's `thread`/`process` names, or `None` for all.
async fn scoped_threads(
    session: &PinnedSession,
    scope: &ArtifactScope,
    req: &FrameRequest,
) -> Result<Option<thread_scope::ScopedThreads>> {
    let wanted = thread_scope::ThreadScope {
        thread: req.thread.clone(),
        process: req.process.clone(),
    };
    if wanted.is_everything() {
        return Ok(None);
    }
    let resolved =
        run_budgeted(session, thread_scope::resolve(&session.ctx, scope, &wanted)).await?;
    if resolved.threads.is_empty() {
        return Err(FlameoxError::new(
            crate::error::ErrorCode::InvalidArguments,
            format!(
                "no thread with stacks matches thread {} process {}",
                req.thread.as_deref().unwrap_or("(any)"),
                req.process.as_deref().unwrap_or("(any)")
            ),
        )
        .detail("fields", json!(["thread", "process"]))
        .recover("list_threads", json!({ "target": req.target })));
    }
    Ok(Some(resolved))
}

/// The callers or callees of a frame, heaviest first.
pub async fn frame_neighbors(
    qc: &QueryContext<'_>,
    req: &FrameRequest,
    direction: Direction,
) -> Result<NeighborsResult> {
    neighbors_page(qc, req, direction)
        .await
        .map_err(|e| narrow(qc, e, frame_narrowing(req, Some(direction))))
}

async fn neighbors_page(
    qc: &QueryContext<'_>,
    req: &FrameRequest,
    direction: Direction,
) -> Result<NeighborsResult> {
    let limit = qc.ws.config.row_limit(req.limit)?;
    check_id("frame", &req.frame)?;
    let family = match direction {
        Direction::Callers => "callers",
        Direction::Callees => "callees",
    };
    let window = time_window(req.start_ns, req.end_ns)?;
    let params = json!({
        "target": req.target, "frame": req.frame, "metric": req.metric,
        "thread": req.thread, "process": req.process, "window": window, "phase": req.phase,
    });
    let (session, codec, key) = pin_for_cursor(qc, family, &params, req.cursor.as_deref())?;
    let (scope, artifact_scope, frame) =
        frame_in_target(qc, &session, &req.target, &req.frame).await?;
    let (window, phase) = time_scope(&session, &scope, req.phase.as_deref(), window).await?;
    let metric = default_metric(&session, &artifact_scope, req.metric.as_deref()).await?;
    let after = match key {
        Some(k) => Some(serde_json::from_value::<(i64, String)>(k).map_err(|_| stale_key())?),
        None => None,
    };
    let threads = scoped_threads(&session, &artifact_scope, req).await?;
    let query = NeighborQuery {
        scope: artifact_scope,
        frame: frame.clone(),
        direction,
        metric: metric.clone(),
        limit,
        after,
    };
    let keep = threads.as_ref().map(|t| &t.samples);
    let (answer, rule) = match (window, keep) {
        (Some(w), keep) => {
            let (answer, source) = run_budgeted(
                &session,
                thread_scope::neighbors_in_window(&session.ctx, &query, w, keep),
            )
            .await?;
            (answer, source.rule())
        }
        (None, Some(keep)) => (
            run_budgeted(
                &session,
                thread_scope::neighbors_in(&session.ctx, &query, keep),
            )
            .await?,
            "",
        ),
        (None, None) => (
            run_budgeted(&session, drilldown::call_neighbors(&session.ctx, &query)).await?,
            "",
        ),
    };
    let next_cursor = match (answer.has_more, answer.rows.last()) {
        (true, Some(last)) => Some(codec.encode(
            family,
            session.snapshot.commit_id(),
            &params,
            json!([last.weight, last.frame]),
        )?),
        _ => None,
    };
    let mut evidence = answer_status(
        &session.snapshot,
        &scope,
        !answer.rows.is_empty() || answer.total > 0,
        window.is_some(),
    );
    if answer.total == 0 && evidence.status == "empty" {
        evidence.reason = match direction {
            Direction::Callers => "frame_is_a_root".into(),
            Direction::Callees => "frame_is_a_leaf".into(),
        };
    }
    Ok(NeighborsResult {
        commit_id: session.snapshot.commit_id().to_owned(),
        scope,
        direction,
        frame,
        metric,
        threads: threads.map(|t| t.threads),
        returned: answer.rows.len(),
        rows: answer.rows,
        total: answer.total,
        truncated: answer.has_more,
        next_cursor,
        time: TimeScope::new(window, phase, rule),
        evidence,
    })
}

/// Example stacks returned when the request names no limit.
pub const EXAMPLES_DEFAULT_LIMIT: usize = 5;

/// Example stacks through a frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StackExamplesResult {
    pub scope: ResolvedScope,
    pub commit_id: String,
    pub frame: ResolvedFrame,
    /// The metric the stack weights are in.
    pub metric: String,
    /// The threads a `thread`/`process` scope covered; absent for the
    /// whole target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<Vec<String>>,
    pub stacks: Vec<StackExample>,
    pub total: u64,
    pub returned: usize,
    pub truncated: bool,
    pub next_cursor: Option<String>,
    #[serde(flatten)]
    pub time: TimeScope,
    pub evidence: EvidenceStatus,
}

/// Representative full stacks containing a frame, heaviest first.
pub async fn stack_examples(
    qc: &QueryContext<'_>,
    req: &FrameRequest,
) -> Result<StackExamplesResult> {
    examples_page(qc, req)
        .await
        .map_err(|e| narrow(qc, e, frame_narrowing(req, None)))
}

async fn examples_page(qc: &QueryContext<'_>, req: &FrameRequest) -> Result<StackExamplesResult> {
    // Whole stacks are long (C++ frames, deep recursion): 5 by default.
    let limit = qc
        .ws
        .config
        .row_limit(Some(req.limit.unwrap_or(EXAMPLES_DEFAULT_LIMIT)))?;
    check_id("frame", &req.frame)?;
    if req.cursor.is_some() {
        return Err(FlameoxError::invalid_argument(
            "cursor",
            "stack examples are not paged; raise --limit",
        ));
    }
    let window = time_window(req.start_ns, req.end_ns)?;
    let session = qc.session(None)?;
    let (scope, artifact_scope, frame) =
        frame_in_target(qc, &session, &req.target, &req.frame).await?;
    let (window, phase) = time_scope(&session, &scope, req.phase.as_deref(), window).await?;
    let metric = default_metric(&session, &artifact_scope, req.metric.as_deref()).await?;
    let threads = scoped_threads(&session, &artifact_scope, req).await?;
    let keep = threads.as_ref().map(|t| &t.samples);
    let (answer, source) = run_budgeted(
        &session,
        drilldown::stack_examples(
            &session.ctx,
            &artifact_scope,
            &frame,
            &metric,
            limit,
            window,
            keep,
        ),
    )
    .await?;
    let rule = source.map_or("", WindowSource::rule);
    let evidence = answer_status(
        &session.snapshot,
        &scope,
        !answer.stacks.is_empty(),
        window.is_some(),
    );
    Ok(StackExamplesResult {
        commit_id: session.snapshot.commit_id().to_owned(),
        scope,
        frame,
        metric,
        threads: threads.map(|t| t.threads),
        returned: answer.stacks.len(),
        stacks: answer.stacks,
        total: answer.total,
        truncated: answer.has_more,
        next_cursor: None,
        time: TimeScope::new(window, phase, rule),
        evidence,
    })
}

/// Folded stacks (`a;b;c weight` lines) of a run or artifact, weighted by
/// `metric` (default: the artifact's primary metric, as hotspots choose).
pub async fn folded_stacks(
    qc: &QueryContext<'_>,
    target: &str,
    metric: Option<&str>,
) -> Result<Vec<(String, i64)>> {
    let session = qc.session(None)?;
    let scope = resolve_scope(qc.ws, &session.snapshot, target)?;
    let artifact_scope = ArtifactScope {
        artifact_ids: scope.artifact_ids,
    };
    let metric = default_metric(&session, &artifact_scope, metric).await?;
    run_budgeted(
        &session,
        drilldown::folded_stacks(&session.ctx, &artifact_scope, &metric),
    )
    .await
}

/// What `get_trace_window` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WindowRequest {
    /// Artifact id (sha256:…) or a run with one artifact.
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// Window start (trace ns; with relative, ns after the first event).
    pub start_ns: i64,
    /// Window end (exclusive).
    pub end_ns: i64,
    /// Event kind, e.g. cpu_op, runtime_api, kernel, instant.
    #[schemars(length(max = 64))]
    pub kind: Option<String>,
    /// Exact event name.
    #[schemars(length(max = 200))]
    pub name: Option<String>,
    /// Only this track (an event's track_id).
    pub track_id: Option<u64>,
    /// Only this GPU stream.
    pub stream: Option<i64>,
    /// Only events with this correlation id (a launch and what it launched).
    pub correlation_id: Option<i64>,
    /// Fields kept per event (event_id, ts_ns and name always): e.g.
    /// dur_ns, kind, stream, correlation_id, args_json; default all.
    #[schemars(length(max = 24))]
    pub fields: Option<Vec<String>>,
    /// Bytes of args_json kept per event (default 256; 0 drops it).
    #[schemars(range(max = 65536))]
    pub args_bytes: Option<usize>,
    /// Names over 160 characters in full (default: as their kernel family).
    #[serde(default)]
    pub full_names: bool,
    /// start_ns and end_ns are offsets from the trace's first event.
    #[serde(default)]
    pub relative: bool,
    /// Rows per page (default 20).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// next_cursor of the previous page.
    #[schemars(length(min = 1, max = 4096))]
    pub cursor: Option<String>,
}

/// A page of a trace window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowResult {
    pub artifact_id: String,
    pub commit_id: String,
    /// The window actually read, in trace time (absolute ns).
    pub start_ns: i64,
    pub end_ns: i64,
    /// First event start and last event end of the artifact.
    pub trace_span_ns: Option<(i64, i64)>,
    /// With `relative`: the first event's start, which the asked window
    /// (and a person's printed times) count from. Event `ts_ns` stay absolute.
    pub relative_to_ns: Option<i64>,
    pub events: Vec<WindowEvent>,
    pub total: u64,
    pub returned: usize,
    pub truncated: bool,
    pub next_cursor: Option<String>,
    pub evidence: EvidenceStatus,
}

/// Events overlapping `[start, end)`, keyset-paged.
pub async fn trace_window(qc: &QueryContext<'_>, req: &WindowRequest) -> Result<WindowResult> {
    window_page(qc, req)
        .await
        .map_err(|e| narrow(qc, e, Narrowing::Window(req)))
}

async fn window_page(qc: &QueryContext<'_>, req: &WindowRequest) -> Result<WindowResult> {
    let limit = qc.ws.config.row_limit(req.limit)?;
    if req.start_ns >= req.end_ns {
        return Err(FlameoxError::invalid_argument(
            "end",
            "must be greater than start",
        ));
    }
    let params = json!({
        "target": req.target, "start": req.start_ns, "end": req.end_ns,
        "kind": req.kind, "name": req.name, "track_id": req.track_id, "relative": req.relative,
        "stream": req.stream, "correlation_id": req.correlation_id,
    });
    if let Some(fields) = &req.fields
        && let Some(bad) = fields.iter().find(|f| !WINDOW_FIELDS.contains(&f.as_str()))
    {
        return Err(FlameoxError::invalid_argument(
            "fields",
            format!(
                "{bad} is not an event field; one of {}",
                WINDOW_FIELDS.join(", ")
            ),
        ));
    }
    let (session, codec, key) = pin_for_cursor(qc, "trace_window", &params, req.cursor.as_deref())?;
    let scope = resolve_scope(qc.ws, &session.snapshot, &req.target)?;
    let [artifact_id] = scope.artifact_ids.as_slice() else {
        return Err(FlameoxError::invalid_argument(
            "target",
            "a trace window needs one artifact; pass its sha256 id",
        )
        .detail("artifacts", scope.artifact_ids.clone()));
    };
    // Cursor key: `[ts_ns, event_id, total]` (the window's count from the
    // first page; older two-element keys are recounted).
    let (after, known_total) = match key {
        Some(k) => match serde_json::from_value::<(i64, u64, u64)>(k.clone()) {
            Ok((ts, id, total)) => (Some((ts, id)), Some(total)),
            Err(_) => (
                Some(serde_json::from_value::<(i64, u64)>(k).map_err(|_| stale_key())?),
                None,
            ),
        },
        None => (None, None),
    };
    let trace_span_ns = session
        .snapshot
        .generations_for(artifact_id)
        .filter_map(|g| g.summary.time_span_ns)
        .next();
    let offset = match (req.relative, trace_span_ns) {
        (true, Some((first, _))) => first,
        _ => 0,
    };
    let (start_ns, end_ns) = (
        req.start_ns.saturating_add(offset),
        req.end_ns.saturating_add(offset),
    );
    let recorded_max_dur = session
        .snapshot
        .generations_for(artifact_id)
        .filter_map(|g| g.summary.max_event_dur_ns)
        .max();
    let known_max_dur = recorded_max_dur.or_else(|| {
        window_count::longest_from_footers(qc.ws.dir(), &session.snapshot, artifact_id)
    });
    let max_dur_ns = match known_max_dur {
        Some(longest) => longest,
        None => run_budgeted(&session, max_duration(&session, artifact_id)).await?,
    };
    let mut query = WindowQuery {
        artifact_id: artifact_id.clone(),
        start_ns,
        end_ns,
        max_dur_ns,
        kind: req.kind.clone(),
        name: req.name.clone(),
        track_id: req.track_id,
        stream: req.stream,
        correlation_id: req.correlation_id,
        limit,
        after,
        known_total,
    };
    if query.known_total.is_none() {
        query.known_total =
            window_count::count_from_footers(qc.ws.dir(), &session.snapshot, &query);
    }
    let mut answer = run_budgeted(&session, window::trace_window(&session.ctx, &query)).await?;
    trim_events(&mut answer.events, req);
    let next_cursor = match (answer.has_more, answer.events.last()) {
        (true, Some(last)) => Some(codec.encode(
            "trace_window",
            session.snapshot.commit_id(),
            &params,
            json!([last.ts_ns, last.event_id, answer.total]),
        )?),
        _ => None,
    };
    let filtered = req.kind.is_some()
        || req.name.is_some()
        || req.track_id.is_some()
        || req.stream.is_some()
        || req.correlation_id.is_some();
    let mut evidence = answer_status(&session.snapshot, &scope, answer.total > 0, filtered);
    if evidence.status == "empty" && !filtered {
        evidence.reason = "window_outside_trace_span".into();
        if let Some((first, last)) = trace_span_ns {
            evidence.next_tool = Some("get_trace_window".into());
            evidence.next_arguments = Some(json!({
                "target": artifact_id, "start_ns": first, "end_ns": last.max(first + 1),
            }));
        }
    }
    Ok(WindowResult {
        artifact_id: artifact_id.clone(),
        commit_id: session.snapshot.commit_id().to_owned(),
        start_ns,
        end_ns,
        trace_span_ns,
        relative_to_ns: (req.relative && trace_span_ns.is_some()).then_some(offset),
        returned: answer.events.len(),
        events: answer.events,
        total: answer.total,
        truncated: answer.has_more,
        next_cursor,
        evidence,
    })
}

/// Fields a window's `fields` may name.
const WINDOW_FIELDS: &[&str] = &[
    "event_id",
    "parent_event_id",
    "depth",
    "ts_ns",
    "dur_ns",
    "self_ns",
    "name",
    "category",
    "kind",
    "track_id",
    "pid",
    "tid",
    "device",
    "stream",
    "correlation_id",
    "external_id",
    "bytes",
    "phase",
    "args_json",
];

/// Bytes of `args_json` kept per event by default.
const WINDOW_ARGS_BYTES: usize = 256;

/// A page's events within the agent's budget: `args_json` cut (on a char
/// boundary, `args_cut` set), long names read as their kernel family unless
/// asked in full, and only the asked fields kept.
fn trim_events(events: &mut [flameox_recipes::window::WindowEvent], req: &WindowRequest) {
    let cap = req.args_bytes.unwrap_or(WINDOW_ARGS_BYTES);
    let keep = |f: &str| {
        req.fields
            .as_ref()
            .is_none_or(|fields| fields.iter().any(|x| x == f))
    };
    for e in events.iter_mut() {
        if let Some(text) = e.args_json.as_mut() {
            *text = compact_json(text);
        }
        if let Some(text) = e.args_json.as_mut()
            && text.len() > cap
        {
            let mut end = cap;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            e.args_cut = true;
        }
        if cap == 0 || e.args_json.as_deref() == Some("{}") {
            e.args_json = None;
        }
        if !req.full_names {
            e.name = flameox_recipes::kernel_family::readable_name(&e.name);
        }
        e.keep_only(keep);
    }
}

/// `text` without the whitespace outside its strings: the producer's
/// pretty-printing (Kineto indents every args object) is a third of a
/// window page's bytes. Keys keep their order; text that is not JSON keeps
/// its strings intact all the same.
fn compact_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_whitespace() {
            out.push(c);
        }
    }
    out
}

/// Longest slice of an artifact (widens the window's pruning bound).
async fn max_duration(
    session: &PinnedSession,
    artifact_id: &str,
) -> std::result::Result<i64, flameox_recipes::RecipeError> {
    let df = common::table(&session.ctx, "trace_events")
        .await?
        .filter(ArtifactScope::one(artifact_id).filter())?
        .aggregate(vec![], vec![max(col("dur_ns")).alias("m")])?;
    let batches = common::collect(df).await?;
    Ok(batches
        .first()
        .and_then(|b| {
            b.column_by_name("m")
                .and_then(|c| common::i64_at(c.as_ref(), 0))
        })
        .unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::compact_json;

    #[test]
    fn args_lose_their_indentation_but_not_their_strings() {
        assert_eq!(
            compact_json(
                "{\n      \"External id\": 825016,\n      \"name\": \"a \\\" b  c\"\n    }"
            ),
            "{\"External id\":825016,\"name\":\"a \\\" b  c\"}"
        );
        // Cut text (not JSON) keeps what it has.
        assert_eq!(compact_json("{ \"k\": \"v  w"), "{\"k\":\"v  w");
        assert_eq!(compact_json("{}"), "{}");
    }
}
