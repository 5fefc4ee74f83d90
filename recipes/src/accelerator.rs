//! Accelerator launches: per region (phase), direct and graph launches,
//! kernels, launch latency through `correlation_id`, host→device
//! correlation coverage; per stream, busy time, idle gaps and utilization.
//!
//! A gap is a strictly positive distance between an activity's start and
//! the running maximum of end times before it on the same stream — computed
//! with a window function (`max(end) OVER (PARTITION BY stream ORDER BY ts
//! ROWS UNBOUNDED PRECEDING TO 1 PRECEDING)`), so overlapping kernels never
//! make negative gaps and no row loop runs in Rust.

use std::collections::BTreeMap;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::functions_aggregate::expr_fn::{count, max, min, sum};
use datafusion::logical_expr::{Expr, JoinType, col, lit, when};
use datafusion::prelude::{DataFrame, SessionContext, cast, coalesce};

pub use crate::accelerator_answer::{AcceleratorAnswer, CountTime, Latency, Region, StreamUse};
use crate::accelerator_answer::{percentiles, stream_uses, sum_regions};
use crate::accelerator_reduced::{accelerator_launches_reduced, reductions_cover};
use crate::common::{
    ArtifactScope, RecipeResult, as_int64, as_utf8, collect, column, i64_at, max_end_before,
    string_at, table,
};

pub use flameox_extractors::device_work::{DIRECT_LAUNCHES, GAP_BUCKETS_NS, KERNEL_CATEGORIES};
use flameox_extractors::schema::GAP_BUCKET_COLUMNS;

/// Device kernels (NCCL/RCCL kernels included) as the summaries count them.
pub fn kernel_rows() -> Expr {
    let kind = || cast(col("kind"), DataType::Utf8);
    kind().eq(lit("kernel")).or(kind()
        .eq(lit("communication"))
        .and(col("stream").is_not_null())
        .and(
            cast(col("category"), DataType::Utf8)
                .in_list(KERNEL_CATEGORIES.iter().map(|c| lit(*c)).collect(), false),
        ))
}

/// Device work: kernels (NCCL included, as [`kernel_rows`]), memcpy and memset.
pub fn device_work_rows() -> Expr {
    kernel_rows()
        .or(cast(col("kind"), DataType::Utf8).in_list(vec![lit("memcpy"), lit("memset")], false))
}

/// Host runtime/driver calls named one of `names` (nsys exports versioned
/// names such as `cudaLaunchKernel_v7000`, which match too).
pub fn host_calls_named(names: &[&str]) -> Expr {
    let name = || cast(col("name"), DataType::Utf8);
    let named = names
        .iter()
        .map(|n| name().eq(lit(*n)).or(name().like(lit(format!("{n}_v%")))))
        .reduce(Expr::or)
        .unwrap_or(lit(false));
    cast(col("kind"), DataType::Utf8)
        .in_list(vec![lit("runtime_api"), lit("driver_api")], false)
        .and(named)
}

/// Host calls that can launch device work: runtime and driver API calls and
/// host-side graph launches (device-side graph executions sit on streams).
pub fn host_launch_calls() -> Expr {
    let kind = || cast(col("kind"), DataType::Utf8);
    kind()
        .in_list(vec![lit("runtime_api"), lit("driver_api")], false)
        .or(kind().eq(lit("graph_launch")).and(col("stream").is_null()))
}

fn region_expr() -> Expr {
    coalesce(vec![cast(col("phase"), DataType::Utf8), lit("(all)")]).alias("region")
}

/// The rows every part of the analysis reads — kernels, launch calls and
/// graph launches of the scope, with the columns the parts use — scanned
/// from Parquet once and kept in memory (a few columns of the device and
/// launch rows, not the whole trace), instead of one scan per part.
async fn accelerator_base(ctx: &SessionContext, scope: &ArtifactScope) -> RecipeResult<DataFrame> {
    // On the dictionary columns themselves (no cast): the predicates then
    // run once per distinct name, not once per row.
    let launch_name = DIRECT_LAUNCHES
        .iter()
        .map(|n| {
            col("name")
                .eq(lit(*n))
                .or(col("name").like(lit(format!("{n}_v%"))))
        })
        .reduce(Expr::or)
        .unwrap_or(lit(false));
    let relevant = col("kind")
        .in_list(
            ["kernel", "communication", "graph_launch"]
                .into_iter()
                .map(lit)
                .collect(),
            false,
        )
        .or(col("kind")
            .in_list(vec![lit("runtime_api"), lit("driver_api")], false)
            .and(launch_name));
    let df = table(ctx, "trace_events")
        .await?
        .filter(
            scope
                .filter()
                .and(col("dur_ns").gt_eq(lit(0i64)))
                .and(relevant),
        )?
        .select(vec![
            col("artifact_id"),
            col("event_id"),
            col("kind"),
            col("category"),
            col("name"),
            col("ts_ns"),
            col("dur_ns"),
            col("device"),
            col("stream"),
            col("pid"),
            col("correlation_id"),
            col("phase"),
        ])?;
    Ok(df.cache().await?)
}

