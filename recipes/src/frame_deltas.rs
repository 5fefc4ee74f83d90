//! Per-frame deltas between two scopes (`hotspots --diff-against`).
//!
//! Frames are matched by `logical_key` — the same function has the same key
//! in every run and artifact — so the comparison survives re-imports and
//! different producers of the same program. Each side is the whole-scope
//! aggregate of `frame_totals` (cost grows with distinct frames, not
//! events); the two aggregates are merged here. Deltas are descriptive:
//! one run against one run says nothing about noise (run sets do that).

use std::collections::HashMap;

use datafusion::logical_expr::{col, lit};
use datafusion::prelude::SessionContext;
use serde::{Deserialize, Serialize};

use crate::common::{ArtifactScope, RecipeResult, collect, column, i64_at, string_at};

/// One frame's values on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameDelta {
    /// The logical key (the same on both sides).
    pub frame: String,
    pub function: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// A trace slice's category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    pub file: Option<String>,
    pub line: Option<i64>,
    pub base_self: i64,
    pub target_self: i64,
    /// `target_self - base_self`.
    pub delta_self: i64,
    pub base_inclusive: i64,
    pub target_inclusive: i64,
    pub delta_inclusive: i64,
}

/// The frames that changed most, by absolute self delta.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameDeltaAnswer {
    pub metric: String,
    pub unit: String,
    pub base_total_self: i64,
    pub target_total_self: i64,
    /// Distinct frames on either side.
    pub total_frames: u64,
    pub rows: Vec<FrameDelta>,
}

#[derive(Default, Clone)]
struct Side {
    function: String,
    module: Option<String>,
    category: Option<String>,
    file: Option<String>,
    line: Option<i64>,
    self_value: i64,
    inclusive: i64,
}

/// Whole-scope totals per logical key for `metric`.
async fn totals(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    metric: &str,
) -> RecipeResult<HashMap<String, Side>> {
    let filter = scope.filter().and(col("metric").eq(lit(metric)));
    let df = crate::hotspots::by_logical_key(ctx, filter).await?;
    let mut out = HashMap::new();
    for batch in collect(df).await? {
        for i in 0..batch.num_rows() {
            let frame = string_at(column(&batch, "frame")?, i).unwrap_or_default();
            out.insert(
                frame,
                Side {
                    function: string_at(column(&batch, "function")?, i).unwrap_or_default(),
                    module: string_at(column(&batch, "module")?, i),
                    category: string_at(column(&batch, "category")?, i),
                    file: string_at(column(&batch, "file")?, i),
                    line: i64_at(column(&batch, "line")?, i),
                    self_value: i64_at(column(&batch, "self_value")?, i).unwrap_or(0),
                    inclusive: i64_at(column(&batch, "inclusive_value")?, i).unwrap_or(0),
                },
            );
        }
    }
    Ok(out)
}

/// Compares `target` against `base` under `metric`; at most `limit` rows.
pub async fn frame_deltas(
    ctx: &SessionContext,
    target: &ArtifactScope,
    base: &ArtifactScope,
    metric: &str,
    limit: usize,
) -> RecipeResult<FrameDeltaAnswer> {
    let after = totals(ctx, target, metric).await?;
    let before = totals(ctx, base, metric).await?;
    let mut keys: Vec<&String> = after.keys().chain(before.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut rows: Vec<FrameDelta> = keys
        .into_iter()
        .map(|key| {
            let a = after.get(key).cloned().unwrap_or_default();
            let b = before.get(key).cloned().unwrap_or_default();
            let named = if a.function.is_empty() { &b } else { &a };
            FrameDelta {
                frame: key.clone(),
                function: named.function.clone(),
                module: named.module.clone(),
                category: named.category.clone(),
                file: named.file.clone(),
                line: named.line,
                base_self: b.self_value,
                target_self: a.self_value,
                delta_self: a.self_value - b.self_value,
                base_inclusive: b.inclusive,
                target_inclusive: a.inclusive,
                delta_inclusive: a.inclusive - b.inclusive,
            }
        })
        .collect();
    let total_frames = rows.len() as u64;
    rows.sort_by(|x, y| {
        y.delta_self
            .abs()
            .cmp(&x.delta_self.abs())
            .then_with(|| x.frame.cmp(&y.frame))
    });
    rows.truncate(limit);
    Ok(FrameDeltaAnswer {
        metric: metric.to_owned(),
        unit: crate::hotspots::unit_of(metric),
        base_total_self: before.values().map(|s| s.self_value).sum(),
        target_total_self: after.values().map(|s| s.self_value).sum(),
        total_frames,
        rows,
    })
}
