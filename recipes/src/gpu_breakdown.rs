//! HTA-grade GPU breakdowns per artifact (= rank), device and stream: the
//! temporal breakdown (compute / communication / memory / idle), the
//! communication–computation overlap and the kernel breakdown per type and
//! name live here; idle time per stream, launch statistics and copy
//! bandwidth live in [`crate::gpu_breakdown_ops`].
//!
//! Interval unions are one sorted Rust pass over the device rows read once
//! ([`crate::device_pass`]; the window plan it replaced took seconds at
//! 10 M events): rows of a device are ordered by `(ts_ns, event_id)` and
//! each adds what it reaches beyond the running maximum of earlier ends of
//! its class; summing those gives the union's length. Keeping one running
//! maximum per class (all, compute, compute or communication,
//! communication) gives every union in the same pass. Definitions
//! follow Holistic Trace Analysis (HTA 0.5.0) where they agree with the
//! spec; `docs/recipes.md` lists every difference.

use std::collections::{BTreeMap, BTreeSet};

use datafusion::arrow::datatypes::DataType;
use datafusion::functions_aggregate::expr_fn::{count, max, min, stddev, sum};
use datafusion::logical_expr::{Expr, col, lit, when};
use datafusion::prelude::{DataFrame, SessionContext, cast};
use serde::{Deserialize, Serialize};

use crate::accelerator::device_work_rows;
use crate::common::{
    ArtifactScope, RecipeResult, collect, column, f64_at, i64_at, string_at, table,
};
use crate::device_pass::{DeviceOp, DeviceOps};
use crate::gpu_breakdown_ops::{
    BandwidthRow, LaunchStats, StreamIdle, copy_bandwidth, correlated_calls, launch_stats,
    stream_idle,
};
pub use crate::gpu_breakdown_params::{BreakdownParams, DeviceKey, Section, Thresholds};

/// Time of one device split into compute, communication not hidden by
/// compute, memory not hidden by either, and idle; they sum to the span.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemporalRow {
    #[serde(flatten)]
    pub key: DeviceKey,
    /// Kernels, memcpy and memset on the device.
    pub operations: i64,
    /// First start to last end of the device's work.
    pub span_ns: i64,
    pub compute_ns: i64,
    pub communication_ns: i64,
    pub memory_ns: i64,
    pub idle_ns: i64,
    /// Shares of the span, in percent.
    pub compute_pct: f64,
    pub communication_pct: f64,
    pub memory_pct: f64,
    pub idle_pct: f64,
}

/// How much communication ran while computation ran on the same device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverlapRow {
    #[serde(flatten)]
    pub key: DeviceKey,
    /// Union of communication kernel time.
    pub communication_ns: i64,
    /// The part of it during which a computation kernel also ran.
    pub overlapped_ns: i64,
    /// `overlapped / communication` in percent; null without communication.
    pub overlap_pct: Option<f64>,
}

/// One kernel (or memcpy/memset) name's durations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelNameRow {
    /// `computation`, `communication` or `memory`.
    pub kernel_type: String,
    pub name: String,
    pub count: i64,
    pub total_ns: i64,
    pub min_ns: i64,
    pub max_ns: i64,
    pub mean_ns: f64,
    /// Sample standard deviation (0 for one instance), as HTA's pandas `std`.
    pub stddev_ns: f64,
}

/// Sum of durations of one kernel type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelTypeTotal {
    pub kernel_type: String,
    pub count: i64,
    pub total_ns: i64,
    /// Share of all device operation time of the artifact, in percent.
    pub pct: f64,
}

