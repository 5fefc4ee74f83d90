//! Declaration of the evidence report: investigations and findings with
//! their numbers and the commands that reproduce them, as Markdown or JSON.

use serde_json::Value;

use super::schema::input_schema;
use super::{
    Answer, AnswerFuture, Body, FlagValue, Group, Operation, TerminalFlag, decode, to_value,
};
use crate::services::QueryContext;
use crate::services::investigations::report::{self, SummarizeRequest};

pub(super) static OPERATIONS: &[Operation] = &[Operation {
    name: "summarize_evidence",
    cli: &["evidence", "summarize"],
    title: "Summarize evidence",
    description: "Report of investigations and findings: hypotheses and their fate, findings with numbers, what each reference holds, the command reproducing it.",
    group: Group::ReadOnly,
    positional: &["targets"],
    schema: input_schema::<SummarizeRequest>,
    run: Body::Query(run_summarize),
    rows: "",
    columns: &[],
    terminal: &[TerminalFlag {
        name: "flamegraphs",
        value_name: "DIR",
        help: "Also write an SVG flame graph of each finding's run or artifact to DIR/<finding-id>.svg.",
        value: FlagValue::Path,
    }],
}];

fn run_summarize<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: SummarizeRequest = decode(args)?;
        let report = report::summarize(qc.ws, &req)?;
        let mut answer = Answer::new(
            format!(
                "report of {} investigation(s) and {} of {} finding(s)",
                report.investigations.len(),
                report.findings.len(),
                report.findings_total
            ),
            to_value(&report)?,
        );
        for i in &report.investigations {
            answer
                .links
                .push(format!("flameox://investigations/{}", i.investigation_id));
        }
        for f in &report.findings {
            answer
                .links
                .push(format!("flameox://findings/{}", f.finding_id));
        }
        Ok(answer)
    })
}
