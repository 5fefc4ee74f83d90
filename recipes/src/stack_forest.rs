//! The call tree of a scope held in memory for path reconstruction: frames,
//! the prefix tree of stacks and the weight of each stack — loaded from the
//! stack reductions (`frames`, `stack_nodes`, `samples`), or built from a
//! window's events (`window_stacks`). Callers, callees and example
//! stacks that the reductions cannot answer (a thread or time scope) are
//! read from it.

use std::collections::{BTreeMap, HashMap};

use datafusion::functions_aggregate::expr_fn::sum;
use datafusion::logical_expr::{col, lit};
use datafusion::prelude::SessionContext;

use crate::common::{
    ArtifactScope, RecipeResult, collect, column, i64_at, string_at, table, u64_at,
};

/// The call tree of a scope, loaded for path reconstruction.
#[derive(Default)]
pub(crate) struct StackForest {
    /// (artifact, frame_id) → (logical_key, function)
    pub(crate) frames: HashMap<(String, u64), (String, String)>,
    /// (artifact, stack_id) → (parent, frame_id)
    pub(crate) nodes: HashMap<(String, u64), (Option<u64>, u64)>,
    /// (artifact, stack_id) → (weight, count)
    pub(crate) weights: BTreeMap<(String, u64), (i64, i64)>,
}

impl StackForest {
    /// Loads frames, the prefix tree, and the sample weights of `metric`
    /// (only the samples `samples` keeps, when given: a thread scope).
    pub(crate) async fn load(
        ctx: &SessionContext,
        scope: &ArtifactScope,
        metric: &str,
        samples: Option<&datafusion::logical_expr::Expr>,
    ) -> RecipeResult<StackForest> {
        let mut frames = HashMap::new();
        let df = table(ctx, "frames")
            .await?
            .filter(scope.filter())?
            .select_columns(&["artifact_id", "frame_id", "logical_key", "function"])?;
        for b in collect(df).await? {
            for i in 0..b.num_rows() {
                let artifact = string_at(column(&b, "artifact_id")?, i).unwrap_or_default();
                let id = u64_at(column(&b, "frame_id")?, i).unwrap_or(0);
                let key = string_at(column(&b, "logical_key")?, i).unwrap_or_default();
                let function = string_at(column(&b, "function")?, i).unwrap_or_default();
                frames.insert((artifact, id), (key, function));
            }
        }
        let mut nodes = HashMap::new();
        let df = table(ctx, "stack_nodes")
            .await?
            .filter(scope.filter())?
            .select_columns(&["artifact_id", "stack_id", "parent_stack_id", "frame_id"])?;
        for b in collect(df).await? {
            for i in 0..b.num_rows() {
                let artifact = string_at(column(&b, "artifact_id")?, i).unwrap_or_default();
                let id = u64_at(column(&b, "stack_id")?, i).unwrap_or(0);
                let parent = u64_at(column(&b, "parent_stack_id")?, i);
                let frame = u64_at(column(&b, "frame_id")?, i).unwrap_or(0);
                nodes.insert((artifact, id), (parent, frame));
            }
        }
        let mut weights = BTreeMap::new();
        let mut df = table(ctx, "samples")
            .await?
            .filter(scope.filter())?
            .filter(col("metric").eq(lit(metric)))?;
        if let Some(keep) = samples {
            df = df.filter(keep.clone())?;
        }
        let df = df.aggregate(
            vec![col("artifact_id"), col("stack_id")],
            vec![sum(col("weight")).alias("w"), sum(col("count")).alias("c")],
        )?;
        for b in collect(df).await? {
            for i in 0..b.num_rows() {
                let artifact = string_at(column(&b, "artifact_id")?, i).unwrap_or_default();
                let id = u64_at(column(&b, "stack_id")?, i).unwrap_or(0);
                let w = i64_at(column(&b, "w")?, i).unwrap_or(0);
                let c = i64_at(column(&b, "c")?, i).unwrap_or(0);
                weights.insert((artifact, id), (w, c));
            }
        }
        Ok(StackForest {
            frames,
            nodes,
            weights,
        })
    }

    /// Root-first (logical_key, function) path of a stack; bounded against cycles.
    pub(crate) fn path(&self, artifact: &str, stack_id: u64) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut cursor = Some(stack_id);
        while let Some(id) = cursor {
            if out.len() > 100_000 {
                break;
            }
            let Some((parent, frame)) = self.nodes.get(&(artifact.to_owned(), id)) else {
                break;
            };
            let entry = self
                .frames
                .get(&(artifact.to_owned(), *frame))
                .cloned()
                .unwrap_or_else(|| (String::new(), format!("frame#{frame}")));
            out.push(entry);
            cursor = *parent;
        }
        out.reverse();
        out
    }

    /// Distinct function paths with summed weights, optionally only those
    /// containing one of `keys`.
    pub(crate) fn paths(&self, keys: Option<&[String]>) -> BTreeMap<Vec<String>, (i64, i64)> {
        let mut merged: BTreeMap<Vec<String>, (i64, i64)> = BTreeMap::new();
        for ((artifact, stack_id), (w, c)) in &self.weights {
            let path = self.path(artifact, *stack_id);
            if let Some(keys) = keys
                && !path.iter().any(|(k, _)| keys.contains(k))
            {
                continue;
            }
            let names: Vec<String> = path.into_iter().map(|(_, f)| f).collect();
            let slot = merged.entry(names).or_default();
            slot.0 += w;
            slot.1 += c;
        }
        merged
    }
}
