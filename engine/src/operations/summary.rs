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
    description: "Start here on a new trace: inputs, span, busiest threads with their top frames, GPU idle gaps with the launching thread, PyTorch steps, import caveats, and the next calls to make.",
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
            header: "% span",
            field: "busy_pct_of_span",
            cell: Cell::Percent,
        },
        Column {
            header: "samples",
            field: "samples",
            cell: Cell::Integer,
        },
        Column {
            header: "tid",
            field: "tid",
            cell: Cell::Integer,
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

/// One line: what the target is and where its time went.
fn headline(r: &SummaryResult) -> String {
    let what = match r.inputs.as_slice() {
        [one] => format!(
            "{} ({}{})",
            one.name,
            one.kind,
            one.producer
                .as_deref()
                .map(|p| format!(", {p}"))
                .unwrap_or_default()
        ),
        many => format!("{} inputs", many.len()),
    };
    let span = if r.duration_ns > 0 {
        format!("{} span", duration_ns(r.duration_ns))
    } else {
        "no timeline (aggregated stacks)".to_owned()
    };
    let mut line = format!("{what}: {span}, {} threads and streams", r.threads_total);
    if let Some(t) = r.hot_threads.first()
        && let Some(f) = t.frames.first()
    {
        line.push_str(&format!(
            "; top frame {} ({:.1} % of {}'s {})",
            f.function,
            f.self_pct_of_thread,
            who(t),
            words(&t.metric)
        ));
    }
    if let Some(g) = &r.gpu {
        line.push_str(&format!(
            "; GPU idle gaps ≥ {}: {} totalling {}",
            duration_ns(g.min_gap_ns),
            g.gaps,
            duration_ns(g.gaps_total_ns)
        ));
    }
    line
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
            out.push(format!(
                "  {:>10}  {:>5.1} %  {}",
                value, f.self_pct_of_thread, f.function
            ));
        }
        if !t.other_metrics.is_empty() {
            let others: Vec<String> = t.other_metrics.iter().map(|m| words(m)).collect();
            out.push(format!("  also recorded: {}", others.join(", ")));
        }
    }
    if let Some(g) = &r.gpu {
        out.push(format!(
            "GPU: {} idle gaps of at least {} on its streams, {} in all; longest:",
            g.gaps,
            duration_ns(g.min_gap_ns),
            duration_ns(g.gaps_total_ns)
        ));
        for gap in &g.longest {
            let cause = match (&gap.launched_by, &gap.host_top) {
                (Some(l), Some(top)) => format!(
                    "next launched by {l}, which was busy {:.0} % of the gap, most in {top}",
                    gap.host_busy_share * 100.0
                ),
                (Some(l), None) => {
                    format!("next launched by {l}, which recorded nothing during the gap")
                }
                (None, Some(top)) => format!("host mostly in {top} (no launch correlation)"),
                (None, None) => "no host activity recorded".into(),
            };
            out.push(format!(
                "  {:>10} before {}: {cause}",
                duration_ns(gap.duration_ns),
                gap.next_activity
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
