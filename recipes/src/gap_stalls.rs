//! What held a stalled device gap's queued work, where the trace records
//! it: a stream-wait-event call (`cudaStreamWaitEvent`,
//! `hipStreamWaitEvent`, `cuStreamWaitEvent`) the launching thread made
//! shortly before the launch makes the launched work wait for an event on
//! another stream — the usual reason work that was queued long before
//! still starts late.

use std::collections::HashMap;

use datafusion::logical_expr::{col, lit};
use datafusion::prelude::SessionContext;

use crate::common::{ArtifactScope, RecipeResult, column, i64_at, string_at, table};
use crate::device_pass::for_each_batch;

/// How far before a launch a stream-wait call is taken as its dependency.
pub const STREAM_WAIT_LOOKBACK_NS: i64 = 1_000_000;

/// Per asked `(artifact, launching tid, launch start)`: how long before the
/// launch the latest stream-wait call on that thread started, when one did
/// within [`STREAM_WAIT_LOOKBACK_NS`].
pub async fn stream_waits_before(
    ctx: &SessionContext,
    asked: &[(String, Option<i64>, i64)],
) -> RecipeResult<HashMap<(String, Option<i64>, i64), Option<i64>>> {
    let mut out: HashMap<(String, Option<i64>, i64), Option<i64>> =
        asked.iter().map(|k| (k.clone(), None)).collect();
    if asked.is_empty() {
        return Ok(out);
    }
    let mut artifacts: Vec<String> = asked.iter().map(|a| a.0.clone()).collect();
    artifacts.sort();
    artifacts.dedup();
    let from = asked.iter().map(|a| a.2).min().unwrap_or(0) - STREAM_WAIT_LOOKBACK_NS;
    let to = asked.iter().map(|a| a.2).max().unwrap_or(0);
    let df = table(ctx, "trace_events")
        .await?
        .filter(
            ArtifactScope {
                artifact_ids: artifacts,
            }
            .filter()
            .and(col("stream").is_null())
            .and(col("name").like(lit("%StreamWaitEvent%")))
            .and(col("ts_ns").gt_eq(lit(from)))
            .and(col("ts_ns").lt_eq(lit(to))),
        )?
        .select(vec![col("artifact_id"), col("tid"), col("ts_ns")])?;
    let mut calls: HashMap<(String, Option<i64>), Vec<i64>> = HashMap::new();
    for_each_batch(df, |batch| {
        for i in 0..batch.num_rows() {
            let (Some(artifact), Some(ts)) = (
                string_at(column(batch, "artifact_id")?, i),
                i64_at(column(batch, "ts_ns")?, i),
            ) else {
                continue;
            };
            calls
                .entry((artifact, i64_at(column(batch, "tid")?, i)))
                .or_default()
                .push(ts);
        }
        Ok(())
    })
    .await?;
    for list in calls.values_mut() {
        list.sort_unstable();
    }
    for (key, slot) in out.iter_mut() {
        let Some(list) = calls.get(&(key.0.clone(), key.1)) else {
            continue;
        };
        let at = list.partition_point(|&t| t <= key.2);
        if let Some(&t) = at.checked_sub(1).and_then(|i| list.get(i))
            && key.2 - t <= STREAM_WAIT_LOOKBACK_NS
        {
            *slot = Some(key.2 - t);
        }
    }
    Ok(out)
}
