//! A reduction as a detached operation: the start plans it (a refusal, or
//! a `plan_digest` that no longer matches, records nothing) and binds the
//! operation to the plan's digest; the worker plans again and refuses
//! inputs that changed since, reads the evidence (`merged_stacks`), writes
//! the output as a `reduced_stacks` document in the operation's folder and
//! imports it: a new run whose artifact carries the provenance (kind,
//! version, plan digest, commit, input generations).

use serde_json::{Value, json};

use super::plan::{ReductionPlan, ReductionRequest, plan_reduction};
use crate::detached::record::{ItemOutcome, operation_dir};
use crate::detached::{OperationRecord, OperationStatus, StartRequest, Started, WorkOutcome};
use crate::error::{ErrorCode, FlameoxError, Result};
use crate::services::QueryContext;
use crate::services::import::{ImportProgress, ImportRequest, import_artifact};
use crate::workspace::Workspace;
use flameox_extractors::reduced_stacks::{REDUCED_STACKS_SCHEMA, ReducedStacks};
use flameox_recipes::ArtifactScope;
use flameox_recipes::merged_stacks::merged_stacks;

/// The operation kind of a reduction.
pub const REDUCTION_KIND: &str = "reduction";
/// Bumped when a reduction's output for the same inputs changes.
pub const REDUCTION_VERSION: &str = "1";
/// Phases and where each starts (percent of the whole).
pub const REDUCTION_PHASES: [(&str, f64); 4] = [
    ("planning", 0.0),
    ("reading", 10.0),
    ("publishing", 70.0),
    ("completed", 100.0),
];

/// Starts the reduction `plan` (made now for `request`), or reconnects to
/// the one its key started.
pub fn start_reduction(
    ws: &Workspace,
    idempotency_key: &str,
    request: &ReductionRequest,
    plan: &ReductionPlan,
    plan_digest: Option<&str>,
    spawn: crate::detached::lifecycle::SpawnWorker<'_>,
) -> Result<Started> {
    if let Some(asked) = plan_digest
        && asked != plan.plan_digest
    {
        return Err(FlameoxError::new(
            ErrorCode::InvalidCapturePlan,
            "the reduction's inputs changed since it was planned (an import or re-extraction replaced a generation); nothing started",
        )
        .detail("plan_digest", plan.plan_digest.clone())
        .remedy("plan_reduction again and pass its plan_digest"));
    }
    let asked = json!({
        "target": request.target,
        "kind": request.kind.unwrap_or_default().name(),
        "metric": request.metric,
        "plan_digest": plan_digest,
    });
    // The worker reads the run the plan resolved (`latest` moves on once
    // the reduction imports its own run).
    let pinned = ReductionRequest {
        target: plan
            .run_id
            .clone()
            .unwrap_or_else(|| request.target.clone()),
        ..request.clone()
    };
    let work = json!({
        "request": pinned,
        "plan_digest": plan.plan_digest,
        "metric": plan.metric,
        "inputs_total": plan.inputs_total,
        "rows_to_read": plan.rows_to_read,
    });
    crate::detached::start(
        ws,
        StartRequest {
            kind: REDUCTION_KIND,
            idempotency_key,
            request: asked,
            start_tool: "execute_reduction",
        },
        || Ok(work),
        spawn,
    )
}

