//! Declarations of the declared-workload operations: the state of
//! `flameox.toml`, configuring one workload, listing and showing declared
//! workloads and experiments, and planning and executing one capture.
//! Planning is read-only and returns a single-use, short-lived plan id;
//! executing it is the explicit step that runs a program.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::inventory::NoArguments;
use super::schema::input_schema;
use super::session::{CAPTURE_PHASES, Session};
use super::{Answer, AnswerFuture, Body, Group, Operation, decode, to_value};
use crate::error::{FlameoxError, Result};
use crate::project::WorkloadDef;
use crate::project::edit::{ConfigureRequest, Operation as Edit, configure_workload};
use crate::services::QueryContext;
use crate::services::capture::{CaptureMode, CaptureRequest, PreflightMode, plan_capture};
use crate::services::capture_run::{execute_capture, interrupted};
use crate::services::dependencies::prepare_workload_dependencies;
use crate::services::import_progress::ProgressSupervision;
use crate::services::workloads;

/// Which declarations a listing holds.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkflowKind {
    /// Declared workloads.
    Workload,
    /// Declared experiments.
    Experiment,
}

impl WorkflowKind {
    fn word(kind: Option<WorkflowKind>) -> Option<&'static str> {
        kind.map(|k| match k {
            WorkflowKind::Workload => "workload",
            WorkflowKind::Experiment => "experiment",
        })
    }
}

/// What `list_declared_workflows` asks.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KindRequest {
    /// Default workload.
    pub kind: Option<WorkflowKind>,
}

/// What `get_declared_workflow` asks.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeclaredRequest {
    /// Workload or experiment name.
    #[schemars(length(min = 1, max = 64))]
    pub name: String,
    /// Default workload.
    pub kind: Option<WorkflowKind>,
}

/// A capture adapter: one of the built-in ones, or a third-party adapter
/// declared in flameox.toml (checked when the capture is planned).
pub type AdapterName = String;

/// The adapter a request names, `process` by default.
pub(super) fn adapter_word(adapter: Option<AdapterName>) -> String {
    adapter.unwrap_or_else(|| "process".to_owned())
}

/// What `plan_capture` asks.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanRequest {
    /// Declared workload.
    #[schemars(length(min = 1, max = 64))]
    pub workload_name: String,
    /// process (default), py-spy, viztracer, perf, nsys, or an approved third-party adapter; list_capabilities says which work.
    #[schemars(length(min = 1, max = 64))]
    pub adapter: Option<AdapterName>,
    /// Parameter → one of its declared choices (default: the first).
    #[schemars(extend("maxProperties" = 32))]
    pub parameters: Option<BTreeMap<String, Value>>,
    /// auto (default): check declared python_distributions in the workload's interpreter; passive: run nothing.
    pub preflight_mode: Option<PreflightMode>,
    /// The adapter's options, e.g. py-spy {"rate": 1000, "native": true}; nsys {"trace": ["cuda","nvtx"]}.
    #[schemars(extend("maxProperties" = 16))]
    pub adapter_options: Option<BTreeMap<String, Value>>,
    /// auto (default) and trusted_local run it directly; managed (enforced containment) is refused.
    pub capture_mode: Option<CaptureMode>,
}

/// What `prepare_workload_dependencies` asks.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrepareDependenciesRequest {
    /// Declared workload whose requirements.python_distributions to install.
    #[schemars(length(min = 1, max = 64))]
    pub workload_name: String,
}

/// What `execute_capture_plan` asks.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecuteRequest {
    /// plan_id from plan_capture.
    #[schemars(length(min = 64, max = 64))]
    pub plan_id: String,
}

