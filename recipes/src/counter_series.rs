//! Every counter series of a scope, whatever its unit: points, first,
//! last, minimum and maximum — the summary of SDK metrics (OTLP metric
//! points are counters) that `analyze_execution` shows and compares.
//! Series are named as stored (`http.requests{code=200,route=/a}`) and
//! listed by name; samples at one timestamp are ordered by value, as in
//! [`crate::memory`].

use datafusion::functions_aggregate::expr_fn::{count, max, min};
use datafusion::logical_expr::{SortExpr, col, lit};
use datafusion::prelude::SessionContext;
use serde::{Deserialize, Serialize};

use crate::common::{
    ArtifactScope, RecipeResult, collect, column, f64_at, i64_at, string_at, table, utf8,
};
use crate::memory::{first_by, last_by};

/// One counter series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterSeries {
    pub series: String,
    pub unit: Option<String>,
    pub points: i64,
    pub first: f64,
    pub last: f64,
    pub min: f64,
    pub max: f64,
    pub first_ns: i64,
    pub last_ns: i64,
}

fn by_time() -> Vec<SortExpr> {
    vec![
        col("ts_ns").sort(true, false),
        col("value").sort(true, false),
    ]
}

/// The series of `scope` (the first `limit` by name) and how many there are.
pub async fn counter_series(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    limit: usize,
) -> RecipeResult<(u64, Vec<CounterSeries>)> {
    let stats = table(ctx, "counters")
        .await?
        .filter(scope.filter())?
        .select(vec![
            utf8("name").alias("series"),
            utf8("unit").alias("unit"),
            col("ts_ns"),
            col("value"),
        ])?
        .aggregate(
            vec![col("series")],
            vec![
                count(lit(1)).alias("points"),
                min(col("unit")).alias("unit"),
                min(col("ts_ns")).alias("first_ns"),
                max(col("ts_ns")).alias("last_ns"),
                first_by(col("value"), by_time(), None)?.alias("first"),
                last_by(col("value"), by_time(), None)?.alias("last"),
                min(col("value")).alias("min"),
                max(col("value")).alias("max"),
            ],
        )?
        .sort(vec![col("series").sort(true, false)])?
        .cache()
        .await?;
    let found = stats.clone().count().await? as u64;
    let mut out = Vec::new();
    for batch in collect(stats.limit(0, Some(limit))?).await? {
        for i in 0..batch.num_rows() {
            let float =
                |c: &str| -> RecipeResult<f64> { Ok(f64_at(column(&batch, c)?, i).unwrap_or(0.0)) };
            let int =
                |c: &str| -> RecipeResult<i64> { Ok(i64_at(column(&batch, c)?, i).unwrap_or(0)) };
            out.push(CounterSeries {
                series: string_at(column(&batch, "series")?, i).unwrap_or_default(),
                unit: string_at(column(&batch, "unit")?, i),
                points: int("points")?,
                first: float("first")?,
                last: float("last")?,
                min: float("min")?,
                max: float("max")?,
                first_ns: int("first_ns")?,
                last_ns: int("last_ns")?,
            });
        }
    }
    Ok((found, out))
}
