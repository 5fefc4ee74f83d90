//! Drill-downs inside a time window (a `phase`'s host span, or
//! `start_ns`/`end_ns`). The stack reductions carry no time, so a window
//! reads rows that do:
//! - a metric whose samples have timestamps (a sampling profiler's) keeps
//!   the samples taken inside the window;
//! - a metric of slices (aggregated without time at extraction) rebuilds
//!   stacks from the events overlapping the window: each slice starting
//!   inside weighs its self time on its stack, and its enclosing slices
//!   (which may start before the window) are its callers — the rule window
//!   hotspots use, so the numbers agree.
//!
//! Slices read are bounded ([`MAX_WINDOW_SLICES`]); a wider window is
//! refused with the count, so work never grows unbounded.

use std::collections::{BTreeMap, HashMap};

use datafusion::logical_expr::{Expr, col, lit};
use datafusion::prelude::SessionContext;
use serde::{Deserialize, Serialize};

use crate::common::{
    ArtifactScope, RecipeError, RecipeResult, collect, column, stack_kinds_only, string_at, table,
};
use crate::device_pass::{Interner, for_each_batch, ints};
use crate::stack_forest::StackForest;

/// Slices overlapping a window read at most.
pub const MAX_WINDOW_SLICES: usize = 1_000_000;

/// Where a windowed drill-down's stacks came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowSource {
    /// Samples with a timestamp inside the window.
    TimedSamples,
    /// Slices starting inside the window, with their enclosing slices.
    Slices,
}

impl WindowSource {
    /// The rule in words, for answers.
    pub fn rule(self) -> &'static str {
        match self {
            WindowSource::TimedSamples => "samples taken in [start_ns, end_ns)",
            WindowSource::Slices => {
                "slices starting in [start_ns, end_ns) weigh their self time; their enclosing slices are their callers"
            }
        }
    }
}

/// The call tree of the part of `scope` inside `[start, end)`, weighed by
/// `metric`, kept to the rows `keep` admits (a thread scope; it reads
/// `pid`/`tid`, which samples and events share).
pub(crate) async fn window_forest(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    metric: &str,
    (start, end): (i64, i64),
    keep: Option<&Expr>,
) -> RecipeResult<(StackForest, WindowSource)> {
    let in_window = col("ts_ns")
        .gt_eq(lit(start))
        .and(col("ts_ns").lt(lit(end)));
    if has_timed_samples(ctx, scope, metric).await? {
        let keep = match keep {
            Some(k) => k.clone().and(in_window),
            None => in_window,
        };
        let forest = StackForest::load(ctx, scope, metric, Some(&keep)).await?;
        return Ok((forest, WindowSource::TimedSamples));
    }
    Ok((
        slice_forest(ctx, scope, (start, end), keep).await?,
        WindowSource::Slices,
    ))
}

/// Whether `metric` has samples with a timestamp in scope.
async fn has_timed_samples(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    metric: &str,
) -> RecipeResult<bool> {
    let df = table(ctx, "samples")
        .await?
        .filter(
            scope
                .filter()
                .and(col("metric").eq(lit(metric)))
                .and(col("ts_ns").is_not_null()),
        )?
        .select_columns(&["ts_ns"])?
        .limit(0, Some(1))?;
    Ok(collect(df).await?.iter().any(|b| b.num_rows() > 0))
}

/// One slice overlapping the window.
struct Slice {
    artifact: u32,
    event_id: u64,
    parent: Option<u64>,
    depth: i64,
    starts_inside: bool,
    self_ns: i64,
    /// (name, category) ids.
    frame: (u32, Option<u32>),
}