pub(super) static OPERATIONS: &[Operation] = &[
    Operation {
        name: "workload_configuration_status",
        cli: &["workload", "status"],
        title: "Workload configuration status",
        description: "Whether flameox.toml is missing, valid or invalid; its configuration_id, workloads, experiments, diagnostics, next_tool.",
        group: Group::ReadOnly,
        positional: &[],
        schema: input_schema::<NoArguments>,
        run: Body::Query(run_status),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "configure_workload",
        cli: &["workload", "configure"],
        title: "Configure workload",
        description: "Create (idempotent) or replace (needs configuration_id) one [workloads.<name>] in flameox.toml, keeping comments. Never runs it.",
        group: Group::Configure,
        positional: &["operation", "name"],
        schema: configure_schema,
        run: Body::Query(run_configure),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "list_declared_workflows",
        cli: &["workload", "list"],
        title: "List declared workflows",
        description: "Declared workloads (default) or experiments with parameters, choices and definition hashes.",
        group: Group::ReadOnly,
        positional: &[],
        schema: input_schema::<KindRequest>,
        run: Body::Query(run_list),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "get_declared_workflow",
        cli: &["workload", "show"],
        title: "Get declared workflow",
        description: "One workload (requirements, adapter options) or experiment, by name.",
        group: Group::ReadOnly,
        positional: &["name"],
        schema: input_schema::<DeclaredRequest>,
        run: Body::Query(run_show),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "plan_capture",
        cli: &["capture", "plan"],
        title: "Plan capture",
        description: "Resolve a declared workload, parameter choices and adapter into the exact command, without running it. Returns a single-use, short-lived plan_id.",
        group: Group::ReadOnly,
        positional: &["workload_name"],
        schema: input_schema::<PlanRequest>,
        run: Body::Session(run_plan),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "prepare_workload_dependencies",
        cli: &["workload", "prepare"],
        title: "Prepare workload dependencies",
        description: "Install a workload's missing requirements.python_distributions (nothing undeclared) into its interpreter's virtualenv, then recheck. Never runs the workload.",
        group: Group::Execute,
        positional: &["workload_name"],
        schema: input_schema::<PrepareDependenciesRequest>,
        run: Body::Session(run_prepare_dependencies),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    // A plan id lives in one session's memory: a command line plans and
    // runs in one step instead (`flameox capture run`).
    Operation {
        name: "execute_capture_plan",
        cli: &[],
        title: "Execute capture plan",
        description: "Run a plan_id once: the process tree with timing, CPU, peak RSS and the adapter's profile, recorded as a run. Progress; cancel kills the tree.",
        group: Group::Execute,
        positional: &[],
        schema: input_schema::<ExecuteRequest>,
        run: Body::Session(run_execute),
        rows: "",
        columns: &[],
        terminal: &[],
    },
];

/// configure_workload's input: the request fields and a workload
/// definition (its own strict decoding checks the definition's keys).
fn configure_schema() -> Value {
    let id =
        |d: &str| json!({ "type": "string", "minLength": 1, "maxLength": 200, "description": d });
    json!({
        "type": "object",
        "properties": {
            "operation": { "type": "string", "enum": ["create", "replace"], "description": "create adds; replace needs configuration_id." },
            "name": { "type": "string", "minLength": 1, "maxLength": 64, "description": "Workload name." },
            "argv": { "type": "array", "minItems": 1, "maxItems": 256, "items": { "type": "string", "maxLength": 4096 }, "description": "Program and arguments ({param} placeholders; no shell strings)." },
            "cwd": { "type": "string", "maxLength": 4096, "description": "Project-relative folder (default .)." },
            "timeout_seconds": { "type": "number", "minimum": 0, "description": "Positive wall-clock limit." },
            "parameters": { "type": "object", "description": "Name → non-empty list of allowed scalar choices." },
            "environment": { "type": "object", "description": "Variables added to the environment." },
            "oracle": { "type": "object", "description": "{exit_codes, stdout_contains}." },
            "requirements": { "type": "object", "description": "{executables, python_distributions}." },
            "writable_paths": { "type": "array", "maxItems": 64, "items": { "type": "string", "maxLength": 4096 }, "description": "Project-relative paths it writes." },
            "identity": { "type": "object", "description": "{executable_sha256, version}." },
            "outputs": { "type": "object", "description": "Name → {path, kind, required}: files to import." },
            "configuration_id": id("Current configuration_id (for replace).")
        },
        "required": ["operation", "name", "argv", "timeout_seconds"],
        "additionalProperties": false
    })
}

/// Splits configure_workload's arguments into the request fields and the
/// definition (decoded strictly: an unknown key is INVALID_ARGUMENTS).
fn configure_request(args: Value) -> Result<ConfigureRequest> {
    let Value::Object(mut map) = args else {
        return Err(FlameoxError::invalid_argument(
            "arguments",
            "must be an object",
        ));
    };
    let operation: Edit = serde_json::from_value(map.remove("operation").unwrap_or(Value::Null))
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

fn run_status<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let _: NoArguments = decode(args)?;
        let s = workloads::configuration_status(qc.ws)?;
        Ok(Answer::new(
            format!("flameox.toml {}: {} workloads", s.status, s.workloads.len()),
            to_value(&s)?,
        ))
    })
}

fn run_configure<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let outcome = configure_workload(qc.ws, &configure_request(args)?)?;
        let verb = if outcome.changed {
            "configured"
        } else {
            "unchanged"
        };
        Ok(Answer::new(
            format!("{verb} workload {}", outcome.name),
            to_value(&outcome)?,
        ))
    })
}

