//! Declarations of the profile analyses: hotspots and their drill-downs
//! (callers, callees, example stacks), one-to-one hotspot deltas, trace
//! windows and benchmark measurements.

use serde_json::Value;

use super::schema::input_schema;
use super::{
    Answer, AnswerFuture, Body, Cell, FlagValue, Group, Operation, TerminalFlag, col, decode,
    to_value,
};
use crate::services::QueryContext;
use crate::services::analyze::{
    self, FrameRequest, HotspotsRequest, StackExamplesRequest, WindowRequest,
};
use crate::services::measurements::{self, MeasurementsRequest};
use crate::services::views::{self, FrameDeltaRequest};
use crate::units::{duration_ns, metric_words};
use flameox_recipes::drilldown::Direction;

const FLAMEGRAPH: TerminalFlag = TerminalFlag {
    name: "flamegraph",
    value_name: "FILE",
    help: "Also write an SVG flame graph of the target to FILE.",
    value: FlagValue::Path,
};

pub(super) static OPERATIONS: &[Operation] = &[
    Operation {
        name: "analyze_hotspots",
        cli: &["analyze", "hotspots"],
        title: "Analyze hotspots",
        description: "Top frames by self time (or another metric) of a run or artifact, with inclusive time, % of the scope's summed self, counts and a frame key for the drill-downs.",
        group: Group::ReadOnly,
        positional: &["target"],
        schema: input_schema::<HotspotsRequest>,
        run: Body::Query(run_hotspots),
        rows: "rows",
        columns: &[],
        terminal: &[
            TerminalFlag {
                name: "folded",
                value_name: "FILE",
                help: "Also write folded stacks (`a;b;c weight` lines) to FILE.",
                value: FlagValue::Path,
            },
            FLAMEGRAPH,
        ],
    },
    Operation {
        name: "get_frame_callers",
        cli: &["stacks", "callers"],
        title: "Frame callers",
        description: "Frames that call a frame, heaviest edge first, paged.",
        group: Group::ReadOnly,
        positional: &["target", "frame"],
        schema: input_schema::<FrameRequest>,
        run: Body::Query(run_callers),
        rows: "rows",
        columns: NEIGHBOR_COLUMNS,
        terminal: &[],
    },
    Operation {
        name: "get_frame_callees",
        cli: &["stacks", "callees"],
        title: "Frame callees",
        description: "Frames a frame calls, heaviest edge first, paged.",
        group: Group::ReadOnly,
        positional: &["target", "frame"],
        schema: input_schema::<FrameRequest>,
        run: Body::Query(run_callees),
        rows: "rows",
        columns: NEIGHBOR_COLUMNS,
        terminal: &[],
    },
    Operation {
        name: "get_stack_examples",
        cli: &["stacks", "examples"],
        title: "Stack examples",
        description: "Full call stacks through a frame, heaviest first.",
        group: Group::ReadOnly,
        positional: &["target", "frame"],
        schema: input_schema::<StackExamplesRequest>,
        run: Body::Query(run_examples),
        rows: "stacks",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "compare_hotspots",
        cli: &["analyze", "compare-hotspots"],
        title: "Compare hotspots",
        description: "Per-frame self and inclusive deltas of target vs base (runs or artifacts) by logical key, largest first. One-to-one: no noise estimate (compare_run_sets has one).",
        group: Group::ReadOnly,
        positional: &["target", "base"],
        schema: input_schema::<FrameDeltaRequest>,
        run: Body::Query(run_frame_deltas),
        rows: "rows",
        columns: &[],
        terminal: &[TerminalFlag {
            name: "flamegraph",
            value_name: "FILE",
            help: "Also write a differential SVG flame graph (target against base) to FILE.",
            value: FlagValue::Path,
        }],
    },
    Operation {
        name: "get_trace_window",
        cli: &["trace", "window"],
        title: "Trace window",
        description: "Events overlapping [start_ns, end_ns) of one artifact in time order, paged. relative: offsets from the first event.",
        group: Group::ReadOnly,
        positional: &["target"],
        schema: input_schema::<WindowRequest>,
        run: Body::Query(run_window),
        rows: "events",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "query_measurements",
        cli: &["measurements", "query"],
        title: "Query measurements",
        description: "Benchmark samples and run resources (name, value, unit, variant, parameters), paged. Warmups only with include_warmups.",
        group: Group::ReadOnly,
        positional: &["target"],
        schema: input_schema::<MeasurementsRequest>,
        run: Body::Query(run_measurements),
        rows: "rows",
        columns: &[],
        terminal: &[],
    },
];

