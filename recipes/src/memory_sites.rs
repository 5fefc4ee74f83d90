//! Heap allocation sites from the stack evidence of heap profiles (memray
//! captures; pprof heap profiles): per artifact the bytes live at the
//! heap's high-water mark, still allocated at the end (memray's leaks) and
//! allocated in all, with their allocation counts; and the sites holding
//! the most at the end and at the peak. A site is the innermost Python
//! frame of an allocation's stack (function, file, line — where Python
//! code asked for the memory, below which only native frames follow);
//! without one, the stack's leaf when it is a named function (a Go heap
//! profile's allocating function), else `[no Python frame]` (memray's
//! reports group those allocations the same way).
//!
//! Reads the `samples` of the heap metrics grouped by stack, then the
//! prefix tree and frames of those artifacts in one streamed scan each
//! (held as integers; a memray capture has a few thousand to a few
//! hundred thousand distinct stacks).

use std::collections::HashMap;

use datafusion::arrow::array::{Array, BooleanArray};
use datafusion::functions_aggregate::expr_fn::{max, sum};
use datafusion::functions_aggregate::first_last::first_value_udaf;
use datafusion::logical_expr::{ExprFunctionExt, col, lit};
use datafusion::prelude::SessionContext;
use serde::{Deserialize, Serialize};

use crate::common::{
    ArtifactScope, RecipeResult, collect, column, f64_at, i64_at, string_at, table, utf8,
};
use crate::device_pass::{Interner, for_each_batch, ints};
pub use flameox_extractors::memray::memory_counters::HEAP_SERIES;
pub use flameox_extractors::memray::site_stacks::{
    ALLOCATED_METRICS, AT_END_METRICS, AT_PEAK_METRICS,
};

/// A walk up a stack stops after this many frames (damaged evidence
/// could hold a cycle).
const MAX_WALK: usize = 100_000;
/// The site of allocations whose stack has no Python frame and ends in
/// an unnamed (module + address) frame.
pub const NO_PYTHON_FRAME: &str = "[no Python frame]";
/// The site of samples whose stack is not in `stack_nodes` / `frames`.
pub const STACK_NOT_IN_EVIDENCE: &str = "[stack not in evidence]";

/// One artifact's heap totals (`None`: the artifact has no such view).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeapTotals {
    pub artifact_id: String,
    /// Live at the heap's high-water mark (`memory.peak_bytes`).
    pub peak_bytes: Option<i64>,
    pub peak_allocations: Option<i64>,
    /// When the peak was reached, at the earliest: the memory sample
    /// before the allocation that reached it (the `mem.heap` series).
    pub peak_ns: Option<i64>,
    /// Still allocated when tracking stopped (`memory.inuse_bytes`,
    /// memray's leaks).
    pub leaked_bytes: Option<i64>,
    pub leaked_allocations: Option<i64>,
    /// Every allocation (`memory.alloc_bytes`; not in `--aggregate`
    /// captures).
    pub allocated_bytes: Option<i64>,
    pub allocations: Option<i64>,
}

/// A site: the innermost Python frame of its stacks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeapSite {
    pub function: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<i64>,
    pub bytes: i64,
    pub allocations: i64,
    /// Of the list's `total_bytes` (named by `percent_of`).
    pub percent: f64,
}

/// Sites ranked by one view's bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeapSiteList {
    pub metric: String,
    /// What every `percent` is a share of.
    pub percent_of: String,
    pub total_bytes: i64,
    pub sites_found: u64,
    pub sites: Vec<HeapSite>,
}

/// The heap section of the memory answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeapAnswer {
    pub totals: Vec<HeapTotals>,
    /// Largest first by bytes still allocated at the end.
    pub leaked: HeapSiteList,
    /// Largest first by bytes live at the high-water mark.
    pub at_peak: HeapSiteList,
}

/// (artifact, stack, metric) → (bytes or count, allocations).
type Weights = Vec<(u32, u64, u32, i64, i64)>;

#[derive(Clone, Copy)]
struct FrameRow {
    function: u32,
    file: Option<u32>,
    line: Option<i64>,
    python: bool,
    symbolized: bool,
}

/// (function, file, line) ids.
type SiteKey = (u32, Option<u32>, Option<i64>);

