//! PyTorch profiler questions over Kineto evidence: operators by self and
//! total CPU time with the device time each launched, synchronization and
//! compilation time, warmup versus steady state by `ProfilerStep#N`, and
//! repeated small operators.
//!
//! Device time follows the launches: a runtime call and the device
//! activity it launches share a `correlation_id` (in one artifact), and the
//! call sits inside the operators that made it on its thread
//! ([`crate::operator_device_time`]): self device time goes to the
//! innermost operator, inclusive device time to every enclosing one.

use datafusion::functions_aggregate::expr_fn::{count, sum};
use datafusion::logical_expr::{Expr, col, lit};
use datafusion::prelude::{DataFrame, SessionContext};
use serde::{Deserialize, Serialize};

use crate::common::{ArtifactScope, RecipeResult, collect, column, i64_at, string_at, table, utf8};
use crate::input_shapes::{ShapeRow, top_shapes};
use crate::operator_device_time::device_time_by_operator;

/// Operators at most this long on average count as small.
pub const SMALL_OP_NS: i64 = 10_000;
/// …when they repeat at least this often.
pub const REPEATED_MIN_COUNT: i64 = 100;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperatorRow {
    pub name: String,
    pub count: i64,
    pub total_ns: i64,
    pub self_ns: i64,
    /// Device activity (kernels, memcpy, memset; summed durations) launched
    /// while this operator was the innermost one.
    pub device_ns: i64,
    pub device_ops: i64,
    /// Device activity launched inside it: by it or any operator it called.
    #[serde(default)]
    pub device_inclusive_ns: i64,
    /// Heaviest input shapes (`record_shapes=True` traces), else empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shapes: Vec<ShapeRow>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRow {
    pub name: String,
    pub ts_ns: i64,
    pub dur_ns: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PytorchAnswer {
    /// Distinct operator names.
    pub operators: u64,
    /// Heaviest by self CPU time first.
    pub rows: Vec<OperatorRow>,
    pub sync_ns: i64,
    pub sync_calls: i64,
    /// Time in dynamo / inductor / compiled-region operators.
    pub compile_ns: i64,
    pub steps: Vec<StepRow>,
    /// First step's duration over the median of the others (warmup cost).
    pub warmup_ratio: Option<f64>,
    pub repeated_small: Vec<OperatorRow>,
}

async fn rows(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    filter: Expr,
) -> RecipeResult<DataFrame> {
    Ok(table(ctx, "trace_events").await?.filter(
        scope
            .filter()
            .and(filter)
            .and(col("dur_ns").gt_eq(lit(0i64))),
    )?)
}

pub async fn pytorch(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    limit: usize,
) -> RecipeResult<PytorchAnswer> {
    // Collective operators (`record_param_comms`, `nccl:*` with category
    // cpu_op) are kind `communication` but are operators too.
    let operator = utf8("kind").eq(lit("cpu_op")).or(utf8("kind")
        .eq(lit("communication"))
        .and(utf8("category").in_list(vec![lit("cpu_op"), lit("operator")], false)));
    let per_op = rows(ctx, scope, operator.clone())
        .await?
        .select(vec![
            utf8("name").alias("name"),
            col("dur_ns"),
            col("self_ns"),
        ])?
        .aggregate(
            vec![col("name")],
            vec![
                count(lit(1)).alias("count"),
                sum(col("dur_ns")).alias("total_ns"),
                sum(col("self_ns")).alias("self_ns"),
            ],
        )?;
    let device = device_time_by_operator(ctx, scope, operator.clone()).await?;
    let mut all = Vec::new();
    for batch in collect(per_op).await? {
        for i in 0..batch.num_rows() {
            let get =
                |c: &str| -> RecipeResult<i64> { Ok(i64_at(column(&batch, c)?, i).unwrap_or(0)) };
            all.push(OperatorRow {
                name: string_at(column(&batch, "name")?, i).unwrap_or_default(),
                count: get("count")?,
                total_ns: get("total_ns")?,
                self_ns: get("self_ns")?,
                device_ns: 0,
                device_ops: 0,
                device_inclusive_ns: 0,
                shapes: Vec::new(),
            });
        }
    }
    for row in &mut all {
        if let Some(d) = device.get(&row.name) {
            row.device_ns = d.self_ns;
            row.device_ops = d.self_ops;
            row.device_inclusive_ns = d.inclusive_ns;
        }
    }
    all.sort_by(|a, b| b.self_ns.cmp(&a.self_ns).then_with(|| a.name.cmp(&b.name)));
    let mut repeated_small: Vec<OperatorRow> = all
        .iter()
        .filter(|r| r.count >= REPEATED_MIN_COUNT && r.total_ns <= SMALL_OP_NS * r.count)
        .cloned()
        .collect();
    repeated_small.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
    repeated_small.truncate(limit);
    let operators = all.len() as u64;
    let compile_ns = all
        .iter()
        .filter(|r| is_compilation(&r.name))
        .map(|r| r.total_ns)
        .sum();
    all.truncate(limit);
    let names: Vec<String> = all.iter().map(|r| r.name.clone()).collect();
    let shaped = rows(ctx, scope, operator).await?.select(vec![
        utf8("name").alias("name"),
        col("dur_ns"),
        col("args_json"),
    ])?;
    let mut shapes = top_shapes(shaped, &names).await?;
    for row in &mut all {
        row.shapes = shapes.remove(&row.name).unwrap_or_default();
    }

    let (sync_ns, sync_calls) = sync_time(ctx, scope).await?;
    let steps = profiler_steps(ctx, scope).await?;
    let warmup_ratio = warmup(&steps);
    Ok(PytorchAnswer {
        operators,
        rows: all,
        sync_ns,
        sync_calls,
        compile_ns,
        steps,
        warmup_ratio,
        repeated_small,
    })
}

/// Operators that are torch.compile work (dynamo tracing, inductor
/// codegen, compiled-region entry), by the names the profiler records.
pub fn is_compilation(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("torchdynamo")
        || n.contains("_dynamo")
        || n.contains("inductor")
        || n.contains("compiledfunction")
        || n.starts_with("torch-compiled region")
}

async fn sync_time(ctx: &SessionContext, scope: &ArtifactScope) -> RecipeResult<(i64, i64)> {
    let calls = [
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaEventSynchronize",
        "cudaStreamWaitEvent",
    ];
    let df = rows(
        ctx,
        scope,
        utf8("kind").eq(lit("sync")).or(utf8("kind")
            .eq(lit("runtime_api"))
            .and(utf8("name").in_list(calls.iter().map(|c| lit(*c)).collect(), false))),
    )
    .await?
    .aggregate(
        vec![],
        vec![sum(col("dur_ns")).alias("t"), count(lit(1)).alias("n")],
    )?;
    let batches = collect(df).await?;
    Ok(match batches.first() {
        Some(b) if b.num_rows() > 0 => (
            i64_at(column(b, "t")?, 0).unwrap_or(0),
            i64_at(column(b, "n")?, 0).unwrap_or(0),
        ),
        _ => (0, 0),
    })
}

async fn profiler_steps(ctx: &SessionContext, scope: &ArtifactScope) -> RecipeResult<Vec<StepRow>> {
    let df = rows(
        ctx,
        scope,
        utf8("name")
            .like(lit("ProfilerStep#%"))
            .and(col("stream").is_null()),
    )
    .await?
    .select(vec![
        utf8("name").alias("name"),
        col("ts_ns"),
        col("dur_ns"),
    ])?
    .sort(vec![
        col("ts_ns").sort(true, false),
        col("name").sort(true, false),
    ])?;
    let mut steps = Vec::new();
    for batch in collect(df).await? {
        for i in 0..batch.num_rows() {
            steps.push(StepRow {
                name: string_at(column(&batch, "name")?, i).unwrap_or_default(),
                ts_ns: i64_at(column(&batch, "ts_ns")?, i).unwrap_or(0),
                dur_ns: i64_at(column(&batch, "dur_ns")?, i).unwrap_or(0),
            });
        }
    }
    Ok(steps)
}

/// First step over the median of the rest (needs ≥ 3 steps).
fn warmup(steps: &[StepRow]) -> Option<f64> {
    let (first, rest) = steps.split_first()?;
    if rest.len() < 2 {
        return None;
    }
    let mut d: Vec<i64> = rest.iter().map(|s| s.dur_ns).collect();
    d.sort_unstable();
    let median = d[d.len() / 2];
    (median > 0).then(|| first.dur_ns as f64 / median as f64)
}
