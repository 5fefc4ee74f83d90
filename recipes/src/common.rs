//! Pieces every recipe shares: scope filters, collecting typed columns, errors.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Int64Type, UInt64Type};
use datafusion::common::ScalarValue;
use datafusion::error::DataFusionError;
use datafusion::functions_aggregate::min_max::max_udaf;
use datafusion::logical_expr::expr::WindowFunction;
use datafusion::logical_expr::{
    Expr, ExprFunctionExt, SortExpr, WindowFrame, WindowFrameBound, WindowFrameUnits, col, lit,
};
use datafusion::prelude::{DataFrame, SessionContext, cast};
use flameox_extractors::trace_events::kinds::EventKind;

/// The artifacts a question is about (a run resolves to its artifacts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactScope {
    pub artifact_ids: Vec<String>,
}

impl ArtifactScope {
    pub fn one(artifact_id: impl Into<String>) -> Self {
        ArtifactScope {
            artifact_ids: vec![artifact_id.into()],
        }
    }

    /// `artifact_id IN (...)` — prunes files and row groups by statistics.
    pub fn filter(&self) -> Expr {
        let values: Vec<Expr> = self
            .artifact_ids
            .iter()
            .map(|id| lit(id.as_str()))
            .collect();
        col("artifact_id").in_list(values, false)
    }
}

/// Why a recipe failed.
#[derive(Debug, thiserror::Error)]
pub enum RecipeError {
    /// The query exceeded its memory pool.
    #[error("query exceeded its memory budget: {0}")]
    ResourcesExhausted(String),
    /// A named thing (frame, metric) does not exist; `closest` are candidates.
    #[error("{what} not found")]
    NotFound {
        what: String,
        closest: Vec<String>,
        valid: Vec<String>,
    },
    #[error("query failed: {0}")]
    DataFusion(DataFusionError),
}

impl From<DataFusionError> for RecipeError {
    fn from(err: DataFusionError) -> Self {
        let text = err.to_string();
        if text.contains("Resources exhausted")
            || matches!(err, DataFusionError::ResourcesExhausted(_))
        {
            RecipeError::ResourcesExhausted(text)
        } else {
            RecipeError::DataFusion(err)
        }
    }
}

pub type RecipeResult<T> = Result<T, RecipeError>;

/// A registered table as a DataFrame.
pub async fn table(ctx: &SessionContext, name: &str) -> RecipeResult<DataFrame> {
    Ok(ctx.table(name).await?)
}

/// Collects a DataFrame into batches.
pub async fn collect(df: DataFrame) -> RecipeResult<Vec<RecordBatch>> {
    Ok(df.collect().await?)
}

/// Reads a string cell of any string-like column (dictionary, Utf8, view).
pub fn string_at(array: &dyn Array, row: usize) -> Option<String> {
    if array.is_null(row) {
        return None;
    }
    match array.data_type() {
        DataType::Utf8 => Some(array.as_string::<i32>().value(row).to_owned()),
        DataType::LargeUtf8 => Some(array.as_string::<i64>().value(row).to_owned()),
        DataType::Utf8View => Some(array.as_string_view().value(row).to_owned()),
        DataType::Dictionary(_, _) => {
            // One key, not `normalized_keys()` (which copies every key of
            // the batch on each call: quadratic over a batch).
            let dict = array.as_any_dictionary();
            let key = match i64_at(dict.keys(), row) {
                Some(k) => usize::try_from(k).ok()?,
                None => dict.normalized_keys()[row],
            };
            string_at(dict.values().as_ref(), key)
        }
        _ => None,
    }
}

/// Reads an integer cell of an Int64 or UInt64 column as i64.
pub fn i64_at(array: &dyn Array, row: usize) -> Option<i64> {
    if array.is_null(row) {
        return None;
    }
    match array.data_type() {
        DataType::Int64 => Some(array.as_primitive::<Int64Type>().value(row)),
        DataType::UInt64 => i64::try_from(array.as_primitive::<UInt64Type>().value(row)).ok(),
        DataType::Int32 => Some(i64::from(
            array
                .as_primitive::<datafusion::arrow::datatypes::Int32Type>()
                .value(row),
        )),
        _ => None,
    }
}