async fn heap_weights(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    strings: &mut Interner,
) -> RecipeResult<Weights> {
    let metrics = [ALLOCATED_METRICS.0, AT_END_METRICS.0, AT_PEAK_METRICS.0]
        .iter()
        .map(|m| lit(*m))
        .collect();
    let df = table(ctx, "samples")
        .await?
        .filter(scope.filter().and(col("metric").in_list(metrics, false)))?
        .aggregate(
            vec![col("artifact_id"), col("stack_id"), col("metric")],
            vec![sum(col("weight")).alias("w"), sum(col("count")).alias("n")],
        )?;
    let mut out = Vec::new();
    for_each_batch(df, |batch| {
        let artifact = strings.column(column(batch, "artifact_id")?)?;
        let metric = strings.column(column(batch, "metric")?)?;
        let stack = ints(column(batch, "stack_id")?)?;
        let w = ints(column(batch, "w")?)?;
        let n = ints(column(batch, "n")?)?;
        for i in 0..batch.num_rows() {
            if let (Some(a), Some(m), Some(s)) = (artifact[i], metric[i], stack[i]) {
                let s = u64::try_from(s).unwrap_or(u64::MAX);
                out.push((a, s, m, w[i].unwrap_or(0), n[i].unwrap_or(0)));
            }
        }
        Ok(())
    })
    .await?;
    Ok(out)
}

/// The prefix tree and frames of `artifacts`.
struct Forest {
    nodes: HashMap<(u32, u64), (Option<u64>, u64)>,
    frames: HashMap<(u32, u64), FrameRow>,
}

impl Forest {
    async fn load(
        ctx: &SessionContext,
        artifacts: &ArtifactScope,
        strings: &mut Interner,
    ) -> RecipeResult<Forest> {
        let mut nodes = HashMap::new();
        let df = table(ctx, "stack_nodes")
            .await?
            .filter(artifacts.filter())?
            .select(vec![
                col("artifact_id"),
                col("stack_id"),
                col("parent_stack_id"),
                col("frame_id"),
            ])?;
        for_each_batch(df, |batch| {
            let artifact = strings.column(column(batch, "artifact_id")?)?;
            let stack = ints(column(batch, "stack_id")?)?;
            let parent = ints(column(batch, "parent_stack_id")?)?;
            let frame = ints(column(batch, "frame_id")?)?;
            for i in 0..batch.num_rows() {
                if let (Some(a), Some(s), Some(f)) = (artifact[i], stack[i], frame[i]) {
                    let as_u64 = |v: i64| u64::try_from(v).unwrap_or(u64::MAX);
                    nodes.insert((a, as_u64(s)), (parent[i].map(as_u64), as_u64(f)));
                }
            }
            Ok(())
        })
        .await?;
        let mut frames = HashMap::new();
        let df = table(ctx, "frames")
            .await?
            .filter(artifacts.filter())?
            .select(vec![
                col("artifact_id"),
                col("frame_id"),
                col("function"),
                col("file"),
                col("line"),
                col("language"),
                col("symbolized"),
            ])?;
        for_each_batch(df, |batch| {
            let artifact = strings.column(column(batch, "artifact_id")?)?;
            let id = ints(column(batch, "frame_id")?)?;
            let function = strings.column(column(batch, "function")?)?;
            let file = strings.column(column(batch, "file")?)?;
            let line = ints(column(batch, "line")?)?;
            let language = strings.column(column(batch, "language")?)?;
            let symbolized = column(batch, "symbolized")?;
            let symbolized = symbolized.as_any().downcast_ref::<BooleanArray>();
            let python = strings.id("python");
            for i in 0..batch.num_rows() {
                if let (Some(a), Some(f), Some(name)) = (artifact[i], id[i], function[i]) {
                    let row = FrameRow {
                        function: name,
                        file: file[i],
                        line: line[i],
                        python: language[i] == Some(python),
                        symbolized: symbolized.is_none_or(|b| b.is_valid(i) && b.value(i)),
                    };
                    frames.insert((a, u64::try_from(f).unwrap_or(u64::MAX)), row);
                }
            }
            Ok(())
        })
        .await?;
        Ok(Forest { nodes, frames })
    }

    /// The innermost Python frame of `stack`, else its leaf frame when
    /// named; `Ok(None)`: neither; `Err(())`: the stack is not in evidence.
    fn site(&self, artifact: u32, stack: u64) -> Result<Option<FrameRow>, ()> {
        let frame_of = |s: u64| {
            let (parent, frame) = self.nodes.get(&(artifact, s))?;
            Some((*parent, self.frames.get(&(artifact, *frame)).copied()?))
        };
        let (mut parent, leaf) = frame_of(stack).ok_or(())?;
        if leaf.python {
            return Ok(Some(leaf));
        }
        for _ in 0..MAX_WALK {
            let Some(at) = parent else { break };
            let Some((up, frame)) = frame_of(at) else {
                break;
            };
            if frame.python {
                return Ok(Some(frame));
            }
            parent = up;
        }
        Ok(leaf.symbolized.then_some(leaf))
    }
}