/// Plans again, reads and writes the output document; returns its path
/// and what it holds.
async fn reduce(
    ws: &Workspace,
    record: &OperationRecord,
    request: &ReductionRequest,
    progress: &dyn ImportProgress,
) -> Result<(std::path::PathBuf, usize, usize)> {
    let qc = QueryContext::new(ws);
    progress.phase("planning");
    let plan = plan_reduction(&qc, request).await?;
    if Some(plan.plan_digest.as_str()) != record.work["plan_digest"].as_str() {
        return Err(FlameoxError::new(
            ErrorCode::InvalidCapturePlan,
            "the reduction's inputs changed since the operation started; nothing was read",
        )
        .remedy("start it again under a fresh idempotency key to reduce the current evidence"));
    }
    progress.phase("reading");
    let session = qc.session(Some(&plan.commit_id))?;
    let scope = crate::services::resolve_scope(ws, &session.snapshot, &request.target)?;
    let artifacts = ArtifactScope {
        artifact_ids: scope.artifact_ids.clone(),
    };
    let merged = merged_stacks(&session.ctx, &artifacts, &plan.metric)
        .await
        .map_err(|e| crate::query::recipe_error(e, &session.budget))?;
    if progress.cancelled() {
        return Err(FlameoxError::new(
            ErrorCode::OperationCancelled,
            "the reduction was cancelled",
        ));
    }
    progress.phase("publishing");
    let inputs: Vec<Value> = plan
        .inputs
        .iter()
        .map(|i| json!({ "artifact_id": i.artifact_id, "generation_id": i.generation_id }))
        .collect();
    let doc = ReducedStacks {
        schema: REDUCED_STACKS_SCHEMA.to_owned(),
        reduction: json!({
            "kind": plan.kind.name(),
            "version": REDUCTION_VERSION,
            "operation_id": record.operation_id,
            "plan_digest": plan.plan_digest,
            "commit_id": plan.commit_id,
            "target": plan.target,
            "run_id": plan.run_id,
            "inputs_total": plan.inputs_total,
            "inputs": inputs,
        }),
        metric: merged.metric,
        weight_unit: merged.weight_unit,
        unit: merged.unit,
        frames: merged.frames,
        stacks: merged.stacks,
    };
    let (frames, stacks) = (doc.frames.len(), doc.stacks.len());
    let path = operation_dir(ws, &record.operation_id).join("reduced_stacks.json");
    let bytes = serde_json::to_vec(&doc).map_err(|e| FlameoxError::internal(e.to_string()))?;
    crate::fsutil::write_atomic(&path, &bytes)?;
    Ok((path, frames, stacks))
}

/// The import of the output inside the reduction's `publishing` phase:
/// its own phases are not the operation's (progress stays one monotonic
/// stream); a cancel still stops it.
struct InsidePublishing<'a>(&'a dyn ImportProgress);

impl ImportProgress for InsidePublishing<'_> {
    fn cancelled(&self) -> bool {
        self.0.cancelled()
    }
}

/// The worker's work for a reduction.
pub fn run_reduction_work(
    ws: &Workspace,
    record: &OperationRecord,
    progress: &dyn ImportProgress,
) -> Result<WorkOutcome> {
    let request: ReductionRequest = serde_json::from_value(record.work["request"].clone())
        .map_err(|e| FlameoxError::internal(format!("a reduction's request: {e}")))?;
    // A runtime of its own, on a thread of its own: the caller may be on one.
    let (path, frames, stacks) = std::thread::scope(|threads| {
        threads
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .map_err(|e| {
                        FlameoxError::internal(format!("starting the reduction runtime: {e}"))
                    })?;
                runtime.block_on(reduce(ws, record, &request, progress))
            })
            .join()
            .map_err(|_| FlameoxError::internal("the reduction thread panicked"))?
    })?;
    let imported = import_artifact(
        ws,
        &ImportRequest {
            path,
            more_paths: Vec::new(),
            kind: Some("reduced_stacks".to_owned()),
            producer: None,
            variant: None,
            parameters: Default::default(),
            timeout: None,
        },
        &InsidePublishing(progress),
    )?;
    Ok(WorkOutcome {
        status: OperationStatus::Completed,
        items: vec![ItemOutcome {
            item: "reduction".into(),
            status: "completed".into(),
            run_id: Some(imported.run_id.clone()),
            detail: Some(format!("{stacks} distinct stacks over {frames} frames")),
        }],
        receipt: json!({
            "run_id": imported.run_id,
            "artifact_id": imported.artifact_id,
            "generation_id": imported.generation_id,
            "stacks": stacks,
            "frames": frames,
            "metric": record.work["metric"],
            "inputs_total": record.work["inputs_total"],
        }),
        error: None,
    })
}
