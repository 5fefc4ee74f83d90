//! Declarations of the orientation and drill-down operations: threads of
//! a target, a frame's individual slices, and frames by a piece of name.

use super::schema::input_schema;
use super::{Answer, AnswerFuture, Body, Cell, Column, Group, Operation, decode, to_value};
use crate::services::QueryContext;
use crate::services::frame_instances::{self, FindFramesRequest, InstancesRequest};
use crate::services::threads::{self, ThreadsRequest};

pub(super) static OPERATIONS: &[Operation] = &[
    Operation {
        name: "list_threads",
        cli: &["threads"],
        title: "List threads",
        description: "Processes, threads and GPU streams: busy (in traced calls) and waiting time, on-CPU and runnable time (system traces), share of the trace; busiest first; shared names listed.",
        group: Group::ReadOnly,
        positional: &["target"],
        schema: input_schema::<ThreadsRequest>,
        run: Body::Query(run_threads),
        rows: "rows",
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
                header: "% trace",
                field: "on_cpu_pct_of_trace",
                cell: Cell::Percent,
            },
            Column {
                header: "runnable",
                field: "runnable_ns",
                cell: Cell::Duration,
            },
            Column {
                header: "events",
                field: "events",
                cell: Cell::Integer,
            },
            Column {
                header: "samples",
                field: "samples",
                cell: Cell::Integer,
            },
            Column {
                header: "% samples",
                field: "samples_pct_of_scope",
                cell: Cell::Percent,
            },
            Column {
                header: "tid",
                field: "tid",
                cell: Cell::Id,
            },
            Column {
                header: "thread",
                field: "thread_name",
                cell: Cell::Text,
            },
            Column {
                header: "process",
                field: "label",
                cell: Cell::Text,
            },
        ],
    },
    Operation {
        name: "get_frame_instances",
        cli: &["stacks", "instances"],
        title: "Get frame instances",
        description: "A frame's individual slices, longest first (or earliest), with start, duration, thread and args (cut to 300 bytes): from a hotspot to its worst occurrence in one call.",
        group: Group::ReadOnly,
        positional: &["target", "frame"],
        schema: input_schema::<InstancesRequest>,
        run: Body::Query(run_instances),
        rows: "rows",
        terminal: &[],
        columns: &[
            Column {
                header: "duration",
                field: "dur_ns",
                cell: Cell::Duration,
            },
            Column {
                header: "self",
                field: "self_ns",
                cell: Cell::Duration,
            },
            Column {
                header: "start (ns)",
                field: "ts_ns",
                cell: Cell::Integer,
            },
            Column {
                header: "tid",
                field: "tid",
                cell: Cell::Id,
            },
            Column {
                header: "thread",
                field: "thread_name",
                cell: Cell::Text,
            },
            Column {
                header: "args",
                field: "args",
                cell: Cell::Text,
            },
        ],
    },
    Operation {
        name: "find_frames",
        cli: &["stacks", "find"],
        title: "Find frames",
        description: "Frames whose name contains a text (case-insensitive), exact matches first, then by inclusive value; returns the frame keys the drill-downs accept.",
        group: Group::ReadOnly,
        positional: &["target", "text"],
        schema: input_schema::<FindFramesRequest>,
        run: Body::Query(run_find_frames),
        rows: "rows",
        terminal: &[],
        columns: &[
            Column {
                header: "inclusive",
                field: "inclusive_value",
                cell: Cell::Integer,
            },
            Column {
                header: "self",
                field: "self_value",
                cell: Cell::Integer,
            },
            Column {
                header: "metric",
                field: "metric",
                cell: Cell::Text,
            },
            Column {
                header: "function",
                field: "function",
                cell: Cell::Text,
            },
            Column {
                header: "frame",
                field: "frame",
                cell: Cell::Text,
            },
        ],
    },
];

fn run_threads<'a>(qc: &'a QueryContext<'a>, args: serde_json::Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: ThreadsRequest = decode(args)?;
        let r = threads::list_threads(qc, &req).await?;
        let mut summary = format!("{} of {} threads and streams", r.returned, r.total);
        if let Some(top) = r.rows.first() {
            let name = match (&top.thread.thread_name, top.thread.tid) {
                (Some(name), Some(tid)) => format!("{name} (tid {tid})"),
                (Some(name), None) => name.clone(),
                (None, Some(tid)) => format!("tid {tid}"),
                (None, None) => top.thread.label.clone(),
            };
            if let (Some(busy), Some(pct)) =
                (top.thread.busy_ns.filter(|b| *b > 0), top.busy_pct_of_trace)
            {
                let waiting = top.thread.waiting_ns.unwrap_or(0);
                let waited = if waiting > 0 {
                    format!(" ({} of it waiting)", crate::units::duration_ns(waiting))
                } else {
                    String::new()
                };
                summary.push_str(&format!(
                    "; busiest: {name}, in traced calls {} = {pct} % of the trace's span{waited}",
                    crate::units::duration_ns(busy)
                ));
            } else if let (Some(on_cpu), Some(pct)) = (
                top.thread.on_cpu_ns.filter(|b| *b > 0),
                top.on_cpu_pct_of_trace,
            ) {
                let runnable = top
                    .thread
                    .runnable_ns
                    .filter(|w| *w > 0)
                    .map(|w| {
                        format!(
                            ", {} runnable (waiting for a CPU)",
                            crate::units::duration_ns(w)
                        )
                    })
                    .unwrap_or_default();
                summary.push_str(&format!(
                    "; most on CPU: {name}, {} = {pct} % of the trace's span{runnable}",
                    crate::units::duration_ns(on_cpu)
                ));
            } else if top.thread.samples > 0 {
                summary.push_str(&format!(
                    "; most sampled: {name}, {} % of the samples",
                    top.samples_pct_of_scope
                ));
            }
        }
        if !r.shared_names.is_empty() {
            summary.push_str(&format!(
                "; {} thread names are shared by several threads",
                r.shared_names_total
            ));
        }
        Ok(Answer::new(summary, to_value(&r)?).scoped(&r.scope))
    })
}

fn run_instances<'a>(qc: &'a QueryContext<'a>, args: serde_json::Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: InstancesRequest = decode(args)?;
        let r = frame_instances::frame_instances(qc, &req).await?;
        let in_phase = r
            .phase
            .as_ref()
            .map(|p| format!(" in {}", p.name))
            .unwrap_or_default();
        let nested = if r.nested > 0 {
            format!(
                ", {} nested in another {} counted once",
                r.nested, r.frame.function
            )
        } else {
            String::new()
        };
        let summary = format!(
            "{} of {} slices of {}{in_phase} (longest {}, {} in all{nested})",
            r.returned,
            r.total,
            r.frame.function,
            crate::units::duration_ns(r.max_dur_ns),
            crate::units::duration_ns(r.total_dur_ns)
        );
        Ok(Answer::new(summary, to_value(&r)?).scoped(&r.scope))
    })
}

fn run_find_frames<'a>(qc: &'a QueryContext<'a>, args: serde_json::Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: FindFramesRequest = decode(args)?;
        let r = frame_instances::find_frames(qc, &req).await?;
        let summary = format!(
            "{} of {} frames contain {:?}{}",
            r.returned,
            r.total,
            req.text,
            if r.exact_match { " (one exactly)" } else { "" }
        );
        Ok(Answer::new(summary, to_value(&r)?).scoped(&r.scope))
    })
}
