//! What the host was doing during given time windows (GPU idle gaps,
//! low-utilization chunks): the host slices overlapping each window, ranked
//! by the time they themselves spent inside it, and the share of the window
//! covered by any host activity.
//!
//! A slice's time inside a window is clipped to the window; its *self* time
//! there is that minus the clipped time of its direct children (so a
//! `ProfilerStep#N` that spans the whole gap does not hide the
//! `cudaStreamSynchronize` inside it). Coverage is the union of the clipped
//! host intervals (any thread), computed with the same running-maximum
//! window as stream gaps.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::functions::core::expr_fn::{greatest, least};
use datafusion::functions_aggregate::expr_fn::{count, min, sum};
use datafusion::functions_window::expr_fn::row_number;
use datafusion::logical_expr::{ExprFunctionExt, JoinType, col, lit};
use datafusion::prelude::{DataFrame, SessionContext, coalesce};
use serde::{Deserialize, Serialize};

use crate::common::{
    ArtifactScope, RecipeError, RecipeResult, collect, column, i64_at, max_end_before,
    newly_covered, string_at, table, utf8,
};

/// Host-side kinds: what a CPU thread can be busy with. Device rows and
/// instants are left out, and so are scheduler rows (`sched_slice`,
/// `thread_state`) which say where a thread ran, not what it did.
pub const HOST_KINDS: &[&str] = &[
    "cpu_slice",
    "python_function",
    "cpu_op",
    "user_annotation",
    "runtime_api",
    "driver_api",
    "sync",
    "graph_launch",
    "communication",
];

/// Kineto's category for the profiler's own whole-trace span
/// (`PyTorch Profiler (0)`): it covers everything and explains nothing.
const PROFILER_SPAN: &str = "Trace";

/// One time window to explain; `pid` restricts it to that host process when
/// the artifact has host rows of that pid (Nsight device rows carry the
/// host pid; Kineto's carry the device number, so they are not restricted).
#[derive(Debug, Clone, PartialEq)]
pub struct TimeWindow {
    pub id: i64,
    pub artifact_id: String,
    pub pid: Option<i64>,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// One host slice name on one thread during a window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostSlice {
    pub name: String,
    pub kind: String,
    pub tid: Option<i64>,
    pub thread: Option<String>,
    /// Time inside the window not spent in a child slice.
    pub self_overlap_ns: i64,
    /// Time inside the window, children included.
    pub overlap_ns: i64,
    /// Slices of this name on this thread overlapping the window.
    pub slices: i64,
}

/// The host's activity during one window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostActivity {
    /// Union of host activity inside the window (any thread).
    pub covered_ns: i64,
    /// `covered_ns` over the window length, 0..=1 (0 for an empty window).
    pub covered_share: f64,
    /// Heaviest by self time inside the window first.
    pub top: Vec<HostSlice>,
}

fn windows_frame(ctx: &SessionContext, windows: &[TimeWindow]) -> RecipeResult<DataFrame> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("w_id", DataType::Int64, false),
        Field::new("w_artifact", DataType::Utf8, false),
        Field::new("w_pid", DataType::Int64, true),
        Field::new("w_start", DataType::Int64, false),
        Field::new("w_end", DataType::Int64, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(windows.iter().map(|w| w.id))),
        Arc::new(StringArray::from_iter_values(
            windows.iter().map(|w| w.artifact_id.as_str()),
        )),
        Arc::new(Int64Array::from_iter(windows.iter().map(|w| w.pid))),
        Arc::new(Int64Array::from_iter_values(
            windows.iter().map(|w| w.start_ns),
        )),
        Arc::new(Int64Array::from_iter_values(
            windows.iter().map(|w| w.end_ns),
        )),
    ];
    let batch =
        RecordBatch::try_new(schema, columns).map_err(|e| RecipeError::DataFusion(e.into()))?;
    Ok(ctx.read_batch(batch)?)
}

