//! The per-operation sections of the GPU breakdown: idle time per stream
//! split into host wait / kernel wait / other, kernel launch statistics
//! (short kernels, runtime and launch-delay outliers with examples), and
//! memcpy/memset bandwidth per direction. Idle time and launches are
//! sorted Rust passes over the device rows the breakdown read once
//! ([`crate::device_pass`]) and the correlated host calls, joined by
//! binary search on (artifact, correlation id): at 10 M events the window,
//! the GROUP BY over every correlation id and the join re-run per outlier
//! kind took seconds each. Bandwidth is one grouped DataFrame plan.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::ops::Range;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::functions_aggregate::expr_fn::{count, max, median, min, sum};
use datafusion::logical_expr::{Expr, col, lit, when};
use datafusion::prelude::{SessionContext, cast, coalesce};
use serde::{Deserialize, Serialize};

use crate::accelerator::{DIRECT_LAUNCHES, host_calls_named, host_launch_calls};
use crate::common::{
    ArtifactScope, RecipeResult, collect, column, f64_at, i64_at, string_at, table,
};
use crate::device_pass::{DeviceOp, DeviceOps, Interner, for_each_batch, ints};
use crate::gpu_breakdown_params::{BreakdownParams, DeviceKey};

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

/// Host calls that can launch device work ([`host_launch_calls`]) in
/// `scope` with a correlation id, sorted by (artifact, correlation id,
/// start), each marked when launch statistics pair it ([`DIRECT_LAUNCHES`]
/// and [`MEMORY_LAUNCHES`], terminated): one scan serves idle time and
/// launch statistics.
pub(crate) async fn correlated_calls(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    strings: &mut Interner,
) -> RecipeResult<Vec<HostCall>> {
    let names: Vec<&str> = DIRECT_LAUNCHES
        .iter()
        .chain(MEMORY_LAUNCHES)
        .copied()
        .collect();
    let paired = host_calls_named(&names).and(col("dur_ns").gt_eq(lit(0i64)));
    let df = table(ctx, "trace_events")
        .await?
        .filter(
            scope
                .filter()
                .and(host_launch_calls())
                .and(col("correlation_id").is_not_null()),
        )?
        .select(vec![
            col("artifact_id"),
            col("correlation_id"),
            col("ts_ns"),
            col("dur_ns"),
            col("name"),
            coalesce(vec![paired, lit(false)]).alias("paired"),
        ])?;
    let mut calls = Vec::new();
    for_each_batch(df, |batch| {
        let artifact = strings.column(column(batch, "artifact_id")?)?;
        let name = strings.column(column(batch, "name")?)?;
        let corr = ints(column(batch, "correlation_id")?)?;
        let ts = ints(column(batch, "ts_ns")?)?;
        let dur = ints(column(batch, "dur_ns")?)?;
        let paired = column(batch, "paired")?.as_boolean_opt();
        let empty = strings.id("");
        for i in 0..batch.num_rows() {
            if let (Some(a), Some(c), Some(t)) = (artifact[i], corr[i], ts[i]) {
                calls.push(HostCall {
                    artifact: a,
                    correlation: c,
                    ts: t,
                    dur: dur[i],
                    name: name[i].unwrap_or(empty),
                    paired: paired.is_some_and(|p| p.is_valid(i) && p.value(i)),
                });
            }
        }
        Ok(())
    })
    .await?;
    calls.sort_unstable_by_key(|c| (c.artifact, c.correlation, c.ts));
    Ok(calls)
}

/// A host call carrying a correlation id.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HostCall {
    artifact: u32,
    correlation: i64,
    ts: i64,
    dur: Option<i64>,
    name: u32,
    /// Paired with its device work by launch statistics.
    paired: bool,
}

/// Positions of the calls of `op`'s (artifact, correlation id), earliest
/// first (empty without a correlation id).
fn calls_of(calls: &[HostCall], op: &DeviceOp) -> Range<usize> {
    let Some(corr) = op.correlation else {
        return 0..0;
    };
    let key = |c: &HostCall| (c.artifact, c.correlation);
    let from = calls.partition_point(|c| key(c) < (op.artifact, corr));
    from..calls.partition_point(|c| key(c) <= (op.artifact, corr))
}

