//! `analyze gpu-breakdown`: HTA-grade GPU breakdowns (temporal, idle per
//! stream, communication/computation overlap, kernels, launch statistics,
//! copy bandwidth) over one or several targets side by side, each artifact
//! labelled with its rank (Kineto `distributedInfo.rank`) when the trace
//! recorded one.

use flameox_recipes::ArtifactScope;
use flameox_recipes::gpu_breakdown::{self, BreakdownAnswer, BreakdownParams, Section, Thresholds};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{EvidenceStatus, QueryContext, ResolvedScope, answer_status, resolve_scope};
use crate::catalog::Snapshot;
use crate::error::{FlameoxError, Result};
use crate::query::{recipe_error, run_budgeted};

/// Rows per section when the request names no limit.
pub const DEFAULT_LIMIT: usize = 5;

/// At most this many targets side by side.
const MAX_TARGETS: usize = 64;

/// Thresholds above this (one hour, in ns) are refused as typos.
const MAX_THRESHOLD_NS: i64 = 3_600_000_000_000;

/// What `analyze gpu-breakdown` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GpuBreakdownRequest {
    /// Run ids or artifact ids; several are analyzed side by side.
    pub targets: Vec<String>,
    /// One section (`temporal`, `idle`, `overlap`, `kernels`, `launches`,
    /// `bandwidth`); all when absent.
    pub section: Option<String>,
    /// Kernel names per artifact and examples per outlier kind.
    pub limit: Option<usize>,
    /// Defaults: [`Thresholds::default`] (HTA's).
    pub kernel_wait_ns: Option<i64>,
    pub runtime_outlier_ns: Option<i64>,
    pub launch_delay_outlier_ns: Option<i64>,
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuBreakdownResult {
    pub targets: Vec<ResolvedScope>,
    pub commit_id: String,
    pub artifacts: Vec<ArtifactLabel>,
    #[serde(flatten)]
    pub answer: BreakdownAnswer,
    pub evidence: EvidenceStatus,
}

fn threshold(field: &str, value: Option<i64>, default: i64) -> Result<i64> {
    match value {
        None => Ok(default),
        Some(v) if (0..=MAX_THRESHOLD_NS).contains(&v) => Ok(v),
        Some(v) => Err(FlameoxError::invalid_argument(
            field,
            format!("{v} is outside 0..={MAX_THRESHOLD_NS} ns"),
        )),
    }
}

/// A number in `distributedInfo` (Kineto writes integers; accept strings).
fn distributed_number(snapshot: &Snapshot, artifact_id: &str, key: &str) -> Option<i64> {
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
    if req.targets.is_empty() || req.targets.len() > MAX_TARGETS {
        return Err(FlameoxError::invalid_argument(
            "targets",
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
            "kernel_wait_ns",
            req.kernel_wait_ns,
            defaults.kernel_wait_ns,
        )?,
        runtime_outlier_ns: threshold(
            "runtime_outlier_ns",
            req.runtime_outlier_ns,
            defaults.runtime_outlier_ns,
        )?,
        launch_delay_outlier_ns: threshold(
            "launch_delay_outlier_ns",
            req.launch_delay_outlier_ns,
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
    for target in &req.targets {
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
    let combined = ResolvedScope {
        requested: req.targets.join(" "),
        run_id: targets.iter().find_map(|t| t.run_id.clone()),
        artifact_ids: artifacts.artifact_ids.clone(),
        limitations: targets
            .iter()
            .flat_map(|t| t.limitations.iter().cloned())
            .fold(Vec::new(), |mut all, l| {
                if !all.contains(&l) {
                    all.push(l);
                }
                all
            }),
    };
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
    Ok(GpuBreakdownResult {
        commit_id: session.snapshot.commit_id().to_owned(),
        targets,
        artifacts: labels,
        answer,
        evidence,
    })
}
