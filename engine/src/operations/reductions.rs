//! Declarations of the reduction tools: `plan_reduction` (what a
//! reduction reads and makes), `execute_reduction` (a detached operation
//! of kind `reduction`) and `get_reduction` (its status and, when done,
//! the run that holds the derived evidence).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::detached::{GetOperationRequest, get_answer, started_answer};
use super::schema::input_schema;
use super::session::Session;
use super::{Answer, AnswerFuture, Body, Group, Operation, decode, to_value};
use crate::services::QueryContext;
use crate::services::reductions::{
    REDUCTION_KIND, ReductionKind, ReductionRequest, plan_reduction, start_reduction,
};

/// What `execute_reduction` asks.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecuteReductionRequest {
    /// Your key for this request (8-128 chars); resending it reconnects to the same operation.
    #[schemars(length(min = 8, max = 128))]
    pub idempotency_key: String,
    /// Run id (or a unique prefix, or latest) or artifact id to reduce.
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// What to derive (default merged_stacks).
    pub kind: Option<ReductionKind>,
    /// Metric; default the target's primary one.
    #[schemars(length(max = 64))]
    pub metric: Option<String>,
    /// plan_digest from plan_reduction: refused when the inputs changed since.
    #[schemars(length(min = 64, max = 64))]
    pub plan_digest: Option<String>,
}

pub(super) static OPERATIONS: &[Operation] = &[
    Operation {
        name: "plan_reduction",
        cli: &["reduction", "plan"],
        title: "Plan reduction",
        description: "What a reduction over a large scope (merged_stacks: one stack profile of every rank of a run) reads: inputs, rows, bytes, estimated time; reads no evidence.",
        group: Group::ReadOnly,
        positional: &["target"],
        schema: input_schema::<ReductionRequest>,
        run: Body::Query(run_plan),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "execute_reduction",
        cli: &["reduction", "execute"],
        title: "Execute reduction",
        description: "Run a planned reduction in a worker that outlives this server; returns operation_id at once; the result is a new run analyses accept. Same key, same operation.",
        group: Group::Additive,
        positional: &["target"],
        schema: input_schema::<ExecuteReductionRequest>,
        run: Body::Session(run_execute),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "get_reduction",
        cli: &["reduction", "status"],
        title: "Get reduction",
        description: "A reduction's status, phase, progress and, when done, the run holding its derived evidence.",
        group: Group::ReadOnly,
        positional: &["operation_id"],
        schema: input_schema::<GetOperationRequest>,
        run: Body::Session(run_get),
        rows: "",
        columns: &[],
        terminal: &[],
    },
];

fn run_plan<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: ReductionRequest = decode(args)?;
        let plan = plan_reduction(qc, &req).await?;
        let summary = format!(
            "{} of {}: {} inputs, {} rows ({} bytes) of {}, about {:.1} s",
            plan.kind.name(),
            plan.target,
            plan.inputs_total,
            plan.rows_to_read,
            plan.bytes_to_read,
            plan.metric,
            plan.estimated_seconds
        );
        Ok(Answer::new(summary, to_value(&plan)?))
    })
}

fn run_execute<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let r: ExecuteReductionRequest = decode(args)?;
        let ws = s.workspace()?;
        let request = ReductionRequest {
            target: r.target,
            kind: r.kind,
            metric: r.metric,
        };
        let plan = plan_reduction(&s.query(&ws), &request).await?;
        let started = start_reduction(
            &ws,
            &r.idempotency_key,
            &request,
            &plan,
            r.plan_digest.as_deref(),
            &crate::detached::spawn_worker,
        )?;
        Ok(started_answer(&started))
    })
}

fn run_get<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(get_answer(s, args, REDUCTION_KIND))
}
