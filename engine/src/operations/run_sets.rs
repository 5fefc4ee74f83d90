//! Declarations of the run-set operations: freezing a set of runs, paired
//! comparisons with honest statistics, scaling with a parameter, and the
//! records that keep either answer with its result digest.

use serde_json::Value;

use super::schema::input_schema;
use super::{Answer, AnswerFuture, Body, Group, Operation, decode, to_value};
use crate::services::QueryContext;
use crate::services::analysis_records::{self, RecordOutcome};
use crate::services::compare::{self, CompareRequest};
use crate::services::run_sets::{self, RunSelection};
use crate::services::scaling::{self, ScalingRequest};

pub(super) static OPERATIONS: &[Operation] = &[
    Operation {
        name: "freeze_run_set",
        cli: &["runs", "freeze"],
        title: "Freeze run set",
        description: "Freeze an immutable run set from run_ids and/or variant/parameters filters. Blocks: the block parameter, else run order.",
        group: Group::Additive,
        positional: &["run_ids"],
        schema: input_schema::<RunSelection>,
        run: Body::Query(run_freeze),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "compare_run_sets",
        cli: &["analyze", "compare"],
        title: "Compare run sets",
        description: "Target vs base run set: median paired log ratio over blocks, seeded BCa interval, decision, validity, compatibility checks, frame changes.",
        group: Group::ReadOnly,
        positional: &["target", "base"],
        schema: input_schema::<CompareRequest>,
        run: Body::Query(run_compare),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "analyze_scaling",
        cli: &["analyze", "scaling"],
        title: "Scaling",
        description: "How a metric grows with a numeric parameter per variant: medians, MAD, BCa; fits (constant…n², power law, and with a fixed cost: CI on k) by AICc; growing hotspots.",
        group: Group::ReadOnly,
        positional: &["target"],
        schema: input_schema::<ScalingRequest>,
        run: Body::Query(run_scaling),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "record_comparison",
        cli: &["analyze", "record-comparison"],
        title: "Record comparison",
        description: "compare_run_sets, stored as a comparison record with its result digest.",
        group: Group::Additive,
        positional: &["target", "base"],
        schema: input_schema::<CompareRequest>,
        run: Body::Query(run_record_comparison),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "record_analysis",
        cli: &["analyze", "record"],
        title: "Record analysis",
        description: "analyze_scaling, stored as an analysis record with its result digest.",
        group: Group::Additive,
        positional: &["target"],
        schema: input_schema::<ScalingRequest>,
        run: Body::Query(run_record_analysis),
        rows: "",
        columns: &[],
        terminal: &[],
    },
];

fn run_freeze<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let selection: RunSelection = decode(args)?;
        let r = run_sets::freeze(qc.ws, &selection)?;
        let id = r.run_set.run_set_id.clone();
        let mut answer = Answer::new(
            format!(
                "{} run set {id} ({} runs)",
                if r.created {
                    "froze"
                } else {
                    "already frozen:"
                },
                r.run_set.members.len()
            ),
            to_value(&r)?,
        );
        answer.links.push(format!("flameox://run-sets/{id}"));
        Ok(answer)
    })
}

fn run_compare<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: CompareRequest = decode(args)?;
        let r = compare::compare_run_sets(qc, &req).await?;
        let summary = format!(
            "{} of {} against {}: {:?} ({:?}), {:+.2} % over {} pairs",
            r.metric,
            req.target,
            req.base,
            r.decision,
            r.validity,
            r.estimate.relative_change * 100.0,
            r.pairing.pairs.len()
        );
        Ok(Answer::new(summary, to_value(&r)?))
    })
}

fn run_scaling<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: ScalingRequest = decode(args)?;
        let r = scaling::analyze_scaling(qc, &req).await?;
        let variants: Vec<String> = r.variants.iter().map(scaling_line).collect();
        let summary = format!(
            "{} against {}: {}",
            r.metric,
            r.parameter,
            variants.join("; ")
        );
        // The notes stay in each variant's fit, where they belong.
        Ok(Answer::new(summary, to_value(&r)?))
    })
}

/// One variant in a line: the named model and the stated exponent.
fn scaling_line(v: &scaling::VariantScaling) -> String {
    use flameox_recipes::stats::ScalingConclusion;
    let label = v.variant.as_deref().unwrap_or("all runs");
    let Some(fit) = &v.fit else {
        return format!(
            "{label}: no fit ({})",
            v.fit_unavailable.as_deref().unwrap_or("unknown")
        );
    };
    let conclusion = match fit.conclusion {
        ScalingConclusion::Best { model, .. } => model.label().to_owned(),
        ScalingConclusion::Inconclusive {
            best, runner_up, ..
        } => format!("inconclusive, {} or {}", best.label(), runner_up.label()),
    };
    let k = fit.growth_exponent;
    format!(
        "{label}: {conclusion}, k = {:.2} [{:.2}, {:.2}] ({})",
        k.estimate,
        k.lower,
        k.upper,
        k.model.label()
    )
}

fn recorded(o: RecordOutcome) -> crate::error::Result<Answer> {
    let summary = format!(
        "{} {} {}",
        if o.created {
            "recorded"
        } else {
            "already recorded"
        },
        o.record.kind,
        o.record.record_id
    );
    Ok(Answer::new(summary, to_value(&o)?))
}

fn run_record_comparison<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: CompareRequest = decode(args)?;
        recorded(analysis_records::record_comparison(qc, &req).await?)
    })
}

fn run_record_analysis<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: ScalingRequest = decode(args)?;
        recorded(analysis_records::record_scaling(qc, &req).await?)
    })
}
