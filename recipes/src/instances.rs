//! From a frame to its individual slices (the longest, or in time order,
//! with where they ran and their args), and from a piece of a name to the
//! frames it matches: the two steps between a hotspot and a window.

use std::collections::BTreeMap;

use datafusion::functions_aggregate::expr_fn::{count, max, sum};
use datafusion::logical_expr::{col, lit, when};
use datafusion::prelude::{SessionContext, lower};
use serde::{Deserialize, Serialize};

use crate::common::{
    ArtifactScope, RecipeResult, collect, column, i64_at, max_end_before, stack_kinds_only,
    string_at, table, u64_at,
};
use crate::hotspots::{name_or_id, on_tracks};

/// Longest first, or in time order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InstanceOrder {
    #[default]
    Longest,
    Earliest,
}

/// What `get_frame_instances` asks (the frame already resolved to a name).
#[derive(Debug, Clone)]
pub struct InstanceQuery {
    pub scope: ArtifactScope,
    /// The slice name (a frame's function).
    pub name: String,
    pub thread: Option<String>,
    pub process: Option<String>,
    pub window: Option<(i64, i64)>,
    pub order: InstanceOrder,
    pub limit: usize,
    /// Bytes of `args_json` kept per instance.
    pub args_bytes: usize,
}

/// One slice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceRow {
    pub ts_ns: i64,
    pub dur_ns: i64,
    pub self_ns: i64,
    pub depth: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tid: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// The slice's args as JSON text, cut to a bound (`args_cut` says so).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub args_cut: bool,
    pub event_id: u64,
}

/// A page of instances with totals over every match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceAnswer {
    pub rows: Vec<InstanceRow>,
    /// Slices matching (all, not only the page).
    pub total: u64,
    /// The time they cover, each span once: an instance inside another
    /// instance of the same name on its track (a recursion) adds nothing.
    pub total_dur_ns: i64,
    /// Instances nested inside another of the same name on their track.
    #[serde(default)]
    pub nested: u64,
    /// The longest one's duration.
    pub max_dur_ns: i64,
}

/// The slices named `query.name` in scope.
pub async fn frame_instances(
    ctx: &SessionContext,
    query: &InstanceQuery,
) -> RecipeResult<InstanceAnswer> {
    let mut filter = query
        .scope
        .filter()
        .and(col("name").eq(lit(query.name.as_str())))
        .and(stack_kinds_only());
    if let Some((start, end)) = query.window {
        filter = filter
            .and(col("ts_ns").lt(lit(end)))
            .and((col("ts_ns") + col("dur_ns")).gt_eq(lit(start)));
    }
    let mut events = table(ctx, "trace_events").await?.filter(filter)?;
    // Thread and process names live on tracks.
    let track_rows = collect(
        table(ctx, "tracks")
            .await?
            .filter(query.scope.filter())?
            .select(vec![
                col("artifact_id"),
                col("track_id"),
                col("pid"),
                col("tid"),
                col("process_name"),
                col("thread_name"),
            ])?,
    )
    .await?;
    let mut names: BTreeMap<(String, u64), (Option<String>, Option<String>)> = BTreeMap::new();
    for batch in &track_rows {
        for i in 0..batch.num_rows() {
            let key = (
                string_at(column(batch, "artifact_id")?, i).unwrap_or_default(),
                u64_at(column(batch, "track_id")?, i).unwrap_or(0),
            );
            names.insert(
                key,
                (
                    string_at(column(batch, "process_name")?, i),
                    string_at(column(batch, "thread_name")?, i),
                ),
            );
        }
    }
    if query.thread.is_some() || query.process.is_some() {
        let mut track_filter = query.scope.filter();
        if let Some(t) = &query.thread {
            track_filter = track_filter.and(name_or_id("thread_name", "tid", t));
        }
        if let Some(p) = &query.process {
            track_filter = track_filter.and(name_or_id("process_name", "pid", p));
        }
        events = on_tracks(ctx, events, track_filter).await?;
    }
    // An instance is nested when it starts before an earlier instance of
    // its track ended (the running maximum of earlier ends).
    let prev_end = max_end_before(
        col("ts_ns") + col("dur_ns"),
        vec![col("artifact_id"), col("track_id")],
        vec![
            col("ts_ns").sort(true, false),
            col("dur_ns").sort(false, false),
            col("event_id").sort(true, false),
        ],
    )?;
    let outer = col("prev_end")
        .is_null()
        .or(col("ts_ns").gt_eq(col("prev_end")));
    let totals = events
        .clone()
        .filter(col("dur_ns").gt_eq(lit(0i64)))?
        .select(vec![
            col("ts_ns"),
            col("dur_ns"),
            prev_end.alias("prev_end"),
        ])?
        .aggregate(
            vec![],
            vec![
                count(lit(1)).alias("n"),
                sum(when(outer.clone(), col("dur_ns")).otherwise(lit(0i64))?).alias("d"),
                sum(when(outer, lit(0i64)).otherwise(lit(1i64))?).alias("nested"),
                max(col("dur_ns")).alias("m"),
            ],
        )?;
    let (mut total, mut total_dur_ns, mut max_dur_ns, mut nested) = (0u64, 0i64, 0i64, 0u64);
    for batch in collect(totals).await? {
        if batch.num_rows() > 0 {
            total = i64_at(column(&batch, "n")?, 0).unwrap_or(0).max(0) as u64;
            total_dur_ns = i64_at(column(&batch, "d")?, 0).unwrap_or(0);
            max_dur_ns = i64_at(column(&batch, "m")?, 0).unwrap_or(0);
            nested = i64_at(column(&batch, "nested")?, 0).unwrap_or(0).max(0) as u64;
        }
    }
    let order = match query.order {
        InstanceOrder::Longest => vec![
            col("dur_ns").sort(false, false),
            col("ts_ns").sort(true, false),
        ],
        InstanceOrder::Earliest => vec![
            col("ts_ns").sort(true, false),
            col("event_id").sort(true, false),
        ],
    };
    let page = events.sort(order)?.limit(0, Some(query.limit))?;
    let mut rows = Vec::new();
    for batch in collect(page).await? {
        for i in 0..batch.num_rows() {
            let artifact = string_at(column(&batch, "artifact_id")?, i).unwrap_or_default();
            let track = u64_at(column(&batch, "track_id")?, i).unwrap_or(0);
            let (_, thread_name) = names.get(&(artifact, track)).cloned().unwrap_or_default();
            let (args, args_cut) = match string_at(column(&batch, "args_json")?, i) {
                Some(text) if text.len() > query.args_bytes => {
                    let mut end = query.args_bytes;
                    while !text.is_char_boundary(end) {
                        end -= 1;
                    }
                    (Some(text[..end].to_owned()), true)
                }
                other => (other.filter(|t| t != "{}"), false),
            };
            rows.push(InstanceRow {
                ts_ns: i64_at(column(&batch, "ts_ns")?, i).unwrap_or(0),
                dur_ns: i64_at(column(&batch, "dur_ns")?, i).unwrap_or(0),
                self_ns: i64_at(column(&batch, "self_ns")?, i).unwrap_or(0),
                depth: i64_at(column(&batch, "depth")?, i).unwrap_or(0) as i32,
                pid: i64_at(column(&batch, "pid")?, i),
                tid: i64_at(column(&batch, "tid")?, i),
                thread_name,
                category: string_at(column(&batch, "category")?, i),
                args,
                args_cut,
                event_id: u64_at(column(&batch, "event_id")?, i).unwrap_or(0),
            });
        }
    }
    Ok(InstanceAnswer {
        rows,
        total,
        total_dur_ns,
        nested,
        max_dur_ns,
    })
}