/// `filter` over the in-memory rows, optionally one phase.
fn rows_of(base: &DataFrame, filter: Expr, phase: Option<&str>) -> RecipeResult<DataFrame> {
    let filter = match phase {
        Some(p) => filter.and(cast(col("phase"), DataType::Utf8).eq(lit(p))),
        None => filter,
    };
    Ok(base.clone().filter(filter)?)
}

/// Terminated rows of `scope` matching `filter`, optionally one phase.
pub async fn events(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    filter: Expr,
    phase: Option<&str>,
) -> RecipeResult<DataFrame> {
    let mut filter = scope
        .filter()
        .and(filter)
        .and(col("dur_ns").gt_eq(lit(0i64)));
    if let Some(p) = phase {
        filter = filter.and(cast(col("phase"), DataType::Utf8).eq(lit(p)));
    }
    Ok(table(ctx, "trace_events").await?.filter(filter)?)
}

/// The analysis for `scope`, optionally one phase: from the reductions
/// written at extraction when every artifact has them, else from events.
pub async fn accelerator_launches(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    phase: Option<&str>,
) -> RecipeResult<AcceleratorAnswer> {
    if reductions_cover(ctx, scope).await? {
        accelerator_launches_reduced(ctx, scope, phase).await
    } else {
        accelerator_launches_from_events(ctx, scope, phase).await
    }
}

/// The reference formulation over `trace_events`: window functions for
/// gaps, a join on correlation ids for latency. A kernel's latency is
/// measured from its launch whatever the launch's phase.
pub async fn accelerator_launches_from_events(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    phase: Option<&str>,
) -> RecipeResult<AcceleratorAnswer> {
    let kind = || cast(col("kind"), DataType::Utf8);
    let host_api = || kind().in_list(vec![lit("runtime_api"), lit("driver_api")], false);
    // Host-side graph launches (device-side graph executions sit on streams).
    let graph = kind().eq(lit("graph_launch")).and(col("stream").is_null());

    let mut regions: BTreeMap<String, Region> = BTreeMap::new();
    let blank = Region::empty;
    let base = accelerator_base(ctx, scope).await?;
    let direct = || launch_rows(&base, host_api(), DIRECT_LAUNCHES, phase);
    let graphs = || launch_rows(&base, graph.clone(), &[], phase);
    for which in 0..3 {
        let rows = match which {
            0 => direct()?,
            1 => graphs()?,
            _ => rows_of(&base, kernel_rows(), phase)?,
        };
        let df = rows.aggregate(
            vec![region_expr()],
            vec![count(lit(1)).alias("n"), sum(col("dur_ns")).alias("t")],
        )?;
        for batch in collect(df).await? {
            for i in 0..batch.num_rows() {
                let r = string_at(column(&batch, "region")?, i).unwrap_or_default();
                let ct = CountTime {
                    count: i64_at(column(&batch, "n")?, i).unwrap_or(0),
                    time_ns: i64_at(column(&batch, "t")?, i).unwrap_or(0),
                };
                let entry = regions.entry(r.clone()).or_insert_with(|| blank(&r));
                match which {
                    0 => entry.direct_launches = ct,
                    1 => entry.graph_launches = ct,
                    _ => entry.kernels = ct,
                }
            }
        }
    }
    let has_launches = regions
        .values()
        .any(|r| r.direct_launches.count + r.graph_launches.count > 0);
    let has_kernels = regions.values().any(|r| r.kernels.count > 0);

    // Latency: kernel start − launch start, joined on (artifact, correlation)
    // with one launch row per correlation (see `launch_rows`) — no
    // high-cardinality GROUP BY, whose emission is quadratic in DataFusion.
    let launches = launch_rows(&base, host_api(), DIRECT_LAUNCHES, None)?
        .union(launch_rows(&base, graph.clone(), &[], None)?)?
        .filter(col("correlation_id").is_not_null())?
        .select(vec![
            cast(col("artifact_id"), DataType::Utf8).alias("l_artifact"),
            col("correlation_id").alias("l_corr"),
            col("ts_ns").alias("l_ts"),
        ])?;
    let kernels = rows_of(&base, kernel_rows(), phase)?.select(vec![
        cast(col("artifact_id"), DataType::Utf8).alias("k_artifact"),
        col("correlation_id").alias("k_corr"),
        col("ts_ns").alias("k_ts"),
        region_expr(),
    ])?;
    let joined = kernels
        .join(
            launches,
            JoinType::Left,
            &["k_artifact", "k_corr"],
            &["l_artifact", "l_corr"],
            None,
        )?
        .select(vec![
            col("region"),
            (col("k_ts") - col("l_ts")).alias("latency"),
        ])?;
    let mut latencies: BTreeMap<String, (u64, Vec<i64>)> = BTreeMap::new();
    for batch in collect(joined).await? {
        let regions_col = as_utf8(column(&batch, "region")?)?;
        let region_names = regions_col.as_string::<i32>();
        let latency = as_int64(column(&batch, "latency")?)?;
        let latency = latency.as_primitive::<Int64Type>();
        for i in 0..batch.num_rows() {
            let name = region_names.value(i);
            if !latencies.contains_key(name) {
                latencies.insert(name.to_owned(), (0, Vec::new()));
            }
            if let Some(e) = latencies.get_mut(name) {
                e.0 += 1;
                if latency.is_valid(i) {
                    e.1.push(latency.value(i));
                }
            }
        }
    }
    let (mut all_kernels, mut all_values) = (0u64, Vec::new());
    for (r, (total, mut values)) in latencies {
        let entry = regions.entry(r.clone()).or_insert_with(|| blank(&r));
        entry.correlation_coverage = if total > 0 {
            values.len() as f64 / total as f64
        } else {
            0.0
        };
        values.sort_unstable();
        entry.launch_latency = percentiles(&values);
        all_kernels += total;
        all_values.extend(values);
    }
    let mut overall = sum_regions(regions.values());
    if all_kernels > 0 {
        overall.correlation_coverage = all_values.len() as f64 / all_kernels as f64;
    }
    all_values.sort_unstable();
    overall.launch_latency = percentiles(&all_values);

    let streams = stream_use(&base, phase).await?;
    let mut answer = AcceleratorAnswer {
        overall,
        regions: regions.into_values().collect(),
        streams,
        streams_total: 0,
        has_launches,
        has_kernels,
    };
    answer.keep_busiest_streams();
    Ok(answer)
}

