//! Declaration of `analyze failures`: the imports, captures and trials
//! that did not end well, with their typed reasons.

use serde_json::Value;

use super::schema::input_schema;
use super::{Answer, AnswerFuture, Body, Cell, Group, Operation, col, decode, to_value};
use crate::services::QueryContext;
use crate::services::workspace::failures::{self, FailuresRequest};

pub(super) static OPERATIONS: &[Operation] = &[Operation {
    name: "analyze_failures",
    cli: &["analyze", "failures"],
    title: "Analyze failures",
    description: "Failed or interrupted imports, captures and trials with typed reasons, newest first; paged.",
    group: Group::ReadOnly,
    positional: &[],
    schema: input_schema::<FailuresRequest>,
    run: Body::Query(run_failures),
    rows: "items",
    columns: &[
        col("kind", "kind", Cell::Text),
        col("id", "id", Cell::Id),
        col("code", "code", Cell::Text),
        col("input", "input", Cell::Text),
        col("reason", "reason", Cell::Text),
    ],
    terminal: &[],
}];

fn run_failures<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: FailuresRequest = decode(args)?;
        let found = failures::failures(qc.ws, &req)?;
        let counts: Vec<String> = found
            .by_code
            .iter()
            .map(|(code, n)| format!("{n} {code}"))
            .collect();
        let summary = if found.page.total == 0 {
            "no failures".to_owned()
        } else {
            format!(
                "{} failure(s), newest first: {}",
                found.page.total,
                counts.join(", ")
            )
        };
        let mut answer = Answer::new(summary, to_value(&found)?);
        for f in &found.page.items {
            if let Some(run) = &f.run_id {
                answer.links.push(format!("flameox://runs/{run}"));
            }
        }
        Ok(answer)
    })
}