/// The kernel breakdown of one artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelBreakdown {
    pub rank: Option<i64>,
    pub artifact_id: String,
    pub types: Vec<KernelTypeTotal>,
    /// Distinct names; `rows` holds the heaviest `limit` of them.
    pub names: u64,
    pub truncated: bool,
    pub rows: Vec<KernelNameRow>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakdownAnswer {
    pub sections: Vec<Section>,
    pub thresholds: Thresholds,
    /// Artifacts in scope that have device work (kernels, memcpy, memset).
    pub artifacts_with_device_work: Vec<String>,
    /// Sections not asked for are null.
    pub temporal: Option<Vec<TemporalRow>>,
    /// Idle per stream; the answer keeps each artifact's most idle
    /// [`crate::accelerator_answer::STREAMS_SHOWN`] (ranks are digested
    /// from all of them first).
    pub idle: Option<Vec<StreamIdle>>,
    /// Streams in the idle section, all of them, when some were left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_streams_total: Option<usize>,
    pub overlap: Option<Vec<OverlapRow>>,
    pub kernels: Option<Vec<KernelBreakdown>>,
    pub launches: Option<Vec<LaunchStats>>,
    pub bandwidth: Option<Vec<BandwidthRow>>,
}

/// `kernel` → computation, `communication` → communication, memcpy and
/// memset → memory (HTA's kernel types, decided by the extractor's kind).
pub(crate) fn kernel_type_expr() -> RecipeResult<Expr> {
    let kind = || cast(col("kind"), DataType::Utf8);
    Ok(when(kind().eq(lit("kernel")), lit("computation"))
        .when(kind().eq(lit("communication")), lit("communication"))
        .otherwise(lit("memory"))?)
}

/// Device work rows in scope (terminated only).
pub(crate) async fn device_work(
    ctx: &SessionContext,
    scope: &ArtifactScope,
) -> RecipeResult<DataFrame> {
    Ok(table(ctx, "trace_events").await?.filter(
        scope
            .filter()
            .and(device_work_rows())
            .and(col("dur_ns").gt_eq(lit(0i64))),
    )?)
}

impl BreakdownParams {
    pub(crate) fn key(&self, artifact_id: String, device: Option<i64>) -> DeviceKey {
        DeviceKey {
            rank: self.ranks.get(&artifact_id).copied(),
            artifact_id,
            device,
        }
    }

    fn wants(&self, section: Section) -> bool {
        self.sections.contains(&section)
    }
}

/// The breakdown sections `params` asks for over `scope`.
pub async fn gpu_breakdown(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    params: &BreakdownParams,
) -> RecipeResult<BreakdownAnswer> {
    // Device rows read once for every section that walks them in order.
    let walks = [
        Section::Temporal,
        Section::Overlap,
        Section::Idle,
        Section::Launches,
    ]
    .iter()
    .any(|s| params.wants(*s));
    let (mut ops, artifacts_with_device_work) = if walks {
        let ops = DeviceOps::read(ctx, scope).await?;
        let present: BTreeSet<&str> = ops
            .rows
            .iter()
            .map(|r| ops.strings.get(r.artifact))
            .collect();
        let present = present.into_iter().map(str::to_owned).collect();
        (ops, present)
    } else {
        (
            DeviceOps::default(),
            artifacts_with_device_work(ctx, scope).await?,
        )
    };
    let calls = if params.wants(Section::Idle) || params.wants(Section::Launches) {
        correlated_calls(ctx, scope, &mut ops.strings).await?
    } else {
        Vec::new()
    };
    let unions = if params.wants(Section::Temporal) || params.wants(Section::Overlap) {
        device_unions(&mut ops, params)
    } else {
        Vec::new()
    };
    let temporal = params
        .wants(Section::Temporal)
        .then(|| unions.iter().map(DeviceUnions::temporal).collect());
    let overlap = params
        .wants(Section::Overlap)
        .then(|| unions.iter().map(DeviceUnions::overlap).collect());
    let kernels = match params.wants(Section::Kernels) {
        true => Some(kernel_breakdown(ctx, scope, params).await?),
        false => None,
    };
    let idle = match params.wants(Section::Idle) {
        true => Some(stream_idle(params, &mut ops, &calls)),
        false => None,
    };
    let launches = match params.wants(Section::Launches) {
        true => Some(launch_stats(params, &ops, &calls)),
        false => None,
    };
    let bandwidth = match params.wants(Section::Bandwidth) {
        true => Some(copy_bandwidth(ctx, scope, params).await?),
        false => None,
    };
    Ok(BreakdownAnswer {
        sections: params.sections.clone(),
        thresholds: params.thresholds,
        artifacts_with_device_work,
        temporal,
        idle,
        idle_streams_total: None,
        overlap,
        kernels,
        launches,
        bandwidth,
    })
}

