//! The hot path of a sampled profile: from the root down, the heaviest
//! callee at each step by inclusive weight, function by function (a
//! function's lines merged), while it still holds a fifth of all samples.
//! A sampled profile's headline is this path — where the time is spent,
//! top-down — not the self-heaviest leaf, which for a profile whose work is
//! spread over many leaves (or per-line frames) names a small part of it.
//! Each step says whether it is a wrapper or a wait
//! ([`crate::time_accounting::frame_roles`]), so a reader looks through
//! them.

use std::collections::BTreeMap;

use datafusion::prelude::SessionContext;
use serde::{Deserialize, Serialize};

use crate::common::{ArtifactScope, RecipeResult};
use crate::frame_identity::split_name;
use crate::stack_forest::StackForest;
use crate::time_accounting::frame_roles::{FrameRole, role};

/// A step below which the path stops: its share of all the weight.
pub const HOT_PATH_MIN_SHARE: f64 = 0.2;
/// Steps at most.
pub const HOT_PATH_STEPS: usize = 12;

/// One function on the hot path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HotStep {
    pub function: String,
    /// Inclusive weight of this step (its subtree on the path).
    pub inclusive: i64,
    /// `inclusive` over every sample of the thread (of the profile when it
    /// has no threads), in percent.
    pub inclusive_pct_of_thread: f64,
    /// `waiting` or `wrapper`; absent for work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

/// A node of the function-level call tree.
#[derive(Default)]
struct Node {
    weight: i64,
    children: BTreeMap<String, Node>,
}

/// The hot path of `metric`'s stacks in `scope` (only the samples `keep`
/// admits: a thread).
pub async fn hot_path(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    metric: &str,
    keep: Option<&datafusion::logical_expr::Expr>,
) -> RecipeResult<Vec<HotStep>> {
    let forest = StackForest::load(ctx, scope, metric, keep).await?;
    let mut root = Node::default();
    for ((artifact, stack), (w, _)) in &forest.weights {
        // Each node's weight is its subtree's: a stack adds to every node
        // on its path once.
        let mut node = &mut root;
        node.weight += w;
        for (_, function) in forest.path(artifact, *stack) {
            let name = split_name(&function).function.to_owned();
            node = node.children.entry(name).or_default();
            node.weight += w;
        }
    }
    let total = root.weight;
    let mut out = Vec::new();
    let mut node = &root;
    while out.len() < HOT_PATH_STEPS {
        let Some((name, child)) = node
            .children
            .iter()
            .max_by(|a, b| a.1.weight.cmp(&b.1.weight).then_with(|| b.0.cmp(a.0)))
        else {
            break;
        };
        if total <= 0 || (child.weight as f64) < HOT_PATH_MIN_SHARE * total as f64 {
            break;
        }
        out.push(HotStep {
            function: name.clone(),
            inclusive: child.weight,
            inclusive_pct_of_thread: (child.weight as f64 * 10_000.0 / total as f64).round()
                / 100.0,
            role: match role(name, None) {
                FrameRole::Work => None,
                FrameRole::Waiting => Some("waiting".into()),
                FrameRole::Wrapper => Some("wrapper".into()),
            },
        });
        node = child;
    }
    Ok(out)
}
