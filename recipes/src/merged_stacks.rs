//! One stack profile of a whole scope (every rank of a job, every artifact
//! of a run): the weights of `metric` summed per distinct stack, where a
//! stack is the root-first list of its frames' logical keys — the frame
//! identity every analysis uses — so a frame keeps its file, line, module
//! and category and two ranks' calls of one function merge. Threads and
//! artifacts are merged (the point of the reduction); the `reduce` service
//! writes the result as a `reduced_stacks` artifact.

use std::collections::{BTreeMap, HashMap};

use datafusion::functions_aggregate::expr_fn::min;
use datafusion::logical_expr::lit;
use datafusion::prelude::SessionContext;

use crate::common::{
    ArtifactScope, RecipeResult, collect, column, i64_at, string_at, table, u64_at, utf8,
};
use crate::stack_forest::StackForest;
use flameox_extractors::reduced_stacks::{ReducedFrame, ReducedStack};

/// The merged profile.
#[derive(Debug, Clone, PartialEq)]
pub struct MergedStacks {
    pub metric: String,
    /// `samples.weight_unit` of the metric.
    pub weight_unit: String,
    /// `frame_totals.unit` of the metric.
    pub unit: String,
    pub frames: Vec<ReducedFrame>,
    pub stacks: Vec<ReducedStack>,
}

/// Every frame of the scope: (artifact, frame id) → (logical key, frame).
async fn frame_details(
    ctx: &SessionContext,
    scope: &ArtifactScope,
) -> RecipeResult<HashMap<(String, u64), (String, ReducedFrame)>> {
    let df = table(ctx, "frames").await?.filter(scope.filter())?;
    let mut out = HashMap::new();
    for b in collect(df).await? {
        for i in 0..b.num_rows() {
            let text =
                |c: &str| -> RecipeResult<Option<String>> { Ok(string_at(column(&b, c)?, i)) };
            let artifact = text("artifact_id")?.unwrap_or_default();
            let id = u64_at(column(&b, "frame_id")?, i).unwrap_or(0);
            let frame = ReducedFrame {
                function: text("function")?.unwrap_or_default(),
                file: text("file")?,
                line: i64_at(column(&b, "line")?, i),
                module: text("module")?,
                category: text("category")?,
                language: text("language")?.unwrap_or_else(|| "unknown".to_owned()),
            };
            let key = text("logical_key")?.unwrap_or_default();
            out.insert((artifact, id), (key, frame));
        }
    }
    Ok(out)
}

/// The unit a table states for `metric` (`column` of `table`).
async fn unit_of(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    from: &str,
    metric_column: &str,
    unit_column: &str,
    metric: &str,
) -> RecipeResult<Option<String>> {
    let df = table(ctx, from)
        .await?
        .filter(scope.filter().and(utf8(metric_column).eq(lit(metric))))?
        .aggregate(vec![], vec![min(utf8(unit_column)).alias("u")])?;
    Ok(collect(df)
        .await?
        .first()
        .and_then(|b| column(b, "u").ok().and_then(|c| string_at(c, 0))))
}

/// The scope's stacks of `metric`, merged by frame identity.
pub async fn merged_stacks(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    metric: &str,
) -> RecipeResult<MergedStacks> {
    let details = frame_details(ctx, scope).await?;
    let forest = StackForest::load(ctx, scope, metric, None).await?;
    let mut frames: Vec<ReducedFrame> = Vec::new();
    let mut frame_index: HashMap<String, u32> = HashMap::new();
    let mut sums: BTreeMap<Vec<u32>, (i64, i64)> = BTreeMap::new();
    for ((artifact, stack_id), (w, c)) in &forest.weights {
        let mut path = Vec::new();
        let mut cursor = Some(*stack_id);
        while let Some(id) = cursor {
            // Bounded against a cycle of parent ids.
            if path.len() > 100_000 {
                break;
            }
            let Some((parent, frame)) = forest.nodes.get(&(artifact.clone(), id)) else {
                break;
            };
            let Some((key, detail)) = details.get(&(artifact.clone(), *frame)) else {
                break;
            };
            let index = match frame_index.get(key) {
                Some(&i) => i,
                None => {
                    let i = frames.len() as u32;
                    frame_index.insert(key.clone(), i);
                    frames.push(detail.clone());
                    i
                }
            };
            path.push(index);
            cursor = *parent;
        }
        if path.is_empty() {
            continue;
        }
        path.reverse();
        let slot = sums.entry(path).or_default();
        slot.0 = slot.0.saturating_add(*w);
        slot.1 = slot.1.saturating_add(*c);
    }
    let weight_unit = unit_of(ctx, scope, "samples", "metric", "weight_unit", metric)
        .await?
        .unwrap_or_else(|| "count".to_owned());
    let unit = unit_of(ctx, scope, "frame_totals", "metric", "unit", metric)
        .await?
        .unwrap_or_else(|| weight_unit.clone());
    Ok(MergedStacks {
        metric: metric.to_owned(),
        weight_unit,
        unit,
        frames,
        stacks: sums
            .into_iter()
            .map(|(frames, (weight, count))| ReducedStack {
                frames,
                weight,
                count,
            })
            .collect(),
    })
}
