//! `flameox experiment plan|run|show|trial|trials`: argument parsing and
//! rendering of the engine's `experiment_plan`, `experiment_run` and
//! `experiments` services. Ctrl-C during `run` kills the running trial's
//! process tree; finished trials stay recorded and the experiment is
//! marked cancelled (exit 8).

use std::io::IsTerminal;

use clap::Subcommand;
use flameox_engine::error::Result;
use flameox_engine::services::experiment_plan::{
    ExperimentPlan, ExperimentRequest, plan_experiment,
};
use flameox_engine::services::experiment_run::{TrialRecord, run_experiment};
use flameox_engine::services::experiments::{
    ExperimentView, TrialsPage, TrialsRequest, cancelled_error, get_experiment, get_trial,
    list_trials,
};

use crate::GlobalOptions;
use crate::commands::{CliProgress, emit, open};
use crate::render::{Table, cut, duration_ns};

#[derive(Subcommand, Debug)]
pub enum ExperimentCommand {
    /// The trial matrix in randomized complete blocks, without running anything. Example: `flameox experiment plan sort_scaling`
    Plan {
        name: String,
        /// name=value of a parameter no variant/factor/scaling sets (repeatable).
        #[arg(long = "param", value_name = "NAME=VALUE")]
        params: Vec<String>,
    },
    /// Run every trial, record each, freeze one run set per variant. Example: `flameox experiment run sort_scaling`
    Run {
        name: String,
        /// name=value of a parameter no variant/factor/scaling sets (repeatable).
        #[arg(long = "param", value_name = "NAME=VALUE")]
        params: Vec<String>,
        /// Capture adapter (default process).
        #[arg(long)]
        adapter: Option<String>,
    },
    /// An experiment's protocol, status, run sets and analyses. Example: `flameox experiment show ex_…`
    Show { experiment_id: String },
    /// One trial. Example: `flameox experiment trial t000003 --experiment-id ex_…`
    Trial {
        trial_id: String,
        #[arg(long)]
        experiment_id: Option<String>,
    },
    /// An experiment's attempted trials (paged, ≤ 1000). Example: `flameox experiment trials ex_…`
    Trials {
        experiment_id: String,
        /// next_cursor of the previous page.
        #[arg(long)]
        cursor: Option<String>,
        #[arg(long)]
        limit: Option<usize>,
    },
}

fn request(name: String, params: &[String]) -> Result<ExperimentRequest> {
    Ok(ExperimentRequest {
        name,
        parameters: crate::capture::parse_param_pairs(params)?,
    })
}

pub(crate) fn experiment_command(g: &GlobalOptions, action: ExperimentCommand) -> Result<()> {
    let ws = open(g)?;
    match action {
        ExperimentCommand::Plan { name, params } => {
            let plan = plan_experiment(&ws, &request(name, &params)?)?;
            emit(g, &plan, render_plan)
        }
        ExperimentCommand::Run {
            name,
            params,
            adapter,
        } => {
            let req = request(name, &params)?;
            let progress = CliProgress::new(!g.json && !g.quiet && std::io::stderr().is_terminal());
            let view = run_experiment(&ws, &req, adapter.as_deref(), &progress);
            progress.finish();
            let view = view?;
            if let Some(error) = cancelled_error(&view) {
                if !g.json && !g.quiet {
                    eprint!("{}", render_view(&view));
                }
                return Err(error);
            }
            emit(g, &view, render_view)
        }
        ExperimentCommand::Show { experiment_id } => {
            emit(g, &get_experiment(&ws, &experiment_id)?, render_view)
        }
        ExperimentCommand::Trial {
            trial_id,
            experiment_id,
        } => {
            let trial = get_trial(&ws, &trial_id, experiment_id.as_deref())?;
            emit(g, &trial, |t| render_trials(std::slice::from_ref(t)))
        }
        ExperimentCommand::Trials {
            experiment_id,
            cursor,
            limit,
        } => {
            let page = list_trials(
                &ws,
                &TrialsRequest {
                    experiment_id,
                    cursor,
                    limit,
                },
            )?;
            emit(g, &page, render_page)
        }
    }
}

fn render_plan(p: &ExperimentPlan) -> String {
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
    out + &format!(
        "bound to {} and {}\n",
        p.definition_hash, p.experiment_digest
    )
}

fn render_view(v: &ExperimentView) -> String {
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

fn render_page(p: &TrialsPage) -> String {
    render_trials(&p.trials)
        + &p.next_cursor
            .as_ref()
            .map(|c| format!("next page: --cursor {c}\n"))
            .unwrap_or_default()
}
