//! Declarations of the declared-experiment operations: the trial matrix,
//! running every trial (progress per trial; cancel kills the running
//! trial's process tree), an experiment's receipt, and its trials.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::detached::{
    GetOperationRequest, OperationRequest, cancel_answer, get_answer, started_answer,
};
use super::schema::input_schema;
use super::session::{EXPERIMENT_PHASES, Session};
use super::workloads::AdapterName;
use super::{Answer, AnswerFuture, Body, Group, Operation, decode, to_value};
use crate::error::FlameoxError;
use crate::services::QueryContext;
use crate::services::detached_experiment::{EXPERIMENT_KIND, start_detached_experiment};
use crate::services::experiment_plan::{ExperimentRequest, plan_experiment};
use crate::services::experiment_run::run_experiment;
use crate::services::experiments::{
    ExperimentView, TrialsRequest, cancelled_error, get_experiment, get_trial, list_trials,
};

/// What `plan_experiment` asks.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanExperimentRequest {
    /// Declared experiment.
    #[schemars(length(min = 1, max = 64))]
    pub name: String,
    /// Values of parameters no variant or axis sets.
    #[schemars(extend("maxProperties" = 32))]
    pub parameters: Option<BTreeMap<String, Value>>,
}

/// What `run_experiment` asks.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunExperimentRequest {
    /// Declared experiment.
    #[schemars(length(min = 1, max = 64))]
    pub name: String,
    /// Values of parameters no variant or axis sets.
    #[schemars(extend("maxProperties" = 32))]
    pub parameters: Option<BTreeMap<String, Value>>,
    /// Default process.
    #[schemars(length(min = 1, max = 64))]
    pub adapter: Option<AdapterName>,
}

/// What `start_detached_experiment` asks.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartExperimentRequest {
    /// Your key for this request (8-128 chars); resending it reconnects to the same operation.
    #[schemars(length(min = 8, max = 128))]
    pub idempotency_key: String,
    /// Declared experiment.
    #[schemars(length(min = 1, max = 64))]
    pub name: String,
    /// Values of parameters no variant or axis sets.
    #[schemars(extend("maxProperties" = 32))]
    pub parameters: Option<BTreeMap<String, Value>>,
    /// Default process.
    #[schemars(length(min = 1, max = 64))]
    pub adapter: Option<AdapterName>,
}

/// One experiment.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExperimentIdRequest {
    /// ex_… id.
    #[schemars(length(min = 1, max = 200))]
    pub experiment_id: String,
}

/// A page of an experiment's trials, or one trial.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrialsArguments {
    /// ex_… id.
    #[schemars(length(min = 1, max = 200))]
    pub experiment_id: String,
    /// Only this trial.
    #[schemars(length(min = 1, max = 64))]
    pub trial_id: Option<String>,
    /// ≤ 1000.
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// next_cursor.
    #[schemars(length(min = 1, max = 200))]
    pub cursor: Option<String>,
}

pub(super) static OPERATIONS: &[Operation] = &[
    Operation {
        name: "plan_experiment",
        cli: &["experiment", "plan"],
        title: "Plan experiment",
        description: "A declared experiment's trial matrix (variants × sizes × seeded blocks). Runs nothing.",
        group: Group::ReadOnly,
        positional: &["name"],
        schema: input_schema::<PlanExperimentRequest>,
        run: Body::Query(run_plan),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "run_experiment",
        cli: &["experiment", "run"],
        title: "Run experiment",
        description: "Run and record every planned trial (failures kept); freeze a run set per variant. Progress per trial; cancel kills the trial.",
        group: Group::Execute,
        positional: &["name"],
        schema: input_schema::<RunExperimentRequest>,
        run: Body::Session(run_run),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "start_detached_experiment",
        cli: &["experiment", "start"],
        title: "Start detached experiment",
        description: "Run every trial of a declared experiment in a worker that outlives this server; returns operation_id at once. Same key, same operation.",
        group: Group::Execute,
        positional: &["name"],
        schema: input_schema::<StartExperimentRequest>,
        run: Body::Session(run_start_detached),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "get_detached_experiment",
        cli: &["experiment", "status"],
        title: "Get detached experiment",
        description: "A detached experiment's status, phase, progress and, when done, its experiment_id, trial counts and run sets.",
        group: Group::ReadOnly,
        positional: &["operation_id"],
        schema: input_schema::<GetOperationRequest>,
        run: Body::Session(run_get_detached),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "cancel_detached_experiment",
        cli: &["experiment", "cancel"],
        title: "Cancel detached experiment",
        description: "Stop a detached experiment: the running trial's process tree is ended, finished trials kept; returns the terminal state.",
        group: Group::Execute,
        positional: &["operation_id"],
        schema: input_schema::<OperationRequest>,
        run: Body::Session(run_cancel_detached),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "get_experiment",
        cli: &["experiment", "show"],
        title: "Get experiment",
        description: "Protocol, status, counts, run sets, suggested analyses.",
        group: Group::ReadOnly,
        positional: &["experiment_id"],
        schema: input_schema::<ExperimentIdRequest>,
        run: Body::Query(run_get),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "list_experiment_trials",
        cli: &["experiment", "trials"],
        title: "List experiment trials",
        description: "Attempted trials in execution order, paged; or one by trial_id.",
        group: Group::ReadOnly,
        positional: &["experiment_id"],
        schema: input_schema::<TrialsArguments>,
        run: Body::Query(run_trials),
        rows: "",
        columns: &[],
        terminal: &[],
    },
];

