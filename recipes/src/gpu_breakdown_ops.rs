//! The per-operation sections of the GPU breakdown: idle time per stream
//! split into host wait / kernel wait / other, kernel launch statistics
//! (short kernels, runtime and launch-delay outliers with examples), and
//! memcpy/memset bandwidth per direction. Each is one DataFrame plan over
//! `trace_events` (a window for gaps, a join on `correlation_id` for
//! launches); Rust only reshapes the small aggregated result.

use std::collections::BTreeMap;

use datafusion::arrow::datatypes::DataType;
use datafusion::functions_aggregate::expr_fn::{count, max, median, min, sum};
use datafusion::functions_window::expr_fn::row_number;
use datafusion::logical_expr::{Expr, ExprFunctionExt, JoinType, col, lit, when};
use datafusion::prelude::{DataFrame, SessionContext, cast, coalesce, greatest};
use serde::{Deserialize, Serialize};

use crate::accelerator::{DIRECT_LAUNCHES, host_calls_named, host_launch_calls};
use crate::common::{
    ArtifactScope, RecipeResult, collect, column, f64_at, i64_at, max_before, string_at, table,
};
use crate::gpu_breakdown::{BreakdownParams, DeviceKey, device_work};

/// Host calls whose device work HTA's launch statistics pair with them:
/// kernel launches plus asynchronous memcpy/memset.
const MEMORY_LAUNCHES: &[&str] = &[
    "cudaMemcpyAsync",
    "cudaMemsetAsync",
    "hipMemcpyAsync",
    "hipMemsetAsync",
];

/// Idle time of one stream: the gaps between its operations (start minus
/// the running maximum of earlier ends, when positive), each classified.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamIdle {
    #[serde(flatten)]
    pub key: DeviceKey,
    pub stream: Option<i64>,
    pub operations: i64,
    pub span_ns: i64,
    pub busy_ns: i64,
    pub idle_ns: i64,
    pub gaps: i64,
    /// The operation's launch call started after the stream went idle: the
    /// host had not enqueued it yet.
    pub host_wait_ns: i64,
    pub host_wait_gaps: i64,
    /// Not host wait, and shorter than `thresholds.kernel_wait_ns`.
    pub kernel_wait_ns: i64,
    pub kernel_wait_gaps: i64,
    pub other_ns: i64,
    pub other_gaps: i64,
}

/// One launch call and the device operation it launched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchExample {
    /// The device operation.
    pub name: String,
    /// The host call.
    pub launch: String,
    pub correlation_id: Option<i64>,
    pub ts_ns: i64,
    pub cpu_duration_ns: i64,
    pub gpu_duration_ns: i64,
    pub launch_delay_ns: i64,
}

/// Launches matching one condition: how many, the threshold, examples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchOutliers {
    pub count: i64,
    pub threshold_ns: i64,
    /// The most extreme ones first (at most `limit`).
    pub examples: Vec<LaunchExample>,
}

/// HTA's `get_cuda_kernel_launch_stats` for one artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchStats {
    pub rank: Option<i64>,
    pub artifact_id: String,
    /// (launch call, device operation) pairs joined on correlation id.
    pub launches: i64,
    /// Device operation shorter than its launch call, the call itself not
    /// a runtime outlier (`threshold_ns` = the runtime threshold); examples
    /// by how much longer the call took.
    pub short_kernels: LaunchOutliers,
    /// Launch calls longer than the threshold; examples by call duration.
    pub runtime_outliers: LaunchOutliers,
    /// Device start − launch call end (clipped at 0) above the threshold.
    pub launch_delay_outliers: LaunchOutliers,
}

/// Copies (or sets) of one direction on one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandwidthRow {
    #[serde(flatten)]
    pub key: DeviceKey,
    /// `H2D`, `D2H`, `D2D`, `P2P`, `memset` or `other` (HtoH, array copies…).
    pub direction: String,
    pub count: i64,
    pub bytes: i64,
    pub time_ns: i64,
    /// `bytes / time` (bytes per ns = GB/s); null when no time was spent.
    pub gb_per_s: Option<f64>,
    /// Operations with bytes and a positive duration (the per-op rates).
    pub timed_ops: i64,
    pub op_gb_per_s_min: Option<f64>,
    pub op_gb_per_s_median: Option<f64>,
    pub op_gb_per_s_max: Option<f64>,
}

const DIRECTIONS: [&str; 6] = ["H2D", "D2H", "D2D", "P2P", "memset", "other"];

fn flag(condition: Expr) -> Expr {
    cast(coalesce(vec![condition, lit(false)]), DataType::Int64)
}

