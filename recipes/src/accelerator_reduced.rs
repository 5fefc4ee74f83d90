//! `accelerator-launches` from the reductions written at extraction
//! (`stream_gaps`, `launch_latency`; see `flameox_extractors::stream_gaps`):
//! per-region counts and per-stream gaps are read from a few summary rows,
//! and latency percentiles from one narrow column already sorted per phase,
//! instead of scanning and window-sorting every kernel. The event-level
//! formulation in [`crate::accelerator`] stays the reference: tests compare
//! the two, and it serves artifacts imported before the reductions existed.

use std::collections::BTreeMap;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Int32Type, Int64Type};
use datafusion::functions_aggregate::expr_fn::sum;
use datafusion::logical_expr::{Expr, col, lit};
use datafusion::prelude::{SessionContext, cast};

use crate::accelerator_answer::{
    AcceleratorAnswer, Region, StreamUse, percentiles, stream_uses, sum_regions,
};
use crate::common::{
    ArtifactScope, RecipeResult, as_int64, as_utf8, collect, column, string_at, table, utf8,
};

/// Whether every artifact of `scope` has its reductions (an `artifact`
/// row in `stream_gaps`).
pub async fn reductions_cover(ctx: &SessionContext, scope: &ArtifactScope) -> RecipeResult<bool> {
    let df = table(ctx, "stream_gaps")
        .await?
        .filter(scope.filter().and(col("row_kind").eq(lit("artifact"))))?;
    let mut covered = std::collections::BTreeSet::new();
    for batch in collect(df.select(vec![col("artifact_id")])?).await? {
        let ids = column(&batch, "artifact_id")?;
        for i in 0..batch.num_rows() {
            if let Some(id) = string_at(ids, i) {
                covered.insert(id);
            }
        }
    }
    Ok(scope.artifact_ids.iter().all(|id| covered.contains(id)))
}

fn region_name(phase: Option<String>) -> String {
    phase.unwrap_or_else(|| "(all)".to_owned())
}

fn phase_filter(phase: Option<&str>) -> Expr {
    match phase {
        Some(p) => cast(col("phase"), DataType::Utf8).eq(lit(p)),
        None => lit(true),
    }
}

/// The analysis for `scope` (which [`reductions_cover`]), optionally one
/// phase — the same answer as the event-level reference.
pub async fn accelerator_launches_reduced(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    phase: Option<&str>,
) -> RecipeResult<AcceleratorAnswer> {
    let mut regions: BTreeMap<String, Region> = BTreeMap::new();
    let summaries = table(ctx, "stream_gaps").await?.filter(
        scope
            .filter()
            .and(col("by_phase").eq(lit(true)))
            .and(col("row_kind").in_list(vec![lit("stream"), lit("launches")], false))
            .and(phase_filter(phase)),
    )?;
    // Summed per (phase, row kind, launch kind) first: ~3 rows per phase
    // instead of one per (stream, phase).
    let summaries = summaries.aggregate(
        vec![
            utf8("phase").alias("phase"),
            utf8("row_kind").alias("row_kind"),
            utf8("launch_kind").alias("launch_kind"),
        ],
        vec![
            sum(col("count")).alias("count"),
            sum(col("time_ns")).alias("time_ns"),
        ],
    )?;
    for batch in collect(summaries).await? {
        let text = |name: &str| -> RecipeResult<ArrayRef> { as_utf8(column(&batch, name)?) };
        let (phases, kinds, launch_kinds) =
            (text("phase")?, text("row_kind")?, text("launch_kind")?);
        let (phases, kinds, launch_kinds) = (
            phases.as_string::<i32>(),
            kinds.as_string::<i32>(),
            launch_kinds.as_string::<i32>(),
        );
        let counts = as_int64(column(&batch, "count")?)?;
        let times = as_int64(column(&batch, "time_ns")?)?;
        let (counts, times) = (
            counts.as_primitive::<Int64Type>(),
            times.as_primitive::<Int64Type>(),
        );
        for i in 0..batch.num_rows() {
            let name = region_name(phases.is_valid(i).then(|| phases.value(i).to_owned()));
            let entry = regions
                .entry(name.clone())
                .or_insert_with(|| Region::empty(&name));
            let launch_kind = launch_kinds.is_valid(i).then(|| launch_kinds.value(i));
            let target = match (kinds.value(i), launch_kind) {
                ("stream", _) => &mut entry.kernels,
                (_, Some("graph")) => &mut entry.graph_launches,
                _ => &mut entry.direct_launches,
            };
            target.count += counts.value(i);
            target.time_ns += times.value(i);
        }
    }

    let latencies = latencies_by_region(ctx, scope, phase).await?;
    let mut overall = sum_regions(regions.values());
    let (mut all_kernels, mut all_values) = (0u64, Vec::new());
    for (name, (total, mut values)) in latencies {
        let entry = regions
            .entry(name.clone())
            .or_insert_with(|| Region::empty(&name));
        if total > 0 {
            entry.correlation_coverage = values.len() as f64 / total as f64;
        }
        values.sort_unstable();
        entry.launch_latency = percentiles(&values);
        all_kernels += total;
        all_values.extend(values);
    }
    if all_kernels > 0 {
        overall.correlation_coverage = all_values.len() as f64 / all_kernels as f64;
    }
    all_values.sort_unstable();
    overall.launch_latency = percentiles(&all_values);
    let has_launches = regions
        .values()
        .any(|r| r.direct_launches.count + r.graph_launches.count > 0);
    let has_kernels = regions.values().any(|r| r.kernels.count > 0);
    let mut answer = AcceleratorAnswer {
        overall,
        regions: regions.into_values().collect(),
        streams: stream_use(ctx, scope, phase).await?,
        streams_total: 0,
        has_launches,
        has_kernels,
    };
    answer.keep_busiest_streams();
    Ok(answer)
}

