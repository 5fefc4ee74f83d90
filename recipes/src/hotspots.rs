//! Hotspots: the frames (or slice names) with the most self time.
//!
//! Whole-scope questions read `frame_totals`, the reduction materialized at
//! extraction, so their cost grows with distinct frames, not events. A time
//! window has to look at events, so it reads `trace_events` and counts the
//! slices that start inside the window.

use datafusion::functions_aggregate::expr_fn::{count, max, min, sum};
use datafusion::logical_expr::{Expr, col, lit};
use datafusion::prelude::{DataFrame, SessionContext, cast};
use serde::{Deserialize, Serialize};

use crate::common::{
    ArtifactScope, RecipeError, RecipeResult, collect, column, i64_at, stack_kinds_only, string_at,
    table,
};

/// What `analyze hotspots` asks.
#[derive(Debug, Clone)]
pub struct HotspotQuery {
    pub scope: ArtifactScope,
    /// `None` picks the best metric the scope has.
    pub metric: Option<String>,
    /// Thread name or numeric tid.
    pub thread: Option<String>,
    /// Process name or numeric pid.
    pub process: Option<String>,
    /// Half-open `[start, end)` in ns: slices that start inside it.
    pub window: Option<(i64, i64)>,
    pub limit: usize,
    /// Keyset position: the last row's (self value, frame key).
    pub after: Option<(i64, String)>,
    /// One row per source line (sampled frames); default one per function.
    pub by_line: bool,
}

/// One hotspot row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HotspotRow {
    /// The frame reference the drill-down tools accept (its logical key).
    pub frame: String,
    pub function: String,
    /// A library or language module (sampled frames).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// A trace slice's category (`cpu_op`, `kernel`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    pub file: Option<String>,
    pub line: Option<i64>,
    pub self_value: i64,
    pub inclusive_value: i64,
    pub self_pct: f64,
    pub inclusive_pct: f64,
    pub count: i64,
}

/// A page of hotspots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HotspotAnswer {
    pub metric: String,
    pub unit: String,
    /// Metrics the scope has (the one used is `metric`).
    pub available_metrics: Vec<String>,
    pub rows: Vec<HotspotRow>,
    /// Distinct frames matching the filters.
    pub total_frames: u64,
    /// Sum of self values over all matching frames (the % denominator).
    pub total_self: i64,
    pub has_more: bool,
}

/// Preferred default metrics, best first.
const METRIC_PREFERENCE: &[&str] = &["cpu.samples", "cpu.time_ns", "trace.wall_ns"];

/// Metrics present in `frame_totals` for the scope, sorted.
pub async fn available_metrics(
    ctx: &SessionContext,
    scope: &ArtifactScope,
) -> RecipeResult<Vec<String>> {
    let df = table(ctx, "frame_totals")
        .await?
        .filter(scope.filter())?
        .aggregate(
            vec![cast(col("metric"), datafusion::arrow::datatypes::DataType::Utf8).alias("metric")],
            vec![],
        )?;
    let mut metrics = Vec::new();
    for batch in collect(df).await? {
        let values = column(&batch, "metric")?;
        for row in 0..batch.num_rows() {
            if let Some(m) = string_at(values, row) {
                metrics.push(m);
            }
        }
    }
    metrics.sort();
    Ok(metrics)
}

/// The requested metric if the scope has it, else the preferred default.
pub fn choose_metric(requested: Option<&str>, available: &[String]) -> RecipeResult<String> {
    match requested {
        Some(m) if available.iter().any(|a| a == m) => Ok(m.to_owned()),
        Some(m) => Err(RecipeError::NotFound {
            what: format!("metric {m}"),
            closest: Vec::new(),
            valid: available.to_vec(),
        }),
        None => Ok(METRIC_PREFERENCE
            .iter()
            .find(|p| available.iter().any(|a| a == *p))
            .map(|p| (*p).to_owned())
            .or_else(|| available.first().cloned())
            .unwrap_or_else(|| "trace.wall_ns".to_owned())),
    }
}

/// `name = value`, or the numeric id column when the value is an integer.
/// The events of `events` whose track matches `track_filter` (a filter
/// over `tracks`: thread and process names live there).
pub(crate) async fn on_tracks(
    ctx: &SessionContext,
    events: DataFrame,
    track_filter: Expr,
) -> RecipeResult<DataFrame> {
    let tracks = table(ctx, "tracks")
        .await?
        .filter(track_filter)?
        .select(vec![
            col("artifact_id").alias("t_artifact"),
            col("track_id").alias("t_track"),
        ])?;
    Ok(events.join(
        tracks,
        datafusion::prelude::JoinType::LeftSemi,
        &["artifact_id", "track_id"],
        &["t_artifact", "t_track"],
        None,
    )?)
}

