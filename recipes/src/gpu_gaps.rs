//! Where the GPU waited, and what the host was doing meanwhile: idle gaps
//! per (artifact, device, stream) at least a threshold long, and
//! low-utilization chunks (each device's active span cut into N equal
//! chunks, those whose busy fraction is under a threshold), each with the
//! host activity during it ([`crate::host_activity`]).
//!
//! Gaps use the accelerator-launches definition (start minus the running
//! maximum of earlier ends on the stream, when positive — the same window
//! function, [`crate::accelerator::stream_gap_rows`]), over kernels, memcpy
//! and memset: a stream copying memory is not idle. A chunk's busy time is
//! the union of the device's activity intervals (every stream) clipped to
//! the chunk. Only the `limit` longest gaps and `limit` least busy chunks
//! get the host join, so the work stays bounded.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::functions::core::expr_fn::{greatest, least};
use datafusion::functions_aggregate::expr_fn::{count, max, min, sum};
use datafusion::logical_expr::{Expr, JoinType, col, lit};
use datafusion::prelude::{DataFrame, SessionContext, cast, coalesce};
use serde::{Deserialize, Serialize};

use crate::accelerator::{device_activity_rows, events, stream_gap_rows};
use crate::common::{
    ArtifactScope, RecipeError, RecipeResult, collect, column, f64_at, i64_at, max_end_before,
    newly_covered, string_at, utf8,
};
use crate::host_activity::{HostActivity, TimeWindow, host_activity};

/// Host slice names reported per gap or chunk.
pub const HOST_TOP: usize = 5;

/// Stands in for a null device or stream in join keys (nulls never join).
const NO_ID: i64 = i64::MIN;