fn ranked(
    metric: &str,
    percent_of: &str,
    sites: HashMap<SiteKey, (i64, i64)>,
    strings: &Interner,
    limit: usize,
) -> HeapSiteList {
    let total_bytes: i64 = sites.values().map(|v| v.0).fold(0, i64::saturating_add);
    let mut list: Vec<HeapSite> = sites
        .into_iter()
        .map(|((function, file, line), (bytes, allocations))| HeapSite {
            function: strings.get(function).to_owned(),
            file: file.map(|f| strings.get(f).to_owned()),
            line,
            bytes,
            allocations,
            percent: if total_bytes > 0 {
                bytes as f64 * 100.0 / total_bytes as f64
            } else {
                0.0
            },
        })
        .collect();
    list.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then_with(|| a.function.cmp(&b.function))
            .then_with(|| a.file.cmp(&b.file))
            .then(a.line.cmp(&b.line))
    });
    let sites_found = list.len() as u64;
    list.truncate(limit);
    HeapSiteList {
        metric: metric.to_owned(),
        percent_of: percent_of.to_owned(),
        total_bytes,
        sites_found,
        sites: list,
    }
}

/// (artifact, highest value) → when the `mem.heap` series first reached
/// it: the time of the high-water mark where the extractor recorded it.
async fn heap_peak_times(
    ctx: &SessionContext,
    scope: &ArtifactScope,
) -> RecipeResult<HashMap<(String, i64), i64>> {
    let peak_first = first_value_udaf()
        .call(vec![col("ts_ns")])
        .order_by(vec![
            col("value").sort(false, false),
            col("ts_ns").sort(true, false),
        ])
        .build()?;
    let df = table(ctx, "counters")
        .await?
        .filter(
            scope
                .filter()
                .and(utf8("unit").eq(lit("bytes")))
                .and(utf8("name").eq(lit(HEAP_SERIES))),
        )?
        .aggregate(
            vec![utf8("artifact_id").alias("artifact")],
            vec![max(col("value")).alias("peak"), peak_first.alias("peak_ns")],
        )?;
    let mut out = HashMap::new();
    for batch in collect(df).await? {
        for i in 0..batch.num_rows() {
            let artifact = string_at(column(&batch, "artifact")?, i).unwrap_or_default();
            let peak = f64_at(column(&batch, "peak")?, i);
            let ts = i64_at(column(&batch, "peak_ns")?, i);
            if let (Some(peak), Some(ts)) = (peak, ts) {
                // Byte counts below 2^53 are exact in a float.
                out.insert((artifact, peak as i64), ts);
            }
        }
    }
    Ok(out)
}

