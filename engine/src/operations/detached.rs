//! Declarations of the detached capture: start (returns at once with an
//! operation id; the same idempotency key reconnects), get (phase,
//! progress, the run when done) and cancel (process tree ended, complete
//! outputs kept, incomplete ones quarantined, terminal state published).
//! The work runs in a worker process that outlives the server and client.
//! The answer of every detached kind (capture, capability setup) is made
//! here, so all long operations read alike.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::schema::input_schema;
use super::session::Session;
use super::workloads::{AdapterName, adapter_word};
use super::{Answer, AnswerFuture, Body, Group, Operation, decode};
use crate::detached::{self, OperationRecord, OperationStatus};
use crate::error::{FlameoxError, Result};
use crate::services::capability_setup::setup::SETUP_KIND;
use crate::services::detached_capture::{CAPTURE_KIND, DetachedCapture, start_detached_capture};
use crate::services::detached_experiment::EXPERIMENT_KIND;

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
    #[schemars(length(min = 1, max = 64))]
    pub adapter: Option<AdapterName>,
    /// With workload_name: parameter → one of its declared choices.
    #[schemars(extend("maxProperties" = 32))]
    pub parameters: Option<BTreeMap<String, Value>>,
}

/// What a detached operation's get tool asks.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetOperationRequest {
    /// operation_id from the start tool.
    #[schemars(length(min = 35, max = 35))]
    pub operation_id: String,
    /// Wait up to this long for the operation to end before answering (default 0).
    #[schemars(range(min = 0, max = 30))]
    pub wait_seconds: Option<f64>,
}

/// What a detached operation's cancel tool asks.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OperationRequest {
    /// operation_id from the start tool.
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
        schema: input_schema::<GetOperationRequest>,
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
            "tool": detached::lifecycle::get_tool(&record.kind),
            "arguments": { "operation_id": record.operation_id, "wait_seconds": 20 },
        }),
        (OperationStatus::Completed, Some(run)) => json!({
            "tool": "summarize_target",
            "arguments": { "target": run },
        }),
        (OperationStatus::Completed, None) if record.kind == SETUP_KIND => json!({
            "tool": "list_capabilities",
            "arguments": { "mode": "active_cached" },
        }),
        (OperationStatus::Completed, None) if record.kind == EXPERIMENT_KIND => json!({
            "tool": "get_experiment",
            "arguments": { "experiment_id": record.receipt.as_ref().map(|r| r["experiment_id"].clone()) },
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

/// How an answer names the kind.
fn kind_label(kind: &str) -> &'static str {
    match kind {
        SETUP_KIND => "capability setup",
        EXPERIMENT_KIND => "experiment",
        crate::services::reductions::REDUCTION_KIND => "reduction",
        _ => "capture",
    }
}

fn summary(record: &OperationRecord) -> String {
    let id = &record.operation_id;
    let label = kind_label(&record.kind);
    match record.status {
        OperationStatus::Queued | OperationStatus::Running => {
            let percent = record
                .percent
                .map(|p| format!(" ({p:.0} %)"))
                .unwrap_or_default();
            if record.phase == record.status.word() {
                format!("{label} {id} {}{percent}", record.status.word())
            } else {
                format!(
                    "{label} {id} {}: {}{percent}",
                    record.status.word(),
                    record.phase
                )
            }
        }
        OperationStatus::Completed => match record.items.iter().find_map(|i| i.run_id.as_deref()) {
            Some(run) => format!("{label} {id} completed: run {run}"),
            None => {
                let items: Vec<String> = record
                    .items
                    .iter()
                    .map(|i| format!("{} {}", i.item, i.status))
                    .collect();
                format!("{label} {id} completed: {}", items.join(", "))
            }
        },
        OperationStatus::Failed | OperationStatus::Cancelled => format!(
            "{label} {id} {}: {}",
            record.status.word(),
            record
                .error
                .as_ref()
                .map(|e| e.message.as_str())
                .unwrap_or("no receipt")
        ),
    }
}

/// A start's answer: the operation, saying when its key reconnected.
pub(super) fn started_answer(started: &detached::Started) -> Answer {
    let mut answer = answer(&started.record, Some(started.reconnected));
    if started.reconnected {
        answer.summary = format!("reconnected: {}", answer.summary);
    }
    answer
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
            adapter: adapter_word(r.adapter),
            parameters: r.parameters.unwrap_or_default(),
        };
        let started = start_detached_capture(&ws, s.plans, &req, &detached::spawn_worker)?;
        Ok(started_answer(&started))
    })
}

fn operation_id(args: Value) -> Result<String> {
    let r: OperationRequest = decode(args)?;
    Ok(r.operation_id)
}

/// A get of a detached operation of `kind`, waiting up to `wait_seconds`
/// for it to end.
pub(super) async fn get_answer(s: &Session<'_>, args: Value, kind: &'static str) -> Result<Answer> {
    let r: GetOperationRequest = decode(args)?;
    let wait = r.wait_seconds.unwrap_or(0.0);
    if !(0.0..=30.0).contains(&wait) {
        return Err(FlameoxError::invalid_argument(
            "wait_seconds",
            "between 0 and 30 seconds",
        ));
    }
    let ws = s.workspace()?;
    let id = r.operation_id;
    let record = tokio::task::spawn_blocking(move || {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs_f64(wait);
        loop {
            let record = detached::get(&ws, &id, kind)?;
            if record.status.is_terminal() || std::time::Instant::now() >= deadline {
                return Ok::<_, FlameoxError>(record);
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    })
    .await
    .map_err(|e| FlameoxError::internal(format!("get task failed: {e}")))??;
    Ok(answer(&record, None))
}

/// A cancel of a detached operation of `kind`.
pub(super) async fn cancel_answer(
    s: &Session<'_>,
    args: Value,
    kind: &'static str,
) -> Result<Answer> {
    let id = operation_id(args)?;
    let ws = s.workspace()?;
    let record = tokio::task::spawn_blocking(move || detached::cancel(&ws, &id, kind))
        .await
        .map_err(|e| FlameoxError::internal(format!("cancel task failed: {e}")))??;
    Ok(answer(&record, None))
}

fn run_get<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(get_answer(s, args, CAPTURE_KIND))
}

fn run_cancel<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(cancel_answer(s, args, CAPTURE_KIND))
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
        EXPERIMENT_KIND => detached::run_worker(
            ws,
            operation_id,
            &super::session::EXPERIMENT_PHASES,
            &crate::services::detached_experiment::run_experiment_work,
        ),
        SETUP_KIND => detached::run_worker(
            ws,
            operation_id,
            &crate::services::capability_setup::setup::SETUP_PHASES,
            &crate::services::capability_setup::setup::run_setup_work,
        ),
        crate::services::reductions::REDUCTION_KIND => detached::run_worker(
            ws,
            operation_id,
            &crate::services::reductions::REDUCTION_PHASES,
            &crate::services::reductions::run_reduction_work,
        ),
        other => Err(FlameoxError::internal(format!(
            "no worker for detached operations of kind {other}"
        ))),
    }
}