/// Gaps per (artifact, device, stream) with their host-wait / kernel-wait /
/// other classification.
pub(crate) async fn stream_idle(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    params: &BreakdownParams,
) -> RecipeResult<Vec<StreamIdle>> {
    let work = device_work(ctx, scope).await?.select(vec![
        cast(col("artifact_id"), DataType::Utf8).alias("artifact"),
        col("device"),
        col("stream"),
        col("event_id"),
        col("ts_ns"),
        (col("ts_ns") + col("dur_ns")).alias("end_ns"),
        col("correlation_id"),
    ])?;
    // Earliest host call per correlation: when the host asked for the work.
    let launches = table(ctx, "trace_events")
        .await?
        .filter(
            scope
                .filter()
                .and(host_launch_calls())
                .and(col("correlation_id").is_not_null()),
        )?
        .aggregate(
            vec![
                cast(col("artifact_id"), DataType::Utf8).alias("l_artifact"),
                col("correlation_id").alias("l_corr"),
            ],
            vec![min(col("ts_ns")).alias("launch_ts")],
        )?;
    let keys = || vec![col("artifact"), col("device"), col("stream")];
    let gap = col("gap");
    let is_gap = || gap.clone().gt(lit(0i64));
    let host = is_gap().and(coalesce(vec![
        col("launch_ts").gt(col("previous_end")),
        lit(false),
    ]));
    let kernel_wait = is_gap()
        .and(!host.clone())
        .and(gap.clone().lt(lit(params.thresholds.kernel_wait_ns)));
    let other = is_gap().and(!host.clone()).and(!kernel_wait.clone());
    let part = |cond: &Expr, name: &str| -> RecipeResult<Vec<Expr>> {
        Ok(vec![
            sum(when(cond.clone(), gap.clone()).otherwise(lit(0i64))?).alias(format!("{name}_ns")),
            sum(flag(cond.clone())).alias(format!("{name}_gaps")),
        ])
    };
    let mut aggregates = vec![
        count(lit(1)).alias("operations"),
        min(col("ts_ns")).alias("first"),
        max(col("end_ns")).alias("last"),
        sum(gap.clone()).alias("idle_ns"),
        sum(flag(is_gap())).alias("gaps"),
    ];
    aggregates.extend(part(&host, "host_wait")?);
    aggregates.extend(part(&kernel_wait, "kernel_wait")?);
    aggregates.extend(part(&other, "other")?);
    let per_stream = work
        .join(
            launches,
            JoinType::Left,
            &["artifact", "correlation_id"],
            &["l_artifact", "l_corr"],
            None,
        )?
        .window(vec![
            max_before(col("end_ns"), keys())?.alias("previous_end"),
        ])?
        .select(vec![
            col("artifact"),
            col("device"),
            col("stream"),
            col("ts_ns"),
            col("end_ns"),
            col("launch_ts"),
            col("previous_end"),
            when(
                col("ts_ns").gt(col("previous_end")),
                col("ts_ns") - col("previous_end"),
            )
            .otherwise(lit(0i64))?
            .alias("gap"),
        ])?
        .aggregate(keys(), aggregates)?;
    let mut out = Vec::new();
    for batch in collect(per_stream).await? {
        for i in 0..batch.num_rows() {
            let get =
                |c: &str| -> RecipeResult<i64> { Ok(i64_at(column(&batch, c)?, i).unwrap_or(0)) };
            let artifact = string_at(column(&batch, "artifact")?, i).unwrap_or_default();
            let span = get("last")? - get("first")?;
            let idle = get("idle_ns")?;
            out.push(StreamIdle {
                key: params.key(artifact, i64_at(column(&batch, "device")?, i)),
                stream: i64_at(column(&batch, "stream")?, i),
                operations: get("operations")?,
                span_ns: span,
                busy_ns: span - idle,
                idle_ns: idle,
                gaps: get("gaps")?,
                host_wait_ns: get("host_wait_ns")?,
                host_wait_gaps: get("host_wait_gaps")?,
                kernel_wait_ns: get("kernel_wait_ns")?,
                kernel_wait_gaps: get("kernel_wait_gaps")?,
                other_ns: get("other_ns")?,
                other_gaps: get("other_gaps")?,
            });
        }
    }
    out.sort_by(|a, b| (&a.key, a.stream).cmp(&(&b.key, b.stream)));
    Ok(out)
}