/// `name = value`, or the id column when the value is a number.
pub(crate) fn name_or_id(name_col: &str, id_col: &str, value: &str) -> Expr {
    let by_name = col(name_col).eq(lit(value));
    match value.parse::<i64>() {
        Ok(id) => by_name.or(col(id_col).eq(lit(id))),
        Err(_) => by_name,
    }
}

/// The unit a metric's values are in (`ns`, `bytes`, else its count noun).
pub fn unit_of(metric: &str) -> String {
    if metric.ends_with("_ns") {
        "ns".into()
    } else if metric.contains("bytes") {
        "bytes".into()
    } else {
        "count".into()
    }
}

/// Runs the hotspot query.
pub async fn hotspots(ctx: &SessionContext, query: &HotspotQuery) -> RecipeResult<HotspotAnswer> {
    let available = available_metrics(ctx, &query.scope).await?;
    let metric = choose_metric(query.metric.as_deref(), &available)?;
    let grouped = match query.window {
        None => from_totals(ctx, query, &metric).await?,
        Some((start, end)) => from_events(ctx, query, start, end).await?,
    };
    let totals = grouped.clone().aggregate(
        vec![],
        vec![
            count(lit(1)).alias("frames"),
            sum(col("self_value")).alias("total_self"),
        ],
    )?;
    let (total_frames, total_self) = match collect(totals).await?.first() {
        Some(b) if b.num_rows() > 0 => (
            i64_at(column(b, "frames")?, 0).unwrap_or(0).max(0) as u64,
            i64_at(column(b, "total_self")?, 0).unwrap_or(0),
        ),
        _ => (0, 0),
    };
    let mut page = grouped;
    if let Some((last_self, last_key)) = &query.after {
        page = page.filter(
            col("self_value").lt(lit(*last_self)).or(col("self_value")
                .eq(lit(*last_self))
                .and(col("frame").gt(lit(last_key.as_str())))),
        )?;
    }
    let page = page
        .sort(vec![
            col("self_value").sort(false, false),
            col("frame").sort(true, false),
        ])?
        .limit(0, Some(query.limit + 1))?;
    let mut rows = Vec::new();
    for batch in collect(page).await? {
        for i in 0..batch.num_rows() {
            let self_value = i64_at(column(&batch, "self_value")?, i).unwrap_or(0);
            let inclusive_value = i64_at(column(&batch, "inclusive_value")?, i).unwrap_or(0);
            rows.push(HotspotRow {
                frame: string_at(column(&batch, "frame")?, i).unwrap_or_default(),
                function: string_at(column(&batch, "function")?, i).unwrap_or_default(),
                module: string_at(column(&batch, "module")?, i),
                category: string_at(column(&batch, "category")?, i),
                file: string_at(column(&batch, "file")?, i),
                line: i64_at(column(&batch, "line")?, i),
                self_value,
                inclusive_value,
                self_pct: pct(self_value, total_self),
                inclusive_pct: pct(inclusive_value, total_self),
                count: i64_at(column(&batch, "count")?, i).unwrap_or(0),
            });
        }
    }
    let has_more = rows.len() > query.limit;
    rows.truncate(query.limit);
    Ok(HotspotAnswer {
        unit: unit_of(&metric),
        metric,
        available_metrics: available,
        rows,
        total_frames,
        total_self,
        has_more,
    })
}

fn pct(value: i64, total: i64) -> f64 {
    if total <= 0 {
        return 0.0;
    }
    (value as f64 * 10_000.0 / total as f64).round() / 100.0
}

fn utf8(expr: Expr) -> Expr {
    cast(expr, datafusion::arrow::datatypes::DataType::Utf8)
}

/// Whole-scope hotspots from `frame_totals`.
async fn from_totals(
    ctx: &SessionContext,
    query: &HotspotQuery,
    metric: &str,
) -> RecipeResult<DataFrame> {
    let mut filter = query.scope.filter().and(col("metric").eq(lit(metric)));
    if let Some(t) = &query.thread {
        filter = filter.and(name_or_id("thread_name", "tid", t));
    }
    if let Some(p) = &query.process {
        filter = filter.and(name_or_id("process_name", "pid", p));
    }
    if query.by_line {
        by_logical_key(ctx, filter).await
    } else {
        by_function(ctx, filter).await
    }
}

/// `frame_totals` rows matching `filter`, summed per function — function,
/// file, module and category, lines merged (a sampled profile's frames are
/// per line: `score` at three lines is one function). `frame` is the
/// smallest logical key of the group: the drill-downs expand a key to its
/// function's lines (`drilldown::resolve_frame`). Per-line frames cover
/// disjoint samples, so their inclusive values add up.
async fn by_function(ctx: &SessionContext, filter: Expr) -> RecipeResult<DataFrame> {
    Ok(table(ctx, "frame_totals")
        .await?
        .filter(filter)?
        .aggregate(
            vec![
                col("function"),
                col("file"),
                col("module"),
                utf8(col("category")).alias("category"),
            ],
            vec![
                min(col("logical_key")).alias("frame"),
                min(col("line")).alias("line"),
                sum(col("self_value")).alias("self_value"),
                sum(col("inclusive_value")).alias("inclusive_value"),
                sum(col("sample_count")).alias("count"),
            ],
        )?)
}