fn run_list<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let r: KindRequest = decode(args)?;
        let listing = workloads::list_declared(qc.ws, WorkflowKind::word(r.kind))?;
        let count = listing.workloads.len() + listing.experiments.len();
        Ok(Answer::new(
            format!("{count} {}s", listing.kind),
            to_value(&listing)?,
        ))
    })
}

fn run_show<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let r: DeclaredRequest = decode(args)?;
        if matches!(r.kind, Some(WorkflowKind::Experiment)) {
            let detail = workloads::show_experiment(qc.ws, &r.name)?;
            return Ok(Answer::new(
                format!("experiment {}", r.name),
                to_value(&detail)?,
            ));
        }
        let detail = workloads::show_workload(qc.ws, &r.name)?;
        Ok(Answer::new(
            format!("workload {}", r.name),
            to_value(&detail)?,
        ))
    })
}

/// `plan_capture`: plan (read-only) and hold the plan under a fresh id.
fn run_plan<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let r: PlanRequest = decode(args)?;
        let ws = s.workspace()?;
        let request = CaptureRequest {
            adapter: adapter_word(r.adapter),
            workload: r.workload_name,
            parameters: r.parameters.unwrap_or_default(),
            preflight_mode: r.preflight_mode.unwrap_or_default(),
            adapter_options: r.adapter_options.unwrap_or_default(),
            capture_mode: r.capture_mode.unwrap_or_default(),
            ..Default::default()
        };
        let plan = plan_capture(&ws, &request)?;
        let missing = plan
            .preflight
            .as_ref()
            .map(|p| p.missing.clone())
            .unwrap_or_default();
        let mut summary = format!("plan for {} under {}", request.workload, request.adapter);
        let mut next = json!({ "tool": "execute_capture_plan" });
        if !missing.is_empty() {
            summary = format!(
                "{summary}; missing in its interpreter: {} (prepare_workload_dependencies installs them)",
                missing.join(", ")
            );
            next = json!({
                "tool": "prepare_workload_dependencies",
                "arguments": { "workload_name": request.workload },
            });
        }
        let plan_value = to_value(&plan)?;
        let plan_id = s.plans.insert(plan)?;
        Ok(Answer::new(
            summary,
            json!({
                "plan_id": plan_id,
                "expires_in_seconds": s.plans.ttl().as_secs_f64(),
                "single_use": true,
                "plan": plan_value,
                "next_tool": next["tool"],
                "next": next,
            }),
        ))
    })
}

/// `prepare_workload_dependencies`: the installer runs off the async
/// runtime as a child process; a cancelled request ends it.
fn run_prepare_dependencies<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let r: PrepareDependenciesRequest = decode(args)?;
        let ws = s.workspace()?;
        let reporter = s
            .progress
            .reporter(&[("installing_packages", 0.0), ("completed", 100.0)]);
        let report = tokio::task::spawn_blocking(move || {
            reporter.phase("installing_packages");
            prepare_workload_dependencies(&ws, &r.workload_name, &ProgressSupervision(&*reporter))
        })
        .await
        .map_err(|e| FlameoxError::internal(format!("install task failed: {e}")))??;
        let summary = if report.installed.is_empty() && report.remaining.is_empty() {
            format!(
                "{}: every declared distribution is satisfied",
                report.workload_name
            )
        } else if report.remaining.is_empty() {
            format!(
                "{}: installed {}",
                report.workload_name,
                report.installed.join(", ")
            )
        } else {
            format!(
                "{}: installed {}; still unsatisfied: {}",
                report.workload_name,
                if report.installed.is_empty() {
                    "nothing".to_owned()
                } else {
                    report.installed.join(", ")
                },
                report.remaining.join(", ")
            )
        };
        Ok(Answer::new(summary, to_value(&report)?))
    })
}

/// `execute_capture_plan`: consume the plan, then run it off the async runtime.
fn run_execute<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let r: ExecuteRequest = decode(args)?;
        let plan = s.plans.take(&r.plan_id)?;
        let ws = s.workspace()?;
        let reporter = s.progress.reporter(&CAPTURE_PHASES);
        let result = tokio::task::spawn_blocking(move || execute_capture(&ws, &plan, &*reporter))
            .await
            .map_err(|e| FlameoxError::internal(format!("capture task failed: {e}")))??;
        if let Some(err) = interrupted(&result) {
            return Err(err);
        }
        let artifacts = result.artifacts.iter().map(|a| &a.artifact_id);
        Ok(Answer::new(
            format!(
                "run {} {} (exit {:?})",
                result.run_id, result.status, result.exit_code
            ),
            to_value(&result)?,
        )
        .link_run(&result.run_id, artifacts))
    })
}