/// Artifacts in scope with device work, sorted.
async fn artifacts_with_device_work(
    ctx: &SessionContext,
    scope: &ArtifactScope,
) -> RecipeResult<Vec<String>> {
    let present = device_work(ctx, scope)
        .await?
        .aggregate(
            vec![cast(col("artifact_id"), DataType::Utf8).alias("a")],
            vec![],
        )?
        .sort(vec![col("a").sort(true, false)])?;
    let mut out = Vec::new();
    for batch in collect(present).await? {
        for i in 0..batch.num_rows() {
            out.extend(string_at(column(&batch, "a")?, i));
        }
    }
    Ok(out)
}

/// Per device: the span and the lengths of four interval unions.
struct DeviceUnions {
    key: DeviceKey,
    operations: i64,
    span: i64,
    all: i64,
    compute: i64,
    compute_or_communication: i64,
    communication: i64,
}

impl DeviceUnions {
    fn temporal(&self) -> TemporalRow {
        let pct = |v: i64| {
            if self.span > 0 {
                v as f64 * 100.0 / self.span as f64
            } else {
                0.0
            }
        };
        let communication = self.compute_or_communication - self.compute;
        let memory = self.all - self.compute_or_communication;
        let idle = self.span - self.all;
        TemporalRow {
            key: self.key.clone(),
            operations: self.operations,
            span_ns: self.span,
            compute_ns: self.compute,
            communication_ns: communication,
            memory_ns: memory,
            idle_ns: idle,
            compute_pct: pct(self.compute),
            communication_pct: pct(communication),
            memory_pct: pct(memory),
            idle_pct: pct(idle),
        }
    }

    fn overlap(&self) -> OverlapRow {
        // |comm ∩ comp| = |comm| + |comp| − |comm ∪ comp|
        let overlapped = self.communication + self.compute - self.compute_or_communication;
        OverlapRow {
            key: self.key.clone(),
            communication_ns: self.communication,
            overlapped_ns: overlapped,
            overlap_pct: (self.communication > 0)
                .then(|| overlapped as f64 * 100.0 / self.communication as f64),
        }
    }
}

/// One sorted pass per device in `(ts_ns, event_id)` order: the running
/// maximum of earlier ends of each class, and what each row adds beyond it
/// to its classes' unions.
fn device_unions(ops: &mut DeviceOps, params: &BreakdownParams) -> Vec<DeviceUnions> {
    let strings = std::mem::take(&mut ops.strings);
    let compute_kind = strings.find("kernel");
    let communication_kind = strings.find("communication");
    let mut out = Vec::new();
    for device in ops.groups(DeviceOp::device_order, |r| (r.artifact, r.device)) {
        let Some(first) = device.first() else {
            continue;
        };
        // all, compute, compute or communication, communication
        let mut reached: [Option<i64>; 4] = [None; 4];
        let mut union = [0i64; 4];
        for op in device {
            let compute = compute_kind == Some(op.kind);
            let communication = communication_kind == Some(op.kind);
            let member = [true, compute, compute || communication, communication];
            for class in 0..4 {
                if member[class] {
                    let from = reached[class].map_or(op.ts, |r| r.max(op.ts));
                    union[class] += (op.end - from).max(0);
                    reached[class] = Some(reached[class].map_or(op.end, |r| r.max(op.end)));
                }
            }
        }
        let span_start = device.iter().map(|r| r.ts).min().unwrap_or(0);
        let span_end = device.iter().map(|r| r.end).max().unwrap_or(0);
        out.push(DeviceUnions {
            key: params.key(strings.get(first.artifact).to_owned(), first.device),
            operations: device.len() as i64,
            span: span_end - span_start,
            all: union[0],
            compute: union[1],
            compute_or_communication: union[2],
            communication: union[3],
        });
    }
    ops.strings = strings;
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out
}

