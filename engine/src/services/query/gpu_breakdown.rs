//! `analyze gpu-breakdown`: HTA-grade GPU breakdowns (temporal, idle per
//! stream, communication/computation overlap, kernels, launch statistics,
//! copy bandwidth) over one or several targets side by side, each artifact
//! labelled with its rank (Kineto `distributedInfo.rank`) when the trace
//! recorded one; many ranks are digested ([`super::gpu_breakdown_ranks`]).

use flameox_recipes::ArtifactScope;
use flameox_recipes::gpu_breakdown::{self, BreakdownAnswer, BreakdownParams, Section, Thresholds};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::catalog::Snapshot;
use crate::error::{FlameoxError, Result};
use crate::query::{recipe_error, run_budgeted};
use crate::services::query::gpu_breakdown_ranks::{RankDigest, digest};
use crate::services::{EvidenceStatus, QueryContext, ResolvedScope, answer_status, resolve_scope};

/// Rows per section when the request names no limit.
pub const DEFAULT_LIMIT: usize = 5;

/// At most this many targets side by side.
const MAX_TARGETS: usize = 64;

/// Thresholds above this (one hour, in ns) are refused as typos.
const MAX_THRESHOLD_NS: i64 = 3_600_000_000_000;

/// What `analyze_gpu_breakdown` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GpuBreakdownRequest {
    /// Run or artifact id, or a list of them shown side by side (ranks).
    pub target: Targets,
    /// One section; default all.
    #[schemars(extend("enum" = ["temporal", "idle", "overlap", "kernels", "launches", "bandwidth"]))]
    pub section: Option<String>,
    /// Kernel names per artifact and examples per outlier kind (default 5).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// Idle gaps shorter than this (µs) that no late launch explains are kernel wait (HTA: 30).
    #[schemars(range(min = 0))]
    pub kernel_wait_us: Option<f64>,
    /// Launch calls longer than this (µs) are runtime outliers (HTA: 50).
    #[schemars(range(min = 0))]
    pub runtime_outlier_us: Option<f64>,
    /// Launch delays longer than this (µs) are outliers (HTA: 100).
    #[schemars(range(min = 0))]
    pub launch_delay_outlier_us: Option<f64>,
    /// Names over 160 characters in full (default: as their kernel family).
    #[serde(default)]
    pub full_names: bool,
    /// Ranks shown in full (default: the 4 most idle past 8 artifacts).
    #[schemars(length(min = 1, max = 64))]
    pub ranks: Option<Vec<i64>>,
}

/// One run or artifact id, or several.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Targets {
    One(#[schemars(length(min = 1, max = 200))] String),
    Many(#[schemars(length(min = 1, max = 64))] Vec<String>),
}

impl Default for Targets {
    fn default() -> Self {
        Targets::Many(Vec::new())
    }
}

impl Targets {
    pub fn as_slice(&self) -> &[String] {
        match self {
            Targets::One(one) => std::slice::from_ref(one),
            Targets::Many(many) => many,
        }
    }
}

/// One artifact in scope and how its rows are labelled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtifactLabel {
    pub artifact_id: String,
    /// The run the artifact was named through (null for an artifact id).
    pub run_id: Option<String>,
    /// `distributedInfo.rank`, when recorded.
    pub rank: Option<i64>,
    pub world_size: Option<i64>,
    pub has_device_work: bool,
}

/// The gap rule this answer applies, said in the answer.
pub const IDLE_DEFINITION: &str = "Idle per stream (HTA's rules): gaps between one stream's kernels, copies and sets; host wait = launched after the stream went idle (starved on this stream), kernel wait = queued and shorter than kernel_wait_us, other = queued and longer (stalled). Not device idle: temporal.idle_ns is (first to last device activity), and analyze_gpu_gaps splits device idle by why over a named span.";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuBreakdownResult {
    pub targets: Vec<ResolvedScope>,
    pub commit_id: String,
    pub artifacts: Vec<ArtifactLabel>,
    #[serde(flatten)]
    pub answer: BreakdownAnswer,
    /// Past 8 artifacts: the ranks shown and how every rank spreads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<RankDigest>,
    /// What a gap is in this answer (the three GPU answers use one rule).
    #[serde(default)]
    pub idle_definition: String,
    pub evidence: EvidenceStatus,
}