const NEIGHBOR_COLUMNS: &[super::Column] = &[
    col("weight", "weight", Cell::Measured),
    col("count", "count", Cell::Integer),
    col("frame", "frame", Cell::Frame),
    col("function", "function", Cell::Function),
    col("location", "function", Cell::Location),
];

/// `run 0193…` or the artifact as asked.
fn named(scope: &crate::services::ResolvedScope) -> String {
    match &scope.run_id {
        Some(run) => format!("run {}", &run[..run.len().min(8)]),
        None => scope.requested.clone(),
    }
}

fn run_hotspots<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: HotspotsRequest = decode(args)?;
        let r = analyze::analyze_hotspots(qc, &req).await?;
        let words = metric_words(&r.metric);
        let in_phase = r
            .phase
            .as_ref()
            .map(|p| format!(" in {}", p.name))
            .unwrap_or_default();
        let mut summary = format!(
            "{} of {} frames of {}{in_phase} by self {words}",
            r.returned,
            r.total,
            named(&r.scope)
        );
        if let Some(top) = r.rows.first() {
            summary.push_str(&format!(
                "; top: {} {:.1} % of the self {words} of every thread in scope summed",
                super::summary_name(&top.function),
                top.self_pct
            ));
        }
        Ok(Answer::new(summary, to_value(&r)?).scoped(&r.scope))
    })
}

fn run_callers<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    neighbors(qc, args, Direction::Callers)
}

fn run_callees<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    neighbors(qc, args, Direction::Callees)
}

fn neighbors<'a>(qc: &'a QueryContext<'a>, args: Value, direction: Direction) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: FrameRequest = decode(args)?;
        let r = analyze::frame_neighbors(qc, &req, direction).await?;
        let word = match direction {
            Direction::Callers => "callers",
            Direction::Callees => "callees",
        };
        let summary = format!(
            "{} of {} {word} of {}{} by {}",
            r.returned,
            r.total,
            super::summary_name(&r.frame.function),
            r.time.words(),
            metric_words(&r.metric)
        );
        Ok(Answer::new(summary, to_value(&r)?).scoped(&r.scope))
    })
}

fn run_examples<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: StackExamplesRequest = decode(args)?;
        let r = analyze::stack_examples(qc, &req.into()).await?;
        let summary = format!(
            "{} of {} stacks through {}{} by {}",
            r.returned,
            r.total,
            super::summary_name(&r.frame.function),
            r.time.words(),
            metric_words(&r.metric)
        );
        Ok(Answer::new(summary, to_value(&r)?).scoped(&r.scope))
    })
}

fn run_frame_deltas<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: FrameDeltaRequest = decode(args)?;
        let result = views::frame_deltas(qc, &req).await?;
        let r = &result.answer;
        let w = &r.whole;
        let value = |v: i64| {
            if r.unit == "ns" {
                duration_ns(v)
            } else {
                format!("{v} {}", r.unit)
            }
        };
        let ratio = w
            .ratio
            .map(|x| format!(" ({:+.1} %)", (x - 1.0) * 100.0))
            .unwrap_or_default();
        let mut summary = format!(
            "{} against {} by {}: whole {} → {}{ratio}; {} of {} frames by |Δ self|, matched by {} ({:.0} % of the base's and {:.0} % of the target's self in frames on both sides)",
            named(&result.scope),
            named(&result.base_scope),
            metric_words(&r.metric),
            value(w.base_total_self),
            value(w.target_total_self),
            result.returned,
            r.total_frames,
            r.matched_by.replace('_', " "),
            r.matched_share_of_base * 100.0,
            r.matched_share_of_target * 100.0,
        );
        if let Some(warning) = &r.warning {
            summary.push_str(&format!("; warning: {warning}"));
        }
        Ok(Answer::new(summary, to_value(&result)?)
            .scoped(&result.scope)
            .scoped(&result.base_scope))
    })
}

fn run_window<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: WindowRequest = decode(args)?;
        let r = analyze::trace_window(qc, &req).await?;
        let summary = format!(
            "{} of {} events in a {} window of {}",
            r.returned,
            r.total,
            duration_ns(r.end_ns.saturating_sub(r.start_ns)),
            &r.artifact_id[..r.artifact_id.len().min(15)]
        );
        let mut answer = Answer::new(summary, to_value(&r)?);
        answer
            .links
            .push(format!("flameox://artifacts/{}", r.artifact_id));
        Ok(answer)
    })
}

fn run_measurements<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: MeasurementsRequest = decode(args)?;
        let r = measurements::query_measurements(qc, &req).await?;
        let summary = format!("{} of {} measurements", r.returned, r.total);
        let answer = Answer::new(summary, to_value(&r)?);
        Ok(match &r.scope {
            Some(scope) => answer.scoped(scope),
            None => answer,
        })
    })
}