/// Gaps per (artifact, device, stream) with their host-wait / kernel-wait /
/// other classification: one pass per stream in `(ts_ns, event_id)` order,
/// each operation's launch time looked up by binary search in the sorted
/// launch calls (a GROUP BY over every correlation id is quadratic in
/// DataFusion 55 at a million ids).
pub(crate) fn stream_idle(
    params: &BreakdownParams,
    ops: &mut DeviceOps,
    launches: &[HostCall],
) -> Vec<StreamIdle> {
    let strings = std::mem::take(&mut ops.strings);
    let mut out = Vec::new();
    for stream in ops.groups(DeviceOp::stream_order, |r| (r.artifact, r.device, r.stream)) {
        let Some(first) = stream.first() else {
            continue;
        };
        let mut row = StreamIdle {
            key: params.key(strings.get(first.artifact).to_owned(), first.device),
            stream: first.stream,
            operations: stream.len() as i64,
            span_ns: 0,
            busy_ns: 0,
            idle_ns: 0,
            gaps: 0,
            host_wait_ns: 0,
            host_wait_gaps: 0,
            kernel_wait_ns: 0,
            kernel_wait_gaps: 0,
            other_ns: 0,
            other_gaps: 0,
        };
        let mut reached: Option<i64> = None;
        for op in stream {
            if let Some(previous_end) = reached.filter(|p| op.ts > *p) {
                let gap = op.ts - previous_end;
                let launch = launches
                    .get(calls_of(launches, op))
                    .and_then(<[HostCall]>::first)
                    .map(|c| c.ts);
                let (ns, gaps) = if launch.is_some_and(|l| l > previous_end) {
                    (&mut row.host_wait_ns, &mut row.host_wait_gaps)
                } else if gap < params.thresholds.kernel_wait_ns {
                    (&mut row.kernel_wait_ns, &mut row.kernel_wait_gaps)
                } else {
                    (&mut row.other_ns, &mut row.other_gaps)
                };
                *ns += gap;
                *gaps += 1;
                row.idle_ns += gap;
                row.gaps += 1;
            }
            reached = Some(reached.map_or(op.end, |r| r.max(op.end)));
        }
        let first_start = stream.iter().map(|r| r.ts).min().unwrap_or(0);
        row.span_ns = reached.unwrap_or(0) - first_start;
        row.busy_ns = row.span_ns - row.idle_ns;
        out.push(row);
    }
    ops.strings = strings;
    out.sort_by(|a, b| (&a.key, a.stream).cmp(&(&b.key, b.stream)));
    out
}

/// The `limit` most extreme launches of one kind: a heap whose top is the
/// least extreme kept (smallest value, then largest event id).
#[derive(Debug, Default)]
struct Extremes {
    count: i64,
    kept: BinaryHeap<(Reverse<i64>, i64, LaunchPair)>,
}

/// One (launch call, device operation) pair, by position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct LaunchPair {
    call: usize,
    op: usize,
}

impl Extremes {
    fn offer(&mut self, value: i64, event_id: i64, pair: LaunchPair, limit: usize) {
        self.count += 1;
        self.kept.push((Reverse(value), event_id, pair));
        if self.kept.len() > limit {
            self.kept.pop();
        }
    }
}

/// Short kernels, runtime outliers and launch-delay outliers per artifact:
/// launch calls joined with the device work they launched on (artifact,
/// correlation id) by binary search over the sorted calls, in one pass.
pub(crate) fn launch_stats(
    params: &BreakdownParams,
    ops: &DeviceOps,
    calls: &[HostCall],
) -> Vec<LaunchStats> {
    let t = params.thresholds;
    let calls: Vec<HostCall> = calls.iter().filter(|c| c.paired).copied().collect();
    let mut per_artifact: BTreeMap<u32, (i64, [Extremes; 3])> = BTreeMap::new();
    for (o, op) in ops.rows.iter().enumerate() {
        for c in calls_of(&calls, op) {
            let Some(call) = calls.get(c) else { continue };
            let pair = LaunchPair { call: c, op: o };
            let cpu = call.dur.unwrap_or(0);
            let gpu = op.end - op.ts;
            let delay = (op.ts - call.ts - cpu).max(0);
            let (launches, kinds) = per_artifact.entry(op.artifact).or_default();
            *launches += 1;
            if cpu <= t.runtime_outlier_ns && gpu < cpu {
                kinds[0].offer(cpu - gpu, op.event_id, pair, params.limit);
            }
            if cpu > t.runtime_outlier_ns {
                kinds[1].offer(cpu, op.event_id, pair, params.limit);
            }
            if delay > t.launch_delay_outlier_ns {
                kinds[2].offer(delay, op.event_id, pair, params.limit);
            }
        }
    }
    let strings = &ops.strings;
    let thresholds = [
        t.runtime_outlier_ns,
        t.runtime_outlier_ns,
        t.launch_delay_outlier_ns,
    ];
    let mut out: Vec<LaunchStats> = per_artifact
        .into_iter()
        .map(|(artifact, (launches, kinds))| {
            let [short, runtime, delayed] = kinds;
            let outliers = |n: usize, e: Extremes| {
                let mut kept = e.kept.into_vec();
                kept.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
                LaunchOutliers {
                    count: e.count,
                    threshold_ns: thresholds[n],
                    examples: kept
                        .into_iter()
                        .map(|(_, _, pair)| {
                            let (call, op) = (&calls[pair.call], &ops.rows[pair.op]);
                            let cpu = call.dur.unwrap_or(0);
                            LaunchExample {
                                name: strings.get(op.name).to_owned(),
                                launch: strings.get(call.name).to_owned(),
                                correlation_id: op.correlation,
                                ts_ns: op.ts,
                                cpu_duration_ns: cpu,
                                gpu_duration_ns: op.end - op.ts,
                                launch_delay_ns: (op.ts - call.ts - cpu).max(0),
                            }
                        })
                        .collect(),
                }
            };
            let artifact_id = strings.get(artifact).to_owned();
            LaunchStats {
                rank: params.ranks.get(&artifact_id).copied(),
                launches,
                short_kernels: outliers(0, short),
                runtime_outliers: outliers(1, runtime),
                launch_delay_outliers: outliers(2, delayed),
                artifact_id,
            }
        })
        .collect();
    out.sort_by(|a, b| (a.rank, &a.artifact_id).cmp(&(b.rank, &b.artifact_id)));
    out
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
