//! Declarations of the finding operations: claims at a stated evidence
//! level whose references are checked to exist and to support the level.

use serde_json::Value;

use super::schema::input_schema;
use super::{Answer, AnswerFuture, Body, Cell, Group, Operation, col, decode, to_value};
use crate::services::QueryContext;
use crate::services::investigations::finding::{
    self, Finding, FindingRequest, ListFindingsRequest, RecordFindingRequest,
};
use crate::services::investigations::references::{check_in_evidence, checked_references};

pub(super) static OPERATIONS: &[Operation] = &[
    Operation {
        name: "record_finding",
        cli: &["findings", "record"],
        title: "Record finding",
        description: "New finding (investigation_id, claim, level, references, numbers) or a revision (finding_id, expected_revision); references must support the level.",
        group: Group::Additive,
        positional: &[],
        schema: input_schema::<RecordFindingRequest>,
        run: Body::Query(run_record),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "list_findings",
        cli: &["findings", "list"],
        title: "List findings",
        description: "Findings, newest first; filter by investigation or level; paged.",
        group: Group::ReadOnly,
        positional: &[],
        schema: input_schema::<ListFindingsRequest>,
        run: Body::Query(run_list),
        rows: "items",
        columns: &[
            col("finding", "finding_id", Cell::Id),
            col("level", "level", Cell::Text),
            col("claim", "claim", Cell::Text),
            col("revision", "revision", Cell::Integer),
        ],
        terminal: &[],
    },
    Operation {
        name: "get_finding",
        cli: &["findings", "show"],
        title: "Get finding",
        description: "One finding: claim, level, numbers, references, revision.",
        group: Group::ReadOnly,
        positional: &["finding_id"],
        schema: input_schema::<FindingRequest>,
        run: Body::Query(run_get),
        rows: "",
        columns: &[],
        terminal: &[],
    },
];

fn linked(summary: String, f: &Finding) -> crate::error::Result<Answer> {
    let mut answer = Answer::new(summary, to_value(f)?);
    answer
        .links
        .push(format!("flameox://findings/{}", f.finding_id));
    answer
        .links
        .push(format!("flameox://investigations/{}", f.investigation_id));
    Ok(answer)
}

fn run_record<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: RecordFindingRequest = decode(args)?;
        // Frames are looked up in the evidence before anything is written.
        if let Some(references) = &req.references {
            check_in_evidence(qc, &checked_references(qc.ws, references)?).await?;
        }
        let f = finding::record(qc.ws, &req)?;
        let mut answer = linked(
            format!(
                "finding {} ({}) at revision {}",
                f.finding_id,
                f.level.name(),
                f.revision
            ),
            &f,
        )?;
        answer.details.push(format!(
            "next: flameox investigations show {}",
            f.investigation_id
        ));
        Ok(answer)
    })
}

fn run_list<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: ListFindingsRequest = decode(args)?;
        let page = finding::list(qc.ws, &req)?;
        let mut answer = Answer::new(
            format!("{} of {} findings, newest first", page.returned, page.total),
            to_value(&page)?,
        );
        for f in &page.items {
            answer
                .links
                .push(format!("flameox://findings/{}", f.finding_id));
        }
        Ok(answer)
    })
}

fn run_get<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: FindingRequest = decode(args)?;
        let f = finding::get(qc.ws, &req.finding_id)?;
        linked(
            format!(
                "{} ({}{}): {}",
                f.finding_id,
                f.level.name(),
                if f.retracted { ", retracted" } else { "" },
                f.claim
            ),
            &f,
        )
    })
}
