//! `flameox experiment run` / `run_experiment`: executes a planned
//! experiment through the capture service, one trial after another, and
//! keeps what happened as records:
//!
//! 1. the immutable protocol (`records/experiments/<ex_…>.json`: the plan,
//!    the adapter) before any trial starts;
//! 2. one `records/trials/<ex_…>-<trial>.json` per ATTEMPTED trial with its
//!    run id and status (`completed | failed | timed_out | cancelled`) and
//!    failure detail — failures are kept and never retried;
//! 3. after the trials, one frozen run set per variant (non-warmup trials
//!    that produced a run; members carry block and parameters) and the
//!    outcome (`records/experiment_outcomes/<ex_…>.json`) with the run-set
//!    ids and the initial analysis references.
//!
//! Cancellation (Ctrl-C, MCP) reaches the running trial's process tree
//! through the capture service; no further trial starts, and the outcome
//! says `cancelled`.

use std::collections::BTreeMap;

use serde_json::json;

use crate::error::{ErrorCode, FlameoxError, Result};
use crate::fsutil::now_rfc3339;
use crate::project::schema::Polarity;
use crate::records::{self, RECORD_SCHEMA_VERSION, RecordKind};
use crate::runs;
use crate::services::analysis_requests::{CompareRequest, ScalingRequest};
use crate::services::capture::{CaptureRequest, PreflightMode, plan_capture};
use crate::services::capture_run::{CaptureResult, execute_capture};
use crate::services::experiment_plan::{
    ExperimentPlan, ExperimentRequest, PlannedTrial, plan_experiment,
};
pub use crate::services::experiment_records::{
    AnalysisReferences, EXPERIMENT_PREFIX, ExperimentOutcome, ExperimentProtocol, TrialCounts,
    TrialRecord, VariantRunSet, trial_record_id,
};
use crate::services::import::ImportProgress;
use crate::services::run_sets::{RunSelection, build_record, member_of};
use crate::workspace::Workspace;

/// Adapter used when the caller names none.
pub const DEFAULT_ADAPTER: &str = "process";

/// Forwards cancellation to a trial's capture, but not its phases: the
/// experiment reports its own phases.
struct TrialProgress<'a>(&'a dyn ImportProgress);
impl ImportProgress for TrialProgress<'_> {
    fn cancelled(&self) -> bool {
        self.0.cancelled()
    }
    fn process_started(&self, pid: i32) {
        self.0.process_started(pid);
    }
}

fn failure_of(result: &CaptureResult) -> Option<String> {
    match result.status.as_str() {
        "completed" => None,
        "timed_out" => {
            Some("the workload ran past its timeout; its process tree was killed".into())
        }
        "cancelled" => Some("cancelled; the process tree was killed".into()),
        _ => Some(match (result.exit_code, result.signal) {
            (_, Some(sig)) => format!("killed by signal {sig}"),
            (Some(code), _) => format!(
                "exit code {code}; stderr: {}",
                result.stderr_head.chars().take(400).collect::<String>()
            ),
            _ => "the workload failed".into(),
        }),
    }
}

fn run_trial(
    ws: &Workspace,
    experiment_id: &str,
    adapter: &str,
    plan: &ExperimentPlan,
    trial: &PlannedTrial,
    progress: &dyn ImportProgress,
) -> TrialRecord {
    let started_at = now_rfc3339();
    let request = CaptureRequest {
        adapter: adapter.to_owned(),
        workload: plan.workload.clone(),
        parameters: trial
            .parameters
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect(),
        variant: Some(trial.variant.clone()),
        trial_id: Some(trial.trial_id.clone()),
        experiment_id: Some(experiment_id.to_owned()),
        block_index: trial.block,
        warmup: trial.warmup,
        preflight_mode: PreflightMode::Auto,
        ..CaptureRequest::default()
    };
    let outcome = plan_capture(ws, &request).and_then(|capture| {
        if capture.definition_hash != plan.definition_hash {
            return Err(FlameoxError::new(
                ErrorCode::InvalidCapturePlan,
                "the workload definition changed during the experiment",
            ));
        }
        execute_capture(ws, &capture, &TrialProgress(progress))
    });
    let (run_id, status, failure, wall) = match outcome {
        Ok(r) => (
            Some(r.run_id.clone()),
            r.status.clone(),
            failure_of(&r),
            Some(r.wall_time_ns),
        ),
        Err(e) => {
            let status = match e.code {
                ErrorCode::ProcessTimeout => "timed_out",
                ErrorCode::ProcessCancelled | ErrorCode::OperationCancelled => "cancelled",
                _ => "failed",
            };
            (
                e.run_id.clone(),
                status.to_owned(),
                Some(format!("{:?}: {}", e.code, e.message)),
                None,
            )
        }
    };
    TrialRecord {
        schema_version: RECORD_SCHEMA_VERSION,
        experiment_id: experiment_id.to_owned(),
        trial_id: trial.trial_id.clone(),
        block: trial.block,
        position: trial.position,
        position_in_block: trial.position_in_block,
        variant: trial.variant.clone(),
        parameters: trial.parameters.clone(),
        warmup: trial.warmup,
        run_id,
        status,
        failure,
        wall_time_ns: wall,
        started_at,
        finished_at: now_rfc3339(),
    }
}

fn count(plan: &ExperimentPlan, trials: &[TrialRecord]) -> TrialCounts {
    let mut c = TrialCounts {
        planned: plan.trial_count,
        attempted: trials.len(),
        ..Default::default()
    };
    for t in trials {
        match t.status.as_str() {
            "completed" => c.completed += 1,
            "timed_out" => c.timed_out += 1,
            "cancelled" => c.cancelled += 1,
            _ => c.failed += 1,
        }
        c.warmups += usize::from(t.warmup);
    }
    c
}

