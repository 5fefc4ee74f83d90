//! An experiment as a detached operation: the start plans it (a refusal
//! records nothing) and binds the operation to the plan's digest; the
//! worker replans, refuses a plan that changed since (another workload
//! definition, other trials), and runs every trial exactly as
//! `run_experiment` would. The receipt links the experiment, its counts,
//! its first failing trial and its run sets, not every trial.

use serde_json::{Value, json};

use crate::detached::record::ItemOutcome;
use crate::detached::{OperationRecord, OperationStatus, StartRequest, Started, WorkOutcome};
use crate::error::{ErrorCode, FlameoxError, Result};
use crate::services::experiment_plan::{ExperimentRequest, plan_experiment};
use crate::services::experiment_run::run_experiment;
use crate::services::import::ImportProgress;
use crate::workspace::Workspace;

/// The operation kind of a detached experiment.
pub const EXPERIMENT_KIND: &str = "experiment";

/// Starts a detached experiment, or reconnects to the one its key started.
pub fn start_detached_experiment(
    ws: &Workspace,
    idempotency_key: &str,
    request: &ExperimentRequest,
    adapter: Option<&str>,
    spawn: crate::detached::lifecycle::SpawnWorker<'_>,
) -> Result<Started> {
    let asked = json!({
        "name": request.name,
        "parameters": request.parameters,
        "adapter": adapter,
    });
    let resolve = || -> Result<Value> {
        let plan = plan_experiment(ws, request)?;
        Ok(json!({
            "request": request,
            "adapter": adapter,
            "plan_digest": plan.plan_digest,
            "definition_hash": plan.definition_hash,
            "trials": plan.trial_count,
        }))
    };
    crate::detached::start(
        ws,
        StartRequest {
            kind: EXPERIMENT_KIND,
            idempotency_key,
            request: asked,
            start_tool: "start_detached_experiment",
        },
        resolve,
        spawn,
    )
}

/// The worker's work for an experiment.
pub fn run_experiment_work(
    ws: &Workspace,
    record: &OperationRecord,
    progress: &dyn ImportProgress,
) -> Result<WorkOutcome> {
    let request: ExperimentRequest = serde_json::from_value(record.work["request"].clone())
        .map_err(|e| FlameoxError::internal(format!("a detached experiment's request: {e}")))?;
    let adapter = record.work["adapter"].as_str().map(str::to_owned);
    let planned = record.work["plan_digest"].as_str().unwrap_or("");
    let now = plan_experiment(ws, &request)?;
    if now.plan_digest != planned {
        return Err(FlameoxError::new(
            ErrorCode::InvalidCapturePlan,
            format!(
                "experiment {}'s plan changed since the operation started (its workload or experiment definition was edited); nothing ran",
                request.name
            ),
        )
        .remedy("start it again under a fresh idempotency key to run the current definition"));
    }
    let view = run_experiment(ws, &request, adapter.as_deref(), progress)?;
    let status = match view.status.as_str() {
        "completed" => OperationStatus::Completed,
        "cancelled" => OperationStatus::Cancelled,
        _ => OperationStatus::Failed,
    };
    let outcome = view.outcome.as_ref();
    let detail = outcome.map(|o| {
        format!(
            "{} of {} trials completed, {} failed, {} timed out, {} cancelled",
            o.counts.completed,
            o.counts.planned,
            o.counts.failed,
            o.counts.timed_out,
            o.counts.cancelled
        )
    });
    let error = match status {
        OperationStatus::Cancelled => crate::services::experiments::cancelled_error(&view),
        OperationStatus::Failed => Some(FlameoxError::new(
            ErrorCode::ProcessFailed,
            format!("experiment {} ended {}", view.experiment_id, view.status),
        )),
        _ => None,
    };
    Ok(WorkOutcome {
        status,
        items: vec![ItemOutcome {
            item: "experiment".into(),
            status: view.status.clone(),
            run_id: None,
            detail,
        }],
        receipt: json!({
            "experiment_id": view.experiment_id,
            "status": view.status,
            "counts": outcome.map(|o| &o.counts),
            "first_failing_trial": outcome.and_then(|o| o.first_failing_trial.clone()),
            "run_sets": outcome.map(|o| o.run_sets.iter().map(|s| &s.run_set_id).collect::<Vec<_>>()),
            "trials_resource": view.trials_resource,
        }),
        error,
    })
}
