//! `analyze pytorch`: the PyTorch profiler view of a Kineto trace —
//! operators with the device time they launched, synchronization and
//! compilation time, steps, repeated small operators. A trace that is not
//! a PyTorch profiler trace is refused with the import call that would
//! make it one when the producer was only mis-detected.

use flameox_recipes::ArtifactScope;
use flameox_recipes::pytorch::{self, PytorchAnswer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, FlameoxError, Result};
use crate::query::run_budgeted;
use crate::services::narrower::{Narrowing, narrow};
use crate::services::{EvidenceStatus, QueryContext, ResolvedScope, answer_status, resolve_scope};

/// The producer name the Chrome extractor gives PyTorch profiler traces.
const TORCH_PRODUCER: &str = "torch.profiler";

/// What `analyze_pytorch` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PytorchRequest {
    /// Run id (or a unique prefix, or latest) or artifact id (sha256:…).
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// Operators returned, heaviest self CPU time first (default 20).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PytorchResult {
    pub scope: ResolvedScope,
    pub commit_id: String,
    #[serde(flatten)]
    pub answer: PytorchAnswer,
    pub total: u64,
    pub returned: usize,
    pub truncated: bool,
    pub evidence: EvidenceStatus,
}

pub async fn pytorch(qc: &QueryContext<'_>, req: &PytorchRequest) -> Result<PytorchResult> {
    pytorch_of(qc, req).await.map_err(|e| {
        narrow(
            qc,
            e,
            Narrowing::whole("analyze_pytorch", &req.target, req.limit),
        )
    })
}

async fn pytorch_of(qc: &QueryContext<'_>, req: &PytorchRequest) -> Result<PytorchResult> {
    let limit = qc.ws.config.row_limit(req.limit)?;
    let session = qc.session(None)?;
    let scope = resolve_scope(qc.ws, &session.snapshot, &req.target)?;
    let producers: Vec<String> = scope
        .artifact_ids
        .iter()
        .flat_map(|id| session.snapshot.generations_for(id))
        .map(|g| g.summary.producer.clone())
        .collect();
    if !producers.is_empty() && !producers.iter().any(|p| p == TORCH_PRODUCER) {
        // Seed, analyze_pytorch: "the tool returns the exact run_id and
        // recovery action instead of an empty report". The run is named;
        // the next call is the orientation that reads any trace.
        let run = scope
            .run_id
            .clone()
            .unwrap_or_else(|| scope.requested.clone());
        let mut err = FlameoxError::new(
            ErrorCode::ComparisonInvalid,
            format!(
                "{} is not a PyTorch profiler trace (producer {})",
                scope.requested,
                producers.join(", ")
            ),
        )
        .detail("producers", producers)
        .remedy("record with torch.profiler (Kineto) and import that trace")
        .remedy(
            "if it is one that was not recognized: flameox import <file> --producer torch.profiler",
        )
        .recover_with(
            "summarize_target",
            serde_json::json!({ "target": run }),
            format!("flameox analyze summary {run}"),
        );
        if let Some(run_id) = &scope.run_id {
            err = err.with_run(run_id.clone());
        }
        return Err(err);
    }
    let artifacts = ArtifactScope {
        artifact_ids: scope.artifact_ids.clone(),
    };
    let answer = run_budgeted(&session, pytorch::pytorch(&session.ctx, &artifacts, limit)).await?;
    let evidence = answer_status(&session.snapshot, &scope, answer.operators > 0, false);
    Ok(PytorchResult {
        commit_id: session.snapshot.commit_id().to_owned(),
        scope,
        total: answer.operators,
        returned: answer.rows.len(),
        truncated: (answer.rows.len() as u64) < answer.operators,
        answer,
        evidence,
    })
}
