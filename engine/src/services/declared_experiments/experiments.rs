//! Reading experiments back: `experiment show` / `get_experiment` (the
//! protocol without its trial list, the outcome, counts), the trial
//! collection keyset-paged at ≤ 1,000 (`list_experiment_trials`), one trial
//! (`experiment trial`, ambiguous ids across experiments refused with the
//! candidates), and the mapping of an experiment id to its run sets for
//! `analyze scaling` / `analyze compare`.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::{FlameoxError, Result};
use crate::records::{self, RecordKind};
use crate::services::experiment_plan::ExperimentPlan;
use crate::services::experiment_records::{
    EXPERIMENT_PREFIX, ExperimentOutcome, ExperimentProtocol, TrialRecord, trial_record_id,
};
use crate::services::run_sets::{PairingKey, ResolvedRunSet, read_run_set, resolve_run_set};
use crate::workspace::Workspace;

/// Largest page of `list_experiment_trials`.
pub const TRIALS_PAGE_MAX: usize = 1000;

/// What `get_experiment` answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentView {
    pub experiment_id: String,
    pub created_at: String,
    pub adapter: String,
    /// `completed`, `cancelled`, or `incomplete` (no outcome yet: running,
    /// or the runner died).
    pub status: String,
    /// The protocol's plan with `trials` left out (see `trials_resource`).
    pub plan: ExperimentPlan,
    pub outcome: Option<ExperimentOutcome>,
    pub trials_resource: String,
}

/// `list_experiment_trials` arguments.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialsRequest {
    pub experiment_id: String,
    /// The `next_cursor` of the previous page (the last trial id it held).
    pub cursor: Option<String>,
    /// 1..=1000 (default 1000).
    pub limit: Option<usize>,
}

/// One page of trials, in execution order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialsPage {
    pub experiment_id: String,
    pub trials: Vec<TrialRecord>,
    pub next_cursor: Option<String>,
}

fn check_experiment_id(id: &str) -> Result<()> {
    if id.starts_with(EXPERIMENT_PREFIX) && records::valid_record_id(id) {
        Ok(())
    } else {
        Err(FlameoxError::invalid_argument(
            "experiment_id",
            "expected an experiment id (ex_…)",
        ))
    }
}

/// The protocol, outcome and status of one experiment.
pub fn get_experiment(ws: &Workspace, experiment_id: &str) -> Result<ExperimentView> {
    check_experiment_id(experiment_id)?;
    let protocol: ExperimentProtocol =
        records::read_record(ws, RecordKind::Experiments, experiment_id)?;
    let outcome: Option<ExperimentOutcome> =
        if records::record_exists(ws, RecordKind::ExperimentOutcomes, experiment_id) {
            Some(records::read_record(
                ws,
                RecordKind::ExperimentOutcomes,
                experiment_id,
            )?)
        } else {
            None
        };
    let mut plan = protocol.plan;
    plan.trials.clear();
    Ok(ExperimentView {
        status: outcome
            .as_ref()
            .map_or_else(|| "incomplete".to_owned(), |o| o.status.clone()),
        experiment_id: protocol.experiment_id,
        created_at: protocol.created_at,
        adapter: protocol.adapter,
        plan,
        outcome,
        trials_resource: format!("flameox://experiments/{experiment_id}/trials"),
    })
}

/// The error a cancelled experiment run becomes (CLI exit 8, MCP
/// `PROCESS_CANCELLED`): finished trials stay recorded; `details` carry the
/// experiment id and the receipt. `None` unless `view` is cancelled.
pub fn cancelled_error(view: &ExperimentView) -> Option<FlameoxError> {
    if view.status != "cancelled" {
        return None;
    }
    Some(
        FlameoxError::new(
            crate::error::ErrorCode::ProcessCancelled,
            format!(
                "experiment {} was cancelled; finished trials are kept",
                view.experiment_id
            ),
        )
        .detail("experiment_id", view.experiment_id.clone())
        .detail("result", serde_json::to_value(view).unwrap_or_default()),
    )
}

/// The trial record ids of an experiment, in execution order.
fn trial_ids(ws: &Workspace, experiment_id: &str) -> Vec<String> {
    let prefix = format!("{experiment_id}-");
    records::list_record_ids(ws, RecordKind::Trials)
        .into_iter()
        .filter_map(|id| id.strip_prefix(&prefix).map(str::to_owned))
        .collect()
}

