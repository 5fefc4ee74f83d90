//! The experiment tools — `plan_experiment`, `run_experiment`,
//! `get_experiment`, `list_experiment_trials` — their catalog entries and
//! the `flameox://experiments/…` resources. Handlers decode arguments into
//! the engine's experiment services and wrap the answers; execution follows
//! `execute_capture_plan`'s pattern (blocking thread, progress forwarder,
//! request cancellation reaching the running trial's process tree).

use std::collections::BTreeMap;

use flameox_engine::Workspace;
use flameox_engine::error::FlameoxError;
use flameox_engine::services::experiment_plan::{ExperimentRequest, plan_experiment};
use flameox_engine::services::experiment_run::run_experiment;
use flameox_engine::services::experiments::{
    ExperimentView, TrialsRequest, cancelled_error, get_experiment, get_trial, list_trials,
};
use rmcp::RoleServer;
use rmcp::service::RequestContext;
use serde_json::{Value, json};

use crate::catalog::{ToolGroup, ToolSpec, id_prop, object};
use crate::envelope::Reply;
use crate::progress::{EXPERIMENT_PHASES, McpProgress};
use crate::server::{ToolResult, decode, to_value};

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    name: String,
    #[serde(default)]
    parameters: BTreeMap<String, Value>,
    adapter: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ExperimentArgs {
    experiment_id: String,
}

fn name_and_parameters() -> (Value, Value) {
    (
        json!({ "type": "string", "minLength": 1, "maxLength": 64, "description": "Declared experiment." }),
        json!({ "type": "object", "maxProperties": 32, "description": "Values of parameters no variant or axis sets." }),
    )
}

/// The catalog entries of these tools.
pub fn tools() -> Vec<ToolSpec> {
    use ToolGroup::*;
    let (name, parameters) = name_and_parameters();
    vec![
        ToolSpec {
            name: "plan_experiment",
            title: "Plan experiment",
            description: "A declared experiment's trial matrix (variants × sizes × seeded blocks). Runs nothing.",
            group: ReadOnly,
            input_schema: object(json!({ "name": name, "parameters": parameters }), &["name"]),
        },
        ToolSpec {
            name: "run_experiment",
            title: "Run experiment",
            description: "Run and record every planned trial (failures kept); freeze a run set per variant. Progress per trial; cancel kills the trial.",
            group: Execute,
            input_schema: object(
                json!({
                    "name": name,
                    "parameters": parameters,
                    "adapter": { "type": "string", "enum": ["process", "py-spy", "viztracer", "perf", "nsys"], "description": "Default process." }
                }),
                &["name"],
            ),
        },
        ToolSpec {
            name: "get_experiment",
            title: "Get experiment",
            description: "Protocol, status, counts, run sets, suggested analyses.",
            group: ReadOnly,
            input_schema: object(
                json!({ "experiment_id": id_prop("ex_… id.") }),
                &["experiment_id"],
            ),
        },
        ToolSpec {
            name: "list_experiment_trials",
            title: "List experiment trials",
            description: "Attempted trials in execution order, paged.",
            group: ReadOnly,
            input_schema: object(
                json!({
                    "experiment_id": id_prop("ex_… id."),
                    "limit": { "type": "integer", "minimum": 1, "maximum": 1000, "description": "≤ 1000." },
                    "cursor": id_prop("next_cursor.")
                }),
                &["experiment_id"],
            ),
        },
    ]
}

/// The resource links of an experiment's receipt.
fn experiment_links(mut reply: Reply, view: &ExperimentView) -> Reply {
    let id = &view.experiment_id;
    reply.links.push((
        format!("flameox://experiments/{id}"),
        format!("experiment {id}"),
    ));
    reply
        .links
        .push((view.trials_resource.clone(), format!("trials of {id}")));
    for set in view.outcome.iter().flat_map(|o| &o.run_sets) {
        reply.links.push((
            format!("flameox://run-sets/{}", set.run_set_id),
            format!("run set of {}", set.variant),
        ));
    }
    reply
}