/// Reads a Float64 (or integer) cell as f64.
pub fn f64_at(array: &dyn Array, row: usize) -> Option<f64> {
    if array.is_null(row) {
        return None;
    }
    match array.data_type() {
        DataType::Float64 => Some(
            array
                .as_primitive::<datafusion::arrow::datatypes::Float64Type>()
                .value(row),
        ),
        _ => i64_at(array, row).map(|v| v as f64),
    }
}

/// Reads a UInt64 cell.
pub fn u64_at(array: &dyn Array, row: usize) -> Option<u64> {
    if array.is_null(row) {
        return None;
    }
    match array.data_type() {
        DataType::UInt64 => Some(array.as_primitive::<UInt64Type>().value(row)),
        DataType::Int64 => u64::try_from(array.as_primitive::<Int64Type>().value(row)).ok(),
        _ => None,
    }
}

/// Column of a batch by name (recipes only ask for columns they selected).
pub fn column<'a>(batch: &'a RecordBatch, name: &str) -> RecipeResult<&'a dyn Array> {
    batch
        .column_by_name(name)
        .map(|c| c.as_ref())
        .ok_or_else(|| {
            RecipeError::DataFusion(DataFusionError::Plan(format!("missing column {name}")))
        })
}

/// Counts the rows of a DataFrame.
pub async fn count_rows(df: DataFrame) -> RecipeResult<u64> {
    Ok(df.count().await? as u64)
}

/// A column as plain `Utf8` (dictionary and view columns are cast), for
/// loops that read many rows without a per-row type dispatch.
pub fn as_utf8(array: &dyn Array) -> RecipeResult<ArrayRef> {
    datafusion::arrow::compute::cast(array, &DataType::Utf8)
        .map_err(|e| RecipeError::DataFusion(DataFusionError::ArrowError(Box::new(e), None)))
}

/// A column as plain `Int64` (other integer types are cast).
pub fn as_int64(array: &dyn Array) -> RecipeResult<ArrayRef> {
    datafusion::arrow::compute::cast(array, &DataType::Int64)
        .map_err(|e| RecipeError::DataFusion(DataFusionError::ArrowError(Box::new(e), None)))
}

/// Event kinds that are no frame of a call stack: instants, and the kinds
/// [`EventKind::in_stacks`] leaves out — scheduling rows (where a thread
/// ran, not what it did), interrupts and the profiler's own recording span
/// (Kineto's `PyTorch Profiler (N)`). The extractors leave the same kinds
/// out of `frame_totals`, so windowed and whole-trace stack answers add up
/// alike.
pub fn not_stack_kinds() -> Vec<&'static str> {
    std::iter::once(EventKind::Instant.name())
        .chain(
            EventKind::ALL
                .iter()
                .filter(|k| !k.in_stacks())
                .map(|k| k.name()),
        )
        .collect()
}

/// `kind NOT IN` [`not_stack_kinds`].
pub fn stack_kinds_only() -> Expr {
    col("kind").in_list(not_stack_kinds().into_iter().map(lit).collect(), true)
}

/// A string-like column as plain Utf8 (dictionary columns join and compare
/// reliably only once cast).
pub fn utf8(name: &str) -> Expr {
    cast(col(name), DataType::Utf8)
}

/// `max(end) OVER (PARTITION BY partition ORDER BY order ROWS BETWEEN
/// UNBOUNDED PRECEDING AND 1 PRECEDING)`: the furthest end among the rows
/// before this one (null on a partition's first row). Gaps and interval
/// unions are both computed from it.
pub fn max_end_before(end: Expr, partition: Vec<Expr>, order: Vec<SortExpr>) -> RecipeResult<Expr> {
    Ok(
        Expr::from(WindowFunction::new(Arc::clone(&max_udaf()), vec![end]))
            .partition_by(partition)
            .order_by(order)
            .window_frame(WindowFrame::new_bounds(
                WindowFrameUnits::Rows,
                WindowFrameBound::Preceding(ScalarValue::UInt64(None)),
                WindowFrameBound::Preceding(ScalarValue::UInt64(Some(1))),
            ))
            .build()?,
    )
}