/// One row per host launch among `calls` (rows matching `filter`; when
/// `names` is not empty, only those call names). nsys records a runtime
/// call and its versioned inner call (`cudaLaunchKernel` ⊃
/// `cudaLaunchKernel_v7000`) under one correlation id: a versioned row is
/// kept only when no unversioned launch has its (artifact, correlation) —
/// an anti join probing the small versioned side, where a GROUP BY over
/// every correlation id would cost seconds on millions of launches.
fn launch_rows(
    base: &DataFrame,
    filter: Expr,
    names: &[&str],
    phase: Option<&str>,
) -> RecipeResult<DataFrame> {
    let name = || cast(col("name"), DataType::Utf8);
    let any = |f: &dyn Fn(&str) -> Expr| names.iter().map(|n| f(n)).reduce(Expr::or);
    let keep = |df: DataFrame| {
        df.select(vec![
            col("artifact_id"),
            col("correlation_id"),
            col("ts_ns"),
            col("dur_ns"),
            col("phase"),
        ])
    };
    let (Some(plain), Some(versioned)) = (
        any(&|n| name().eq(lit(n))),
        any(&|n| name().like(lit(format!("{n}_v%")))),
    ) else {
        return Ok(keep(rows_of(base, filter, phase)?)?.select(vec![
            cast(col("artifact_id"), DataType::Utf8).alias("artifact_id"),
            col("correlation_id"),
            col("ts_ns"),
            col("dur_ns"),
            col("phase"),
        ])?);
    };
    let outer = keep(rows_of(base, filter.clone().and(plain.clone()), phase)?)?;
    let outer_keys = keep(rows_of(base, filter.clone().and(plain), None)?)?.select(vec![
        cast(col("artifact_id"), DataType::Utf8).alias("o_artifact"),
        col("correlation_id").alias("o_corr"),
    ])?;
    let inner = keep(rows_of(base, filter.and(versioned), phase)?)?
        .select(vec![
            cast(col("artifact_id"), DataType::Utf8).alias("v_artifact"),
            col("correlation_id").alias("v_corr"),
            col("ts_ns"),
            col("dur_ns"),
            col("phase"),
        ])?
        .join(
            outer_keys,
            JoinType::LeftAnti,
            &["v_artifact", "v_corr"],
            &["o_artifact", "o_corr"],
            None,
        )?
        .select(vec![
            col("v_artifact").alias("artifact_id"),
            col("v_corr").alias("correlation_id"),
            col("ts_ns"),
            col("dur_ns"),
            col("phase"),
        ])?;
    let outer = outer.select(vec![
        cast(col("artifact_id"), DataType::Utf8).alias("artifact_id"),
        col("correlation_id"),
        col("ts_ns"),
        col("dur_ns"),
        col("phase"),
    ])?;
    Ok(outer.union(inner)?)
}

