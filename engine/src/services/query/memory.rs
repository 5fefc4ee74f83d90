//! `analyze memory`: memory counters in bytes (peak, retained at the end,
//! growth per phase) and allocation events (totals, top sites) of a run or
//! artifact. Peak RSS of captured runs needs run measurements, which do not
//! exist yet: the answer says so instead of guessing.

use flameox_recipes::ArtifactScope;
pub use flameox_recipes::memory::MemorySeries;
use flameox_recipes::memory::{self, MemoryAnswer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::Result;
use crate::query::run_budgeted;
use crate::services::narrower::{Narrowing, narrow};
use crate::services::{EvidenceStatus, QueryContext, ResolvedScope, answer_status, resolve_scope};

/// What `analyze_memory` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryRequest {
    /// Run id (or a unique prefix, or latest) or artifact id (sha256:…).
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// Series and allocation sites returned, each (default 20).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

/// Something the answer cannot cover yet, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerLimitation {
    pub code: String,
    /// `not_yet`: the evidence it needs is not recorded by this build.
    pub status: String,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryResult {
    pub scope: ResolvedScope,
    pub commit_id: String,
    #[serde(flatten)]
    pub answer: MemoryAnswer,
    pub truncated: bool,
    pub limitations: Vec<AnswerLimitation>,
    pub evidence: EvidenceStatus,
}

pub async fn memory(qc: &QueryContext<'_>, req: &MemoryRequest) -> Result<MemoryResult> {
    memory_of(qc, req).await.map_err(|e| {
        narrow(
            qc,
            e,
            Narrowing::whole("analyze_memory", &req.target, req.limit),
        )
    })
}

async fn memory_of(qc: &QueryContext<'_>, req: &MemoryRequest) -> Result<MemoryResult> {
    let limit = qc.ws.config.row_limit(req.limit)?;
    let session = qc.session(None)?;
    let scope = resolve_scope(qc.ws, &session.snapshot, &req.target)?;
    let artifacts = ArtifactScope {
        artifact_ids: scope.artifact_ids.clone(),
    };
    let answer = run_budgeted(&session, memory::memory(&session.ctx, &artifacts, limit)).await?;
    let found = answer.series_found > 0 || !answer.allocations.is_empty();
    let mut evidence = answer_status(&session.snapshot, &scope, found, false);
    if !found && evidence.status == "empty" {
        // Memory is recorded only when asked (`profile_memory=True`,
        // Perfetto's process_stats data source): absence proves nothing.
        evidence = EvidenceStatus::new("partial", "memory_counters_missing").with_next(
            "get_run",
            json!({ "target": scope.run_id.as_deref().unwrap_or(&scope.requested) }),
        );
    }
    Ok(MemoryResult {
        commit_id: session.snapshot.commit_id().to_owned(),
        scope,
        truncated: (answer.series.len() as u64) < answer.series_found
            || (answer.sites.len() as u64) < answer.sites_found,
        answer,
        limitations: vec![AnswerLimitation {
            code: "captured_run_peak_rss".into(),
            status: "not_yet".into(),
            detail: "peak RSS of captured runs comes from run measurements, which this build does not record yet".into(),
        }],
        evidence,
    })
}
