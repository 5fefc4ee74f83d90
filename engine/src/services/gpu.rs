//! GPU activity services: the `nsys stats`-style summaries
//! (`analyze gpu-summary --report kernels|api|memcpy-time|memcpy-size|
//! memset-time`) over any artifact with device evidence (Kineto traces
//! today, Nsight exports when their extractor lands).

use flameox_recipes::ArtifactScope;
use flameox_recipes::gpu_summary::{self, GpuReport, SummaryRow};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{EvidenceStatus, QueryContext, ResolvedScope, answer_status, resolve_scope};
use crate::error::Result;
use crate::query::run_budgeted;

/// What `analyze gpu-summary` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GpuSummaryRequest {
    pub target: String,
    /// `kernels` (default), `api`, `memcpy-time`, `memcpy-size`, `memset-time`.
    pub report: Option<String>,
    pub limit: Option<usize>,
}

/// One summary table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSummaryResult {
    pub scope: ResolvedScope,
    pub commit_id: String,
    pub report: GpuReport,
    pub unit: String,
    pub grand_total: i64,
    pub rows: Vec<SummaryRow>,
    pub total: u64,
    pub returned: usize,
    pub truncated: bool,
    pub evidence: EvidenceStatus,
}

pub async fn gpu_summary(
    qc: &QueryContext<'_>,
    req: &GpuSummaryRequest,
) -> Result<GpuSummaryResult> {
    let limit = qc.ws.config.row_limit(req.limit)?;
    let session = qc.session(None)?;
    let report = gpu_summary::parse_report(req.report.as_deref().unwrap_or("kernels"))
        .map_err(|e| crate::query::recipe_error(e, &session.budget))?;
    let scope = resolve_scope(qc.ws, &session.snapshot, &req.target)?;
    let artifacts = ArtifactScope {
        artifact_ids: scope.artifact_ids.clone(),
    };
    let answer = run_budgeted(
        &session,
        gpu_summary::gpu_summary(&session.ctx, &artifacts, report, limit),
    )
    .await?;
    let mut evidence = answer_status(&session.snapshot, &scope, answer.names > 0, false);
    if answer.names == 0 && evidence.status == "empty" {
        // No device (or API) activity is not a negative answer: the trace
        // may simply not have recorded it.
        evidence = EvidenceStatus::new("partial", "accelerator_tracks_missing")
            .with_next("get_run", json!({ "run_id": scope.run_id }));
    }
    Ok(GpuSummaryResult {
        commit_id: session.snapshot.commit_id().to_owned(),
        scope,
        report: answer.report,
        unit: answer.unit,
        grand_total: answer.grand_total,
        returned: answer.rows.len(),
        truncated: (answer.rows.len() as u64) < answer.names,
        total: answer.names,
        rows: answer.rows,
        evidence,
    })
}