/// Host slices (terminated, non-empty) of the windows' artifacts, inside
/// the windows' overall time range.
async fn host_rows(ctx: &SessionContext, windows: &[TimeWindow]) -> RecipeResult<DataFrame> {
    let artifacts: BTreeSet<&str> = windows.iter().map(|w| w.artifact_id.as_str()).collect();
    let scope = ArtifactScope {
        artifact_ids: artifacts.into_iter().map(str::to_owned).collect(),
    };
    let from = windows.iter().map(|w| w.start_ns).min().unwrap_or(0);
    let to = windows.iter().map(|w| w.end_ns).max().unwrap_or(0);
    let kinds = HOST_KINDS.iter().map(|k| lit(*k)).collect();
    Ok(table(ctx, "trace_events")
        .await?
        .filter(
            scope
                .filter()
                .and(utf8("kind").in_list(kinds, false))
                .and(coalesce(vec![utf8("category"), lit("")]).not_eq(lit(PROFILER_SPAN)))
                .and(col("stream").is_null())
                .and(col("dur_ns").gt(lit(0i64)))
                .and(col("ts_ns").lt(lit(to)))
                .and((col("ts_ns") + col("dur_ns")).gt(lit(from))),
        )?
        .select(vec![
            utf8("artifact_id").alias("h_artifact"),
            col("event_id").alias("h_id"),
            col("parent_event_id").alias("h_parent"),
            col("ts_ns").alias("h_start"),
            (col("ts_ns") + col("dur_ns")).alias("h_end"),
            utf8("name").alias("h_name"),
            utf8("kind").alias("h_kind"),
            col("pid").alias("h_pid"),
            col("tid").alias("h_tid"),
            col("track_id").alias("h_track"),
        ])?)
}

