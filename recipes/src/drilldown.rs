//! Drill-down from a hotspot: who calls a frame, what it calls, and full
//! example stacks through it. Also folded stacks (the flame-graph input).
//!
//! Callers and callees read the `call_edges` reduction. Stacks are rebuilt
//! from the `stack_nodes` prefix tree and the `samples` weights, which are
//! small (one row per distinct stack and thread, not per event).

use datafusion::functions_aggregate::expr_fn::{count, min, sum};
use std::collections::HashSet;

use datafusion::logical_expr::{col, lit};
use datafusion::prelude::{JoinType, SessionContext};
use serde::{Deserialize, Serialize};

use crate::common::{
    ArtifactScope, RecipeError, RecipeResult, collect, column, i64_at, string_at, table,
};
use crate::frame_identity::split_name;
use crate::stack_forest::StackForest;
use crate::window_stacks::{WindowSource, window_forest};

/// Which side of a frame to list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Callers,
    Callees,
}

/// A frame reference resolved to its logical keys (one name can have
/// several, e.g. the same slice name under two categories).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolvedFrame {
    pub requested: String,
    pub keys: Vec<String>,
    pub function: String,
}

/// Resolves a logical key or an exact function name within the scope; the
/// start of one function's key (a table's `frame` column, 6+ hex digits);
/// a bare function name (`fib` for `fib (/tmp/w.py:3)`) when every frame
/// carrying it is in one file, so it names one function.
pub async fn resolve_frame(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    frame: &str,
) -> RecipeResult<ResolvedFrame> {
    let by_key = col("logical_key").eq(lit(frame));
    let by_name = col("function").eq(lit(frame));
    let (mut keys, mut function) = keys_of(ctx, scope, by_key.or(by_name)).await?;
    if keys.is_empty() && is_key_prefix(frame) {
        // The `frame` column of a table: the first characters of one key.
        let by_prefix = col("logical_key").like(lit(format!("{frame}%")));
        let (found, name) = keys_of(ctx, scope, by_prefix).await?;
        let names: HashSet<String> = functions_of(ctx, scope, &found).await?;
        if names.len() > 1 {
            return Err(RecipeError::NotFound {
                what: format!("one frame for the key prefix {frame} (it starts several keys)"),
                closest: found,
                valid: names.into_iter().collect(),
            });
        }
        (keys, function) = (found, name);
    }
    if keys.is_empty() {
        let valid = function_names(ctx, scope).await?;
        let named: Vec<&String> = valid
            .iter()
            .filter(|n| split_name(n).function == frame)
            .collect();
        let files: HashSet<Option<&str>> = named.iter().map(|n| split_name(n).file).collect();
        if !named.is_empty() && files.len() == 1 {
            let names = named.iter().map(|n| lit(n.as_str())).collect();
            (keys, function) = keys_of(ctx, scope, col("function").in_list(names, false)).await?;
        }
        if keys.is_empty() {
            return Err(RecipeError::NotFound {
                what: format!("frame {frame}"),
                closest: Vec::new(),
                valid,
            });
        }
    }
    Ok(ResolvedFrame {
        requested: frame.to_owned(),
        keys: same_function(ctx, scope, &keys).await?,
        function,
    })
}

