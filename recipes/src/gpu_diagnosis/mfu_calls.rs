//! The rows the MFU section reads: operator calls that may carry FLOPs
//! (only the outermost counted one of a nest), the launch calls on their
//! threads, and each artifact's profiler steps.

use std::collections::{BTreeMap, HashMap};

use datafusion::arrow::array::{Array, AsArray};
use datafusion::logical_expr::{Expr, col, lit};
use datafusion::prelude::SessionContext;

use super::flops::{self, FlopSource, SHAPE_OPS};
use crate::common::{ArtifactScope, RecipeResult, as_utf8, column, table, utf8};
use crate::device_pass::{Interner, for_each_batch, ints};

/// One operator call that may carry FLOPs.
#[derive(Debug, Clone)]
pub(super) struct Call {
    pub artifact: u32,
    pub track: i64,
    pub ts: i64,
    pub end: i64,
    pub name: u32,
    pub flop: Option<(f64, FlopSource)>,
    pub dtype: Option<String>,
}

/// Keeps calls not nested in an earlier counted call of their thread.
pub(super) fn outermost(mut calls: Vec<Call>) -> Vec<Call> {
    calls.sort_by_key(|c| (c.artifact, c.track, c.ts, std::cmp::Reverse(c.end)));
    let mut out: Vec<Call> = Vec::with_capacity(calls.len());
    let mut open: Option<(u32, i64, i64)> = None;
    for c in calls {
        if open.is_some_and(|(a, t, end)| a == c.artifact && t == c.track && c.ts < end) {
            continue;
        }
        if c.flop.is_some() {
            open = Some((c.artifact, c.track, c.end));
        }
        out.push(c);
    }
    out
}

/// Operator calls of the shape-counted names or with a `flops` arg.
pub(super) async fn read_calls(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    window: Option<(i64, i64)>,
    strings: &mut Interner,
) -> RecipeResult<Vec<Call>> {
    let names: Vec<Expr> = SHAPE_OPS.iter().map(|n| lit(*n)).collect();
    let mut filter = scope
        .filter()
        .and(utf8("kind").eq(lit("cpu_op")))
        .and(col("dur_ns").gt_eq(lit(0i64)))
        .and(
            utf8("name")
                .in_list(names, false)
                .or(utf8("args_json").like(lit("%\"flops\"%"))),
        );
    if let Some((a, b)) = window {
        filter = filter
            .and(col("ts_ns").gt_eq(lit(a)))
            .and(col("ts_ns").lt(lit(b)));
    }
    let columns = [
        "artifact_id",
        "track_id",
        "ts_ns",
        "dur_ns",
        "name",
        "args_json",
    ];
    let df = table(ctx, "trace_events")
        .await?
        .filter(filter)?
        .select(columns.into_iter().map(col).collect::<Vec<Expr>>())?;
    let mut calls = Vec::new();
    for_each_batch(df, |batch| {
        let artifact = strings.column(column(batch, "artifact_id")?)?;
        let name = strings.column(column(batch, "name")?)?;
        let (track, ts, dur) = (
            ints(column(batch, "track_id")?)?,
            ints(column(batch, "ts_ns")?)?,
            ints(column(batch, "dur_ns")?)?,
        );
        let args = as_utf8(column(batch, "args_json")?)?;
        let args = args.as_string::<i32>();
        for i in 0..batch.num_rows() {
            let (Some(artifact), Some(name), Some(ts)) = (artifact[i], name[i], ts[i]) else {
                continue;
            };
            let parsed: serde_json::Value = match args.is_valid(i) {
                true => serde_json::from_str(args.value(i)).unwrap_or_default(),
                false => serde_json::Value::Null,
            };
            calls.push(Call {
                artifact,
                track: track[i].unwrap_or(-1),
                ts,
                end: ts.saturating_add(dur[i].unwrap_or(0)),
                name,
                flop: flops::flops(strings.get(name), &parsed),
                dtype: flops::dtype(&parsed),
            });
        }
        Ok(())
    })
    .await?;
    Ok(calls)
}

