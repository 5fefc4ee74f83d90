//! Trace windows: the events overlapping `[start, end)`, in `(ts_ns,
//! event_id)` order, paged by keyset (never OFFSET).
//!
//! `trace_events` files are sorted by `ts_ns`, so the upper bound and the
//! lower bound widened by the longest slice (`max_dur_ns`, known from the
//! extraction summary) prune row groups before any row is read.

use datafusion::logical_expr::{col, lit};
use datafusion::prelude::{DataFrame, SessionContext};
use serde::{Deserialize, Serialize};

use crate::common::{
    ArtifactScope, RecipeResult, collect, column, count_rows, i64_at, string_at, table, u64_at,
};

/// What `trace window` asks.
#[derive(Debug, Clone)]
pub struct WindowQuery {
    pub artifact_id: String,
    pub start_ns: i64,
    pub end_ns: i64,
    /// Longest slice duration in the artifact (widens the pruning bound).
    pub max_dur_ns: i64,
    pub kind: Option<String>,
    pub name: Option<String>,
    pub track_id: Option<u64>,
    pub stream: Option<i64>,
    pub correlation_id: Option<i64>,
    pub limit: usize,
    /// Keyset position: the last row's `(ts_ns, event_id)`.
    pub after: Option<(i64, u64)>,
    /// The window's row count when an earlier page counted it (the cursor
    /// carries it), so later pages read only their own rows.
    pub known_total: Option<u64>,
}

impl WindowQuery {
    /// The pruning bound: no event starting before it can reach `start_ns`.
    pub fn lower_ns(&self) -> i64 {
        self.start_ns.saturating_sub(self.max_dur_ns.max(0))
    }
}

/// One event of a window page (absent fields are null or not asked for).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowEvent {
    pub event_id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_event_id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<i64>,
    pub ts_ns: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dur_ns: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_ns: Option<i64>,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub track_id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tid: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_json: Option<String>,
    /// `args_json` was cut to the asked bytes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub args_cut: bool,
}

impl WindowEvent {
    /// Clears every optional field `keep` rejects (event_id, ts_ns and
    /// name always stay).
    pub fn keep_only(&mut self, keep: impl Fn(&str) -> bool) {
        macro_rules! drop_unless {
            ($($field:ident),*) => {
                $(if !keep(stringify!($field)) { self.$field = None; })*
            };
        }
        drop_unless!(
            parent_event_id,
            depth,
            dur_ns,
            self_ns,
            category,
            kind,
            track_id,
            pid,
            tid,
            device,
            stream,
            correlation_id,
            external_id,
            bytes,
            phase,
            args_json
        );
    }
}

/// A page of window events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowAnswer {
    pub events: Vec<WindowEvent>,
    /// Events in the whole window (all pages).
    pub total: u64,
    pub has_more: bool,
}

async fn window_frame(ctx: &SessionContext, q: &WindowQuery) -> RecipeResult<DataFrame> {
    let lower = q.lower_ns();
    let ends_after_start = (col("ts_ns") + col("dur_ns")).gt(lit(q.start_ns));
    let mut filter = ArtifactScope::one(q.artifact_id.clone())
        .filter()
        .and(col("ts_ns").lt(lit(q.end_ns)))
        .and(col("ts_ns").gt_eq(lit(lower)))
        .and(col("ts_ns").gt_eq(lit(q.start_ns)).or(ends_after_start));
    if let Some(kind) = &q.kind {
        filter = filter.and(col("kind").eq(lit(kind.as_str())));
    }
    if let Some(name) = &q.name {
        filter = filter.and(col("name").eq(lit(name.as_str())));
    }
    if let Some(track) = q.track_id {
        filter = filter.and(col("track_id").eq(lit(track)));
    }
    if let Some(stream) = q.stream {
        filter = filter.and(col("stream").eq(lit(stream)));
    }
    if let Some(c) = q.correlation_id {
        filter = filter.and(col("correlation_id").eq(lit(c)));
    }
    Ok(table(ctx, "trace_events").await?.filter(filter)?)
}

/// Runs one page of a trace window.
pub async fn trace_window(ctx: &SessionContext, q: &WindowQuery) -> RecipeResult<WindowAnswer> {
    let base = window_frame(ctx, q).await?;
    let total = match q.known_total {
        Some(total) => total,
        None => count_rows(base.clone()).await?,
    };
    let mut page = base;
    if let Some((ts, id)) = q.after {
        page = page.filter(
            col("ts_ns")
                .gt(lit(ts))
                .or(col("ts_ns").eq(lit(ts)).and(col("event_id").gt(lit(id)))),
        )?;
    }
    let page = page
        .sort(vec![
            col("ts_ns").sort(true, false),
            col("event_id").sort(true, false),
        ])?
        .limit(0, Some(q.limit + 1))?;
    let mut events = Vec::new();
    for batch in collect(page).await? {
        for i in 0..batch.num_rows() {
            let int =
                |name: &str| -> RecipeResult<Option<i64>> { Ok(i64_at(column(&batch, name)?, i)) };
            events.push(WindowEvent {
                event_id: u64_at(column(&batch, "event_id")?, i).unwrap_or(0),
                parent_event_id: u64_at(column(&batch, "parent_event_id")?, i),
                depth: int("depth")?,
                ts_ns: int("ts_ns")?.unwrap_or(0),
                dur_ns: int("dur_ns")?,
                self_ns: int("self_ns")?,
                name: string_at(column(&batch, "name")?, i).unwrap_or_default(),
                category: string_at(column(&batch, "category")?, i),
                kind: string_at(column(&batch, "kind")?, i),
                track_id: u64_at(column(&batch, "track_id")?, i),
                pid: int("pid")?,
                tid: int("tid")?,
                device: int("device")?,
                stream: int("stream")?,
                correlation_id: int("correlation_id")?,
                external_id: int("external_id")?,
                bytes: int("bytes")?,
                phase: string_at(column(&batch, "phase")?, i),
                args_json: string_at(column(&batch, "args_json")?, i),
                args_cut: false,
            });
        }
    }
    let has_more = events.len() > q.limit;
    events.truncate(q.limit);
    Ok(WindowAnswer {
        events,
        total,
        has_more,
    })
}
