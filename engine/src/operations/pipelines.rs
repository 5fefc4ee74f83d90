//! Declarations of the artifact-pipeline tools: register a pipeline (a
//! revisioned record) and compare what two pipelines say about their
//! artifacts.

use serde_json::Value;

use super::schema::input_schema;
use super::{Answer, AnswerFuture, Body, Group, Operation, decode, to_value};
use crate::services::QueryContext;
use crate::services::pipelines::{
    ComparePipelinesRequest, RegisterPipelineRequest, compare_artifact_pipelines,
    register_artifact_pipeline,
};

pub(super) static OPERATIONS: &[Operation] = &[
    Operation {
        name: "register_artifact_pipeline",
        cli: &["pipelines", "register"],
        title: "Register artifact pipeline",
        description: "Name a chain from artifact to answer (format kind and producer of its extraction, the metric its hotspots read); the same definition again changes nothing.",
        group: Group::Configure,
        positional: &["name"],
        schema: input_schema::<RegisterPipelineRequest>,
        run: Body::Query(run_register),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "compare_artifact_pipelines",
        cli: &["pipelines", "compare"],
        title: "Compare artifact pipelines",
        description: "Where two pipelines' answers differ (e.g. py-spy against viztracer of one workload): frames whose share of their side's total differs beyond a tolerance, frames one side lacks, top-frame agreement.",
        group: Group::ReadOnly,
        positional: &["target", "base"],
        schema: input_schema::<ComparePipelinesRequest>,
        run: Body::Query(run_compare),
        rows: "differing",
        columns: &[],
        terminal: &[],
    },
];

fn run_register<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: RegisterPipelineRequest = decode(args)?;
        let ws = qc.ws;
        let p = register_artifact_pipeline(ws, &req)?;
        let summary = format!(
            "pipeline {} revision {}{}: kind {}, producer {}, metric {}",
            p.name,
            p.revision,
            if p.changed { "" } else { " (unchanged)" },
            p.kind.as_deref().unwrap_or("any"),
            p.producer.as_deref().unwrap_or("any"),
            p.metric.as_deref().unwrap_or("primary")
        );
        Ok(Answer::new(summary, to_value(&p)?))
    })
}

fn run_compare<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: ComparePipelinesRequest = decode(args)?;
        let c = compare_artifact_pipelines(qc, &req).await?;
        let lead = c
            .differing
            .first()
            .map(|f| format!("; most: {} {:+.1} pp", f.function, f.delta_pp))
            .unwrap_or_default();
        let summary = format!(
            "{} vs {}: {} frames matched, {} differ by more than {} pp of each side's total{lead}; {} of the top {} shared",
            c.target.pipeline,
            c.base.pipeline,
            c.matched_frames,
            c.differing_total,
            c.tolerance_pp,
            c.top_frames.shared,
            c.top_frames.top
        );
        Ok(Answer::new(summary, to_value(&c)?))
    })
}