/// Launch calls (start, correlation) per (artifact, track) of the counted
/// calls' threads, in time order.
pub(super) async fn read_launches(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    calls: &[Call],
    strings: &mut Interner,
) -> RecipeResult<HashMap<(u32, i64), Vec<(i64, i64)>>> {
    let mut out: HashMap<(u32, i64), Vec<(i64, i64)>> = HashMap::new();
    let counted = calls.iter().filter(|c| c.flop.is_some());
    let (Some(from), Some(to)) = (
        counted.clone().map(|c| c.ts).min(),
        counted.clone().map(|c| c.end).max(),
    ) else {
        return Ok(out);
    };
    let mut tracks: Vec<i64> = counted.map(|c| c.track).collect();
    tracks.sort_unstable();
    tracks.dedup();
    let filter = scope
        .filter()
        .and(utf8("kind").in_list(vec![lit("runtime_api"), lit("driver_api")], false))
        .and(col("correlation_id").is_not_null())
        .and(col("track_id").in_list(tracks.into_iter().map(lit).collect(), false))
        .and(col("ts_ns").between(lit(from), lit(to)));
    let df = table(ctx, "trace_events").await?.filter(filter)?.select(
        ["artifact_id", "track_id", "ts_ns", "correlation_id"]
            .map(col)
            .to_vec(),
    )?;
    for_each_batch(df, |batch| {
        let artifact = strings.column(column(batch, "artifact_id")?)?;
        let (track, ts, corr) = (
            ints(column(batch, "track_id")?)?,
            ints(column(batch, "ts_ns")?)?,
            ints(column(batch, "correlation_id")?)?,
        );
        for i in 0..batch.num_rows() {
            if let (Some(a), Some(t), Some(c)) = (artifact[i], ts[i], corr[i]) {
                out.entry((a, track[i].unwrap_or(-1)))
                    .or_default()
                    .push((t, c));
            }
        }
        Ok(())
    })
    .await?;
    for list in out.values_mut() {
        list.sort_unstable();
    }
    Ok(out)
}

/// Each artifact's profiler steps: first start, last end, and a label.
pub(super) async fn read_steps(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    window: Option<(i64, i64)>,
) -> RecipeResult<BTreeMap<String, (i64, i64, String)>> {
    let mut out: BTreeMap<String, (i64, i64, String)> = BTreeMap::new();
    if window.is_some() {
        return Ok(out);
    }
    let filter = scope
        .filter()
        .and(utf8("name").like(lit("ProfilerStep#%")))
        .and(col("stream").is_null())
        .and(col("dur_ns").gt_eq(lit(0i64)));
    let df = table(ctx, "trace_events")
        .await?
        .filter(filter)?
        .select(["artifact_id", "name", "ts_ns", "dur_ns"].map(col).to_vec())?;
    let mut strings = Interner::default();
    let mut steps: BTreeMap<String, Vec<(i64, i64, String)>> = BTreeMap::new();
    for_each_batch(df, |batch| {
        let artifact = strings.column(column(batch, "artifact_id")?)?;
        let name = strings.column(column(batch, "name")?)?;
        let (ts, dur) = (
            ints(column(batch, "ts_ns")?)?,
            ints(column(batch, "dur_ns")?)?,
        );
        for i in 0..batch.num_rows() {
            if let (Some(a), Some(n), Some(t), Some(d)) = (artifact[i], name[i], ts[i], dur[i]) {
                let entry = steps.entry(strings.get(a).to_owned()).or_default();
                entry.push((t, t.saturating_add(d), strings.get(n).to_owned()));
            }
        }
        Ok(())
    })
    .await?;
    for (artifact, mut list) in steps {
        list.sort();
        let (Some(first), Some(last)) = (list.first(), list.iter().max_by_key(|s| s.1)) else {
            continue;
        };
        let label = match first.2 == last.2 {
            true => first.2.clone(),
            false => format!("{}..{}", first.2, last.2),
        };
        out.insert(artifact, (first.0, last.1, label));
    }
    Ok(out)
}