#[derive(Debug, Clone, PartialEq)]
pub struct GapOptions {
    /// Gaps at least this long (ns) are reported.
    pub min_gap_ns: i64,
    /// Chunks each device's active span is cut into.
    pub chunks: usize,
    /// Chunks busy less than this fraction (0..=1) are low-utilization.
    pub below: f64,
    /// Gaps and chunks returned (each).
    pub limit: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuGap {
    pub artifact_id: String,
    pub device: Option<i64>,
    pub stream: Option<i64>,
    /// The running maximum of earlier ends on the stream.
    pub start_ns: i64,
    /// The start of the activity after the gap.
    pub end_ns: i64,
    pub duration_ns: i64,
    /// The activity that ended at `start_ns` (the smallest name on a tie).
    pub before: Option<String>,
    pub after: String,
    pub host: HostActivity,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceSpan {
    pub artifact_id: String,
    pub device: Option<i64>,
    /// First activity start to last activity end on the device.
    pub start_ns: i64,
    pub end_ns: i64,
    /// Chunks the span was cut into (fewer than asked when the span is
    /// shorter than that many ns; 0 for an empty span).
    pub chunks: i64,
    pub chunks_below: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LowUtilizationChunk {
    pub artifact_id: String,
    pub device: Option<i64>,
    /// 0-based position in the device's span.
    pub chunk: i64,
    pub start_ns: i64,
    pub end_ns: i64,
    pub busy_ns: i64,
    pub busy_fraction: f64,
    pub host: HostActivity,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuGapsAnswer {
    /// Kernels, memcpy or memset rows were found in scope.
    pub has_device_activity: bool,
    /// Gaps at least `min_gap_ns` long, all of them.
    pub gaps_found: u64,
    pub gaps_total_ns: i64,
    /// The longest `limit` gaps, longest first.
    pub gaps: Vec<GpuGap>,
    pub devices: Vec<DeviceSpan>,
    /// Chunks under the threshold, all devices.
    pub low_utilization_found: u64,
    /// The `limit` least busy of them, least busy first.
    pub low_utilization: Vec<LowUtilizationChunk>,
}

fn key(name: &str) -> Expr {
    coalesce(vec![col(name), lit(NO_ID)])
}

fn from_key(v: Option<i64>) -> Option<i64> {
    v.filter(|v| *v != NO_ID)
}

pub async fn gpu_gaps(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    options: &GapOptions,
) -> RecipeResult<GpuGapsAnswer> {
    let (gaps_found, gaps_total_ns, mut gaps, gap_pids) = longest_gaps(ctx, scope, options).await?;
    let (spans, pids) = device_spans(ctx, scope).await?;
    let (devices, low_utilization_found, mut chunks) =
        low_utilization(ctx, scope, options, &spans).await?;

    // One host join for every window (gaps first, then chunks).
    let mut windows = Vec::new();
    for (i, g) in gaps.iter().enumerate() {
        windows.push(TimeWindow {
            id: i as i64,
            artifact_id: g.artifact_id.clone(),
            pid: gap_pids.get(i).copied().flatten(),
            start_ns: g.start_ns,
            end_ns: g.end_ns,
        });
    }
    for (i, c) in chunks.iter().enumerate() {
        windows.push(TimeWindow {
            id: (gaps.len() + i) as i64,
            artifact_id: c.artifact_id.clone(),
            pid: pids
                .get(&(c.artifact_id.clone(), c.device.unwrap_or(NO_ID)))
                .copied()
                .flatten(),
            start_ns: c.start_ns,
            end_ns: c.end_ns,
        });
    }
    let mut host = host_activity(ctx, &windows, HOST_TOP).await?;
    for (i, g) in gaps.iter_mut().enumerate() {
        g.host = host.remove(&(i as i64)).unwrap_or_default();
    }
    let offset = gaps.len();
    for (i, c) in chunks.iter_mut().enumerate() {
        c.host = host.remove(&((offset + i) as i64)).unwrap_or_default();
    }
    Ok(GpuGapsAnswer {
        has_device_activity: !spans.is_empty(),
        gaps_found,
        gaps_total_ns,
        gaps,
        devices,
        low_utilization_found,
        low_utilization: chunks,
    })
}

type Gaps = (u64, i64, Vec<GpuGap>, Vec<Option<i64>>);

/// Count and total of gaps ≥ the threshold, and the longest `limit` with
/// the activity before and after each (and the pid of the one after).
async fn longest_gaps(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    options: &GapOptions,
) -> RecipeResult<Gaps> {
    let gaps = stream_gap_rows(ctx, scope, device_activity_rows(), None)
        .await?
        .filter(
            col("gap")
                .gt(lit(0i64))
                .and(col("gap").gt_eq(lit(options.min_gap_ns))),
        )?;
    let totals = gaps.clone().aggregate(
        vec![],
        vec![count(lit(1)).alias("n"), sum(col("gap")).alias("t")],
    )?;
    let (mut found, mut total) = (0u64, 0i64);
    for batch in collect(totals).await? {
        if batch.num_rows() > 0 {
            found = i64_at(column(&batch, "n")?, 0).unwrap_or(0).max(0) as u64;
            total = i64_at(column(&batch, "t")?, 0).unwrap_or(0);
        }
    }
    let order = || {
        vec![
            col("g_gap").sort(false, false),
            col("g_artifact").sort(true, false),
            col("g_dev").sort(true, false),
            col("g_stream").sort(true, false),
            col("g_end").sort(true, false),
        ]
    };
    let top = gaps
        .select(vec![
            utf8("artifact_id").alias("g_artifact"),
            key("device").alias("g_dev"),
            key("stream").alias("g_stream"),
            col("pid").alias("g_pid"),
            col("previous_end").alias("g_start"),
            col("ts_ns").alias("g_end"),
            col("gap").alias("g_gap"),
            utf8("name").alias("g_after"),
        ])?
        .sort(order())?
        .limit(0, Some(options.limit))?;
    let ends = events(ctx, scope, device_activity_rows(), None)
        .await?
        .select(vec![
            utf8("artifact_id").alias("b_artifact"),
            key("device").alias("b_dev"),
            key("stream").alias("b_stream"),
            (col("ts_ns") + col("dur_ns")).alias("b_end"),
            utf8("name").alias("b_name"),
        ])?;
    let named = top
        .join(
            ends,
            JoinType::Left,
            &["g_artifact", "g_dev", "g_stream", "g_start"],
            &["b_artifact", "b_dev", "b_stream", "b_end"],
            None,
        )?
        .aggregate(
            vec![
                col("g_artifact"),
                col("g_dev"),
                col("g_stream"),
                col("g_pid"),
                col("g_start"),
                col("g_end"),
                col("g_gap"),
                col("g_after"),
            ],
            vec![min(col("b_name")).alias("g_before")],
        )?
        .sort(order())?;
    let (mut out, mut pids) = (Vec::new(), Vec::new());
    for batch in collect(named).await? {
        for i in 0..batch.num_rows() {
            let get = |c: &str| -> RecipeResult<Option<i64>> { Ok(i64_at(column(&batch, c)?, i)) };
            out.push(GpuGap {
                artifact_id: string_at(column(&batch, "g_artifact")?, i).unwrap_or_default(),
                device: from_key(get("g_dev")?),
                stream: from_key(get("g_stream")?),
                start_ns: get("g_start")?.unwrap_or(0),
                end_ns: get("g_end")?.unwrap_or(0),
                duration_ns: get("g_gap")?.unwrap_or(0),
                before: string_at(column(&batch, "g_before")?, i),
                after: string_at(column(&batch, "g_after")?, i).unwrap_or_default(),
                host: HostActivity::default(),
            });
            pids.push(get("g_pid")?);
        }
    }
    Ok((found, total, out, pids))
}

/// Device activity rows keyed for joins: artifact, device key, pid, start, end.
async fn device_rows(ctx: &SessionContext, scope: &ArtifactScope) -> RecipeResult<DataFrame> {
    Ok(events(ctx, scope, device_activity_rows(), None)
        .await?
        .select(vec![
            utf8("artifact_id").alias("d_artifact"),
            key("device").alias("d_dev"),
            col("pid").alias("d_pid"),
            col("ts_ns").alias("d_start"),
            (col("ts_ns") + col("dur_ns")).alias("d_end"),
        ])?)
}

type Spans = (
    Vec<(String, i64, i64, i64)>,
    BTreeMap<(String, i64), Option<i64>>,
);

/// Per (artifact, device key): first start and last end; and the device's
/// pid when all its rows share one.
async fn device_spans(ctx: &SessionContext, scope: &ArtifactScope) -> RecipeResult<Spans> {
    let spans = device_rows(ctx, scope)
        .await?
        .aggregate(
            vec![col("d_artifact"), col("d_dev")],
            vec![
                min(col("d_start")).alias("s"),
                max(col("d_end")).alias("e"),
                min(col("d_pid")).alias("pmin"),
                max(col("d_pid")).alias("pmax"),
            ],
        )?
        .sort(vec![
            col("d_artifact").sort(true, false),
            col("d_dev").sort(true, false),
        ])?;
    let (mut out, mut pids) = (Vec::new(), BTreeMap::new());
    for batch in collect(spans).await? {
        for i in 0..batch.num_rows() {
            let get = |c: &str| -> RecipeResult<Option<i64>> { Ok(i64_at(column(&batch, c)?, i)) };
            let artifact = string_at(column(&batch, "d_artifact")?, i).unwrap_or_default();
            let dev = get("d_dev")?.unwrap_or(NO_ID);
            let pid = match (get("pmin")?, get("pmax")?) {
                (Some(a), Some(b)) if a == b => Some(a),
                _ => None,
            };
            pids.insert((artifact.clone(), dev), pid);
            out.push((
                artifact,
                dev,
                get("s")?.unwrap_or(0),
                get("e")?.unwrap_or(0),
            ));
        }
    }
    Ok((out, pids))
}

/// The chunk table: per device span, `n` chunks `[start + i·len/n, start +
/// (i+1)·len/n)` with `n = min(chunks, len)` so no chunk is empty.
fn chunk_table(
    ctx: &SessionContext,
    spans: &[(String, i64, i64, i64)],
    chunks: usize,
) -> RecipeResult<(DataFrame, Vec<i64>)> {
    let (mut artifact, mut dev, mut index, mut start, mut end) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut counts = Vec::new();
    for (a, d, s, e) in spans {
        let len = i128::from(*e) - i128::from(*s);
        let n = (chunks as i128).min(len.max(0));
        counts.push(n as i64);
        for i in 0..n {
            artifact.push(a.clone());
            dev.push(*d);
            index.push(i as i64);
            start.push((i128::from(*s) + i * len / n) as i64);
            end.push((i128::from(*s) + (i + 1) * len / n) as i64);
        }
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("c_artifact", DataType::Utf8, false),
        Field::new("c_dev", DataType::Int64, false),
        Field::new("c_index", DataType::Int64, false),
        Field::new("c_start", DataType::Int64, false),
        Field::new("c_end", DataType::Int64, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(artifact)),
        Arc::new(Int64Array::from(dev)),
        Arc::new(Int64Array::from(index)),
        Arc::new(Int64Array::from(start)),
        Arc::new(Int64Array::from(end)),
    ];
    let batch =
        RecordBatch::try_new(schema, columns).map_err(|e| RecipeError::DataFusion(e.into()))?;
    Ok((ctx.read_batch(batch)?, counts))
}

type LowUse = (Vec<DeviceSpan>, u64, Vec<LowUtilizationChunk>);

/// Busy fraction per chunk; the chunks under `below`, least busy first.
async fn low_utilization(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    options: &GapOptions,
    spans: &[(String, i64, i64, i64)],
) -> RecipeResult<LowUse> {
    let (chunks, counts) = chunk_table(ctx, spans, options.chunks)?;
    let previous_end = max_end_before(
        col("ce"),
        vec![col("c_artifact"), col("c_dev"), col("c_index")],
        vec![col("cs").sort(true, false), col("ce").sort(true, false)],
    )?
    .alias("previous_end");
    let busy = device_rows(ctx, scope)
        .await?
        .join_on(
            chunks.clone(),
            JoinType::Inner,
            [
                col("d_artifact").eq(col("c_artifact")),
                col("d_dev").eq(col("c_dev")),
                col("d_start").lt(col("c_end")),
                col("d_end").gt(col("c_start")),
            ],
        )?
        .select(vec![
            col("c_artifact"),
            col("c_dev"),
            col("c_index"),
            greatest(vec![col("d_start"), col("c_start")]).alias("cs"),
            least(vec![col("d_end"), col("c_end")]).alias("ce"),
        ])?
        .window(vec![previous_end])?
        .aggregate(
            vec![
                col("c_artifact").alias("b_artifact"),
                col("c_dev").alias("b_dev"),
                col("c_index").alias("b_index"),
            ],
            vec![sum(newly_covered(col("cs"), col("ce"), col("previous_end"))).alias("busy")],
        )?;
    let below = chunks
        .join(
            busy,
            JoinType::Left,
            &["c_artifact", "c_dev", "c_index"],
            &["b_artifact", "b_dev", "b_index"],
            None,
        )?
        .select(vec![
            col("c_artifact"),
            col("c_dev"),
            col("c_index"),
            col("c_start"),
            col("c_end"),
            coalesce(vec![col("busy"), lit(0i64)]).alias("busy"),
        ])?
        .with_column(
            "fraction",
            cast(col("busy"), DataType::Float64)
                / cast(col("c_end") - col("c_start"), DataType::Float64),
        )?
        .filter(col("fraction").lt(lit(options.below)))?
        .cache()
        .await?;
    let per_device = below.clone().aggregate(
        vec![col("c_artifact"), col("c_dev")],
        vec![count(lit(1)).alias("n")],
    )?;
    let mut below_counts: BTreeMap<(String, i64), i64> = BTreeMap::new();
    for batch in collect(per_device).await? {
        for i in 0..batch.num_rows() {
            let a = string_at(column(&batch, "c_artifact")?, i).unwrap_or_default();
            let d = i64_at(column(&batch, "c_dev")?, i).unwrap_or(NO_ID);
            below_counts.insert((a, d), i64_at(column(&batch, "n")?, i).unwrap_or(0));
        }
    }
    let devices: Vec<DeviceSpan> = spans
        .iter()
        .zip(counts)
        .map(|((a, d, s, e), n)| DeviceSpan {
            artifact_id: a.clone(),
            device: from_key(Some(*d)),
            start_ns: *s,
            end_ns: *e,
            chunks: n,
            chunks_below: below_counts.get(&(a.clone(), *d)).copied().unwrap_or(0),
        })
        .collect();
    let found = below_counts.values().map(|n| (*n).max(0) as u64).sum();
    let least_busy = below
        .sort(vec![
            col("fraction").sort(true, false),
            col("c_artifact").sort(true, false),
            col("c_dev").sort(true, false),
            col("c_index").sort(true, false),
        ])?
        .limit(0, Some(options.limit))?;
    let mut out = Vec::new();
    for batch in collect(least_busy).await? {
        for i in 0..batch.num_rows() {
            let get =
                |c: &str| -> RecipeResult<i64> { Ok(i64_at(column(&batch, c)?, i).unwrap_or(0)) };
            out.push(LowUtilizationChunk {
                artifact_id: string_at(column(&batch, "c_artifact")?, i).unwrap_or_default(),
                device: from_key(Some(get("c_dev")?)),
                chunk: get("c_index")?,
                start_ns: get("c_start")?,
                end_ns: get("c_end")?,
                busy_ns: get("busy")?,
                busy_fraction: f64_at(column(&batch, "fraction")?, i).unwrap_or(0.0),
                host: HostActivity::default(),
            });
        }
    }
    Ok((devices, found, out))
}