/// Per artifact: duration statistics per (type, name), heaviest first.
async fn kernel_breakdown(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    params: &BreakdownParams,
) -> RecipeResult<Vec<KernelBreakdown>> {
    let grouped = device_work(ctx, scope)
        .await?
        .select(vec![
            cast(col("artifact_id"), DataType::Utf8).alias("artifact"),
            kernel_type_expr()?.alias("kernel_type"),
            cast(col("name"), DataType::Utf8).alias("name"),
            col("dur_ns"),
        ])?
        .aggregate(
            vec![col("artifact"), col("kernel_type"), col("name")],
            vec![
                count(lit(1)).alias("count"),
                sum(col("dur_ns")).alias("total"),
                min(col("dur_ns")).alias("min"),
                max(col("dur_ns")).alias("max"),
                cast(
                    stddev(cast(col("dur_ns"), DataType::Float64)),
                    DataType::Float64,
                )
                .alias("stddev"),
            ],
        )?;
    let mut per_artifact: BTreeMap<String, Vec<KernelNameRow>> = BTreeMap::new();
    for batch in collect(grouped).await? {
        for i in 0..batch.num_rows() {
            let count = i64_at(column(&batch, "count")?, i).unwrap_or(0);
            let total = i64_at(column(&batch, "total")?, i).unwrap_or(0);
            per_artifact
                .entry(string_at(column(&batch, "artifact")?, i).unwrap_or_default())
                .or_default()
                .push(KernelNameRow {
                    kernel_type: string_at(column(&batch, "kernel_type")?, i).unwrap_or_default(),
                    name: string_at(column(&batch, "name")?, i).unwrap_or_default(),
                    count,
                    total_ns: total,
                    min_ns: i64_at(column(&batch, "min")?, i).unwrap_or(0),
                    max_ns: i64_at(column(&batch, "max")?, i).unwrap_or(0),
                    mean_ns: if count > 0 {
                        total as f64 / count as f64
                    } else {
                        0.0
                    },
                    stddev_ns: f64_at(column(&batch, "stddev")?, i).unwrap_or(0.0),
                });
        }
    }
    let mut out: Vec<KernelBreakdown> = per_artifact
        .into_iter()
        .map(|(artifact_id, mut rows)| {
            let grand: i64 = rows.iter().map(|r| r.total_ns).sum();
            let mut types: BTreeMap<String, (i64, i64)> = BTreeMap::new();
            for r in &rows {
                let t = types.entry(r.kernel_type.clone()).or_default();
                t.0 += r.count;
                t.1 += r.total_ns;
            }
            let mut types: Vec<KernelTypeTotal> = types
                .into_iter()
                .map(|(kernel_type, (count, total_ns))| KernelTypeTotal {
                    kernel_type,
                    count,
                    total_ns,
                    pct: if grand > 0 {
                        total_ns as f64 * 100.0 / grand as f64
                    } else {
                        0.0
                    },
                })
                .collect();
            types.sort_by(|a, b| {
                b.total_ns
                    .cmp(&a.total_ns)
                    .then_with(|| a.kernel_type.cmp(&b.kernel_type))
            });
            rows.sort_by(|a, b| {
                b.total_ns
                    .cmp(&a.total_ns)
                    .then_with(|| a.name.cmp(&b.name))
                    .then_with(|| a.kernel_type.cmp(&b.kernel_type))
            });
            let names = rows.len() as u64;
            rows.truncate(params.limit);
            KernelBreakdown {
                rank: params.ranks.get(&artifact_id).copied(),
                artifact_id,
                types,
                names,
                truncated: (rows.len() as u64) < names,
                rows,
            }
        })
        .collect();
    out.sort_by(|a, b| (a.rank, &a.artifact_id).cmp(&(b.rank, &b.artifact_id)));
    Ok(out)
}