/// Several targets as one scope: every artifact, the first run, each
/// limitation once.
pub(crate) fn combined_scope(
    asked: &[String],
    targets: &[ResolvedScope],
    artifact_ids: Vec<String>,
) -> ResolvedScope {
    ResolvedScope {
        requested: asked.join(" "),
        run_id: targets.iter().find_map(|t| t.run_id.clone()),
        artifact_ids,
        limitations: targets
            .iter()
            .flat_map(|t| t.limitations.iter().cloned())
            .fold(Vec::new(), |mut all, l| {
                if !all.contains(&l) {
                    all.push(l);
                }
                all
            }),
    }
}

/// A threshold in µs as ns (at most an hour: larger is a typo).
fn threshold(field: &str, us: Option<f64>, default: i64) -> Result<i64> {
    match us {
        None => Ok(default),
        Some(v) if v.is_finite() && v >= 0.0 && v * 1000.0 <= MAX_THRESHOLD_NS as f64 => {
            Ok((v * 1000.0).round() as i64)
        }
        Some(v) => Err(FlameoxError::invalid_argument(
            field,
            format!("{v} µs is outside 0..=3,600,000,000 µs"),
        )),
    }
}

/// A number in `distributedInfo` (Kineto writes integers; accept strings).
pub(crate) fn distributed_number(snapshot: &Snapshot, artifact_id: &str, key: &str) -> Option<i64> {
    snapshot.generations_for(artifact_id).find_map(|g| {
        let v = g.summary.metadata.get("distributedInfo")?.get(key)?;
        match v {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    })
}

pub async fn gpu_breakdown(
    qc: &QueryContext<'_>,
    req: &GpuBreakdownRequest,
) -> Result<GpuBreakdownResult> {
    let targets_asked = req.target.as_slice();
    if targets_asked.is_empty() || targets_asked.len() > MAX_TARGETS {
        return Err(FlameoxError::invalid_argument(
            "target",
            format!("give 1..={MAX_TARGETS} run or artifact ids"),
        ));
    }
    // Six sections of rows per artifact: 5 each by default keeps the
    // answer near the agents' byte budget (`agent_budgets.rs`).
    let limit = qc
        .ws
        .config
        .row_limit(Some(req.limit.unwrap_or(DEFAULT_LIMIT)))?;
    let defaults = Thresholds::default();
    let thresholds = Thresholds {
        kernel_wait_ns: threshold(
            "kernel_wait_us",
            req.kernel_wait_us,
            defaults.kernel_wait_ns,
        )?,
        runtime_outlier_ns: threshold(
            "runtime_outlier_us",
            req.runtime_outlier_us,
            defaults.runtime_outlier_ns,
        )?,
        launch_delay_outlier_ns: threshold(
            "launch_delay_outlier_us",
            req.launch_delay_outlier_us,
            defaults.launch_delay_outlier_ns,
        )?,
    };
    let session = qc.session(None)?;
    let sections = match &req.section {
        None => Section::ALL.to_vec(),
        Some(name) => {
            vec![Section::parse(name).map_err(|e| recipe_error(e, &session.budget))?]
        }
    };
    let mut targets = Vec::new();
    let mut labels: Vec<ArtifactLabel> = Vec::new();
    for target in targets_asked {
        let scope = resolve_scope(qc.ws, &session.snapshot, target)?;
        for id in &scope.artifact_ids {
            if labels.iter().all(|l| &l.artifact_id != id) {
                labels.push(ArtifactLabel {
                    artifact_id: id.clone(),
                    run_id: scope.run_id.clone(),
                    rank: distributed_number(&session.snapshot, id, "rank"),
                    world_size: distributed_number(&session.snapshot, id, "world_size"),
                    has_device_work: false,
                });
            }
        }
        targets.push(scope);
    }
    let params = BreakdownParams {
        sections,
        thresholds,
        limit,
        ranks: labels
            .iter()
            .filter_map(|l| Some((l.artifact_id.clone(), l.rank?)))
            .collect(),
    };
    let artifacts = ArtifactScope {
        artifact_ids: labels.iter().map(|l| l.artifact_id.clone()).collect(),
    };
    let answer = run_budgeted(
        &session,
        gpu_breakdown::gpu_breakdown(&session.ctx, &artifacts, &params),
    )
    .await?;
    for label in &mut labels {
        label.has_device_work = answer
            .artifacts_with_device_work
            .contains(&label.artifact_id);
    }
    let combined = combined_scope(targets_asked, &targets, artifacts.artifact_ids.clone());
    let found = !answer.artifacts_with_device_work.is_empty();
    let mut evidence = answer_status(&session.snapshot, &combined, found, false);
    if evidence.status == "available" || evidence.status == "empty" {
        // An artifact without device tracks is not a negative answer: the
        // trace may simply not have recorded them.
        if let Some(missing) = labels.iter().find(|l| !l.has_device_work) {
            evidence = EvidenceStatus::new("partial", "accelerator_tracks_missing")
                .with_next("get_run", json!({ "target": missing.run_id }));
        }
    }
    let mut answer = answer;
    if !req.full_names {
        readable_names(&mut answer);
    }
    let target = serde_json::to_value(&req.target)
        .map_err(|e| FlameoxError::internal(format!("serializing the target: {e}")))?;
    let ranks = digest(&mut labels, &mut answer, req.ranks.as_deref(), &target)?;
    keep_most_idle_streams(&mut answer);
    if ranks.is_some() {
        // The scopes name the artifacts shown; `ranks` counts them all.
        for scope in &mut targets {
            scope
                .artifact_ids
                .retain(|a| labels.iter().any(|l| &l.artifact_id == a));
        }
    }
    Ok(GpuBreakdownResult {
        commit_id: session.snapshot.commit_id().to_owned(),
        targets,
        artifacts: labels,
        answer,
        ranks,
        idle_definition: IDLE_DEFINITION.to_owned(),
        evidence,
    })
}

/// Kernel names as their readable form (a ck_tile or CUTLASS instantiation
/// runs to kilobytes; `get_trace_window` with `full_names` gives it whole).
fn readable_names(answer: &mut flameox_recipes::gpu_breakdown::BreakdownAnswer) {
    use flameox_recipes::kernel_family::readable_name;
    for k in answer.kernels.iter_mut().flatten() {
        for row in &mut k.rows {
            row.name = readable_name(&row.name);
        }
    }
    for l in answer.launches.iter_mut().flatten() {
        for outliers in [
            &mut l.short_kernels,
            &mut l.runtime_outliers,
            &mut l.launch_delay_outliers,
        ] {
            for e in &mut outliers.examples {
                e.name = readable_name(&e.name);
            }
        }
    }
}

/// Each artifact's most idle streams (a ROCm run may use hundreds), all of
/// them counted in `idle_streams_total`.
fn keep_most_idle_streams(answer: &mut flameox_recipes::gpu_breakdown::BreakdownAnswer) {
    use flameox_recipes::accelerator_answer::{STREAMS_SHOWN, keep_top};
    let Some(rows) = answer.idle.take() else {
        return;
    };
    let total = rows.len();
    let mut by_artifact: std::collections::BTreeMap<String, Vec<_>> = Default::default();
    let mut order = Vec::new();
    for row in rows {
        if !by_artifact.contains_key(&row.key.artifact_id) {
            order.push(row.key.artifact_id.clone());
        }
        by_artifact
            .entry(row.key.artifact_id.clone())
            .or_default()
            .push(row);
    }
    let mut kept = Vec::new();
    for artifact in order {
        if let Some(rows) = by_artifact.remove(&artifact) {
            kept.extend(keep_top(rows, STREAMS_SHOWN, |r| r.idle_ns));
        }
    }
    if kept.len() < total {
        answer.idle_streams_total = Some(total);
    }
    answer.idle = Some(kept);
}
