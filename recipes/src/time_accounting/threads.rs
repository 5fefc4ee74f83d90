//! Thread time: per track, busy time is the sum of its slices' self times
//! — the length of the union of the slices, whether or not they nest
//! properly (a slice's self time is what its children, clipped to it, leave
//! uncovered, so each instant belongs to one slice) — and waiting time is
//! the union of the slices whose frame is a wait ([`super::frame_roles`]).
//! Tracks of kind `async` (Chrome `b`/`e`/`n` events, Perfetto async
//! tracks) are never a thread's time: the caller leaves them out.

use std::collections::{BTreeSet, HashMap};

use datafusion::functions_aggregate::expr_fn::sum;
use datafusion::logical_expr::{col, lit, when};
use datafusion::prelude::SessionContext;

use super::frame_roles::{FrameRole, role};
use super::intervals::{total, union_segments};
use crate::common::{
    ArtifactScope, RecipeResult, column, i64_at, stack_kinds_only, string_at, table, u64_at,
};
use crate::device_pass::for_each_batch;

/// Distinct wait names looked up in one IN list at most (a trace with more
/// distinct waiting names reports the first ones by name order).
const WAIT_NAMES_MAX: usize = 512;

/// Busy and waiting time of one track.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TrackTime {
    pub busy_ns: i64,
    pub waiting_ns: i64,
}

/// Rows that are a thread's work: terminated slices of every kind but
/// instants, scheduling rows and the profiler's own span.
fn work_rows() -> datafusion::logical_expr::Expr {
    col("dur_ns").gt(lit(0i64)).and(stack_kinds_only())
}

/// Busy (Σ self) per `(artifact, track)` and, for the tracks in `tracks`
/// (host threads), the union of their waiting slices.
pub async fn track_times(
    ctx: &SessionContext,
    scope: &ArtifactScope,
) -> RecipeResult<HashMap<(String, u64), TrackTime>> {
    let mut out: HashMap<(String, u64), TrackTime> = HashMap::new();
    let busy = table(ctx, "trace_events")
        .await?
        .filter(scope.filter().and(work_rows()))?
        .aggregate(
            vec![col("artifact_id"), col("track_id")],
            vec![
                sum(when(col("self_ns").gt(lit(0i64)), col("self_ns")).otherwise(lit(0i64))?)
                    .alias("busy_ns"),
            ],
        )?;
    for_each_batch(busy, |batch| {
        for i in 0..batch.num_rows() {
            let (Some(artifact), Some(track)) = (
                string_at(column(batch, "artifact_id")?, i),
                u64_at(column(batch, "track_id")?, i),
            ) else {
                continue;
            };
            out.entry((artifact, track)).or_default().busy_ns =
                i64_at(column(batch, "busy_ns")?, i).unwrap_or(0);
        }
        Ok(())
    })
    .await?;

    // Waiting: the distinct (name, kind) pairs first (a dictionary's worth),
    // then the intervals of those that are waits.
    let names = table(ctx, "trace_events")
        .await?
        .filter(scope.filter().and(work_rows()).and(col("stream").is_null()))?
        .aggregate(vec![col("name"), col("kind")], vec![])?;
    let mut waits: BTreeSet<String> = BTreeSet::new();
    for_each_batch(names, |batch| {
        for i in 0..batch.num_rows() {
            let name = string_at(column(batch, "name")?, i).unwrap_or_default();
            let kind = string_at(column(batch, "kind")?, i);
            if role(&name, kind.as_deref()) == FrameRole::Waiting {
                waits.insert(name);
            }
        }
        Ok(())
    })
    .await?;
    if waits.is_empty() {
        return Ok(out);
    }
    let listed: Vec<_> = waits
        .iter()
        .take(WAIT_NAMES_MAX)
        .map(|n| lit(n.as_str()))
        .collect();
    let rows = table(ctx, "trace_events")
        .await?
        .filter(
            scope
                .filter()
                .and(work_rows())
                .and(col("stream").is_null())
                .and(col("name").in_list(listed, false)),
        )?
        .select(vec![
            col("artifact_id"),
            col("track_id"),
            col("ts_ns"),
            col("dur_ns"),
        ])?;
    let mut intervals: HashMap<(String, u64), Vec<(i64, i64)>> = HashMap::new();
    for_each_batch(rows, |batch| {
        for i in 0..batch.num_rows() {
            let (Some(artifact), Some(track), Some(ts), Some(dur)) = (
                string_at(column(batch, "artifact_id")?, i),
                u64_at(column(batch, "track_id")?, i),
                i64_at(column(batch, "ts_ns")?, i),
                i64_at(column(batch, "dur_ns")?, i),
            ) else {
                continue;
            };
            intervals
                .entry((artifact, track))
                .or_default()
                .push((ts, ts.saturating_add(dur)));
        }
        Ok(())
    })
    .await?;
    for (key, list) in intervals {
        out.entry(key).or_default().waiting_ns = total(&union_segments(list));
    }
    Ok(out)
}
