//! Declarations of the detached capture: start (returns at once with an
//! operation id; the same idempotency key reconnects), get (phase,
//! progress, the run when done) and cancel (process tree ended, complete
//! outputs kept, incomplete ones quarantined, terminal state published).
//! The work runs in a worker process that outlives the server and client.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::schema::input_schema;
use super::session::Session;
use super::workloads::AdapterName;
use super::{Answer, AnswerFuture, Body, Group, Operation, decode};
use crate::detached::{self, OperationRecord, OperationStatus};
use crate::error::{FlameoxError, Result};
use crate::services::detached_capture::{CAPTURE_KIND, DetachedCapture, start_detached_capture};

/// What `start_detached_capture` asks.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartCaptureRequest {
    /// Your key for this request (8-128 chars); resending it reconnects to the same operation.
    #[schemars(length(min = 8, max = 128))]
    pub idempotency_key: String,
    /// plan_id from plan_capture (or give workload_name).
    #[schemars(length(min = 64, max = 64))]
    pub plan_id: Option<String>,
    /// Declared workload to plan now (or give plan_id).
    #[schemars(length(min = 1, max = 64))]
    pub workload_name: Option<String>,
    /// With workload_name; default process.
    pub adapter: Option<AdapterName>,
    /// With workload_name: parameter → one of its declared choices.
    #[schemars(extend("maxProperties" = 32))]
    pub parameters: Option<BTreeMap<String, Value>>,
}

/// What `get_detached_capture` and `cancel_detached_capture` ask.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OperationRequest {
    /// operation_id from start_detached_capture.
    #[schemars(length(min = 35, max = 35))]
    pub operation_id: String,
}

pub(super) static OPERATIONS: &[Operation] = &[
    Operation {
        name: "start_detached_capture",
        cli: &["capture", "start"],
        title: "Start detached capture",
        description: "Start a capture (plan_id, or workload_name to plan now) in a worker that outlives this server; returns operation_id at once. Same key, same operation.",
        group: Group::Execute,
        positional: &["workload_name"],
        schema: input_schema::<StartCaptureRequest>,
        run: Body::Session(run_start),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "get_detached_capture",
        cli: &["capture", "status"],
        title: "Get detached capture",
        description: "A detached capture's status, phase, progress and, when done, its run and receipt.",
        group: Group::ReadOnly,
        positional: &["operation_id"],
        schema: input_schema::<OperationRequest>,
        run: Body::Session(run_get),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "cancel_detached_capture",
        cli: &["capture", "cancel"],
        title: "Cancel detached capture",
        description: "Stop a detached capture: its process tree is ended, complete outputs kept, incomplete ones quarantined; returns the terminal state.",
        group: Group::Execute,
        positional: &["operation_id"],
        schema: input_schema::<OperationRequest>,
        run: Body::Session(run_cancel),
        rows: "",
        columns: &[],
        terminal: &[],
    },
];

/// What an agent reads of an operation: no plan, no history beyond the
/// last steps, and the next call to make.
fn view(record: &OperationRecord, reconnected: Option<bool>) -> Value {
    let run_id = record.items.iter().find_map(|i| i.run_id.clone());
    let next = match (record.status, &run_id) {
        (s, _) if !s.is_terminal() => json!({
            "tool": "get_detached_capture",
            "arguments": { "operation_id": record.operation_id },
        }),
        (OperationStatus::Completed, Some(run)) => json!({
            "tool": "summarize_target",
            "arguments": { "target": run },
        }),
        _ => match &record.retry_new_operation {
            Some(r) => json!({ "tool": r.tool, "arguments": r.arguments }),
            None => Value::Null,
        },
    };
    let recent: Vec<&detached::record::ProgressEntry> =
        record.progress.iter().rev().take(4).rev().collect();
    let mut out = json!({
        "operation_id": record.operation_id,
        "kind": record.kind,
        "status": record.status,
        "phase": record.phase,
        "percent": record.percent,
        "progress": recent,
        "items": record.items,
        "run_id": run_id,
        "cancellation": record.cancellation,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "finished_at": record.finished_at,
        "next": next,
    });
    if let Some(r) = reconnected {
        out["reconnected"] = Value::Bool(r);
    }
    if let Some(err) = &record.error {
        out["error"] = json!({ "code": err.code, "message": err.message });
    }
    if let Some(retry) = &record.retry_new_operation {
        out["retry_new_operation"] = json!({ "tool": retry.tool, "arguments": retry.arguments });
    }
    if let Some(receipt) = &record.receipt {
        // The capture's own answer, without its stream heads (get_run has them).
        let mut receipt = receipt.clone();
        if let Value::Object(map) = &mut receipt {
            map.remove("stdout_head");
            map.remove("stderr_head");
        }
        out["receipt"] = receipt;
    }
    out
}