/// Device rows matching `rows` (optionally one phase) with, per (artifact,
/// device, stream), `previous_end` — the running maximum of earlier ends —
/// and `gap`: `ts_ns − previous_end` when positive, else 0. Columns:
/// artifact_id, device, stream, pid, event_id, name, ts_ns, end_ns,
/// previous_end, gap.
pub async fn stream_gap_rows(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    rows: Expr,
    phase: Option<&str>,
) -> RecipeResult<DataFrame> {
    with_gaps(events(ctx, scope, rows, phase).await?)
}

/// [`stream_gap_rows`] over rows already selected (the window itself).
fn with_gaps(rows: DataFrame) -> RecipeResult<DataFrame> {
    let keys = || vec![col("artifact_id"), col("device"), col("stream")];
    let previous_end = max_end_before(
        col("end_ns"),
        keys(),
        vec![
            col("ts_ns").sort(true, false),
            col("event_id").sort(true, false),
        ],
    )?
    .alias("previous_end");
    Ok(rows
        .select(vec![
            col("artifact_id"),
            col("device"),
            col("stream"),
            col("pid"),
            col("event_id"),
            col("name"),
            col("ts_ns"),
            (col("ts_ns") + col("dur_ns")).alias("end_ns"),
        ])?
        .window(vec![previous_end])?
        .select(vec![
            col("artifact_id"),
            col("device"),
            col("stream"),
            col("pid"),
            col("event_id"),
            col("name"),
            col("ts_ns"),
            col("end_ns"),
            col("previous_end"),
            when(
                col("ts_ns").gt(col("previous_end")),
                col("ts_ns") - col("previous_end"),
            )
            .otherwise(lit(0i64))?
            .alias("gap"),
        ])?)
}

/// Device activity that keeps a stream busy: kernels, memcpy and memset.
pub fn device_activity_rows() -> Expr {
    kernel_rows()
        .or(cast(col("kind"), DataType::Utf8).in_list(vec![lit("memcpy"), lit("memset")], false))
}

/// Busy time, gaps and utilization per (artifact, device, stream).
async fn stream_use(base: &DataFrame, phase: Option<&str>) -> RecipeResult<Vec<StreamUse>> {
    let keys = || vec![col("artifact_id"), col("device"), col("stream")];
    let rows = with_gaps(rows_of(base, kernel_rows(), phase)?)?;
    let bucket = |i: usize| -> Expr {
        let lower = if i == 0 { 0 } else { GAP_BUCKETS_NS[i - 1] };
        // [lower, upper) with the first bucket open at 0 (gaps are > 0).
        let from = col("gap").gt(lit(0i64)).and(col("gap").gt_eq(lit(lower)));
        let cond = match GAP_BUCKETS_NS.get(i) {
            Some(&upper) => from.and(col("gap").lt(lit(upper))),
            None => from,
        };
        sum(cast(cond, DataType::Int64)).alias(GAP_BUCKET_COLUMNS[i])
    };
    let mut aggregates = vec![
        count(lit(1)).alias("count"),
        min(col("ts_ns")).alias("first_ts_ns"),
        max(col("end_ns")).alias("last_end_ns"),
        sum(cast(col("gap").gt(lit(0i64)), DataType::Int64)).alias("gaps"),
        sum(col("gap")).alias("gap_total_ns"),
        max(col("gap")).alias("gap_max_ns"),
    ];
    for i in 0..=GAP_BUCKETS_NS.len() {
        aggregates.push(bucket(i));
    }
    let per_stream = rows.aggregate(keys(), aggregates)?.sort(vec![
        col("device").sort(true, true),
        col("stream").sort(true, true),
        col("artifact_id").sort(true, true),
    ])?;
    stream_uses(&collect(per_stream).await?)
}
