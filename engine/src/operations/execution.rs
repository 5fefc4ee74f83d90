//! Declaration of `analyze execution`: a run's tests, coverage, import
//! times, configuration and SDK observations, and their changes against a
//! base run.

use serde_json::Value;

use super::schema::input_schema;
use super::{Answer, AnswerFuture, Body, Group, Operation, decode, to_value};
use crate::services::QueryContext;
use crate::services::query::execution::{self, ExecutionRequest};

pub(super) static OPERATIONS: &[Operation] = &[Operation {
    name: "analyze_execution",
    cli: &["analyze", "execution"],
    title: "Analyze execution",
    description: "A run's tests (JUnit XML), coverage, import times, configuration and OpenTelemetry spans and metrics (OTLP JSON); with compare, what changed against a base run.",
    group: Group::ReadOnly,
    positional: &["target"],
    schema: input_schema::<ExecutionRequest>,
    run: Body::Query(run_execution),
    rows: "",
    columns: &[],
    terminal: &[],
}];

fn run_execution<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: ExecutionRequest = decode(args)?;
        let found = execution::analyze_execution(qc, &req).await?;
        let mut parts = Vec::new();
        if let Some(t) = &found.tests {
            let failing: usize = ["failed", "error"]
                .iter()
                .filter_map(|o| t.by_outcome.get(*o))
                .sum();
            parts.push(format!("{} tests, {failing} failing", t.tests));
        }
        if let Some(c) = &found.coverage {
            parts.push(match c.percent_covered {
                Some(p) => format!("{p:.1} % covered over {} files", c.files),
                None => format!("coverage of {} files", c.files),
            });
        }
        if let Some(i) = &found.imports {
            parts.push(format!("imports {:.1} ms", i.total_ns as f64 / 1e6));
        }
        if let Some(w) = found.resources.as_ref().and_then(|r| r.wall_time_ns) {
            parts.push(format!("wall {:.3} s", w / 1e9));
        }
        if let Some(c) = &found.configuration {
            let mut text = format!("captured on {} CPUs", c.host.logical_cpus);
            if let Some(i) = &c.interpreter {
                text += &format!(", {i}");
            }
            if let Some(g) = &c.git {
                text += &format!(
                    ", commit {}{}",
                    &g.commit[..g.commit.len().min(8)],
                    if g.dirty { " (dirty)" } else { "" }
                );
            }
            parts.push(text);
        }
        if let Some(o) = &found.sdk_observations {
            let mut text = format!("{} SDK spans", o.spans);
            if let Some(top) = o.slowest_spans.first() {
                text += &format!(
                    " (longest in total: {} {:.1} ms)",
                    top.name,
                    top.total_ns as f64 / 1e6
                );
            }
            text += &format!(", {} metric series", o.metric_series);
            parts.push(text);
        }
        if let Some(d) = &found.compare {
            let mut text = format!(
                "vs {}: {} newly failing, {} fixed",
                &d.base_run[..d.base_run.len().min(8)],
                d.newly_failing.len(),
                d.fixed.len()
            );
            if let Some(w) = d.resources.iter().find(|r| r.name == "wall_time") {
                text += &format!(", wall {:.3} s → {:.3} s", w.base / 1e9, w.target / 1e9);
                if let Some(ratio) = w.ratio {
                    text += &format!(" (×{ratio:.2})");
                }
            }
            if d.configuration_changes_total > 0 {
                let fields: Vec<&str> = d
                    .configuration_changes
                    .iter()
                    .take(3)
                    .map(|c| c.field.as_str())
                    .collect();
                text += &format!(
                    ", {} configuration changes ({})",
                    d.configuration_changes_total,
                    fields.join(", ")
                );
            }
            if let Some(top) = d.span_changes.first() {
                text += &format!(
                    ", span {} {:+.1} ms in total",
                    top.name,
                    top.delta_total_ns as f64 / 1e6
                );
            }
            parts.push(text);
        }
        let summary = if parts.is_empty() {
            format!(
                "run {} holds no test, coverage, import-time, configuration or OTLP report",
                found.run_id
            )
        } else {
            parts.join("; ")
        };
        let run_id = found.run_id.clone();
        let mut answer = Answer::new(summary, to_value(&found)?);
        answer.links.push(format!("flameox://runs/{run_id}"));
        Ok(answer)
    })
}