/// Per region: kernels seen, and the latencies of those with a launch.
async fn latencies_by_region(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    phase: Option<&str>,
) -> RecipeResult<BTreeMap<String, (u64, Vec<i64>)>> {
    let rows = table(ctx, "launch_latency")
        .await?
        .filter(scope.filter().and(phase_filter(phase)))?
        .select(vec![col("phase"), col("latency_ns")])?;
    // Per region index: kernels seen, latencies found.
    let mut names: Vec<String> = Vec::new();
    let mut index_of: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut found: Vec<(u64, Vec<i64>)> = Vec::new();
    for batch in collect(rows).await? {
        let (batch_names, row_slots) = row_regions(&batch)?;
        // Each distinct name of the batch is looked up once, when a row
        // first uses it (a dictionary may hold values no row refers to).
        let mut slots: Vec<Option<usize>> = vec![None; batch_names.len()];
        let latency = column(&batch, "latency_ns")?.as_primitive::<Int64Type>();
        for (i, local) in row_slots.iter().enumerate() {
            let Some(slot) = slots.get_mut(*local) else {
                continue;
            };
            let global = *slot.get_or_insert_with(|| {
                let name = &batch_names[*local];
                *index_of.entry(name.clone()).or_insert_with(|| {
                    names.push(name.clone());
                    found.push((0, Vec::new()));
                    found.len() - 1
                })
            });
            if let Some(entry) = found.get_mut(global) {
                entry.0 += 1;
                if latency.is_valid(i) {
                    entry.1.push(latency.value(i));
                }
            }
        }
    }
    Ok(names.into_iter().zip(found).collect())
}

/// The distinct region names of a batch with a `phase` column and, per
/// row, the index of its name — decoding each dictionary value once and
/// allocating nothing per row.
fn row_regions(batch: &RecordBatch) -> RecipeResult<(Vec<String>, Vec<usize>)> {
    let phase = column(batch, "phase")?;
    if let Some(dict) = phase.as_dictionary_opt::<Int32Type>() {
        let values = as_utf8(dict.values().as_ref())?;
        let values = values.as_string::<i32>();
        let mut names: Vec<String> = (0..values.len())
            .map(|k| region_name(values.is_valid(k).then(|| values.value(k).to_owned())))
            .collect();
        let null_slot = names.len();
        names.push(region_name(None));
        let slots = (0..dict.len())
            .map(|i| {
                dict.is_valid(i)
                    .then(|| usize::try_from(dict.keys().value(i)).ok())
                    .flatten()
                    .filter(|k| *k < null_slot)
                    .unwrap_or(null_slot)
            })
            .collect();
        return Ok((names, slots));
    }
    let text = as_utf8(phase)?;
    let text = text.as_string::<i32>();
    let names: Vec<String> = (0..text.len())
        .map(|i| region_name(text.is_valid(i).then(|| text.value(i).to_owned())))
        .collect();
    let slots = (0..names.len()).collect();
    Ok((names, slots))
}

/// Per (artifact, device, stream): the whole-stream summary row, or the
/// stream's row within `phase`.
async fn stream_use(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    phase: Option<&str>,
) -> RecipeResult<Vec<StreamUse>> {
    let rows = table(ctx, "stream_gaps")
        .await?
        .filter(
            scope
                .filter()
                .and(col("row_kind").eq(lit("stream")))
                .and(col("by_phase").eq(lit(phase.is_some())))
                .and(phase_filter(phase)),
        )?
        .sort(vec![
            col("device").sort(true, true),
            col("stream").sort(true, true),
            col("artifact_id").sort(true, true),
        ])?;
    stream_uses(&collect(rows).await?)
}