/// Freezes one run set per variant from the non-warmup trials with a run.
fn freeze_variants(
    ws: &Workspace,
    plan: &ExperimentPlan,
    trials: &[TrialRecord],
) -> Result<Vec<VariantRunSet>> {
    let mut sets = Vec::new();
    for variant in &plan.variants {
        let mut members = Vec::new();
        for t in trials
            .iter()
            .filter(|t| !t.warmup && t.variant == variant.name)
        {
            if let Some(run_id) = &t.run_id {
                members.push(member_of(&runs::read_run(ws, run_id)?));
            }
        }
        if members.is_empty() {
            continue;
        }
        let selection = RunSelection {
            run_ids: members.iter().map(|m| m.run_id.clone()).collect(),
            variant: Some(variant.name.clone()),
            parameters: BTreeMap::new(),
        };
        let record = build_record(selection, members);
        let id = record.run_set_id.clone();
        let (stored, _) = records::write_record_once(ws, RecordKind::RunSets, &id, &record)?;
        sets.push(VariantRunSet {
            variant: variant.name.clone(),
            run_set_id: stored.run_set_id,
            members: stored.members.len(),
        });
    }
    Ok(sets)
}

fn references(
    experiment_id: &str,
    plan: &ExperimentPlan,
    sets: &[VariantRunSet],
) -> AnalysisReferences {
    let mut refs = AnalysisReferences::default();
    if let ([base, cand], 2) = (sets, plan.variants.len()) {
        let polarity = match plan.polarity {
            Polarity::LowerIsBetter => "lower_is_better",
            Polarity::HigherIsBetter => "higher_is_better",
        };
        refs.compare_command = Some(format!(
            "flameox analyze compare {} {} --metric {} --polarity {polarity} --threshold {} --confidence {} --seed {}",
            cand.run_set_id,
            base.run_set_id,
            plan.primary_metric,
            plan.practical_threshold,
            plan.confidence_level,
            plan.seed
        ));
        refs.compare = Some(CompareRequest {
            base: base.run_set_id.clone(),
            target: cand.run_set_id.clone(),
            metric: Some(plan.primary_metric.clone()),
            polarity: Some(polarity.to_owned()),
            threshold: Some(plan.practical_threshold),
            confidence: Some(plan.confidence_level),
            seed: Some(plan.seed),
        });
    }
    if let (Some(parameter), false) = (&plan.scaling_parameter, sets.is_empty()) {
        refs.scaling_command = Some(format!(
            "flameox analyze scaling {experiment_id} --parameter {parameter} --metric {} --confidence {} --seed {}",
            plan.primary_metric, plan.confidence_level, plan.seed
        ));
        refs.scaling = Some(ScalingRequest {
            target: experiment_id.to_owned(),
            parameter: parameter.clone(),
            metric: Some(plan.primary_metric.clone()),
            confidence: Some(plan.confidence_level),
            seed: Some(plan.seed),
        });
    }
    refs
}

/// Runs an experiment; see the module comment. Progress phases:
/// `planning`, `warming_up`, `capturing`, `publishing` (freezing run
/// sets), `analyzing` (references), `completed`.
pub fn run_experiment(
    ws: &Workspace,
    req: &ExperimentRequest,
    adapter: Option<&str>,
    progress: &dyn ImportProgress,
) -> Result<crate::services::experiments::ExperimentView> {
    progress.phase("planning");
    let plan = plan_experiment(ws, req)?;
    let adapter = adapter.unwrap_or(DEFAULT_ADAPTER).to_owned();
    let experiment_id = format!("{EXPERIMENT_PREFIX}{}", uuid::Uuid::now_v7().simple());
    let protocol = ExperimentProtocol {
        schema_version: RECORD_SCHEMA_VERSION,
        experiment_id: experiment_id.clone(),
        created_at: now_rfc3339(),
        adapter: adapter.clone(),
        plan,
    };
    records::write_record_once(ws, RecordKind::Experiments, &experiment_id, &protocol)?;
    let plan = &protocol.plan;
    let mut trials: Vec<TrialRecord> = Vec::new();
    let mut cancelled = false;
    for trial in &plan.trials {
        if progress.cancelled() {
            cancelled = true;
            break;
        }
        progress.phase(if trial.warmup {
            "warming_up"
        } else {
            "capturing"
        });
        let record = run_trial(ws, &experiment_id, &adapter, plan, trial, progress);
        let id = trial_record_id(&experiment_id, &record.trial_id);
        records::write_record_once(ws, RecordKind::Trials, &id, &record)?;
        cancelled = record.status == "cancelled";
        trials.push(record);
        progress.steps(trials.len() as u64, plan.trials.len() as u64);
        if cancelled {
            break;
        }
    }
    progress.phase("publishing");
    let run_sets = freeze_variants(ws, plan, &trials)?;
    progress.phase("analyzing");
    let outcome = ExperimentOutcome {
        schema_version: RECORD_SCHEMA_VERSION,
        experiment_id: experiment_id.clone(),
        status: if cancelled { "cancelled" } else { "completed" }.into(),
        finished_at: now_rfc3339(),
        counts: count(plan, &trials),
        first_failing_trial: trials
            .iter()
            .find(|t| t.status != "completed")
            .map(|t| t.trial_id.clone()),
        analyses: references(&experiment_id, plan, &run_sets),
        run_sets,
    };
    records::write_record_once(ws, RecordKind::ExperimentOutcomes, &experiment_id, &outcome)?;
    progress.phase("completed");
    crate::services::experiments::get_experiment(ws, &experiment_id)
}
