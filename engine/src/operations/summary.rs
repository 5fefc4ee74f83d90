//! Declaration of `summarize_target` (`flameox analyze summary`): the first
//! call on a new trace, and how a person reads its answer.

use super::schema::input_schema;
use super::{Answer, AnswerFuture, Body, Cell, Column, Group, Operation, decode, to_value};
use crate::services::QueryContext;
use crate::services::summary::{self, HotThread, SummaryRequest, SummaryResult};
use crate::units::{duration_ns, metric_words as words};

pub(super) static OPERATIONS: &[Operation] = &[Operation {
    name: "summarize_target",
    cli: &["analyze", "summary"],
    title: "Summarize target",
    description: "Start here on a new trace: a headline that leads to the cause, busiest threads and their top frames, GPU busy/idle by why, longest device gaps, steps, caveats, next calls.",
    group: Group::ReadOnly,
    positional: &["target"],
    schema: input_schema::<SummaryRequest>,
    run: Body::Query(run_summary),
    rows: "threads",
    terminal: &[],
    columns: &[
        Column {
            header: "busy",
            field: "busy_ns",
            cell: Cell::Duration,
        },
        Column {
            header: "% trace",
            field: "busy_pct_of_trace",
            cell: Cell::Percent,
        },
        Column {
            header: "waiting",
            field: "waiting_ns",
            cell: Cell::Duration,
        },
        Column {
            header: "on CPU",
            field: "on_cpu_ns",
            cell: Cell::Duration,
        },
        Column {
            header: "runnable",
            field: "runnable_ns",
            cell: Cell::Duration,
        },
        Column {
            header: "samples",
            field: "samples",
            cell: Cell::Integer,
        },
        Column {
            header: "tid",
            field: "tid",
            cell: Cell::Id,
        },
        Column {
            header: "thread",
            field: "thread",
            cell: Cell::Text,
        },
        Column {
            header: "process",
            field: "label",
            cell: Cell::Text,
        },
    ],
}];

fn run_summary<'a>(qc: &'a QueryContext<'a>, args: serde_json::Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: SummaryRequest = decode(args)?;
        let r = summary::summarize(qc, &req).await?;
        Ok(Answer {
            summary: headline(&r),
            details: details(&r),
            result: to_value(&r)?,
            ..Answer::default()
        }
        .scoped(&r.scope))
    })
}

/// One line: the service's headline.
fn headline(r: &SummaryResult) -> String {
    r.headline.clone()
}

/// A hot thread as a person names it: its name, else its tid.
fn who(t: &HotThread) -> String {
    match (&t.thread, t.tid) {
        (Some(name), _) => name.clone(),
        (None, Some(tid)) => format!("tid {tid} ({})", t.label),
        (None, None) => t.label.clone(),
    }
}

/// The rest of the answer, line by line, for a person.
fn details(r: &SummaryResult) -> Vec<String> {
    let mut out = Vec::new();
    for t in &r.hot_threads {
        let who = match (&t.thread, t.tid) {
            (Some(name), Some(tid)) if name.contains(&tid.to_string()) => name.clone(),
            (Some(name), Some(tid)) => format!("{name} (tid {tid}) in {}", t.label),
            _ => who(t),
        };
        out.push(format!("top frames of {who} by self {}:", words(&t.metric)));
        for f in &t.frames {
            let value = match t.unit.as_str() {
                "ns" => duration_ns(f.self_value),
                "count" => format!("{} samples", f.self_value),
                unit => format!("{} {unit}", f.self_value),
            };
            let role = f
                .role
                .as_deref()
                .map(|r| format!("  ({r})"))
                .unwrap_or_default();
            out.push(format!(
                "  {:>10}  {:>5.1} %  {}{role}",
                value, f.self_pct_of_thread, f.function
            ));
        }
        if !t.other_metrics.is_empty() {
            let others: Vec<String> = t.other_metrics.iter().map(|m| words(m)).collect();
            out.push(format!("  also recorded: {}", others.join(", ")));
        }
    }
    if let Some(g) = &r.gpu {
        for d in &g.devices {
            out.push(crate::services::summary_headline::device_words(d));
        }
        out.push(format!(
            "device gaps of at least {}: {} in all, {}; longest:",
            duration_ns(g.min_gap_ns),
            g.gaps,
            duration_ns(g.gaps_total_ns)
        ));
        for gap in &g.longest {
            out.push(format!(
                "  {:>10} {} before {}: {}",
                duration_ns(gap.duration_ns),
                gap.class.name(),
                gap.next_op,
                gap.cause
            ));
        }
    }
    if let Some(s) = &r.pytorch_steps {
        out.push(format!(
            "PyTorch: {} profiler steps, median {}, longest {} ({})",
            s.steps,
            duration_ns(s.median_step_ns),
            s.longest_step.as_deref().unwrap_or("?"),
            duration_ns(s.longest_step_ns)
        ));
    }
    for name in &r.shared_thread_names {
        out.push(format!("shared thread name: {name}"));
    }
    for c in &r.caveats {
        out.push(format!("caveat: {c}"));
    }
    out
}