fn summary(record: &OperationRecord) -> String {
    let id = &record.operation_id;
    match record.status {
        OperationStatus::Queued | OperationStatus::Running => {
            let percent = record
                .percent
                .map(|p| format!(" ({p:.0} %)"))
                .unwrap_or_default();
            format!(
                "capture {id} {}: {}{percent}",
                record.status.word(),
                record.phase
            )
        }
        OperationStatus::Completed => {
            let run = record
                .items
                .iter()
                .find_map(|i| i.run_id.as_deref())
                .unwrap_or("?");
            format!("capture {id} completed: run {run}")
        }
        OperationStatus::Failed | OperationStatus::Cancelled => format!(
            "capture {id} {}: {}",
            record.status.word(),
            record
                .error
                .as_ref()
                .map(|e| e.message.as_str())
                .unwrap_or("no receipt")
        ),
    }
}

fn answer(record: &OperationRecord, reconnected: Option<bool>) -> Answer {
    let mut answer = Answer::new(summary(record), view(record, reconnected));
    if let Some(run) = record.items.iter().find_map(|i| i.run_id.as_ref()) {
        answer.links.push(format!("flameox://runs/{run}"));
    }
    answer
}

fn run_start<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let r: StartCaptureRequest = decode(args)?;
        let ws = s.workspace()?;
        let req = DetachedCapture {
            idempotency_key: r.idempotency_key,
            plan_id: r.plan_id,
            workload_name: r.workload_name,
            adapter: r.adapter.unwrap_or(AdapterName::Process).word().to_owned(),
            parameters: r.parameters.unwrap_or_default(),
        };
        let started = start_detached_capture(&ws, s.plans, &req, &detached::spawn_worker)?;
        let mut answer = answer(&started.record, Some(started.reconnected));
        if started.reconnected {
            answer.summary = format!("reconnected: {}", answer.summary);
        }
        Ok(answer)
    })
}

fn operation_id(args: Value) -> Result<String> {
    let r: OperationRequest = decode(args)?;
    Ok(r.operation_id)
}

fn run_get<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let id = operation_id(args)?;
        let ws = s.workspace()?;
        let record = detached::get(&ws, &id, CAPTURE_KIND)?;
        Ok(answer(&record, None))
    })
}

fn run_cancel<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let id = operation_id(args)?;
        let ws = s.workspace()?;
        let record = tokio::task::spawn_blocking(move || detached::cancel(&ws, &id, CAPTURE_KIND))
            .await
            .map_err(|e| FlameoxError::internal(format!("cancel task failed: {e}")))??;
        Ok(answer(&record, None))
    })
}

/// The worker's entry (`flameox detached-worker <operation_id>`): runs the
/// operation's work once, by its kind.
pub fn run_detached_worker(
    ws: &crate::workspace::Workspace,
    operation_id: &str,
) -> Result<OperationStatus> {
    let record = detached::record::read_record(ws, operation_id)?;
    match record.kind.as_str() {
        CAPTURE_KIND => detached::run_worker(
            ws,
            operation_id,
            &super::session::CAPTURE_PHASES,
            &crate::services::detached_capture::run_capture_work,
        ),
        other => Err(FlameoxError::internal(format!(
            "no worker for detached operations of kind {other}"
        ))),
    }
}
