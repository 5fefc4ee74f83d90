//! Declarations of the investigation operations: the question an agent is
//! answering, the hypotheses it tests, and the listing a new conversation
//! resumes from.

use serde_json::Value;

use super::schema::input_schema;
use super::{Answer, AnswerFuture, Body, Cell, Group, Operation, col, decode, to_value};
use crate::services::QueryContext;
use crate::services::investigations::hypothesis::{
    self, HypothesisRequest, RecordHypothesisRequest,
};
use crate::services::investigations::investigation::{
    self, CreateInvestigationRequest, InvestigationRequest, ListInvestigationsRequest,
};

pub(super) static OPERATIONS: &[Operation] = &[
    Operation {
        name: "create_investigation",
        cli: &["investigations", "create"],
        title: "Create investigation",
        description: "Start an investigation: a question, the runs/artifacts/records it is about (checked to exist), tags. Resume later with list_investigations.",
        group: Group::Additive,
        positional: &[],
        schema: input_schema::<CreateInvestigationRequest>,
        run: Body::Query(run_create),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "list_investigations",
        cli: &["investigations", "list"],
        title: "List investigations",
        description: "Investigations, newest first, with hypothesis counts per status; filter by tag or target; paged.",
        group: Group::ReadOnly,
        positional: &[],
        schema: input_schema::<ListInvestigationsRequest>,
        run: Body::Query(run_list),
        rows: "items",
        columns: &[
            col("investigation", "investigation_id", Cell::Id),
            col("question", "question", Cell::Text),
            col("hypotheses", "hypotheses", Cell::Integer),
            col("created", "created_at", Cell::Text),
        ],
        terminal: &[],
    },
    Operation {
        name: "get_investigation",
        cli: &["investigations", "show"],
        title: "Get investigation",
        description: "One investigation with its hypotheses and findings (newest first, at most 50 each), with their revisions.",
        group: Group::ReadOnly,
        positional: &["investigation_id"],
        schema: input_schema::<InvestigationRequest>,
        run: Body::Query(run_get),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "record_hypothesis",
        cli: &["hypotheses", "record"],
        title: "Record hypothesis",
        description: "New hypothesis (investigation_id, statement, prediction, refuted_if) or a revision (hypothesis_id, expected_revision): status changes need evidence references.",
        group: Group::Additive,
        positional: &[],
        schema: input_schema::<RecordHypothesisRequest>,
        run: Body::Query(run_record_hypothesis),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "get_hypothesis",
        cli: &["hypotheses", "show"],
        title: "Get hypothesis",
        description: "One hypothesis: statement, prediction, refuted_if, status with its history, evidence, revision.",
        group: Group::ReadOnly,
        positional: &["hypothesis_id"],
        schema: input_schema::<HypothesisRequest>,
        run: Body::Query(run_get_hypothesis),
        rows: "",
        columns: &[],
        terminal: &[],
    },
];

fn run_get_hypothesis<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: HypothesisRequest = decode(args)?;
        let h = hypothesis::get(qc.ws, &req.hypothesis_id)?;
        let summary = format!(
            "{} ({}, revision {}): {}",
            h.hypothesis_id,
            h.status.name(),
            h.revision,
            h.statement
        );
        let next = format!("next: flameox investigations show {}", h.investigation_id);
        hypothesis_answer(summary, next, &h)
    })
}

fn run_create<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: CreateInvestigationRequest = decode(args)?;
        let inv = investigation::create(qc.ws, &req)?;
        let id = inv.investigation_id.clone();
        let mut answer = Answer::new(
            format!(
                "created investigation {id} about {} target(s)",
                inv.targets.len()
            ),
            to_value(&inv)?,
        );
        answer.details.push(format!(
            "next: flameox hypotheses record --investigation-id {id} --statement … --prediction … --refuted-if …"
        ));
        answer.links.push(format!("flameox://investigations/{id}"));
        Ok(answer)
    })
}

fn run_list<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: ListInvestigationsRequest = decode(args)?;
        let page = investigation::list(qc.ws, &req)?;
        let mut answer = Answer::new(
            format!(
                "{} of {} investigations, newest first",
                page.returned, page.total
            ),
            to_value(&page)?,
        );
        for row in &page.items {
            answer.links.push(format!(
                "flameox://investigations/{}",
                row.investigation.investigation_id
            ));
        }
        Ok(answer)
    })
}

fn run_get<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: InvestigationRequest = decode(args)?;
        let detail = investigation::get(qc.ws, &req.investigation_id)?;
        let inv = &detail.investigation;
        let mut answer = Answer::new(
            format!(
                "{}: \"{}\", {} hypothesis(es), {} finding(s)",
                inv.investigation_id, inv.question, detail.hypotheses_total, detail.findings_total
            ),
            to_value(&detail)?,
        );
        answer.details.push(format!(
            "next: flameox hypotheses record --investigation-id {} --statement … --prediction … --refuted-if …",
            inv.investigation_id
        ));
        answer
            .links
            .push(format!("flameox://investigations/{}", inv.investigation_id));
        for h in &detail.hypotheses {
            answer
                .links
                .push(format!("flameox://hypotheses/{}", h.hypothesis_id));
        }
        for f in &detail.findings {
            answer
                .links
                .push(format!("flameox://findings/{}", f.finding_id));
        }
        for record in &detail.records {
            match record.split_once(':') {
                Some(("experiment", id)) => {
                    answer.links.push(format!("flameox://experiments/{id}"));
                }
                Some(("run_set", id)) => answer.links.push(format!("flameox://run-sets/{id}")),
                _ => {}
            }
        }
        Ok(answer)
    })
}

fn run_record_hypothesis<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: RecordHypothesisRequest = decode(args)?;
        let h = hypothesis::record(qc.ws, &req)?;
        let summary = format!(
            "hypothesis {} is {} at revision {}",
            h.hypothesis_id,
            h.status.name(),
            h.revision
        );
        let next = format!(
            "next: revise with --hypothesis-id {} --expected-revision {} --status supported|refuted|inconclusive --evidence <run|comparison|analysis>",
            h.hypothesis_id, h.revision
        );
        hypothesis_answer(summary, next, &h)
    })
}

/// A hypothesis as an answer: the line, the next step, and the links to it
/// and its investigation.
fn hypothesis_answer(
    summary: String,
    next: String,
    h: &hypothesis::Hypothesis,
) -> crate::error::Result<Answer> {
    let mut answer = Answer::new(summary, to_value(h)?);
    answer.details.push(next);
    answer
        .links
        .push(format!("flameox://hypotheses/{}", h.hypothesis_id));
    answer
        .links
        .push(format!("flameox://investigations/{}", h.investigation_id));
    Ok(answer)
}
