//! `flameox experiment trial` (one trial found across experiments) and the
//! terminal's views of the catalogued `experiment plan|run|show|trials`
//! (engine: `experiment_plan`, `experiment_run`, `experiments`). Ctrl-C
//! during `run` kills the running trial's process tree; finished trials
//! stay recorded and the experiment is marked cancelled (exit 8).

use flameox_engine::error::Result;
use flameox_engine::services::experiment_plan::ExperimentPlan;
use flameox_engine::services::experiment_run::TrialRecord;
use flameox_engine::services::experiments::{ExperimentView, TrialsPage, get_trial};

use crate::args::{ExperimentCommand, GlobalOptions};
use crate::render::{Table, cut, duration_ns};
use crate::terminal::{emit, open};

pub(crate) fn experiment_command(g: &GlobalOptions, action: ExperimentCommand) -> Result<()> {
    let ws = open(g)?;
    let ExperimentCommand::Trial {
        trial_id,
        experiment_id,
    } = action;
    let trial = get_trial(&ws, &trial_id, experiment_id.as_deref())?;
    emit(g, &trial, |t| render_trials(std::slice::from_ref(t)))
}

pub(crate) fn render_plan(p: &ExperimentPlan) -> String {
    let mut out = format!(
        "experiment {} on workload {}: {} cells × ({} blocks + {} warmups) = {} trials, seed {}, baseline {}\n",
        p.experiment,
        p.workload,
        p.cells,
        p.repetitions,
        p.warmups,
        p.trial_count,
        p.seed,
        p.baseline_variant
    );
    let mut t = Table::new(&["trial", "block", "variant", "warmup", "parameters"], &[]);
    for trial in &p.trials {
        t.row(vec![
            trial.trial_id.clone(),
            trial.block.map(|b| b.to_string()).unwrap_or_default(),
            trial.variant.clone(),
            trial.warmup.to_string(),
            cut(&serde_json::json!(trial.parameters).to_string(), 50),
        ]);
    }
    out += &t.render();
    for warning in &p.design_warnings {
        out += &format!("warning: {}\n", warning.message);
    }
    out + &format!(
        "bound to {} and {}\n",
        p.definition_hash, p.experiment_digest
    )
}

pub(crate) fn render_view(v: &ExperimentView) -> String {
    let mut out = format!(
        "experiment {} ({}) {}: workload {}, adapter {}\n",
        v.experiment_id, v.plan.experiment, v.status, v.plan.workload, v.adapter
    );
    if let Some(o) = &v.outcome {
        let c = &o.counts;
        out += &format!(
            "  trials: {} planned, {} attempted, {} completed, {} failed, {} timed out, {} cancelled\n",
            c.planned, c.attempted, c.completed, c.failed, c.timed_out, c.cancelled
        );
        if let Some(t) = &o.first_failing_trial {
            out += &format!("  first failing trial: {t}\n");
        }
        for s in &o.run_sets {
            out += &format!(
                "  run set {} = variant {} ({} runs)\n",
                s.run_set_id, s.variant, s.members
            );
        }
        for cmd in [&o.analyses.compare_command, &o.analyses.scaling_command]
            .into_iter()
            .flatten()
        {
            out += &format!("next: {cmd}\n");
        }
    }
    out
}

fn render_trials(trials: &[TrialRecord]) -> String {
    let mut t = Table::new(
        &[
            "experiment",
            "trial",
            "block",
            "variant",
            "status",
            "wall",
            "run",
            "failure",
        ],
        &[],
    );
    for r in trials {
        t.row(vec![
            r.experiment_id.clone(),
            r.trial_id.clone(),
            r.block
                .map_or_else(|| "warmup".to_owned(), |b| b.to_string()),
            r.variant.clone(),
            r.status.clone(),
            r.wall_time_ns
                .map(|ns| duration_ns(ns as i64))
                .unwrap_or_default(),
            r.run_id.clone().unwrap_or_default(),
            cut(r.failure.as_deref().unwrap_or(""), 40),
        ]);
    }
    t.render()
}

pub(crate) fn render_page(p: &TrialsPage) -> String {
    render_trials(&p.trials)
}