/// Launch calls joined with the device work they launched.
async fn launch_pairs(ctx: &SessionContext, scope: &ArtifactScope) -> RecipeResult<DataFrame> {
    let names: Vec<&str> = DIRECT_LAUNCHES
        .iter()
        .chain(MEMORY_LAUNCHES)
        .copied()
        .collect();
    let calls = table(ctx, "trace_events")
        .await?
        .filter(
            scope
                .filter()
                .and(host_calls_named(&names))
                .and(col("correlation_id").is_not_null())
                .and(col("dur_ns").gt_eq(lit(0i64))),
        )?
        .select(vec![
            cast(col("artifact_id"), DataType::Utf8).alias("c_artifact"),
            col("correlation_id").alias("c_corr"),
            cast(col("name"), DataType::Utf8).alias("launch"),
            col("ts_ns").alias("c_ts"),
            col("dur_ns").alias("cpu"),
        ])?;
    let ops = device_work(ctx, scope).await?.select(vec![
        cast(col("artifact_id"), DataType::Utf8).alias("artifact"),
        col("correlation_id"),
        cast(col("name"), DataType::Utf8).alias("name"),
        col("event_id"),
        col("ts_ns"),
        col("dur_ns").alias("gpu"),
    ])?;
    Ok(calls
        .join(
            ops,
            JoinType::Inner,
            &["c_artifact", "c_corr"],
            &["artifact", "correlation_id"],
            None,
        )?
        .select(vec![
            col("artifact"),
            col("name"),
            col("launch"),
            col("correlation_id"),
            col("event_id"),
            col("ts_ns"),
            col("cpu"),
            col("gpu"),
            greatest(vec![lit(0i64), col("ts_ns") - col("c_ts") - col("cpu")]).alias("delay"),
        ])?)
}

/// Short kernels, runtime outliers and launch-delay outliers per artifact.
pub(crate) async fn launch_stats(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    params: &BreakdownParams,
) -> RecipeResult<Vec<LaunchStats>> {
    let t = params.thresholds;
    let short = col("cpu")
        .lt_eq(lit(t.runtime_outlier_ns))
        .and(col("gpu").lt(col("cpu")));
    let runtime = col("cpu").gt(lit(t.runtime_outlier_ns));
    let delayed = col("delay").gt(lit(t.launch_delay_outlier_ns));
    let kinds: [(Expr, Expr, i64); 3] = [
        (short, col("cpu") - col("gpu"), t.runtime_outlier_ns),
        (runtime, col("cpu"), t.runtime_outlier_ns),
        (delayed, col("delay"), t.launch_delay_outlier_ns),
    ];
    let pairs = launch_pairs(ctx, scope).await?;
    let mut aggregates = vec![count(lit(1)).alias("launches")];
    for (i, (cond, _, _)) in kinds.iter().enumerate() {
        aggregates.push(sum(flag(cond.clone())).alias(format!("n{i}")));
    }
    let totals = pairs.clone().aggregate(vec![col("artifact")], aggregates)?;
    let mut stats: BTreeMap<String, LaunchStats> = BTreeMap::new();
    for batch in collect(totals).await? {
        for i in 0..batch.num_rows() {
            let artifact = string_at(column(&batch, "artifact")?, i).unwrap_or_default();
            let set = |n: usize| -> RecipeResult<LaunchOutliers> {
                Ok(LaunchOutliers {
                    count: i64_at(column(&batch, &format!("n{n}"))?, i).unwrap_or(0),
                    threshold_ns: kinds[n].2,
                    examples: Vec::new(),
                })
            };
            stats.insert(
                artifact.clone(),
                LaunchStats {
                    rank: params.ranks.get(&artifact).copied(),
                    launches: i64_at(column(&batch, "launches")?, i).unwrap_or(0),
                    short_kernels: set(0)?,
                    runtime_outliers: set(1)?,
                    launch_delay_outliers: set(2)?,
                    artifact_id: artifact,
                },
            );
        }
    }
    for (n, (cond, value, _)) in kinds.iter().enumerate() {
        let ranked = row_number()
            .partition_by(vec![col("artifact")])
            .order_by(vec![
                col("value").sort(false, false),
                col("event_id").sort(true, false),
            ])
            .build()?
            .alias("rank_in_artifact");
        let examples = pairs
            .clone()
            .filter(cond.clone())?
            .with_column("value", value.clone())?
            .window(vec![ranked])?
            .filter(col("rank_in_artifact").lt_eq(lit(params.limit as u64)))?;
        let mut found: BTreeMap<String, Vec<(i64, i64, LaunchExample)>> = BTreeMap::new();
        for batch in collect(examples).await? {
            for i in 0..batch.num_rows() {
                let get = |c: &str| -> RecipeResult<i64> {
                    Ok(i64_at(column(&batch, c)?, i).unwrap_or(0))
                };
                found
                    .entry(string_at(column(&batch, "artifact")?, i).unwrap_or_default())
                    .or_default()
                    .push((
                        get("value")?,
                        get("event_id")?,
                        LaunchExample {
                            name: string_at(column(&batch, "name")?, i).unwrap_or_default(),
                            launch: string_at(column(&batch, "launch")?, i).unwrap_or_default(),
                            correlation_id: i64_at(column(&batch, "correlation_id")?, i),
                            ts_ns: get("ts_ns")?,
                            cpu_duration_ns: get("cpu")?,
                            gpu_duration_ns: get("gpu")?,
                            launch_delay_ns: get("delay")?,
                        },
                    ));
            }
        }
        for (artifact, mut list) in found {
            list.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            if let Some(s) = stats.get_mut(&artifact) {
                let target = match n {
                    0 => &mut s.short_kernels,
                    1 => &mut s.runtime_outliers,
                    _ => &mut s.launch_delay_outliers,
                };
                target.examples = list.into_iter().map(|(_, _, e)| e).collect();
            }
        }
    }
    let mut out: Vec<LaunchStats> = stats.into_values().collect();
    out.sort_by(|a, b| (a.rank, &a.artifact_id).cmp(&(b.rank, &b.artifact_id)));
    Ok(out)
}

