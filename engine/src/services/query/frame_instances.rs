//! `get_frame_instances` and `find_frames`: from a hotspot to its worst
//! individual slices in one call, and from a piece of a name to the frame
//! keys the drill-downs accept (saying whether a match was exact).

use flameox_recipes::ArtifactScope;
use flameox_recipes::drilldown::ResolvedFrame;
use flameox_recipes::instances::{self, FrameMatch, InstanceOrder, InstanceQuery, InstanceRow};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::Result;
use crate::query::run_budgeted;
use crate::services::phase_window::{PhaseScope, phase_or_window, time_scope, time_window};
use crate::services::{
    EvidenceStatus, QueryContext, ResolvedScope, answer_status, check_id, resolve_scope,
};

/// Rows when the request names no limit.
pub const DEFAULT_LIMIT: usize = 10;
/// Bytes of a slice's args kept per instance.
pub const ARGS_BYTES: usize = 300;

/// The order of instances, as asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Longest first.
    #[default]
    Longest,
    /// In time order.
    Earliest,
}

impl From<Order> for InstanceOrder {
    fn from(o: Order) -> InstanceOrder {
        match o {
            Order::Longest => InstanceOrder::Longest,
            Order::Earliest => InstanceOrder::Earliest,
        }
    }
}

/// What `get_frame_instances` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InstancesRequest {
    /// Run id (UUID) or artifact id (sha256:…).
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// A frame: its key (a hotspot row's `frame`, whole or its first 8 characters) or its function's name.
    #[schemars(length(min = 1, max = 200))]
    pub frame: String,
    /// Only this thread: a tid or an exact thread name (list_threads).
    #[schemars(length(min = 1, max = 200))]
    pub thread: Option<String>,
    /// Only this process: pid or exact name.
    #[schemars(length(min = 1, max = 200))]
    pub process: Option<String>,
    /// Only slices overlapping [start_ns, end_ns).
    pub start_ns: Option<i64>,
    /// End of the window (with start_ns).
    pub end_ns: Option<i64>,
    /// Phase whose host span is the window, e.g. ProfilerStep#3.
    #[schemars(length(min = 1, max = 200))]
    pub phase: Option<String>,
    /// longest (default) or earliest.
    pub order: Option<Order>,
    /// Rows to return (default 10).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstancesResult {
    pub scope: ResolvedScope,
    pub commit_id: String,
    pub frame: ResolvedFrame,
    pub order: InstanceOrder,
    /// The phase the answer was scoped to and the window it stood for.
    pub phase: Option<PhaseScope>,
    pub rows: Vec<InstanceRow>,
    /// Matching slices (all, not only the rows).
    pub total: u64,
    /// The time they cover, each span once (an instance nested in another
    /// of the same name, a recursion, adds nothing).
    pub total_dur_ns: i64,
    /// Instances nested in another of the same name on their track.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nested: u64,
    pub max_dur_ns: i64,
    pub returned: usize,
    pub truncated: bool,
    pub evidence: EvidenceStatus,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A frame's individual slices, longest first (or in time order).
pub async fn frame_instances(
    qc: &QueryContext<'_>,
    req: &InstancesRequest,
) -> Result<InstancesResult> {
    let limit = qc
        .ws
        .config
        .row_limit(Some(req.limit.unwrap_or(DEFAULT_LIMIT)))?;
    check_id("frame", &req.frame)?;
    let window = time_window(req.start_ns, req.end_ns)?;
    phase_or_window(req.phase.as_deref(), window)?;
    let session = qc.session(None)?;
    let (scope, artifact_scope, frame) =
        crate::services::analyze::frame_in_target(qc, &session, &req.target, &req.frame).await?;
    let (window, phase) = time_scope(&session, &scope, req.phase.as_deref(), window).await?;
    let order = InstanceOrder::from(req.order.unwrap_or_default());
    let query = InstanceQuery {
        scope: artifact_scope,
        name: frame.function.clone(),
        thread: req.thread.clone(),
        process: req.process.clone(),
        window,
        order,
        limit,
        args_bytes: ARGS_BYTES,
    };
    let answer = run_budgeted(&session, instances::frame_instances(&session.ctx, &query)).await?;
    let filtered = req.thread.is_some() || req.process.is_some() || window.is_some();
    let mut evidence = answer_status(&session.snapshot, &scope, answer.total > 0, filtered);
    if answer.total == 0 && !filtered {
        // The frame exists (it resolved) but no slice carries its name: it
        // was weighed from call-stack samples.
        evidence = EvidenceStatus::new("empty", "frame_from_samples_has_no_slices").with_next(
            "get_stack_examples",
            json!({ "target": req.target, "frame": req.frame }),
        );
    }
    Ok(InstancesResult {
        commit_id: session.snapshot.commit_id().to_owned(),
        scope,
        frame,
        order,
        phase,
        returned: answer.rows.len(),
        truncated: (answer.rows.len() as u64) < answer.total,
        rows: answer.rows,
        total: answer.total,
        total_dur_ns: answer.total_dur_ns,
        nested: answer.nested,
        max_dur_ns: answer.max_dur_ns,
        evidence,
    })
}

/// What `find_frames` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindFramesRequest {
    /// Run id (UUID) or artifact id (sha256:…).
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// Text the frame's function name contains (case-insensitive).
    #[schemars(length(min = 1, max = 200))]
    pub text: String,
    /// Rows to return (default 10).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindFramesResult {
    pub scope: ResolvedScope,
    pub commit_id: String,
    /// Exact matches first, then by inclusive value.
    pub rows: Vec<FrameMatch>,
    /// Frames matching (all, not only the rows).
    pub total: u64,
    pub returned: usize,
    pub truncated: bool,
    /// Whether a frame's name equals the text exactly.
    pub exact_match: bool,
    pub evidence: EvidenceStatus,
}

/// Frames whose name contains a text.
pub async fn find_frames(
    qc: &QueryContext<'_>,
    req: &FindFramesRequest,
) -> Result<FindFramesResult> {
    let limit = qc
        .ws
        .config
        .row_limit(Some(req.limit.unwrap_or(DEFAULT_LIMIT)))?;
    check_id("text", &req.text)?;
    let session = qc.session(None)?;
    let scope = resolve_scope(qc.ws, &session.snapshot, &req.target)?;
    let artifact_scope = ArtifactScope {
        artifact_ids: scope.artifact_ids.clone(),
    };
    let (rows, total) = run_budgeted(
        &session,
        instances::find_frames(&session.ctx, &artifact_scope, &req.text, limit),
    )
    .await?;
    let evidence = answer_status(&session.snapshot, &scope, total > 0, true);
    Ok(FindFramesResult {
        commit_id: session.snapshot.commit_id().to_owned(),
        scope,
        exact_match: rows.first().is_some_and(|r| r.exact),
        returned: rows.len(),
        truncated: (rows.len() as u64) < total,
        rows,
        total,
        evidence,
    })
}