/// Whether a reference can be the start of a frame key (6 to 32
/// lowercase hexadecimal digits; tables show 8).
fn is_key_prefix(frame: &str) -> bool {
    (6..=32).contains(&frame.len())
        && frame
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The distinct function names of `keys`.
async fn functions_of(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    keys: &[String],
) -> RecipeResult<HashSet<String>> {
    if keys.is_empty() {
        return Ok(HashSet::new());
    }
    let df = table(ctx, "frames")
        .await?
        .filter(scope.filter().and(
            col("logical_key").in_list(keys.iter().map(|k| lit(k.as_str())).collect(), false),
        ))?
        .aggregate(vec![col("function")], vec![])?;
    let mut names = HashSet::new();
    for batch in collect(df).await? {
        for i in 0..batch.num_rows() {
            if let Some(name) = string_at(column(&batch, "function")?, i) {
                names.insert(name);
            }
        }
    }
    Ok(names)
}

/// The logical keys of the frames `filter` keeps, and the first one's
/// function name.
async fn keys_of(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    filter: datafusion::logical_expr::Expr,
) -> RecipeResult<(Vec<String>, String)> {
    let df = table(ctx, "frames")
        .await?
        .filter(scope.filter().and(filter))?
        .aggregate(vec![col("logical_key"), col("function")], vec![])?
        .sort(vec![col("logical_key").sort(true, false)])?;
    let mut keys = Vec::new();
    let mut function = String::new();
    for batch in collect(df).await? {
        for i in 0..batch.num_rows() {
            if let Some(k) = string_at(column(&batch, "logical_key")?, i) {
                keys.push(k);
            }
            if function.is_empty() {
                function = string_at(column(&batch, "function")?, i).unwrap_or_default();
            }
        }
    }
    Ok((keys, function))
}

/// The scope's function names, heaviest first (at most 5,000).
async fn function_names(ctx: &SessionContext, scope: &ArtifactScope) -> RecipeResult<Vec<String>> {
    let names = table(ctx, "frame_totals")
        .await?
        .filter(scope.filter())?
        .aggregate(
            vec![col("function")],
            vec![sum(col("self_value")).alias("s")],
        )?
        .sort(vec![
            col("s").sort(false, false),
            col("function").sort(true, false),
        ])?
        .limit(0, Some(5000))?;
    let mut valid = Vec::new();
    for batch in collect(names).await? {
        for i in 0..batch.num_rows() {
            if let Some(name) = string_at(column(&batch, "function")?, i) {
                valid.push(name);
            }
        }
    }
    Ok(valid)
}

/// Every key of the functions `keys` name: the same function, file,
/// module and category at any line (a sampled profile's per-line frames
/// are one function to its drill-downs, as to its hotspots).
async fn same_function(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    keys: &[String],
) -> RecipeResult<Vec<String>> {
    type Place = (String, Option<String>, Option<String>, Option<String>);
    let place = |batch: &datafusion::arrow::array::RecordBatch, i: usize| -> RecipeResult<Place> {
        Ok((
            string_at(column(batch, "function")?, i).unwrap_or_default(),
            string_at(column(batch, "file")?, i),
            string_at(column(batch, "module")?, i),
            string_at(column(batch, "category")?, i),
        ))
    };
    let columns = || {
        vec![
            col("logical_key"),
            col("function"),
            col("file"),
            col("module"),
            crate::common::utf8("category").alias("category"),
        ]
    };
    let found = table(ctx, "frames")
        .await?
        .filter(scope.filter().and(
            col("logical_key").in_list(keys.iter().map(|k| lit(k.as_str())).collect(), false),
        ))?
        .select(columns())?;
    let mut places = std::collections::BTreeSet::new();
    for batch in collect(found).await? {
        for i in 0..batch.num_rows() {
            places.insert(place(&batch, i)?);
        }
    }
    let functions: std::collections::BTreeSet<&str> = places.iter().map(|p| p.0.as_str()).collect();
    let all = table(ctx, "frames")
        .await?
        .filter(
            scope
                .filter()
                .and(col("function").in_list(functions.iter().map(|f| lit(*f)).collect(), false)),
        )?
        .select(columns())?;
    let mut out: Vec<String> = keys.to_vec();
    for batch in collect(all).await? {
        for i in 0..batch.num_rows() {
            if places.contains(&place(&batch, i)?)
                && let Some(k) = string_at(column(&batch, "logical_key")?, i)
            {
                out.push(k);
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// What `stacks callers|callees` asks.
#[derive(Debug, Clone)]
pub struct NeighborQuery {
    pub scope: ArtifactScope,
    pub frame: ResolvedFrame,
    pub direction: Direction,
    pub metric: String,
    pub limit: usize,
    /// Keyset position: the last row's (weight, frame key).
    pub after: Option<(i64, String)>,
}

/// One caller or callee.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NeighborRow {
    pub frame: String,
    pub function: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// A trace slice's category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    pub file: Option<String>,
    pub line: Option<i64>,
    pub weight: i64,
    pub count: i64,
}

/// A page of callers or callees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NeighborAnswer {
    pub rows: Vec<NeighborRow>,
    pub total: u64,
    pub has_more: bool,
}

/// Lists the callers or callees of a frame by edge weight.
pub async fn call_neighbors(
    ctx: &SessionContext,
    q: &NeighborQuery,
) -> RecipeResult<NeighborAnswer> {
    let (this_side, other_side) = match q.direction {
        Direction::Callers => ("child_key", "parent_key"),
        Direction::Callees => ("parent_key", "child_key"),
    };
    let keys = q.frame.keys.iter().map(|k| lit(k.as_str())).collect();
    let edges = table(ctx, "call_edges")
        .await?
        .filter(
            q.scope
                .filter()
                .and(col("metric").eq(lit(q.metric.as_str())))
                .and(col(this_side).in_list(keys, false)),
        )?
        .aggregate(
            vec![col(other_side).alias("frame")],
            vec![
                sum(col("weight")).alias("weight"),
                sum(col("count")).alias("count"),
            ],
        )?;
    let total = edges
        .clone()
        .aggregate(vec![], vec![count(lit(1)).alias("n")])?;
    let total = match collect(total).await?.first() {
        Some(b) if b.num_rows() > 0 => i64_at(column(b, "n")?, 0).unwrap_or(0).max(0) as u64,
        _ => 0,
    };
    let mut page = edges;
    if let Some((w, key)) = &q.after {
        page = page.filter(
            col("weight").lt(lit(*w)).or(col("weight")
                .eq(lit(*w))
                .and(col("frame").gt(lit(key.as_str())))),
        )?;
    }
    let names = table(ctx, "frames")
        .await?
        .filter(q.scope.filter())?
        .aggregate(
            vec![col("logical_key").alias("name_key")],
            vec![
                min(col("function")).alias("function"),
                min(col("module")).alias("module"),
                min(datafusion::prelude::cast(
                    col("category"),
                    datafusion::arrow::datatypes::DataType::Utf8,
                ))
                .alias("category"),
                min(col("file")).alias("file"),
                min(col("line")).alias("line"),
            ],
        )?;
    let page = page
        .sort(vec![
            col("weight").sort(false, false),
            col("frame").sort(true, false),
        ])?
        .limit(0, Some(q.limit + 1))?
        .join(names, JoinType::Left, &["frame"], &["name_key"], None)?
        .sort(vec![
            col("weight").sort(false, false),
            col("frame").sort(true, false),
        ])?;
    let mut rows = Vec::new();
    for batch in collect(page).await? {
        for i in 0..batch.num_rows() {
            rows.push(NeighborRow {
                frame: string_at(column(&batch, "frame")?, i).unwrap_or_default(),
                function: string_at(column(&batch, "function")?, i).unwrap_or_default(),
                module: string_at(column(&batch, "module")?, i),
                category: string_at(column(&batch, "category")?, i),
                file: string_at(column(&batch, "file")?, i),
                line: i64_at(column(&batch, "line")?, i),
                weight: i64_at(column(&batch, "weight")?, i).unwrap_or(0),
                count: i64_at(column(&batch, "count")?, i).unwrap_or(0),
            });
        }
    }
    let has_more = rows.len() > q.limit;
    rows.truncate(q.limit);
    Ok(NeighborAnswer {
        rows,
        total,
        has_more,
    })
}

/// One distinct stack (root first) with its summed weight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StackExample {
    pub frames: Vec<String>,
    pub weight: i64,
    pub count: i64,
}

/// Example stacks through a frame, heaviest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StackExamplesAnswer {
    pub stacks: Vec<StackExample>,
    pub total: u64,
    pub has_more: bool,
}

/// Representative stacks through a frame, heaviest first (ties by path),
/// over the whole scope or inside a window (then with where the weights
/// came from).
pub async fn stack_examples(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    frame: &ResolvedFrame,
    metric: &str,
    limit: usize,
    window: Option<(i64, i64)>,
    samples: Option<&datafusion::logical_expr::Expr>,
) -> RecipeResult<(StackExamplesAnswer, Option<WindowSource>)> {
    let (forest, source) = match window {
        Some(w) => {
            let (forest, source) = window_forest(ctx, scope, metric, w, samples).await?;
            (forest, Some(source))
        }
        None => (StackForest::load(ctx, scope, metric, samples).await?, None),
    };
    Ok((examples_in(&forest, frame, limit), source))
}

fn examples_in(forest: &StackForest, frame: &ResolvedFrame, limit: usize) -> StackExamplesAnswer {
    let mut stacks: Vec<StackExample> = forest
        .paths(Some(&frame.keys))
        .into_iter()
        .map(|(frames, (weight, count))| StackExample {
            frames,
            weight,
            count,
        })
        .collect();
    stacks.sort_by(|a, b| {
        b.weight
            .cmp(&a.weight)
            .then_with(|| a.frames.cmp(&b.frames))
    });
    let total = stacks.len() as u64;
    let has_more = stacks.len() > limit;
    stacks.truncate(limit);
    StackExamplesAnswer {
        stacks,
        total,
        has_more,
    }
}

/// Folded stacks (`a;b;c weight`) of the whole scope, sorted by path.
pub async fn folded_stacks(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    metric: &str,
) -> RecipeResult<Vec<(String, i64)>> {
    let forest = StackForest::load(ctx, scope, metric, None).await?;
    Ok(forest
        .paths(None)
        .into_iter()
        .filter(|(_, (w, _))| *w > 0)
        .map(|(names, (w, _))| {
            let cleaned: Vec<String> = names.iter().map(|n| n.replace([';', '\n'], "_")).collect();
            (cleaned.join(";"), w)
        })
        .collect())
}