/// Stacks of the slices overlapping `[start, end)`: every slice becomes a
/// node under its parent's node; those starting inside carry their self
/// time. Frames are named by the logical key `frames` holds for their
/// (name, category), or by the name when it has none.
async fn slice_forest(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    (start, end): (i64, i64),
    keep: Option<&Expr>,
) -> RecipeResult<StackForest> {
    let mut filter = scope
        .filter()
        .and(col("ts_ns").lt(lit(end)))
        .and((col("ts_ns") + col("dur_ns")).gt(lit(start)))
        .and(col("dur_ns").gt(lit(0i64)))
        .and(stack_kinds_only());
    if let Some(k) = keep {
        filter = filter.and(k.clone());
    }
    let events = table(ctx, "trace_events")
        .await?
        .filter(filter)?
        .select_columns(&[
            "artifact_id",
            "event_id",
            "parent_event_id",
            "depth",
            "ts_ns",
            "self_ns",
            "name",
            "category",
        ])?
        .limit(0, Some(MAX_WINDOW_SLICES + 1))?;
    let mut strings = Interner::default();
    let mut slices: Vec<Slice> = Vec::new();
    for_each_batch(events, |b| {
        let artifacts = strings.column(column(b, "artifact_id")?)?;
        let names = strings.column(column(b, "name")?)?;
        let categories = strings.column(column(b, "category")?)?;
        let ids = ints(column(b, "event_id")?)?;
        let parents = ints(column(b, "parent_event_id")?)?;
        let depths = ints(column(b, "depth")?)?;
        let starts = ints(column(b, "ts_ns")?)?;
        let selfs = ints(column(b, "self_ns")?)?;
        for i in 0..b.num_rows() {
            let (Some(artifact), Some(name), Some(id)) = (artifacts[i], names[i], ids[i]) else {
                continue;
            };
            slices.push(Slice {
                artifact,
                event_id: id as u64,
                parent: parents[i].map(|p| p as u64),
                depth: depths[i].unwrap_or(0),
                starts_inside: starts[i].is_some_and(|t| t >= start),
                self_ns: selfs[i].unwrap_or(0),
                frame: (name, categories[i]),
            });
        }
        Ok(())
    })
    .await?;
    if slices.len() > MAX_WINDOW_SLICES {
        return Err(RecipeError::ResourcesExhausted(format!(
            "the window overlaps more than {MAX_WINDOW_SLICES} slices"
        )));
    }
    let keys = slice_keys(ctx, scope, &strings).await?;
    // Parents before children: a parent is one level shallower.
    slices.sort_unstable_by_key(|s| (s.depth, s.artifact, s.event_id));
    let mut frames: HashMap<(u32, Option<u32>), u64> = HashMap::new();
    let mut forest = StackForest::default();
    let mut stacks: HashMap<(Option<u64>, u64), u64> = HashMap::new();
    let mut node_of: HashMap<(u32, u64), u64> = HashMap::with_capacity(slices.len());
    for s in &slices {
        let next_frame = frames.len() as u64;
        let frame = *frames.entry(s.frame).or_insert_with(|| {
            let name = strings.get(s.frame.0).to_owned();
            let key = keys.get(&s.frame).cloned().unwrap_or_else(|| name.clone());
            forest
                .frames
                .insert((String::new(), next_frame), (key, name));
            next_frame
        });
        let parent = s
            .parent
            .and_then(|p| node_of.get(&(s.artifact, p)).copied());
        let next_stack = stacks.len() as u64;
        let stack = *stacks.entry((parent, frame)).or_insert_with(|| {
            forest
                .nodes
                .insert((String::new(), next_stack), (parent, frame));
            next_stack
        });
        node_of.insert((s.artifact, s.event_id), stack);
        if s.starts_inside {
            let w = forest.weights.entry((String::new(), stack)).or_default();
            w.0 += s.self_ns;
            w.1 += 1;
        }
    }
    Ok(forest)
}

/// The logical key of each (name, category) the slices used, from `frames`
/// (slice frames have no file or line).
async fn slice_keys(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    strings: &Interner,
) -> RecipeResult<BTreeMap<(u32, Option<u32>), String>> {
    let df = table(ctx, "frames")
        .await?
        .filter(
            scope
                .filter()
                .and(col("file").is_null())
                .and(col("line").is_null()),
        )?
        .select(vec![
            col("function"),
            // A slice frame's category (`module` in version-1 evidence).
            datafusion::functions::expr_fn::coalesce(vec![
                datafusion::prelude::cast(
                    col("category"),
                    datafusion::arrow::datatypes::DataType::Utf8,
                ),
                col("module"),
            ])
            .alias("category"),
            col("logical_key"),
        ])?;
    let mut out = BTreeMap::new();
    for b in collect(df).await? {
        for i in 0..b.num_rows() {
            let Some(function) = string_at(column(&b, "function")?, i) else {
                continue;
            };
            let Some(name) = strings.find(&function) else {
                continue;
            };
            let category = match string_at(column(&b, "category")?, i) {
                Some(m) => match strings.find(&m) {
                    Some(id) => Some(id),
                    None => continue,
                },
                None => None,
            };
            if let Some(key) = string_at(column(&b, "logical_key")?, i) {
                out.entry((name, category))
                    .and_modify(|k: &mut String| {
                        if key > *k {
                            *k = key.clone();
                        }
                    })
                    .or_insert(key);
            }
        }
    }
    Ok(out)
}
