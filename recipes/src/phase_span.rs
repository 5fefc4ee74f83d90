//! A phase's span: the extent of the host slices named like the phase (a
//! `ProfilerStep#3` slice), so that any analysis can take `phase` as its
//! time window. Device copies of the step (GPU user annotations) run later
//! than the host step and are left out, as memory's phases do.

use datafusion::arrow::datatypes::DataType;
use datafusion::functions_aggregate::expr_fn::{max, min};
use datafusion::logical_expr::{col, lit};
use datafusion::prelude::{SessionContext, cast};

use crate::common::{ArtifactScope, RecipeResult, collect, column, i64_at, string_at, table};

/// Kinds that run on a device: never a host step.
const DEVICE_KINDS: [&str; 5] = [
    "kernel",
    "memcpy",
    "memset",
    "gpu_user_annotation",
    "instant",
];

/// `[start, end)` of the host slices named `phase` in scope, if any.
pub async fn phase_span(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    phase: &str,
) -> RecipeResult<Option<(i64, i64)>> {
    let device = DEVICE_KINDS.iter().map(|k| lit(*k)).collect();
    let df = table(ctx, "trace_events")
        .await?
        .filter(
            scope
                .filter()
                .and(cast(col("name"), DataType::Utf8).eq(lit(phase)))
                .and(col("dur_ns").gt_eq(lit(0i64)))
                .and(col("stream").is_null())
                .and(cast(col("kind"), DataType::Utf8).in_list(device, true)),
        )?
        .aggregate(
            vec![],
            vec![
                min(col("ts_ns")).alias("start"),
                max(col("ts_ns") + col("dur_ns")).alias("end"),
            ],
        )?;
    for batch in collect(df).await? {
        if batch.num_rows() == 0 {
            continue;
        }
        let start = i64_at(column(&batch, "start")?, 0);
        let end = i64_at(column(&batch, "end")?, 0);
        if let (Some(start), Some(end)) = (start, end) {
            return Ok(Some((start, end.max(start + 1))));
        }
    }
    Ok(None)
}

/// The phase labels in scope (distinct, at most `limit`, sorted), for a
/// "did you mean".
pub async fn phase_names(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    limit: usize,
) -> RecipeResult<Vec<String>> {
    let df = table(ctx, "trace_events")
        .await?
        .filter(scope.filter().and(col("phase").is_not_null()))?
        .select(vec![cast(col("phase"), DataType::Utf8).alias("phase")])?
        .distinct()?
        .sort(vec![col("phase").sort(true, true)])?
        .limit(0, Some(limit))?;
    let mut names = Vec::new();
    for batch in collect(df).await? {
        let phases = column(&batch, "phase")?;
        names.extend((0..batch.num_rows()).filter_map(|i| string_at(phases, i)));
    }
    Ok(names)
}