fn receipt(view: &ExperimentView) -> ToolResult {
    let what = match &view.outcome {
        Some(o) => format!(
            "experiment {} {}: {}/{} trials completed",
            view.experiment_id, view.status, o.counts.completed, o.counts.planned
        ),
        None => format!("experiment {} {}", view.experiment_id, view.status),
    };
    Ok(experiment_links(Reply::new(what, to_value(view)?), view))
}

/// `run_experiment`: the engine runs off the async runtime; a cancelled
/// request stops it through the reporter, which the trial's capture polls.
async fn run(ws: &Workspace, args: Value, ctx: Option<&RequestContext<RoleServer>>) -> ToolResult {
    let a: RunArgs = decode(args)?;
    let request = ExperimentRequest {
        name: a.name,
        parameters: a.parameters,
    };
    let (reporter, forwarder) = McpProgress::start_with(ctx, &EXPERIMENT_PHASES);
    let ws = ws.clone();
    let outcome = tokio::task::spawn_blocking(move || {
        run_experiment(&ws, &request, a.adapter.as_deref(), &reporter)
    })
    .await
    .map_err(|e| FlameoxError::internal(format!("experiment task failed: {e}")))?;
    forwarder.finish().await;
    let view = outcome?;
    if let Some(error) = cancelled_error(&view) {
        return Err(error);
    }
    receipt(&view)
}

/// Runs one experiment tool; `None` when `name` is not one.
pub async fn call(
    name: &str,
    ws: &Workspace,
    args: Value,
    ctx: Option<&RequestContext<RoleServer>>,
) -> Option<ToolResult> {
    let outcome = match name {
        "plan_experiment" => decode::<RunArgs>(args).and_then(|a| {
            let request = ExperimentRequest {
                name: a.name,
                parameters: a.parameters,
            };
            let plan = plan_experiment(ws, &request)?;
            Ok(Reply::new(
                format!(
                    "experiment {}: {} trials in {} blocks",
                    plan.experiment, plan.trial_count, plan.repetitions
                ),
                to_value(&plan)?,
            ))
        }),
        "run_experiment" => run(ws, args, ctx).await,
        "get_experiment" => decode::<ExperimentArgs>(args)
            .and_then(|a| get_experiment(ws, &a.experiment_id))
            .and_then(|view| receipt(&view)),
        "list_experiment_trials" => decode::<TrialsRequest>(args)
            .and_then(|request| list_trials(ws, &request))
            .and_then(|page| {
                Ok(Reply::new(
                    format!("{} trials of {}", page.trials.len(), page.experiment_id),
                    to_value(&page)?,
                ))
            }),
        _ => return None,
    };
    Some(outcome)
}

/// The resource templates below: `(uri template, name)`.
pub const RESOURCE_TEMPLATES: [(&str, &str); 3] = [
    ("flameox://experiments/{experiment_id}", "experiment"),
    (
        "flameox://experiments/{experiment_id}/trials",
        "experiment trials (first page and next_cursor)",
    ),
    (
        "flameox://experiments/{experiment_id}/trials/{trial_id}",
        "experiment trial",
    ),
];

/// `flameox://experiments/{id}`, `…/{id}/trials` (first page and cursor)
/// and `…/{id}/trials/{trial_id}`; `None` for other URIs.
pub fn resource(ws: &Workspace, uri: &str) -> Option<Result<Value, FlameoxError>> {
    let rest = uri.strip_prefix("flameox://experiments/")?;
    let mut parts = rest.splitn(3, '/');
    let experiment_id = parts.next().unwrap_or_default();
    Some(match (parts.next(), parts.next()) {
        (None, _) => get_experiment(ws, experiment_id).and_then(|v| to_value(&v)),
        (Some("trials"), None) => list_trials(
            ws,
            &TrialsRequest {
                experiment_id: experiment_id.to_owned(),
                ..Default::default()
            },
        )
        .and_then(|page| to_value(&page)),
        (Some("trials"), Some(trial_id)) => {
            get_trial(ws, trial_id, Some(experiment_id)).and_then(|t| to_value(&t))
        }
        _ => Err(FlameoxError::invalid_argument("uri", "unknown resource")),
    })
}
