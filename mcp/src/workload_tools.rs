//! Handlers of the workload tools: translate arguments, call one engine
//! service, wrap the result. No rule lives here.

use flameox_engine::Workspace;
use flameox_engine::error::ErrorCode;
use flameox_engine::error::FlameoxError;
use flameox_engine::project::WorkloadDef;
use flameox_engine::project::edit::{ConfigureRequest, Operation, configure_workload};
use flameox_engine::services::capture::{CaptureRequest, plan_capture};
use flameox_engine::services::capture_run::{CaptureResult, execute_capture};
use flameox_engine::services::workloads;
use rmcp::RoleServer;
use rmcp::service::RequestContext;
use serde_json::{Map, Value, json};

use crate::envelope::Reply;
use crate::progress::{CAPTURE_PHASES, McpProgress};
use crate::server::{FlameoxServer, decode, to_value};

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanArgs {
    workload_name: String,
    adapter: Option<String>,
    parameters: Option<Map<String, Value>>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ExecuteArgs {
    plan_id: String,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct KindArgs {
    kind: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DeclaredArgs {
    name: String,
    kind: Option<String>,
}

/// Splits configure_workload's arguments into the request fields and the
/// definition (decoded strictly: an unknown key is INVALID_ARGUMENTS).
fn configure_request(args: Value) -> Result<ConfigureRequest, FlameoxError> {
    let Value::Object(mut map) = args else {
        return Err(FlameoxError::invalid_argument(
            "arguments",
            "must be an object",
        ));
    };
    let operation: Operation = decode(map.remove("operation").unwrap_or(Value::Null))
        .map_err(|_| FlameoxError::invalid_argument("operation", "must be create or replace"))?;
    let name = match map.remove("name") {
        Some(Value::String(name)) => name,
        _ => return Err(FlameoxError::invalid_argument("name", "required")),
    };
    let configuration_id = match map.remove("configuration_id") {
        Some(Value::String(id)) => Some(id),
        None => None,
        Some(_) => {
            return Err(FlameoxError::invalid_argument(
                "configuration_id",
                "must be a string",
            ));
        }
    };
    let definition: WorkloadDef = serde_json::from_value(Value::Object(map))
        .map_err(|e| FlameoxError::invalid_argument("definition", e.to_string()))?;
    Ok(ConfigureRequest {
        operation,
        name,
        definition,
        configuration_id,
    })
}

/// `plan_capture`: plan (read-only) and hold the plan under a fresh id.
fn plan(server: &FlameoxServer, ws: &Workspace, args: Value) -> Result<Reply, FlameoxError> {
    let a: PlanArgs = decode(args)?;
    let request = CaptureRequest {
        adapter: a.adapter.unwrap_or_else(|| "process".into()),
        workload: a.workload_name,
        parameters: a.parameters.unwrap_or_default().into_iter().collect(),
        variant: None,
        trial_id: None,
        ..Default::default()
    };
    let plan = plan_capture(ws, &request)?;
    let summary = format!("plan for {} under {}", request.workload, request.adapter);
    let plan_value = to_value(&plan)?;
    let plan_id = server.plans.insert(plan)?;
    Ok(Reply::new(
        summary,
        json!({
            "plan_id": plan_id,
            "expires_in_seconds": server.plans.ttl().as_secs_f64(),
            "single_use": true,
            "plan": plan_value,
            "next_tool": "execute_capture_plan",
        }),
    ))
}

/// The error a timed-out or cancelled run becomes (the run is recorded).
fn interrupted(result: &CaptureResult) -> Option<FlameoxError> {
    let code = match result.status.as_str() {
        "timed_out" => ErrorCode::ProcessTimeout,
        "cancelled" => ErrorCode::ProcessCancelled,
        _ => return None,
    };
    let message = format!(
        "the workload {}; its process tree was killed and the run recorded",
        result.status.replace('_', " ")
    );
    Some(
        FlameoxError::new(code, message)
            .with_run(result.run_id.clone())
            .detail("result", serde_json::to_value(result).unwrap_or_default()),
    )
}

/// `execute_capture_plan`: consume the plan, then run it off the async runtime.
async fn execute(
    server: &FlameoxServer,
    ws: &Workspace,
    args: Value,
    ctx: Option<&RequestContext<RoleServer>>,
) -> Result<Reply, FlameoxError> {
    let a: ExecuteArgs = decode(args)?;
    let plan = server.plans.take(&a.plan_id)?;
    let (reporter, forwarder) = McpProgress::start_with(ctx, &CAPTURE_PHASES);
    let ws = ws.clone();
    let outcome = tokio::task::spawn_blocking(move || execute_capture(&ws, &plan, &reporter))
        .await
        .map_err(|e| FlameoxError::internal(format!("capture task failed: {e}")))?;
    forwarder.finish().await;
    let result = outcome?;
    if let Some(err) = interrupted(&result) {
        return Err(err);
    }
    let mut reply = Reply::new(
        format!(
            "run {} {} (exit {:?})",
            result.run_id, result.status, result.exit_code
        ),
        to_value(&result)?,
    )
    .link_run(&result.run_id);
    for artifact in &result.artifacts {
        reply = reply.link_artifact(&artifact.artifact_id);
    }
    Ok(reply)
}

/// Runs one workload tool; `None` when `name` is not one.
pub async fn call(
    server: &FlameoxServer,
    name: &str,
    ws: &Workspace,
    args: Value,
    ctx: Option<&RequestContext<RoleServer>>,
) -> Option<Result<Reply, FlameoxError>> {
    let outcome = match name {
        "plan_capture" => plan(server, ws, args),
        "execute_capture_plan" => execute(server, ws, args, ctx).await,
        "workload_configuration_status" => workloads::configuration_status(ws).and_then(|s| {
            Ok(Reply::new(
                format!("flameox.toml {}: {} workloads", s.status, s.workloads.len()),
                to_value(&s)?,
            ))
        }),
        "configure_workload" => configure_request(args)
            .and_then(|request| configure_workload(ws, &request))
            .and_then(|o| {
                let verb = if o.changed { "configured" } else { "unchanged" };
                Ok(Reply::new(
                    format!("{verb} workload {}", o.name),
                    to_value(&o)?,
                ))
            }),
        "list_declared_workflows" => decode::<KindArgs>(args)
            .and_then(|a| workloads::list_declared(ws, a.kind.as_deref()))
            .and_then(|l| {
                let count = l.workloads.len() + l.experiments.len();
                Ok(Reply::new(format!("{count} {}s", l.kind), to_value(&l)?))
            }),
        "get_declared_workflow" => decode::<DeclaredArgs>(args).and_then(|a| {
            if a.kind.as_deref() == Some("experiment") {
                let detail = workloads::show_experiment(ws, &a.name)?;
                Ok(Reply::new(
                    format!("experiment {}", a.name),
                    to_value(&detail)?,
                ))
            } else {
                let detail = workloads::show_workload(ws, &a.name)?;
                Ok(Reply::new(
                    format!("workload {}", a.name),
                    to_value(&detail)?,
                ))
            }
        }),
        _ => return None,
    };
    Some(outcome)
}