/// `frame_totals` rows matching `filter`, summed per logical key (across
/// threads and artifacts): `frame`, names, `self_value`,
/// `inclusive_value`, `count`.
pub(crate) async fn by_logical_key(ctx: &SessionContext, filter: Expr) -> RecipeResult<DataFrame> {
    Ok(table(ctx, "frame_totals")
        .await?
        .filter(filter)?
        .aggregate(
            vec![col("logical_key").alias("frame")],
            vec![
                min(col("function")).alias("function"),
                min(col("module")).alias("module"),
                min(utf8(col("category"))).alias("category"),
                min(col("file")).alias("file"),
                min(col("line")).alias("line"),
                sum(col("self_value")).alias("self_value"),
                sum(col("inclusive_value")).alias("inclusive_value"),
                sum(col("sample_count")).alias("count"),
            ],
        )?)
}

/// Window hotspots from `trace_events` (slices starting in the window),
/// with frame keys looked up in `frames`.
async fn from_events(
    ctx: &SessionContext,
    query: &HotspotQuery,
    start: i64,
    end: i64,
) -> RecipeResult<DataFrame> {
    let mut filter = query
        .scope
        .filter()
        .and(col("ts_ns").gt_eq(lit(start)))
        .and(col("ts_ns").lt(lit(end)))
        .and(col("dur_ns").gt(lit(0i64)))
        .and(stack_kinds_only());
    if let Some(pid) = query.process.as_ref().and_then(|p| p.parse::<i64>().ok()) {
        filter = filter.and(col("pid").eq(lit(pid)));
    }
    let mut events = table(ctx, "trace_events").await?.filter(filter)?;
    let thread_or_process_by_name = query.thread.is_some()
        || query
            .process
            .as_ref()
            .is_some_and(|p| p.parse::<i64>().is_err());
    if thread_or_process_by_name {
        let mut track_filter = query.scope.filter();
        if let Some(t) = &query.thread {
            track_filter = track_filter.and(name_or_id("thread_name", "tid", t));
        }
        if let Some(p) = query.process.as_ref().filter(|p| p.parse::<i64>().is_err()) {
            track_filter = track_filter.and(col("process_name").eq(lit(p.as_str())));
        }
        events = on_tracks(ctx, events, track_filter).await?;
    }
    // Grouped on the dictionary columns themselves (a cast to text first
    // would build a string per event: 1.7 s over 6.85 M events), then the
    // few thousand group keys are cast.
    let by_name = events
        .aggregate(
            vec![
                col("name").alias("e_name_key"),
                col("category").alias("e_cat_key"),
            ],
            vec![
                sum(col("self_ns")).alias("self_value"),
                sum(col("dur_ns")).alias("inclusive_value"),
                count(lit(1)).alias("count"),
            ],
        )?
        .select(vec![
            utf8(col("e_name_key")).alias("e_name"),
            utf8(col("e_cat_key")).alias("e_cat"),
            col("self_value"),
            col("inclusive_value"),
            col("count"),
        ])?;
    let frames = table(ctx, "frames")
        .await?
        .filter(query.scope.filter())?
        .aggregate(
            vec![
                col("function").alias("f_function"),
                // A slice frame's category (`module` in version-1 evidence).
                datafusion::functions::expr_fn::coalesce(vec![
                    utf8(col("category")),
                    col("module"),
                ])
                .alias("f_module"),
            ],
            vec![
                max(col("logical_key")).alias("frame"),
                min(col("file")).alias("file"),
                min(col("line")).alias("line"),
            ],
        )?;
    let joined = by_name.join_on(
        frames,
        datafusion::prelude::JoinType::Left,
        vec![
            col("e_name")
                .eq(col("f_function"))
                .and(datafusion::logical_expr::binary_expr(
                    col("e_cat"),
                    datafusion::logical_expr::Operator::IsNotDistinctFrom,
                    col("f_module"),
                )),
        ],
    )?;
    Ok(joined.select(vec![
        datafusion::functions::expr_fn::coalesce(vec![col("frame"), col("e_name")]).alias("frame"),
        col("e_name").alias("function"),
        lit(datafusion::common::ScalarValue::Utf8(None)).alias("module"),
        col("e_cat").alias("category"),
        col("file"),
        col("line"),
        col("self_value"),
        col("inclusive_value"),
        col("count"),
    ])?)
}