/// An experiment's receipt, linked to itself, its trials and run sets.
fn receipt(view: &ExperimentView) -> Result<Answer, FlameoxError> {
    let summary = match &view.outcome {
        Some(o) => format!(
            "experiment {} {}: {}/{} trials completed",
            view.experiment_id, view.status, o.counts.completed, o.counts.planned
        ),
        None => format!("experiment {} {}", view.experiment_id, view.status),
    };
    let mut answer = Answer::new(summary, to_value(view)?);
    answer
        .links
        .push(format!("flameox://experiments/{}", view.experiment_id));
    answer.links.push(view.trials_resource.clone());
    for set in view.outcome.iter().flat_map(|o| &o.run_sets) {
        answer
            .links
            .push(format!("flameox://run-sets/{}", set.run_set_id));
    }
    Ok(answer)
}

fn run_plan<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let r: PlanExperimentRequest = decode(args)?;
        let request = ExperimentRequest {
            name: r.name,
            parameters: r.parameters.unwrap_or_default(),
        };
        let plan = plan_experiment(qc.ws, &request)?;
        Ok(Answer::new(
            format!(
                "experiment {}: {} trials in {} blocks",
                plan.experiment, plan.trial_count, plan.repetitions
            ),
            to_value(&plan)?,
        ))
    })
}

/// `run_experiment`: the engine runs off the async runtime; a cancelled
/// call stops it through the reporter, which the trial's capture polls.
fn run_run<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let r: RunExperimentRequest = decode(args)?;
        let request = ExperimentRequest {
            name: r.name,
            parameters: r.parameters.unwrap_or_default(),
        };
        let adapter = r.adapter;
        let ws = s.workspace()?;
        let reporter = s.progress.reporter(&EXPERIMENT_PHASES);
        let view = tokio::task::spawn_blocking(move || {
            run_experiment(&ws, &request, adapter.as_deref(), &*reporter)
        })
        .await
        .map_err(|e| FlameoxError::internal(format!("experiment task failed: {e}")))??;
        if let Some(error) = cancelled_error(&view) {
            return Err(error);
        }
        receipt(&view)
    })
}

fn run_start_detached<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let r: StartExperimentRequest = decode(args)?;
        let ws = s.workspace()?;
        let request = ExperimentRequest {
            name: r.name,
            parameters: r.parameters.unwrap_or_default(),
        };
        let started = start_detached_experiment(
            &ws,
            &r.idempotency_key,
            &request,
            r.adapter.as_deref(),
            &crate::detached::spawn_worker,
        )?;
        Ok(started_answer(&started))
    })
}

fn run_get_detached<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(get_answer(s, args, EXPERIMENT_KIND))
}

fn run_cancel_detached<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(cancel_answer(s, args, EXPERIMENT_KIND))
}

fn run_get<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let r: ExperimentIdRequest = decode(args)?;
        receipt(&get_experiment(qc.ws, &r.experiment_id)?)
    })
}

fn run_trials<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let r: TrialsArguments = decode(args)?;
        if let Some(trial_id) = &r.trial_id {
            let trial = get_trial(qc.ws, trial_id, Some(&r.experiment_id))?;
            let page = serde_json::json!({
                "experiment_id": r.experiment_id,
                "trials": [trial],
            });
            return Ok(Answer::new(
                format!("trial {trial_id} of {}", r.experiment_id),
                page,
            ));
        }
        let page = list_trials(
            qc.ws,
            &TrialsRequest {
                experiment_id: r.experiment_id,
                cursor: r.cursor,
                limit: r.limit,
            },
        )?;
        Ok(Answer::new(
            format!("{} trials of {}", page.trials.len(), page.experiment_id),
            to_value(&page)?,
        ))
    })
}
