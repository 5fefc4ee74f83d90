//! Views over the stack reductions: SVG flame graphs (rendered by
//! `inferno`, the Rust port of flamegraph.pl) and per-frame deltas against
//! another run or artifact, matched by `logical_key`.
//!
//! Both read whole-scope reductions (folded stacks, `frame_totals`), so
//! their cost follows distinct stacks and frames, not events.

use flameox_recipes::frame_deltas::{self, FrameDeltaAnswer};
use flameox_recipes::{ArtifactScope, drilldown, hotspots};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, FlameoxError, Result};
use crate::query::{PinnedSession, run_budgeted};
use crate::services::analyze::default_metric;
use crate::services::{EvidenceStatus, QueryContext, ResolvedScope, answer_status, resolve_scope};

/// What `hotspots --flamegraph` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlameGraphRequest {
    pub target: String,
    pub metric: Option<String>,
    /// Draw a differential graph: `target` against this run or artifact.
    pub diff_against: Option<String>,
}

/// A rendered flame graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlameGraphResult {
    pub metric: String,
    pub differential: bool,
    /// Distinct stacks drawn (on either side for a differential graph).
    pub stacks: usize,
    #[serde(skip)]
    pub svg: String,
}

/// What `compare_hotspots` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FrameDeltaRequest {
    /// Run id (or a unique prefix, or latest) or artifact id (sha256:…).
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// The run or artifact to compare against.
    #[schemars(length(min = 1, max = 200))]
    pub base: String,
    /// Metric; default the artifact's primary one.
    #[schemars(length(max = 64))]
    pub metric: Option<String>,
    /// Frames returned, largest change first (default 20).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// Match frames by line too (default: function and file name).
    #[serde(default)]
    pub by_line: bool,
}

/// The frames that changed most between `base` and `target`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameDeltaResult {
    pub scope: ResolvedScope,
    pub base_scope: ResolvedScope,
    pub commit_id: String,
    /// The whole of each side first, then the matched share and the rows.
    #[serde(flatten)]
    pub answer: FrameDeltaAnswer,
    pub returned: usize,
    pub truncated: bool,
    pub evidence: EvidenceStatus,
}

fn artifacts(scope: &ResolvedScope) -> ArtifactScope {
    ArtifactScope {
        artifact_ids: scope.artifact_ids.clone(),
    }
}

/// The metric both scopes have: the requested one, else the target's
/// default; `COMPARISON_INVALID` when the base lacks it.
async fn shared_metric(
    session: &PinnedSession,
    target: &ArtifactScope,
    base: &ArtifactScope,
    requested: Option<&str>,
) -> Result<String> {
    let metric = default_metric(session, target, requested).await?;
    let available =
        run_budgeted(session, hotspots::available_metrics(&session.ctx, target)).await?;
    let in_base = run_budgeted(session, hotspots::available_metrics(&session.ctx, base)).await?;
    if !in_base.contains(&metric) {
        return Err(FlameoxError::new(
            ErrorCode::ComparisonInvalid,
            format!("the comparison base has no {metric} evidence"),
        )
        .detail("metric", metric.clone())
        .detail("base_metrics", in_base.clone())
        .detail("target_metrics", available)
        .remedy("pass --metric with a metric both sides have"));
    }
    Ok(metric)
}

