//! The narrower call a `QUERY_BUDGET_EXCEEDED` error hands back.
//!
//! `run_budgeted` knows the budget and what was used but not which call it
//! serves; the services do. Each query service passes its request through
//! [`narrow`], which leaves every other error alone and gives a budget
//! overrun a concrete recovery: a quarter of the window (hotspots, trace
//! window, windowed drill-downs; a tenth of the trace when no window was given), or one artifact
//! when the target was a run of several. The narrower call is not proven to
//! fit: it reads strictly less evidence than the failed one.

use serde_json::{Value, json};

use crate::error::{ErrorCode, FlameoxError};
use crate::services::QueryContext;
use crate::services::analyze::{HotspotsRequest, WindowRequest};

/// A call that reads less than the one that overran its budget.
pub(crate) enum Narrowing<'a> {
    Hotspots(&'a HotspotsRequest),
    Window(&'a WindowRequest),
    /// A recipe over a whole run or artifact: narrows to one artifact.
    Scope {
        /// The catalogued operation.
        operation: &'static str,
        target: &'a str,
        /// The call's other arguments, kept as they were.
        keep: Value,
        /// What else could narrow it, as advice (e.g. `phase`).
        advice: Option<&'static str>,
    },
}

impl<'a> Narrowing<'a> {
    /// A whole-scope recipe whose only other argument is `limit`.
    pub(crate) fn whole(operation: &'static str, target: &'a str, limit: Option<usize>) -> Self {
        Narrowing::Scope {
            operation,
            target,
            keep: json!({ "limit": limit }),
            advice: None,
        }
    }
}

/// Adds the narrower call to a budget overrun; other errors pass through.
pub(crate) fn narrow(qc: &QueryContext<'_>, err: FlameoxError, how: Narrowing<'_>) -> FlameoxError {
    if err.code != ErrorCode::QueryBudgetExceeded || err.recovery.is_some() {
        return err;
    }
    match how {
        Narrowing::Hotspots(req) => narrow_hotspots(qc, err, req),
        Narrowing::Window(req) => narrow_window(err, req),
        Narrowing::Scope {
            operation,
            target,
            mut keep,
            advice,
        } => {
            let err = match advice {
                Some(text) => err.remedy(text),
                None => err,
            };
            // A call with a window narrows to its first quarter.
            if let Some(args) = keep.as_object_mut()
                && let (Some(a), Some(b)) = (
                    args.get("start_ns").and_then(Value::as_i64),
                    args.get("end_ns").and_then(Value::as_i64),
                )
            {
                let (start, end) = quarter(a, b);
                args.retain(|_, v| !v.is_null());
                args.insert("target".into(), Value::from(target));
                args.insert("start_ns".into(), Value::from(start));
                args.insert("end_ns".into(), Value::from(end));
                return err.recover(operation, keep);
            }
            match (first_of_several(qc, target), keep.as_object_mut()) {
                (Some(artifact), Some(args)) => {
                    args.retain(|_, v| !v.is_null());
                    args.insert("target".into(), Value::from(artifact.clone()));
                    err.recover(operation, keep)
                }
                _ => err,
            }
        }
    }
}

/// The first artifact of a run that has several (None otherwise).
fn first_of_several(qc: &QueryContext<'_>, target: &str) -> Option<String> {
    if target.starts_with("sha256:") {
        return None;
    }
    let run = crate::runs::read_run(qc.ws, target).ok()?;
    match run.artifacts.as_slice() {
        [first, _, ..] => Some(first.artifact_id.clone()),
        _ => None,
    }
}

/// The first quarter of `[start, end)` (at least 1 ns).
fn quarter(start: i64, end: i64) -> (i64, i64) {
    let width = end.saturating_sub(start).max(4) / 4;
    (start, start.saturating_add(width))
}

fn narrow_hotspots(
    qc: &QueryContext<'_>,
    err: FlameoxError,
    req: &HotspotsRequest,
) -> FlameoxError {
    let window = match req.window().ok().flatten() {
        Some((a, b)) => Some(quarter(a, b)),
        None => trace_span(qc, &req.target).map(|(first, last)| {
            let width = last.saturating_sub(first).max(10) / 10;
            (first, first.saturating_add(width))
        }),
    };
    let Some((start, end)) = window else {
        return err.remedy("give a thread or a process to read one thread's evidence");
    };
    let mut args = json!({ "target": req.target, "start_ns": start, "end_ns": end });
    for (field, value) in [
        ("thread", &req.thread),
        ("process", &req.process),
        ("metric", &req.metric),
    ] {
        if let Some(v) = value {
            args[field] = Value::from(v.clone());
        }
    }
    err.recover("analyze_hotspots", args)
}

fn narrow_window(err: FlameoxError, req: &WindowRequest) -> FlameoxError {
    let (start, end) = quarter(req.start_ns, req.end_ns);
    let mut args = json!({ "target": req.target, "start_ns": start, "end_ns": end });
    if req.relative {
        args["relative"] = Value::Bool(true);
    }
    if let Some(kind) = &req.kind {
        args["kind"] = Value::from(kind.clone());
    }
    if let Some(name) = &req.name {
        args["name"] = Value::from(name.clone());
    }
    if let Some(track) = req.track_id {
        args["track_id"] = Value::from(track);
    }
    err.recover("get_trace_window", args)
}

/// First event start and last event end over the target's artifacts.
fn trace_span(qc: &QueryContext<'_>, target: &str) -> Option<(i64, i64)> {
    let session = qc.session(None).ok()?;
    let scope = crate::services::resolve_scope(qc.ws, &session.snapshot, target).ok()?;
    scope
        .artifact_ids
        .iter()
        .flat_map(|id| session.snapshot.generations_for(id))
        .filter_map(|g| g.summary.time_span_ns)
        .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quarter_of_a_window_starts_where_it_did_and_is_never_empty() {
        assert_eq!(quarter(100, 500), (100, 200));
        assert_eq!(quarter(7, 8), (7, 8));
    }

    #[test]
    fn trace_window_overruns_name_a_quarter_of_the_window() {
        let req = WindowRequest {
            target: "sha256:ab".into(),
            start_ns: 0,
            end_ns: 1000,
            kind: Some("kernel".into()),
            relative: true,
            ..Default::default()
        };
        let err = narrow_window(FlameoxError::new(ErrorCode::QueryBudgetExceeded, "x"), &req);
        let recovery = err.recovery.clone().expect("a narrower call");
        assert_eq!(recovery.next_tool, "get_trace_window");
        assert_eq!(recovery.next_arguments["end_ns"], 250);
        assert_eq!(recovery.next_arguments["relative"], true);
        assert_eq!(recovery.next_arguments["kind"], "kernel");
        // The engine names the operation; each transport renders the step.
        assert!(recovery.next_command.is_empty());
    }
}
