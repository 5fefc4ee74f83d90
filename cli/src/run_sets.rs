//! `flameox runs freeze`, `analyze compare|scaling|record|record-comparison`
//! and `evidence get`: argument parsing and rendering only (the engine's
//! `run_sets`, `compare`, `scaling` and `analysis_records` services answer).

use clap::Args;
use flameox_engine::error::Result;
use flameox_engine::recipes::stats::ScalingConclusion;
use flameox_engine::services::QueryContext;
use flameox_engine::services::analysis_records::{self, RecordOutcome};
use flameox_engine::services::compare::{self, CompareRequest, ComparisonResult};
use flameox_engine::services::run_sets::{self, FreezeResult, RunSelection};
use flameox_engine::services::scaling::{self, ScalingRequest, ScalingResult};

use crate::GlobalOptions;
use crate::commands::{block_on, emit, open};
use crate::render::{Table, cut};

/// `runs freeze`: which runs make the set.
#[derive(Args, Debug, Clone)]
pub struct FreezeArgs {
    /// Explicit run ids (default: every run matching the filters).
    pub run_ids: Vec<String>,
    /// Only runs imported or executed with this variant.
    #[arg(long)]
    pub variant: Option<String>,
    /// Only runs with parameter NAME=VALUE (repeatable, all must match).
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
}

/// `analyze compare` / `record-comparison` arguments.
#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// Baseline run set (rs_…) or run id.
    pub baseline: String,
    /// Candidate run set (rs_…) or run id.
    pub candidate: String,
    /// Measurement name (default wall_time, else the one both sets share).
    #[arg(long)]
    pub metric: Option<String>,
    /// lower_is_better (default) or higher_is_better.
    #[arg(long)]
    pub polarity: Option<String>,
    /// Practical threshold as a fraction (default 0.02).
    #[arg(long)]
    pub threshold: Option<f64>,
    /// Confidence level (default 0.95).
    #[arg(long)]
    pub confidence: Option<f64>,
    /// Bootstrap seed (default 0).
    #[arg(long)]
    pub seed: Option<u64>,
}

/// `analyze scaling` / `record` arguments.
#[derive(Args, Debug, Clone)]
pub struct ScalingArgs {
    /// Run set (rs_…), run id, or experiment id (ex_…: all its variants).
    pub target: String,
    /// The numeric size parameter (e.g. n); optional for an experiment
    /// (its declared scaling parameter).
    #[arg(long)]
    pub parameter: Option<String>,
    /// Measurement name (default wall_time, else the one all runs share).
    #[arg(long)]
    pub metric: Option<String>,
    /// Confidence level (default 0.95).
    #[arg(long)]
    pub confidence: Option<f64>,
    /// Bootstrap seed (default 0).
    #[arg(long)]
    pub seed: Option<u64>,
}

impl CompareArgs {
    fn request(self) -> CompareRequest {
        CompareRequest {
            baseline: self.baseline,
            candidate: self.candidate,
            metric: self.metric,
            polarity: self.polarity,
            threshold: self.threshold,
            confidence: self.confidence,
            seed: self.seed,
        }
    }
}

impl ScalingArgs {
    fn request(self) -> ScalingRequest {
        ScalingRequest {
            target: self.target,
            parameter: self.parameter.unwrap_or_default(),
            metric: self.metric,
            confidence: self.confidence,
            seed: self.seed,
        }
    }
}

/// `flameox runs freeze`.
pub(crate) fn freeze_command(g: &GlobalOptions, args: FreezeArgs) -> Result<()> {
    let ws = open(g)?;
    let selection = RunSelection {
        run_ids: args.run_ids,
        variant: args.variant,
        parameters: crate::params::parse_params(&args.params)?,
    };
    let result = run_sets::freeze(&ws, &selection)?;
    emit(g, &result, render_freeze)
}

fn render_freeze(r: &FreezeResult) -> String {
    let set = &r.run_set;
    let mut t = Table::new(&["run", "variant", "block", "status", "parameters"], &[]);
    for m in &set.members {
        t.row(vec![
            m.run_id.clone(),
            m.variant.clone().unwrap_or_default(),
            m.block.clone(),
            if m.failed { "failed" } else { "ok" }.to_owned(),
            cut(&serde_json::json!(m.parameters).to_string(), 40),
        ]);
    }
    format!(
        "{} run set {} ({} runs, blocks by {:?})\n",
        if r.created {
            "froze"
        } else {
            "already frozen:"
        },
        set.run_set_id,
        set.members.len(),
        set.pairing_key
    ) + &t.render()
}

