//! `measurements query`: the rows of the `measurements` table (benchmark
//! samples, run resources) under curated filters — scope, name prefix,
//! warmups in or out — in `(name, artifact_id, sample_index,
//! measurement_id)` order, paged by keyset (never OFFSET).
//!
//! The key is unique (`measurement_id` digests artifact, name, parameters,
//! variant and index), so pages never repeat or skip a row.

use datafusion::functions::expr_fn::starts_with;
use datafusion::logical_expr::{Expr, col, lit};
use datafusion::prelude::{DataFrame, SessionContext};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::{
    RecipeResult, collect, column, count_rows, f64_at, i64_at, string_at, table, utf8,
};

/// Which extractions' rows a query reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MeasurementScope {
    /// Every row of the commit.
    All,
    /// Rows of these artifacts, any extraction.
    Artifacts(Vec<String>),
    /// Rows of exactly these extractions: `(run_id on the rows,
    /// artifact_id)` pairs (a run's generations; a reused generation's rows
    /// carry the run that first extracted it).
    Extractions(Vec<(String, String)>),
}

/// The sort key of a row, and the cursor's position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasurementKey {
    pub name: String,
    pub artifact_id: String,
    pub sample_index: i64,
    pub measurement_id: String,
}

/// What `measurements query` asks.
#[derive(Debug, Clone)]
pub struct MeasurementQuery {
    pub scope: MeasurementScope,
    pub name_prefix: Option<String>,
    pub include_warmups: bool,
    pub limit: usize,
    pub after: Option<MeasurementKey>,
    /// The match count from an earlier page (the cursor carries it).
    pub known_total: Option<u64>,
}

/// One measured value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasurementRow {
    pub measurement_id: String,
    /// The run whose import extracted the row.
    pub run_id: String,
    pub artifact_id: String,
    pub name: String,
    pub value: f64,
    pub unit: String,
    pub sample_index: i64,
    pub is_warmup: bool,
    pub trial_id: Option<String>,
    pub variant: Option<String>,
    /// `parameters_json` as a JSON object.
    pub parameters: Option<Value>,
}

/// A page of measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasurementAnswer {
    pub rows: Vec<MeasurementRow>,
    /// Rows matching the filters (all pages).
    pub total: u64,
    pub has_more: bool,
}

/// The filter selecting a scope's rows (`None` for every row); any table
/// with `run_id` and `artifact_id` columns.
pub fn scope_filter(scope: &MeasurementScope) -> Option<Expr> {
    match scope {
        MeasurementScope::All => None,
        MeasurementScope::Artifacts(ids) => Some(
            utf8("artifact_id").in_list(ids.iter().map(|id| lit(id.as_str())).collect(), false),
        ),
        MeasurementScope::Extractions(pairs) => Some(
            pairs
                .iter()
                .map(|(run, artifact)| {
                    utf8("run_id")
                        .eq(lit(run.as_str()))
                        .and(utf8("artifact_id").eq(lit(artifact.as_str())))
                })
                .reduce(Expr::or)
                .unwrap_or(lit(false)),
        ),
    }
}

async fn matching(ctx: &SessionContext, q: &MeasurementQuery) -> RecipeResult<DataFrame> {
    let mut df = table(ctx, "measurements").await?;
    if let Some(filter) = scope_filter(&q.scope) {
        df = df.filter(filter)?;
    }
    if let Some(prefix) = &q.name_prefix {
        df = df.filter(starts_with(utf8("name"), lit(prefix.as_str())))?;
    }
    if !q.include_warmups {
        df = df.filter(col("is_warmup").eq(lit(false)))?;
    }
    Ok(df)
}

/// Rows strictly after `key` in the page order.
fn after(key: &MeasurementKey) -> Expr {
    let (name, artifact) = (utf8("name"), utf8("artifact_id"));
    let id = col("measurement_id");
    let index = col("sample_index");
    name.clone()
        .gt(lit(key.name.as_str()))
        .or(name.eq(lit(key.name.as_str())).and(
            artifact
                .clone()
                .gt(lit(key.artifact_id.as_str()))
                .or(artifact.eq(lit(key.artifact_id.as_str())).and(
                    index.clone().gt(lit(key.sample_index)).or(index
                        .eq(lit(key.sample_index))
                        .and(id.gt(lit(key.measurement_id.as_str())))),
                )),
        ))
}

/// Measurement rows from batches of the `measurements` table.
pub fn decode_rows(
    batches: Vec<datafusion::arrow::array::RecordBatch>,
) -> RecipeResult<Vec<MeasurementRow>> {
    let mut rows = Vec::new();
    for batch in batches {
        let warmups = column(&batch, "is_warmup")?;
        let warmups = warmups
            .as_any()
            .downcast_ref::<datafusion::arrow::array::BooleanArray>();
        for i in 0..batch.num_rows() {
            let text = |name: &str| -> RecipeResult<Option<String>> {
                Ok(string_at(column(&batch, name)?, i))
            };
            let parameters = text("parameters_json")?
                .map(|raw| serde_json::from_str(&raw).unwrap_or(Value::String(raw)));
            rows.push(MeasurementRow {
                measurement_id: text("measurement_id")?.unwrap_or_default(),
                run_id: text("run_id")?.unwrap_or_default(),
                artifact_id: text("artifact_id")?.unwrap_or_default(),
                name: text("name")?.unwrap_or_default(),
                value: f64_at(column(&batch, "value")?, i).unwrap_or(f64::NAN),
                unit: text("unit")?.unwrap_or_default(),
                sample_index: i64_at(column(&batch, "sample_index")?, i).unwrap_or(0),
                is_warmup: warmups.is_some_and(|w| w.value(i)),
                trial_id: text("trial_id")?,
                variant: text("variant")?,
                parameters,
            });
        }
    }
    Ok(rows)
}

/// Runs one page of a measurements query.
pub async fn query_measurements(
    ctx: &SessionContext,
    q: &MeasurementQuery,
) -> RecipeResult<MeasurementAnswer> {
    let base = matching(ctx, q).await?;
    let total = match q.known_total {
        Some(total) => total,
        None => count_rows(base.clone()).await?,
    };
    let mut page = base;
    if let Some(key) = &q.after {
        page = page.filter(after(key))?;
    }
    let page = page
        .sort(vec![
            utf8("name").sort(true, false),
            utf8("artifact_id").sort(true, false),
            col("sample_index").sort(true, false),
            col("measurement_id").sort(true, false),
        ])?
        .limit(0, Some(q.limit + 1))?;
    let mut rows = decode_rows(collect(page).await?)?;
    let has_more = rows.len() > q.limit;
    rows.truncate(q.limit);
    Ok(MeasurementAnswer {
        rows,
        total,
        has_more,
    })
}
