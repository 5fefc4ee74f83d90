//! The evidence `analyze compare` and `analyze scaling` read for the member
//! runs of a run set: which measurement names each extraction has, the
//! non-warmup samples of one metric, and per-frame self totals from
//! `frame_totals`. One query per question over all members (scoped by
//! `(run_id, artifact_id)` extraction pairs, so a file imported twice with
//! other labels never leaks into the wrong run); the statistics happen in
//! the engine over the small typed results.

use datafusion::functions_aggregate::expr_fn::{count, min, sum};
use datafusion::logical_expr::{Expr, col, lit};
use datafusion::prelude::{DataFrame, SessionContext, cast};
use serde::{Deserialize, Serialize};

use crate::common::{RecipeResult, collect, column, i64_at, string_at, table, utf8};
use crate::measurements::{MeasurementRow, MeasurementScope, decode_rows, scope_filter};

/// One measurement name as one extraction has it (warmups left out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtractionMetric {
    pub run_id: String,
    pub artifact_id: String,
    pub name: String,
    pub unit: String,
    pub samples: u64,
}

/// One frame's self total in one extraction under one metric.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtractionFrame {
    pub run_id: String,
    pub artifact_id: String,
    pub frame: String,
    pub function: String,
    pub self_value: i64,
}

fn scoped(df: DataFrame, scope: &MeasurementScope) -> RecipeResult<DataFrame> {
    Ok(match scope_filter(scope) {
        Some(filter) => df.filter(filter)?,
        None => df,
    })
}

fn text_cell(
    batch: &datafusion::arrow::array::RecordBatch,
    name: &str,
    row: usize,
) -> RecipeResult<String> {
    Ok(string_at(column(batch, name)?, row).unwrap_or_default())
}

fn text(name: &str) -> Expr {
    utf8(name).alias(name)
}

/// Non-warmup measurement names per extraction, with their units and counts.
pub async fn metric_names(
    ctx: &SessionContext,
    scope: &MeasurementScope,
) -> RecipeResult<Vec<ExtractionMetric>> {
    let df = scoped(table(ctx, "measurements").await?, scope)?
        .filter(col("is_warmup").eq(lit(false)))?
        .aggregate(
            vec![
                text("run_id"),
                text("artifact_id"),
                text("name"),
                text("unit"),
            ],
            vec![count(lit(1)).alias("samples")],
        )?;
    let mut out = Vec::new();
    for batch in collect(df).await? {
        for i in 0..batch.num_rows() {
            let get = |name: &str| text_cell(&batch, name, i);
            out.push(ExtractionMetric {
                run_id: get("run_id")?,
                artifact_id: get("artifact_id")?,
                name: get("name")?,
                unit: get("unit")?,
                samples: i64_at(column(&batch, "samples")?, i).unwrap_or(0).max(0) as u64,
            });
        }
    }
    out.sort_by(|a, b| {
        (&a.run_id, &a.artifact_id, &a.name, &a.unit).cmp(&(
            &b.run_id,
            &b.artifact_id,
            &b.name,
            &b.unit,
        ))
    });
    Ok(out)
}

/// The non-warmup samples named exactly `name`, in `(run_id, artifact_id,
/// sample_index, measurement_id)` order.
pub async fn metric_samples(
    ctx: &SessionContext,
    scope: &MeasurementScope,
    name: &str,
) -> RecipeResult<Vec<MeasurementRow>> {
    let df = scoped(table(ctx, "measurements").await?, scope)?
        .filter(col("is_warmup").eq(lit(false)))?
        .filter(utf8("name").eq(lit(name)))?
        .sort(vec![
            utf8("run_id").sort(true, false),
            utf8("artifact_id").sort(true, false),
            col("sample_index").sort(true, false),
            col("measurement_id").sort(true, false),
        ])?;
    decode_rows(collect(df).await?)
}

/// `(run_id, artifact_id, metric)` of every extraction in scope with
/// `frame_totals` rows, sorted.
pub async fn frame_metrics(
    ctx: &SessionContext,
    scope: &MeasurementScope,
) -> RecipeResult<Vec<(String, String, String)>> {
    let df = scoped(table(ctx, "frame_totals").await?, scope)?.aggregate(
        vec![
            text("run_id"),
            text("artifact_id"),
            cast(col("metric"), datafusion::arrow::datatypes::DataType::Utf8).alias("metric"),
        ],
        vec![],
    )?;
    let mut out = Vec::new();
    for batch in collect(df).await? {
        for i in 0..batch.num_rows() {
            let get = |name: &str| text_cell(&batch, name, i);
            out.push((get("run_id")?, get("artifact_id")?, get("metric")?));
        }
    }
    out.sort();
    Ok(out)
}

/// Self totals per extraction and logical key under `metric`.
pub async fn frame_self_totals(
    ctx: &SessionContext,
    scope: &MeasurementScope,
    metric: &str,
) -> RecipeResult<Vec<ExtractionFrame>> {
    let df = scoped(table(ctx, "frame_totals").await?, scope)?
        .filter(utf8("metric").eq(lit(metric)))?
        .aggregate(
            vec![
                text("run_id"),
                text("artifact_id"),
                col("logical_key").alias("frame"),
            ],
            vec![
                min(utf8("function")).alias("function"),
                sum(col("self_value")).alias("self_value"),
            ],
        )?;
    let mut out = Vec::new();
    for batch in collect(df).await? {
        for i in 0..batch.num_rows() {
            let get = |name: &str| text_cell(&batch, name, i);
            out.push(ExtractionFrame {
                run_id: get("run_id")?,
                artifact_id: get("artifact_id")?,
                frame: get("frame")?,
                function: get("function")?,
                self_value: i64_at(column(&batch, "self_value")?, i).unwrap_or(0),
            });
        }
    }
    out.sort_by(|a, b| {
        (&a.run_id, &a.artifact_id, &a.frame).cmp(&(&b.run_id, &b.artifact_id, &b.frame))
    });
    Ok(out)
}