/// One page of an experiment's attempted trials.
pub fn list_trials(ws: &Workspace, req: &TrialsRequest) -> Result<TrialsPage> {
    check_experiment_id(&req.experiment_id)?;
    records::read_record::<ExperimentProtocol>(ws, RecordKind::Experiments, &req.experiment_id)?;
    let limit = req.limit.unwrap_or(TRIALS_PAGE_MAX);
    if !(1..=TRIALS_PAGE_MAX).contains(&limit) {
        return Err(FlameoxError::invalid_argument(
            "limit",
            format!("must be 1..={TRIALS_PAGE_MAX}"),
        ));
    }
    let ids: Vec<String> = trial_ids(ws, &req.experiment_id)
        .into_iter()
        .filter(|id| req.cursor.as_ref().is_none_or(|c| id > c))
        .collect();
    let mut trials = Vec::new();
    for id in ids.iter().take(limit) {
        let record_id = trial_record_id(&req.experiment_id, id);
        trials.push(records::read_record(ws, RecordKind::Trials, &record_id)?);
    }
    let next_cursor = (ids.len() > limit).then(|| ids[limit - 1].clone());
    Ok(TrialsPage {
        experiment_id: req.experiment_id.clone(),
        trials,
        next_cursor,
    })
}

/// One trial; without an experiment id the trial id must be unique.
pub fn get_trial(
    ws: &Workspace,
    trial_id: &str,
    experiment_id: Option<&str>,
) -> Result<TrialRecord> {
    crate::services::check_id("trial_id", trial_id)?;
    if let Some(experiment_id) = experiment_id {
        check_experiment_id(experiment_id)?;
        return records::read_record(
            ws,
            RecordKind::Trials,
            &trial_record_id(experiment_id, trial_id),
        );
    }
    let suffix = format!("-{trial_id}");
    let candidates: Vec<String> = records::list_record_ids(ws, RecordKind::Trials)
        .into_iter()
        .filter_map(|id| id.strip_suffix(&suffix).map(str::to_owned))
        .filter(|e| e.starts_with(EXPERIMENT_PREFIX))
        .collect();
    match candidates.as_slice() {
        [only] => records::read_record(ws, RecordKind::Trials, &trial_record_id(only, trial_id)),
        [] => records::read_record(ws, RecordKind::Trials, trial_id),
        _ => Err(FlameoxError::invalid_argument(
            "experiment_id",
            format!(
                "trial {trial_id} exists in {} experiments; name the experiment",
                candidates.len()
            ),
        )
        .detail("candidates", candidates.clone())
        .recover_with(
            "list_experiment_trials",
            json!({ "experiment_id": candidates[0] }),
            format!(
                "flameox experiment trial {trial_id} --experiment-id {}",
                candidates[0]
            ),
        )),
    }
}

/// An experiment's frozen run sets as one set (every variant), with its
/// plan (scaling parameter, primary metric, confidence, seed); `None`
/// when `target` is not an experiment id.
pub fn experiment_run_sets(
    ws: &Workspace,
    target: &str,
) -> Result<Option<(ResolvedRunSet, Option<ExperimentPlan>)>> {
    if !target.starts_with(EXPERIMENT_PREFIX) {
        return Ok(None);
    }
    let view = get_experiment(ws, target)?;
    let Some(outcome) = view.outcome else {
        return Err(FlameoxError::invalid_argument(
            "target",
            format!("experiment {target} has not finished: it has no frozen run sets yet"),
        ));
    };
    let mut members = Vec::new();
    for set in &outcome.run_sets {
        members.extend(read_run_set(ws, &set.run_set_id)?.members);
    }
    Ok(Some((
        ResolvedRunSet {
            requested: target.to_owned(),
            run_set_id: None,
            pairing_key: PairingKey::ExperimentBlock,
            members,
        },
        Some(view.plan),
    )))
}

/// A run set, a run, or an experiment (all its variants' run sets).
pub fn resolve_analysis_target(
    ws: &Workspace,
    field: &str,
    target: &str,
) -> Result<(ResolvedRunSet, Option<ExperimentPlan>)> {
    match experiment_run_sets(ws, target)? {
        Some(found) => Ok(found),
        None => Ok((resolve_run_set(ws, field, target)?, None)),
    }
}

/// The plan of the experiment every one of `run_ids` was a trial of, when
/// they all share one (`None` otherwise): a comparison between its run sets
/// takes the experiment's declared metric, polarity, threshold, confidence
/// and seed as its defaults.
pub fn shared_experiment_plan<'a>(
    ws: &Workspace,
    run_ids: impl IntoIterator<Item = &'a str>,
) -> Option<ExperimentPlan> {
    let mut shared: Option<String> = None;
    for run_id in run_ids {
        let run = crate::runs::read_run(ws, run_id).ok()?;
        let experiment = run.metadata.get("experiment_id")?.as_str()?;
        match &shared {
            Some(id) if id != experiment => return None,
            Some(_) => {}
            None => shared = Some(experiment.to_owned()),
        }
    }
    let protocol: ExperimentProtocol =
        records::read_record(ws, RecordKind::Experiments, &shared?).ok()?;
    Some(protocol.plan)
}
