//! A capture as a detached operation: the start resolves the plan (a
//! plan_id from plan_capture, or a workload planned on the spot) into the
//! operation's work, and the worker executes it exactly as
//! `execute_capture_plan` would — the plan rechecked against the workload
//! first, the process tree supervised, the run recorded, an incomplete
//! profile quarantined on cancel.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::detached::record::ItemOutcome;
use crate::detached::{OperationRecord, OperationStatus, StartRequest, Started, WorkOutcome};
use crate::error::{FlameoxError, Result};
use crate::services::capture::{CapturePlan, CaptureRequest, plan_capture};
use crate::services::capture_run::{execute_capture, interrupted};
use crate::services::import::ImportProgress;
use crate::services::plans::PlanStore;
use crate::workspace::Workspace;

/// The operation kind of a detached capture.
pub const CAPTURE_KIND: &str = "capture";

/// What a detached capture is started with: a plan id, or a workload (with
/// adapter and parameter choices) to plan now.
#[derive(Debug, Clone, Default)]
pub struct DetachedCapture {
    pub idempotency_key: String,
    pub plan_id: Option<String>,
    pub workload_name: Option<String>,
    pub adapter: String,
    pub parameters: BTreeMap<String, Value>,
}

/// Starts a detached capture, or reconnects to the one its key started.
pub fn start_detached_capture(
    ws: &Workspace,
    plans: &PlanStore,
    req: &DetachedCapture,
    spawn: crate::detached::lifecycle::SpawnWorker<'_>,
) -> Result<Started> {
    let request = match (&req.plan_id, &req.workload_name) {
        (Some(plan_id), None) => json!({ "plan_id": plan_id }),
        (None, Some(workload)) => json!({
            "workload_name": workload,
            "adapter": req.adapter,
            "parameters": req.parameters,
        }),
        _ => {
            return Err(FlameoxError::invalid_argument(
                "plan_id",
                "give either plan_id (from plan_capture) or workload_name, not both",
            ));
        }
    };
    let resolve = || -> Result<Value> {
        let plan: CapturePlan = match &req.plan_id {
            Some(id) => plans.take(id)?,
            None => plan_capture(
                ws,
                &CaptureRequest {
                    adapter: req.adapter.clone(),
                    workload: req.workload_name.clone().unwrap_or_default(),
                    parameters: req.parameters.clone(),
                    ..Default::default()
                },
            )?,
        };
        serde_json::to_value(plan).map_err(|e| FlameoxError::internal(e.to_string()))
    };
    crate::detached::start(
        ws,
        StartRequest {
            kind: CAPTURE_KIND,
            idempotency_key: &req.idempotency_key,
            request,
            start_tool: "start_detached_capture",
        },
        resolve,
        spawn,
    )
}

/// The worker's work for a capture.
pub fn run_capture_work(
    ws: &Workspace,
    record: &OperationRecord,
    progress: &dyn ImportProgress,
) -> Result<WorkOutcome> {
    let plan: CapturePlan = serde_json::from_value(record.work.clone())
        .map_err(|e| FlameoxError::internal(format!("a detached capture's plan: {e}")))?;
    match execute_capture(ws, &plan, progress) {
        Ok(result) => {
            let status = match result.status.as_str() {
                "completed" => OperationStatus::Completed,
                "cancelled" => OperationStatus::Cancelled,
                _ => OperationStatus::Failed,
            };
            let error = interrupted(&result).or_else(|| {
                (status == OperationStatus::Failed).then(|| {
                    FlameoxError::new(
                        crate::error::ErrorCode::ProcessFailed,
                        format!(
                            "the workload {} (exit {:?}, signal {:?}); the run is recorded",
                            result.status, result.exit_code, result.signal
                        ),
                    )
                    .with_run(result.run_id.clone())
                })
            });
            Ok(WorkOutcome {
                status,
                items: vec![ItemOutcome {
                    item: "capture".into(),
                    status: result.status.clone(),
                    run_id: Some(result.run_id.clone()),
                    detail: (!result.quarantined.is_empty())
                        .then(|| format!("quarantined: {}", result.quarantined.join(", "))),
                }],
                receipt: serde_json::to_value(&result)
                    .map_err(|e| FlameoxError::internal(e.to_string()))?,
                error,
            })
        }
        Err(err) => Ok(WorkOutcome {
            status: OperationStatus::Failed,
            items: vec![ItemOutcome {
                item: "capture".into(),
                status: "failed".into(),
                run_id: err.run_id.clone(),
                detail: Some(err.message.clone()),
            }],
            receipt: Value::Null,
            error: Some(err),
        }),
    }
}
