//! The thread and process a drill-down is limited to. A name can match
//! several threads (two renderers' `CrRendererMain`); the scope resolves to
//! the (pid, tid) pairs it covers, which answers list as the threads they
//! merged. Callers and callees in a thread scope are computed from that
//! scope's stacks (the `call_edges` reduction has no thread dimension).

use std::collections::BTreeMap;

use datafusion::logical_expr::{Expr, col, lit};
use datafusion::prelude::SessionContext;

use crate::common::{ArtifactScope, RecipeResult, collect, column, i64_at, string_at, table};
use crate::drilldown::{Direction, NeighborAnswer, NeighborQuery, NeighborRow};
use crate::hotspots::name_or_id;
use crate::stack_forest::StackForest;
use crate::window_stacks::{WindowSource, window_forest};

/// `thread` (a tid or exact thread name) and `process` (a pid or exact
/// process name); both absent means every thread.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThreadScope {
    pub thread: Option<String>,
    pub process: Option<String>,
}

impl ThreadScope {
    pub fn is_everything(&self) -> bool {
        self.thread.is_none() && self.process.is_none()
    }
}

/// Distinct threads one scope may cover, at most.
const MAX_THREADS: usize = 512;

/// What a thread scope resolved to.
#[derive(Debug, Clone, PartialEq)]
pub struct ScopedThreads {
    /// Keeps the `samples` rows of the covered threads.
    pub samples: Expr,
    /// Each covered thread as `name (tid T, process (pid P))`.
    pub threads: Vec<String>,
}

/// Resolves a thread scope over the frame totals of `scope` (the threads
/// that have stacks). No match keeps nothing (and lists no thread).
pub async fn resolve(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    wanted: &ThreadScope,
) -> RecipeResult<ScopedThreads> {
    let mut filter = scope.filter();
    if let Some(t) = &wanted.thread {
        filter = filter.and(name_or_id("thread_name", "tid", t));
    }
    if let Some(p) = &wanted.process {
        filter = filter.and(name_or_id("process_name", "pid", p));
    }
    let df = table(ctx, "frame_totals")
        .await?
        .filter(filter)?
        .aggregate(
            vec![col("pid"), col("tid")],
            vec![
                datafusion::functions_aggregate::expr_fn::min(col("thread_name"))
                    .alias("thread_name"),
                datafusion::functions_aggregate::expr_fn::min(col("process_name"))
                    .alias("process_name"),
            ],
        )?
        .limit(0, Some(MAX_THREADS))?;
    let mut pairs: BTreeMap<(Option<i64>, Option<i64>), String> = BTreeMap::new();
    for b in collect(df).await? {
        for i in 0..b.num_rows() {
            let pid = i64_at(column(&b, "pid")?, i);
            let tid = i64_at(column(&b, "tid")?, i);
            let thread = string_at(column(&b, "thread_name")?, i);
            let process = string_at(column(&b, "process_name")?, i);
            let mut label = thread.unwrap_or_else(|| "thread".into());
            if let Some(tid) = tid {
                label.push_str(&format!(" (tid {tid}"));
                match (process, pid) {
                    (Some(p), Some(pid)) => label.push_str(&format!(", {p} pid {pid})")),
                    (None, Some(pid)) => label.push_str(&format!(", pid {pid})")),
                    _ => label.push(')'),
                }
            }
            pairs.insert((pid, tid), label);
        }
    }
    let keep = pairs
        .keys()
        .map(|(pid, tid)| equal_or_null("pid", *pid).and(equal_or_null("tid", *tid)))
        .reduce(Expr::or)
        .unwrap_or(lit(false));
    Ok(ScopedThreads {
        samples: keep,
        threads: pairs.into_values().collect(),
    })
}

fn equal_or_null(name: &str, value: Option<i64>) -> Expr {
    match value {
        Some(v) => col(name).eq(lit(v)),
        None => col(name).is_null(),
    }
}

/// Callers or callees of a frame within the samples `keep` admits, summed
/// as `call_edges` sums them: each stack adds its weight to the edge at
/// every occurrence of the frame on it (a recursion adds it per level),
/// and its count where the callee is the stack's leaf.
pub async fn neighbors_in(
    ctx: &SessionContext,
    q: &NeighborQuery,
    keep: &Expr,
) -> RecipeResult<NeighborAnswer> {
    let forest = StackForest::load(ctx, &q.scope, &q.metric, Some(keep)).await?;
    Ok(neighbors_of(&forest, q))
}

/// Callers or callees of a frame inside `[start, end)` (and the rows
/// `keep` admits), and where their weights came from.
pub async fn neighbors_in_window(
    ctx: &SessionContext,
    q: &NeighborQuery,
    window: (i64, i64),
    keep: Option<&Expr>,
) -> RecipeResult<(NeighborAnswer, WindowSource)> {
    let (forest, source) = window_forest(ctx, &q.scope, &q.metric, window, keep).await?;
    Ok((neighbors_of(&forest, q), source))
}

fn neighbors_of(forest: &StackForest, q: &NeighborQuery) -> NeighborAnswer {
    // neighbor key → (function, weight, count)
    let mut sums: BTreeMap<String, (String, i64, i64)> = BTreeMap::new();
    for ((artifact, stack_id), (w, c)) in &forest.weights {
        let path = forest.path(artifact, *stack_id);
        // A caller → callee pair weighs a stack once, however often a
        // recursion repeats it (as `call_edges` counts).
        let mut counted: std::collections::HashSet<(&str, &str)> = std::collections::HashSet::new();
        for (i, (key, _)) in path.iter().enumerate() {
            if !q.frame.keys.contains(key) {
                continue;
            }
            let (other, callee_at) = match q.direction {
                Direction::Callers => (i.checked_sub(1).and_then(|j| path.get(j)), i),
                Direction::Callees => (path.get(i + 1), i + 1),
            };
            if let Some((other_key, function)) = other {
                let slot = sums
                    .entry(other_key.clone())
                    .or_insert_with(|| (function.clone(), 0, 0));
                if counted.insert((other_key.as_str(), key.as_str())) {
                    slot.1 += w;
                }
                if callee_at + 1 == path.len() {
                    slot.2 += c;
                }
            }
        }
    }
    let total = sums.len() as u64;
    let mut rows: Vec<NeighborRow> = sums
        .into_iter()
        .map(|(frame, (function, weight, count))| NeighborRow {
            frame,
            function,
            module: None,
            category: None,
            file: None,
            line: None,
            weight,
            count,
        })
        .collect();
    rows.sort_by(|a, b| b.weight.cmp(&a.weight).then_with(|| a.frame.cmp(&b.frame)));
    if let Some((w, key)) = &q.after {
        rows.retain(|r| r.weight < *w || (r.weight == *w && r.frame.as_str() > key.as_str()));
    }
    let has_more = rows.len() > q.limit;
    rows.truncate(q.limit);
    NeighborAnswer {
        rows,
        total,
        has_more,
    }
}
