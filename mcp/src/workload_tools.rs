//! Handlers of the workload tools: translate arguments, call one engine
//! service, wrap the result. No rule lives here.

use flameox_engine::Workspace;
use flameox_engine::error::FlameoxError;
use flameox_engine::project::WorkloadDef;
use flameox_engine::project::edit::{ConfigureRequest, Operation, configure_workload};
use flameox_engine::services::workloads;
use serde_json::Value;

use crate::envelope::Reply;
use crate::server::{decode, to_value};

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

/// Runs one workload tool; `None` when `name` is not one.
pub async fn call(name: &str, ws: &Workspace, args: Value) -> Option<Result<Reply, FlameoxError>> {
    let outcome = match name {
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