/// One frame whose name contains the searched text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameMatch {
    /// The frame key the drill-down operations accept.
    pub frame: String,
    pub function: String,
    /// The name equals the searched text (case included).
    pub exact: bool,
    pub metric: String,
    pub self_value: i64,
    pub inclusive_value: i64,
}

/// Frames whose function contains `text` (case-insensitive), exact
/// matches first, then by inclusive value; `total` counts every match.
pub async fn find_frames(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    text: &str,
    limit: usize,
) -> RecipeResult<(Vec<FrameMatch>, u64)> {
    let needle = text.to_lowercase();
    let pattern = format!(
        "%{}%",
        needle
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_")
    );
    let df = table(ctx, "frame_totals")
        .await?
        .filter(
            scope
                .filter()
                .and(lower(col("function")).like(lit(pattern))),
        )?
        .aggregate(
            vec![col("logical_key"), col("function"), col("metric")],
            vec![
                sum(col("self_value")).alias("s"),
                sum(col("inclusive_value")).alias("i"),
            ],
        )?;
    // One row per frame: its largest metric by inclusive value (a frame
    // has one row per metric it was weighed by).
    let mut best: BTreeMap<String, FrameMatch> = BTreeMap::new();
    for batch in collect(df).await? {
        for i in 0..batch.num_rows() {
            let frame = string_at(column(&batch, "logical_key")?, i).unwrap_or_default();
            let function = string_at(column(&batch, "function")?, i).unwrap_or_default();
            let row = FrameMatch {
                exact: function == text,
                frame: frame.clone(),
                function,
                metric: string_at(column(&batch, "metric")?, i).unwrap_or_default(),
                self_value: i64_at(column(&batch, "s")?, i).unwrap_or(0),
                inclusive_value: i64_at(column(&batch, "i")?, i).unwrap_or(0),
            };
            let keep = best
                .get(&frame)
                .is_none_or(|b| row.inclusive_value > b.inclusive_value);
            if keep {
                best.insert(frame, row);
            }
        }
    }
    let total = best.len() as u64;
    let mut rows: Vec<FrameMatch> = best.into_values().collect();
    rows.sort_by(|a, b| {
        (b.exact, b.inclusive_value, &a.function).cmp(&(a.exact, a.inclusive_value, &b.function))
    });
    rows.truncate(limit);
    Ok((rows, total))
}