/// `analyze compare|scaling|record|record-comparison`.
pub(crate) fn compare_command(
    g: &GlobalOptions,
    qc: &QueryContext<'_>,
    args: CompareArgs,
    record: bool,
) -> Result<()> {
    let request = args.request();
    if record {
        let outcome = block_on(analysis_records::record_comparison(qc, &request))??;
        return emit(g, &outcome, render_record);
    }
    let result = block_on(compare::compare_run_sets(qc, &request))??;
    emit(g, &result, render_compare)
}

pub(crate) fn scaling_command(
    g: &GlobalOptions,
    qc: &QueryContext<'_>,
    args: ScalingArgs,
    record: bool,
) -> Result<()> {
    let request = args.request();
    if record {
        let outcome = block_on(analysis_records::record_scaling(qc, &request))??;
        return emit(g, &outcome, render_record);
    }
    let result = block_on(scaling::analyze_scaling(qc, &request))??;
    emit(g, &result, render_scaling)
}

/// `flameox evidence get <kind>:<id>`.
fn percent(x: f64) -> String {
    format!("{:+.2} %", x * 100.0)
}

fn render_record(o: &RecordOutcome) -> String {
    format!(
        "{} {} {} (commit {}, result digest {})\n",
        if o.created {
            "recorded"
        } else {
            "already recorded:"
        },
        o.record.kind,
        o.record.record_id,
        o.record.commit_id,
        o.record.result_digest
    )
}

fn render_compare(r: &ComparisonResult) -> String {
    let interval = r
        .estimate
        .relative_interval
        .map(|i| format!("[{}, {}]", percent(i.lower), percent(i.upper)))
        .unwrap_or_else(|| "unavailable".to_owned());
    let mut out = format!(
        "{}: {:?} ({:?}) — change {} {} at {:.0} % confidence, threshold {}\n",
        r.metric,
        r.decision,
        r.validity,
        percent(r.estimate.relative_change),
        interval,
        r.estimate.confidence_level * 100.0,
        percent(r.estimate.practical_threshold),
    );
    out += &format!(
        "pairs: {} by {:?}; baseline {} of {} runs used ({} failed), candidate {} of {} ({} failed)\n",
        r.pairing.pairs.len(),
        r.pairing.method,
        r.baseline.used,
        r.baseline.attempted,
        r.baseline.failed,
        r.candidate.used,
        r.candidate.attempted,
        r.candidate.failed
    );
    for reason in &r.validity_reasons {
        out += &format!("  exploratory: {reason}\n");
    }
    if let Some(s) = &r.sample_level {
        out += &format!(
            "  sample level (exploratory, ignores run-to-run variation): {} [{}, {}] → {:?}\n",
            percent(s.relative_change),
            percent(s.relative_interval.lower),
            percent(s.relative_interval.upper),
            s.decision
        );
    }
    for row in r.profile_changes.rows.iter().take(5) {
        out += &format!(
            "  frame {}: share {:.1} % → {:.1} %\n",
            cut(&row.function, 50),
            row.baseline_share * 100.0,
            row.candidate_share * 100.0
        );
    }
    out
}

fn render_scaling(r: &ScalingResult) -> String {
    let mut out = format!("{} vs {} ({})\n", r.metric, r.parameter, r.unit);
    for v in &r.variants {
        let conclusion = match v.fit.as_ref().map(|f| f.conclusion) {
            Some(ScalingConclusion::Best { model, .. }) => format!("{model:?}"),
            Some(ScalingConclusion::Inconclusive {
                best, runner_up, ..
            }) => format!("inconclusive ({best:?} vs {runner_up:?})"),
            None => format!("no fit: {}", v.fit_unavailable.clone().unwrap_or_default()),
        };
        out += &format!(
            "variant {}: {} runs, {}\n",
            v.variant.as_deref().unwrap_or("(none)"),
            v.runs,
            conclusion
        );
        if let Some(fit) = &v.fit {
            let k = fit.power_law_exponent;
            out += &format!(
                "  power law k = {:.3} [{:.3}, {:.3}], supported n in [{}, {}]\n",
                k.estimate, k.lower, k.upper, fit.supported_range.min_n, fit.supported_range.max_n
            );
        }
        let mut t = Table::new(&["n", "runs", "median", "MAD"], &[0, 1, 2, 3]);
        for p in &v.values {
            t.row(vec![
                p.n.to_string(),
                p.runs.to_string(),
                format!("{:.6e}", p.median),
                format!("{:.3e}", p.mad_normal),
            ]);
        }
        out += &t.render();
        for h in &v.hotspots.rows {
            out += &format!(
                "  growing: {} (ρ {:.2}, q {:.3})\n",
                cut(&h.function, 50),
                h.rho,
                h.q_value
            );
        }
    }
    out
}