/// The heap section, `None` when no artifact of the scope has heap-site
/// metrics (still allocated at the end, or at the peak).
pub async fn heap_sites(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    limit: usize,
) -> RecipeResult<Option<HeapAnswer>> {
    let mut strings = Interner::default();
    let weights = heap_weights(ctx, scope, &mut strings).await?;
    let (alloc, end, peak) = (
        strings.id(ALLOCATED_METRICS.0),
        strings.id(AT_END_METRICS.0),
        strings.id(AT_PEAK_METRICS.0),
    );
    // artifact → per metric (bytes, allocations)
    let mut per_artifact: HashMap<u32, HashMap<u32, (i64, i64)>> = HashMap::new();
    for &(a, _, m, w, n) in &weights {
        let slot = per_artifact.entry(a).or_default().entry(m).or_default();
        *slot = (slot.0.saturating_add(w), slot.1.saturating_add(n));
    }
    per_artifact.retain(|_, m| m.contains_key(&end) || m.contains_key(&peak));
    if per_artifact.is_empty() {
        return Ok(None);
    }
    let mut artifacts: Vec<u32> = per_artifact.keys().copied().collect();
    artifacts.sort_by(|a, b| strings.cmp(*a, *b));
    let in_scope = ArtifactScope {
        artifact_ids: artifacts
            .iter()
            .map(|a| strings.get(*a).to_owned())
            .collect(),
    };
    let forest = Forest::load(ctx, &in_scope, &mut strings).await?;
    let mut leaked: HashMap<SiteKey, (i64, i64)> = HashMap::new();
    let mut at_peak: HashMap<SiteKey, (i64, i64)> = HashMap::new();
    let missing = strings.id(STACK_NOT_IN_EVIDENCE);
    let no_python = strings.id(NO_PYTHON_FRAME);
    let mut sites: HashMap<(u32, u64), SiteKey> = HashMap::new();
    for &(a, stack, m, w, n) in &weights {
        let into = if m == end {
            &mut leaked
        } else if m == peak {
            &mut at_peak
        } else {
            continue;
        };
        if !per_artifact.contains_key(&a) {
            continue;
        }
        let key = *sites
            .entry((a, stack))
            .or_insert_with(|| match forest.site(a, stack) {
                Ok(Some(f)) => (f.function, f.file, f.line),
                Ok(None) => (no_python, None, None),
                Err(()) => (missing, None, None),
            });
        let slot = into.entry(key).or_default();
        *slot = (slot.0.saturating_add(w), slot.1.saturating_add(n));
    }
    let times = heap_peak_times(ctx, scope).await?;
    let totals = artifacts
        .iter()
        .filter_map(|a| Some((a, per_artifact.get(a)?)))
        .map(|(a, m)| {
            let get = |metric: u32| m.get(&metric).copied();
            HeapTotals {
                artifact_id: strings.get(*a).to_owned(),
                peak_bytes: get(peak).map(|v| v.0),
                peak_allocations: get(peak).map(|v| v.1),
                peak_ns: get(peak)
                    .and_then(|v| times.get(&(strings.get(*a).to_owned(), v.0)).copied()),
                leaked_bytes: get(end).map(|v| v.0),
                leaked_allocations: get(end).map(|v| v.1),
                allocated_bytes: get(alloc).map(|v| v.0),
                allocations: get(alloc).map(|v| v.1),
            }
        })
        .collect();
    Ok(Some(HeapAnswer {
        totals,
        leaked: ranked(
            AT_END_METRICS.0,
            "bytes still allocated at the end, every thread",
            leaked,
            &strings,
            limit,
        ),
        at_peak: ranked(
            AT_PEAK_METRICS.0,
            "bytes live at the heap's high-water mark, every thread",
            at_peak,
            &strings,
            limit,
        ),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(function: u32, python: bool, symbolized: bool) -> FrameRow {
        FrameRow {
            function,
            file: None,
            line: None,
            python,
            symbolized,
        }
    }

    #[test]
    fn a_site_is_the_innermost_python_frame_else_a_named_leaf() {
        // Stacks of artifact 0: 1 = py(10) → 2 = native(11) → 3 = native(12);
        // 4 = named leaf(13); 5 = unnamed leaf(14); 6 ↔ 7 a cycle.
        let mut forest = Forest {
            nodes: HashMap::new(),
            frames: HashMap::new(),
        };
        for (stack, parent, f) in [(1, None, 0), (2, Some(1), 1), (3, Some(2), 2)] {
            forest.nodes.insert((0, stack), (parent, f));
        }
        forest.nodes.insert((0, 4), (None, 3));
        forest.nodes.insert((0, 5), (None, 4));
        forest.nodes.insert((0, 6), (Some(7), 4));
        forest.nodes.insert((0, 7), (Some(6), 4));
        for (f, row) in [
            (0, frame(10, true, true)),
            (1, frame(11, false, false)),
            (2, frame(12, false, false)),
            (3, frame(13, false, true)),
            (4, frame(14, false, false)),
        ] {
            forest.frames.insert((0, f), row);
        }
        let site = |s| forest.site(0, s).map(|f| f.map(|f| f.function));
        assert_eq!(site(3), Ok(Some(10)));
        assert_eq!(site(1), Ok(Some(10)));
        assert_eq!(site(4), Ok(Some(13)));
        assert_eq!(site(5), Ok(None));
        assert_eq!(site(6), Ok(None));
        assert_eq!(site(99), Err(()));
    }

    #[test]
    fn lists_rank_by_bytes_and_share_the_whole_total() {
        let mut strings = Interner::default();
        let (a, b) = (strings.id("a"), strings.id("b"));
        let sites = HashMap::from([((a, None, None), (30, 1)), ((b, None, Some(2)), (90, 3))]);
        let list = ranked("m", "of all", sites, &strings, 1);
        assert_eq!((list.total_bytes, list.sites_found), (120, 2));
        assert_eq!(list.sites.len(), 1);
        assert_eq!(
            (list.sites[0].function.as_str(), list.sites[0].percent),
            ("b", 75.0)
        );
    }
}
