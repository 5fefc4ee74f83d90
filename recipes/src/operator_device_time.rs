//! Device time per PyTorch operator, self and inclusive, by where each
//! launch call sits on its thread: a launch (runtime or driver call, graph
//! launch) nested inside operators gives the device time of the activity
//! it launched (same correlation id) to the innermost operator as *self*
//! and to every distinct enclosing operator as *inclusive* — so an
//! `aten::linear` is credited with the `addmm` kernels its child launched,
//! and a recursion counts once.
//!
//! Nesting, not the `External id` link: some profiler versions write a
//! launch's own correlation id as its external id, which matches no
//! operator, and every operator then read 0 device time. Per track, the
//! operators and launches are swept in time order with a stack of open
//! operators (operators nest on their thread), so only those two kinds of
//! rows are held, not the trace.

use std::collections::HashMap;

use datafusion::arrow::array::Array;
use datafusion::logical_expr::{Expr, col, lit};
use datafusion::prelude::SessionContext;

use crate::accelerator::device_activity_rows;
use crate::common::{ArtifactScope, RecipeResult, column, table, utf8};
use crate::device_pass::{Interner, for_each_batch, ints};

/// Device time credited to one operator name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OperatorDevice {
    /// Launched while it was the innermost operator.
    pub self_ns: i64,
    pub self_ops: i64,
    /// Launched inside it (by it or an operator it called).
    pub inclusive_ns: i64,
}

/// One operator or launch row of a track.
#[derive(Debug, Clone, Copy)]
struct Row {
    artifact: u32,
    track: i64,
    ts: i64,
    end: i64,
    /// Operator name id, or None for a launch.
    op: Option<u32>,
    correlation: Option<i64>,
}

/// Device time by operator name over `scope`; `operator` selects the
/// operator rows.
pub async fn device_time_by_operator(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    operator: Expr,
) -> RecipeResult<HashMap<String, OperatorDevice>> {
    let mut strings = Interner::default();
    // Device time and activity count per (artifact, correlation).
    let device = table(ctx, "trace_events")
        .await?
        .filter(
            scope
                .filter()
                .and(device_activity_rows())
                .and(col("correlation_id").is_not_null())
                .and(col("dur_ns").gt_eq(lit(0i64))),
        )?
        .select(vec![
            col("artifact_id"),
            col("correlation_id"),
            col("dur_ns"),
        ])?;
    let mut by_correlation: HashMap<(u32, i64), (i64, i64)> = HashMap::new();
    for_each_batch(device, |batch| {
        let artifact = strings.column(column(batch, "artifact_id")?)?;
        let corr = ints(column(batch, "correlation_id")?)?;
        let dur = ints(column(batch, "dur_ns")?)?;
        for i in 0..batch.num_rows() {
            if let (Some(a), Some(c)) = (artifact[i], corr[i]) {
                let slot = by_correlation.entry((a, c)).or_default();
                slot.0 += dur[i].unwrap_or(0);
                slot.1 += 1;
            }
        }
        Ok(())
    })
    .await?;
    if by_correlation.is_empty() {
        return Ok(HashMap::new());
    }
    let launch = utf8("kind")
        .in_list(
            vec![lit("runtime_api"), lit("driver_api"), lit("graph_launch")],
            false,
        )
        .and(col("stream").is_null())
        .and(col("correlation_id").is_not_null());
    let host = table(ctx, "trace_events")
        .await?
        .filter(
            scope
                .filter()
                .and(col("dur_ns").gt_eq(lit(0i64)))
                .and(operator.clone().or(launch)),
        )?
        .select(vec![
            col("artifact_id"),
            col("track_id"),
            col("ts_ns"),
            col("dur_ns"),
            col("name"),
            operator.alias("is_op"),
            col("correlation_id"),
        ])?;
    let mut rows: Vec<Row> = Vec::new();
    for_each_batch(host, |batch| {
        let artifact = strings.column(column(batch, "artifact_id")?)?;
        let name = strings.column(column(batch, "name")?)?;
        let track = ints(column(batch, "track_id")?)?;
        let ts = ints(column(batch, "ts_ns")?)?;
        let dur = ints(column(batch, "dur_ns")?)?;
        let corr = ints(column(batch, "correlation_id")?)?;
        let is_op = column(batch, "is_op")?;
        let is_op = is_op
            .as_any()
            .downcast_ref::<datafusion::arrow::array::BooleanArray>();
        for i in 0..batch.num_rows() {
            let Some(a) = artifact[i] else { continue };
            let op = is_op.is_some_and(|b| b.is_valid(i) && b.value(i));
            let start = ts[i].unwrap_or(0);
            if !op && corr[i].is_none_or(|c| !by_correlation.contains_key(&(a, c))) {
                continue;
            }
            rows.push(Row {
                artifact: a,
                track: track[i].unwrap_or(0),
                ts: start,
                end: start + dur[i].unwrap_or(0),
                op: if op { name[i] } else { None },
                correlation: if op { None } else { corr[i] },
            });
        }
        Ok(())
    })
    .await?;
    // Per track in nesting order: start, longest first, operators before
    // the launches they hold.
    rows.sort_unstable_by_key(|r| (r.artifact, r.track, r.ts, -(r.end - r.ts), r.op.is_none()));
    let mut out: HashMap<u32, OperatorDevice> = HashMap::new();
    let mut open: Vec<(i64, u32)> = Vec::new();
    let mut seen: Vec<u32> = Vec::new();
    for track in rows.chunk_by(|a, b| (a.artifact, a.track) == (b.artifact, b.track)) {
        open.clear();
        for r in track {
            while open.last().is_some_and(|(end, _)| *end <= r.ts) {
                open.pop();
            }
            match (r.op, r.correlation) {
                (Some(name), _) => open.push((r.end, name)),
                (None, Some(c)) => {
                    let Some(&(ns, n)) = by_correlation.get(&(r.artifact, c)) else {
                        continue;
                    };
                    if let Some(&(_, innermost)) = open.last() {
                        let e = out.entry(innermost).or_default();
                        e.self_ns += ns;
                        e.self_ops += n;
                    }
                    seen.clear();
                    for &(_, name) in &open {
                        if !seen.contains(&name) {
                            seen.push(name);
                            out.entry(name).or_default().inclusive_ns += ns;
                        }
                    }
                }
                (None, None) => {}
            }
        }
    }
    Ok(out
        .into_iter()
        .map(|(name, d)| (strings.get(name).to_owned(), d))
        .collect())
}