/// The direction of a memcpy from its name (`Memcpy HtoD (Pageable ->
/// Device)` in Kineto and in the Nsight extractor alike); memsets apart.
fn direction_expr() -> RecipeResult<Expr> {
    let name = || cast(col("name"), DataType::Utf8);
    let prefix = |p: &str| name().like(lit(format!("Memcpy {p}%")));
    Ok(when(
        cast(col("kind"), DataType::Utf8).eq(lit("memset")),
        lit("memset"),
    )
    .when(prefix("HtoD"), lit("H2D"))
    .when(prefix("DtoH"), lit("D2H"))
    .when(prefix("DtoD"), lit("D2D"))
    .when(prefix("PtoP"), lit("P2P"))
    .otherwise(lit("other"))?)
}

/// Bytes, time and GB/s per (artifact, device, direction).
pub(crate) async fn copy_bandwidth(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    params: &BreakdownParams,
) -> RecipeResult<Vec<BandwidthRow>> {
    let kind = cast(col("kind"), DataType::Utf8);
    let rate = when(
        col("dur_ns").gt(lit(0i64)).and(col("bytes").is_not_null()),
        cast(col("bytes"), DataType::Float64) / cast(col("dur_ns"), DataType::Float64),
    )
    .end()?;
    let grouped = table(ctx, "trace_events")
        .await?
        .filter(
            scope
                .filter()
                .and(kind.in_list(vec![lit("memcpy"), lit("memset")], false))
                .and(col("dur_ns").gt_eq(lit(0i64))),
        )?
        .select(vec![
            cast(col("artifact_id"), DataType::Utf8).alias("artifact"),
            col("device"),
            direction_expr()?.alias("direction"),
            col("bytes"),
            col("dur_ns"),
            rate.alias("rate"),
        ])?
        .aggregate(
            vec![col("artifact"), col("device"), col("direction")],
            vec![
                count(lit(1)).alias("count"),
                sum(col("bytes")).alias("bytes"),
                sum(col("dur_ns")).alias("time"),
                count(col("rate")).alias("timed"),
                min(col("rate")).alias("rate_min"),
                cast(median(col("rate")), DataType::Float64).alias("rate_median"),
                max(col("rate")).alias("rate_max"),
            ],
        )?;
    let mut out = Vec::new();
    for batch in collect(grouped).await? {
        for i in 0..batch.num_rows() {
            let get =
                |c: &str| -> RecipeResult<i64> { Ok(i64_at(column(&batch, c)?, i).unwrap_or(0)) };
            let artifact = string_at(column(&batch, "artifact")?, i).unwrap_or_default();
            let (bytes, time) = (get("bytes")?, get("time")?);
            out.push(BandwidthRow {
                key: params.key(artifact, i64_at(column(&batch, "device")?, i)),
                direction: string_at(column(&batch, "direction")?, i).unwrap_or_default(),
                count: get("count")?,
                bytes,
                time_ns: time,
                gb_per_s: (time > 0).then(|| bytes as f64 / time as f64),
                timed_ops: get("timed")?,
                op_gb_per_s_min: f64_at(column(&batch, "rate_min")?, i),
                op_gb_per_s_median: f64_at(column(&batch, "rate_median")?, i),
                op_gb_per_s_max: f64_at(column(&batch, "rate_max")?, i),
            });
        }
    }
    let order = |d: &str| DIRECTIONS.iter().position(|x| *x == d);
    out.sort_by(|a, b| (&a.key, order(&a.direction)).cmp(&(&b.key, order(&b.direction))));
    Ok(out)
}