/// Renders the scope's stacks (or the difference to `diff_against`) as SVG.
pub async fn flame_graph(
    qc: &QueryContext<'_>,
    req: &FlameGraphRequest,
) -> Result<FlameGraphResult> {
    let session = qc.session(None)?;
    let scope = resolve_scope(qc.ws, &session.snapshot, &req.target)?;
    let target = artifacts(&scope);
    let (metric, base) = match &req.diff_against {
        Some(base_id) => {
            let base_scope = resolve_scope(qc.ws, &session.snapshot, base_id)?;
            let base = artifacts(&base_scope);
            let metric = shared_metric(&session, &target, &base, req.metric.as_deref()).await?;
            (metric, Some(base))
        }
        None => {
            let metric = default_metric(&session, &target, req.metric.as_deref()).await?;
            (metric, None)
        }
    };
    let after = run_budgeted(
        &session,
        drilldown::folded_stacks(&session.ctx, &target, &metric),
    )
    .await?;
    // A person reads the input's name and the metric in words; the run or
    // artifact id goes under it.
    let names: Vec<String> = scope
        .artifact_ids
        .iter()
        .filter_map(|id| crate::store::read_artifact(qc.ws, id).ok())
        .map(|a| a.original_name)
        .collect();
    let input = match names.as_slice() {
        [] => scope.requested.clone(),
        [one] => one.clone(),
        [first, rest @ ..] => format!("{first} and {} more", rest.len()),
    };
    let words = crate::units::metric_words(&metric);
    let title = match &base {
        Some(_) => format!(
            "{input} — {words}, against {}",
            req.diff_against.as_deref().unwrap_or("")
        ),
        None => format!("{input} — {words}"),
    };
    let subtitle = scope
        .run_id
        .clone()
        .unwrap_or_else(|| scope.requested.clone());
    let (lines, stacks) = match &base {
        None => {
            let lines: Vec<String> = after.iter().map(|(s, w)| format!("{s} {w}")).collect();
            let n = lines.len();
            (lines, n)
        }
        Some(base) => {
            let before = run_budgeted(
                &session,
                drilldown::folded_stacks(&session.ctx, base, &metric),
            )
            .await?;
            let lines = differential_lines(&before, &after)?;
            let n = lines.len();
            (lines, n)
        }
    };
    if lines.is_empty() {
        return Err(FlameoxError::new(
            ErrorCode::ComparisonInvalid,
            format!("no {metric} stacks to draw for {}", scope.requested),
        )
        .detail("metric", metric)
        .remedy("analyze_hotspots names the metrics that have stacks (available_metrics)"));
    }
    let svg = render(&title, &subtitle, &metric, &lines)?;
    Ok(FlameGraphResult {
        metric,
        differential: base.is_some(),
        stacks,
        svg,
    })
}

/// `stack before after` lines (inferno's differential folding).
fn differential_lines(before: &[(String, i64)], after: &[(String, i64)]) -> Result<Vec<String>> {
    let folded = |rows: &[(String, i64)]| -> String {
        rows.iter().map(|(s, w)| format!("{s} {w}\n")).collect()
    };
    let (before, after) = (folded(before), folded(after));
    let mut out = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options::default(),
        before.as_bytes(),
        after.as_bytes(),
        &mut out,
    )
    .map_err(|e| FlameoxError::internal(format!("differential folding failed: {e}")))?;
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .map(str::to_owned)
        .collect())
}

fn render(title: &str, subtitle: &str, metric: &str, lines: &[String]) -> Result<String> {
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_owned();
    options.subtitle = Some(subtitle.to_owned());
    // Tooltips say `1,234,567 ns` for time metrics, `412 samples` otherwise.
    options.count_name = if metric.ends_with("_ns") {
        "ns".to_owned()
    } else {
        crate::units::metric_words(metric)
    };
    options.hash = true;
    options.deterministic = true;
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut svg)
        .map_err(|e| FlameoxError::internal(format!("rendering the flame graph failed: {e}")))?;
    String::from_utf8(svg).map_err(|e| FlameoxError::internal(format!("SVG is not UTF-8: {e}")))
}

/// Per-frame deltas of `target` against `base`, largest change first.
pub async fn frame_deltas(
    qc: &QueryContext<'_>,
    req: &FrameDeltaRequest,
) -> Result<FrameDeltaResult> {
    let limit = qc.ws.config.row_limit(req.limit)?;
    let session = qc.session(None)?;
    let scope = resolve_scope(qc.ws, &session.snapshot, &req.target)?;
    let base_scope = resolve_scope(qc.ws, &session.snapshot, &req.base)?;
    let (target, base) = (artifacts(&scope), artifacts(&base_scope));
    let metric = shared_metric(&session, &target, &base, req.metric.as_deref()).await?;
    let answer = run_budgeted(
        &session,
        frame_deltas::frame_deltas(&session.ctx, &target, &base, &metric, req.by_line, limit),
    )
    .await?;
    let evidence = answer_status(&session.snapshot, &scope, answer.total_frames > 0, false);
    Ok(FrameDeltaResult {
        commit_id: session.snapshot.commit_id().to_owned(),
        scope,
        base_scope,
        returned: answer.rows.len(),
        truncated: (answer.rows.len() as u64) < answer.total_frames,
        answer,
        evidence,
    })
}