/// Per window: its host activity, the `top` slice names by self time.
pub async fn host_activity(
    ctx: &SessionContext,
    windows: &[TimeWindow],
    top: usize,
) -> RecipeResult<BTreeMap<i64, HostActivity>> {
    let mut out: BTreeMap<i64, HostActivity> = windows
        .iter()
        .map(|w| (w.id, HostActivity::default()))
        .collect();
    if windows.is_empty() {
        return Ok(out);
    }
    // A window's pid only restricts when it is a host pid of its artifact.
    let host_pids = host_pids(ctx, windows).await?;
    let windows: Vec<TimeWindow> = windows
        .iter()
        .map(|w| TimeWindow {
            pid: w
                .pid
                .filter(|p| host_pids.contains(&(w.artifact_id.clone(), *p))),
            ..w.clone()
        })
        .collect();

    let candidates = host_rows(ctx, &windows)
        .await?
        .join_on(
            windows_frame(ctx, &windows)?,
            JoinType::Inner,
            [
                col("h_artifact").eq(col("w_artifact")),
                col("h_start").lt(col("w_end")),
                col("h_end").gt(col("w_start")),
                col("w_pid").is_null().or(col("h_pid").eq(col("w_pid"))),
            ],
        )?
        .select(vec![
            col("w_id"),
            col("h_artifact"),
            col("h_id"),
            col("h_parent"),
            col("h_name"),
            col("h_kind"),
            col("h_tid"),
            col("h_track"),
            greatest(vec![col("h_start"), col("w_start")]).alias("c_start"),
            least(vec![col("h_end"), col("w_end")]).alias("c_end"),
        ])?
        .with_column("overlap", col("c_end") - col("c_start"))?
        .cache()
        .await?;

    // Coverage: union of the clipped intervals per window.
    let previous_end = max_end_before(
        col("c_end"),
        vec![col("w_id")],
        vec![
            col("c_start").sort(true, false),
            col("h_artifact").sort(true, false),
            col("h_id").sort(true, false),
        ],
    )?
    .alias("previous_end");
    let coverage = candidates.clone().window(vec![previous_end])?.aggregate(
        vec![col("w_id")],
        vec![
            sum(newly_covered(
                col("c_start"),
                col("c_end"),
                col("previous_end"),
            ))
            .alias("covered"),
        ],
    )?;
    let lengths: BTreeMap<i64, i64> = windows
        .iter()
        .map(|w| (w.id, w.end_ns - w.start_ns))
        .collect();
    for batch in collect(coverage).await? {
        for i in 0..batch.num_rows() {
            let (Some(id), covered) = (
                i64_at(column(&batch, "w_id")?, i),
                i64_at(column(&batch, "covered")?, i).unwrap_or(0),
            ) else {
                continue;
            };
            let length = lengths.get(&id).copied().unwrap_or(0);
            if let Some(entry) = out.get_mut(&id) {
                entry.covered_ns = covered;
                entry.covered_share = if length > 0 {
                    covered as f64 / length as f64
                } else {
                    0.0
                };
            }
        }
    }

    // Self time inside the window: clipped time minus the direct children's.
    let children = candidates
        .clone()
        .filter(col("h_parent").is_not_null())?
        .aggregate(
            vec![
                col("w_id").alias("p_w"),
                col("h_artifact").alias("p_artifact"),
                col("h_parent").alias("p_id"),
            ],
            vec![sum(col("overlap")).alias("child_overlap")],
        )?;
    let per_name = candidates
        .join(
            children,
            JoinType::Left,
            &["w_id", "h_artifact", "h_id"],
            &["p_w", "p_artifact", "p_id"],
            None,
        )?
        .with_column(
            "self_overlap",
            greatest(vec![
                lit(0i64),
                col("overlap") - coalesce(vec![col("child_overlap"), lit(0i64)]),
            ]),
        )?
        .aggregate(
            vec![
                col("w_id"),
                col("h_artifact"),
                col("h_track"),
                col("h_tid"),
                col("h_name"),
                col("h_kind"),
            ],
            vec![
                sum(col("self_overlap")).alias("self_overlap"),
                sum(col("overlap")).alias("overlap"),
                count(lit(1)).alias("slices"),
            ],
        )?
        .filter(col("self_overlap").gt(lit(0i64)))?;
    let rank = row_number()
        .partition_by(vec![col("w_id")])
        .order_by(vec![
            col("self_overlap").sort(false, false),
            col("overlap").sort(false, false),
            col("h_name").sort(true, false),
            col("h_tid").sort(true, true),
        ])
        .build()?
        .alias("rank");
    let threads = table(ctx, "tracks").await?.aggregate(
        vec![
            utf8("artifact_id").alias("t_artifact"),
            col("track_id").alias("t_track"),
        ],
        vec![min(col("thread_name")).alias("thread")],
    )?;
    let ranked = per_name
        .window(vec![rank])?
        .filter(col("rank").lt_eq(lit(top as u64)))?
        .join(
            threads,
            JoinType::Left,
            &["h_artifact", "h_track"],
            &["t_artifact", "t_track"],
            None,
        )?
        .sort(vec![
            col("w_id").sort(true, false),
            col("rank").sort(true, false),
        ])?;
    for batch in collect(ranked).await? {
        for i in 0..batch.num_rows() {
            let Some(id) = i64_at(column(&batch, "w_id")?, i) else {
                continue;
            };
            let row = HostSlice {
                name: string_at(column(&batch, "h_name")?, i).unwrap_or_default(),
                kind: string_at(column(&batch, "h_kind")?, i).unwrap_or_default(),
                tid: i64_at(column(&batch, "h_tid")?, i),
                thread: string_at(column(&batch, "thread")?, i),
                self_overlap_ns: i64_at(column(&batch, "self_overlap")?, i).unwrap_or(0),
                overlap_ns: i64_at(column(&batch, "overlap")?, i).unwrap_or(0),
                slices: i64_at(column(&batch, "slices")?, i).unwrap_or(0),
            };
            if let Some(entry) = out.get_mut(&id) {
                entry.top.push(row);
            }
        }
    }
    Ok(out)
}

/// (artifact, pid) pairs that have host rows, for the windows' artifacts.
async fn host_pids(
    ctx: &SessionContext,
    windows: &[TimeWindow],
) -> RecipeResult<BTreeSet<(String, i64)>> {
    let mut pids = BTreeSet::new();
    if windows.iter().all(|w| w.pid.is_none()) {
        return Ok(pids);
    }
    let grouped = host_rows(ctx, windows)
        .await?
        .filter(col("h_pid").is_not_null())?
        .aggregate(vec![col("h_artifact"), col("h_pid")], vec![])?;
    for batch in collect(grouped).await? {
        for i in 0..batch.num_rows() {
            if let (Some(a), Some(p)) = (
                string_at(column(&batch, "h_artifact")?, i),
                i64_at(column(&batch, "h_pid")?, i),
            ) {
                pids.insert((a, p));
            }
        }
    }
    Ok(pids)
}
