//! Per-frame deltas between two scopes (`compare_hotspots`).
//!
//! Frames are matched by identity that survives edits
//! ([`crate::frame_identity`]): function and file name (or module, or
//! category), lines ignored unless asked — a function moved two lines down,
//! or per-line frames of a sampled profile, stay one frame; a function whose
//! file was renamed is matched by its name alone when that name is unique
//! among the unmatched frames of both sides (`matched: function_only`). The
//! whole of each side comes first, then how much of each side the matched
//! frames hold (a low share means the comparison mostly pairs nothing), then
//! the frames by |Δ self|, each with its call counts on both sides and
//! whether one slice makes most of its change. Each side is the whole-scope
//! aggregate of `frame_totals` (cost grows with distinct frames, not
//! events). Deltas are descriptive: one run against one run says nothing
//! about noise (run sets do that).

use std::collections::{BTreeMap, HashMap};

use datafusion::functions_aggregate::expr_fn::max;
use datafusion::logical_expr::{col, lit};
use datafusion::prelude::SessionContext;
use serde::{Deserialize, Serialize};

use crate::common::{ArtifactScope, RecipeResult, collect, column, i64_at, string_at, table};
use crate::frame_identity::{FrameIdentity, identity};

/// Matched shares under this warn that the comparison pairs little.
pub const LOW_MATCHED_SHARE: f64 = 0.8;

/// One frame's values on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameDelta {
    /// The frame reference the drill-downs accept (the target's heaviest
    /// logical key, else the base's).
    pub frame: String,
    /// The base's key when it differs (the function moved or its file was
    /// renamed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_frame: Option<String>,
    pub function: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// A trace slice's category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    pub file: Option<String>,
    pub line: Option<i64>,
    /// `function_and_file`, `function_only` (the file's name differs),
    /// `target_only` or `base_only`.
    pub matched: String,
    pub base_self: i64,
    pub target_self: i64,
    /// `target_self - base_self`.
    pub delta_self: i64,
    pub base_inclusive: i64,
    pub target_inclusive: i64,
    pub delta_inclusive: i64,
    /// Calls (slices) or samples on each side.
    pub base_count: i64,
    pub target_count: i64,
    /// The longest single slice's self time on the side that grew (trace
    /// metrics), when it is at least half of the change: one slice, not a
    /// trend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_slice_ns: Option<i64>,
    /// The base side's slice name (it carries the line in some producers).
    #[serde(skip)]
    pub base_function: String,
}

/// The whole of each side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WholeDelta {
    pub base_total_self: i64,
    pub target_total_self: i64,
    pub delta_self: i64,
    /// `target / base` (null when the base is 0).
    pub ratio: Option<f64>,
}

/// The frames that changed most, by absolute self delta.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameDeltaAnswer {
    pub metric: String,
    pub unit: String,
    pub whole: WholeDelta,
    /// What frames were matched by: `function_and_file`, or
    /// `function_file_and_line` when lines were asked for.
    pub matched_by: String,
    /// Shares (0..=1) of each side's self total held by frames found on
    /// both sides.
    pub matched_share_of_base: f64,
    pub matched_share_of_target: f64,
    /// Said when a matched share is under 0.8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// Distinct frames on either side.
    #[serde(rename = "total")]
    pub total_frames: u64,
    pub rows: Vec<FrameDelta>,
}

/// One side's values of one identity.
#[derive(Default, Clone)]
struct Side {
    /// The heaviest logical key and its columns.
    frame: String,
    function: String,
    module: Option<String>,
    category: Option<String>,
    file: Option<String>,
    line: Option<i64>,
    heaviest: i64,
    self_value: i64,
    inclusive: i64,
    count: i64,
}

/// Whole-scope totals per frame identity for `metric`.
async fn totals(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    metric: &str,
    by_line: bool,
) -> RecipeResult<BTreeMap<FrameIdentity, Side>> {
    let filter = scope.filter().and(col("metric").eq(lit(metric)));
    let df = crate::hotspots::by_logical_key(ctx, filter).await?;
    let mut out: BTreeMap<FrameIdentity, Side> = BTreeMap::new();
    for batch in collect(df).await? {
        for i in 0..batch.num_rows() {
            let function = string_at(column(&batch, "function")?, i).unwrap_or_default();
            let file = string_at(column(&batch, "file")?, i);
            let line = i64_at(column(&batch, "line")?, i);
            let module = string_at(column(&batch, "module")?, i);
            let category = string_at(column(&batch, "category")?, i);
            let self_value = i64_at(column(&batch, "self_value")?, i).unwrap_or(0);
            let key = identity(
                &function,
                file.as_deref(),
                line,
                module.as_deref(),
                category.as_deref(),
                by_line,
            );
            let side = out.entry(key).or_default();
            side.self_value += self_value;
            // Per-line frames of one function each cover their own
            // samples: their inclusive values add up.
            side.inclusive += i64_at(column(&batch, "inclusive_value")?, i).unwrap_or(0);
            side.count += i64_at(column(&batch, "count")?, i).unwrap_or(0);
            if side.frame.is_empty() || self_value > side.heaviest {
                side.heaviest = self_value;
                side.frame = string_at(column(&batch, "frame")?, i).unwrap_or_default();
                side.function = function;
                side.file = file;
                side.line = line;
                side.module = module;
                side.category = category;
            }
        }
    }
    Ok(out)
}

/// Pairs of (target identity, base identity) found on both sides: by
/// identity, then by function alone where the name is unique among the
/// unmatched frames of each side.
type Pairs = Vec<(Option<FrameIdentity>, Option<FrameIdentity>, &'static str)>;

fn pair(after: &BTreeMap<FrameIdentity, Side>, before: &BTreeMap<FrameIdentity, Side>) -> Pairs {
    let mut out: Pairs = Vec::new();
    let mut left_after: Vec<&FrameIdentity> = Vec::new();
    for key in after.keys() {
        if before.contains_key(key) {
            out.push((Some(key.clone()), Some(key.clone()), "function_and_file"));
        } else {
            left_after.push(key);
        }
    }
    let left_before: Vec<&FrameIdentity> =
        before.keys().filter(|k| !after.contains_key(*k)).collect();
    let by_name = |list: &[&FrameIdentity]| {
        let mut names: HashMap<String, Vec<FrameIdentity>> = HashMap::new();
        for k in list {
            names
                .entry(k.function.clone())
                .or_default()
                .push((*k).clone());
        }
        names
    };
    let names_after = by_name(&left_after);
    let names_before = by_name(&left_before);
    let mut paired_after = std::collections::HashSet::new();
    let mut paired_before = std::collections::HashSet::new();
    for (name, a) in &names_after {
        if let (Some(b), [one_a]) = (names_before.get(name), a.as_slice())
            && let [one_b] = b.as_slice()
        {
            out.push((Some(one_a.clone()), Some(one_b.clone()), "function_only"));
            paired_after.insert(one_a.clone());
            paired_before.insert(one_b.clone());
        }
    }
    for k in left_after {
        if !paired_after.contains(k) {
            out.push((Some(k.clone()), None, "target_only"));
        }
    }
    for k in left_before {
        if !paired_before.contains(k) {
            out.push((None, Some(k.clone()), "base_only"));
        }
    }
    out
}

/// Compares `target` against `base` under `metric`; at most `limit` rows.
pub async fn frame_deltas(
    ctx: &SessionContext,
    target: &ArtifactScope,
    base: &ArtifactScope,
    metric: &str,
    by_line: bool,
    limit: usize,
) -> RecipeResult<FrameDeltaAnswer> {
    let after = totals(ctx, target, metric, by_line).await?;
    let before = totals(ctx, base, metric, by_line).await?;
    let empty = Side::default();
    let mut rows: Vec<FrameDelta> = pair(&after, &before)
        .into_iter()
        .map(|(ka, kb, matched)| {
            let a = ka.as_ref().and_then(|k| after.get(k)).unwrap_or(&empty);
            let b = kb.as_ref().and_then(|k| before.get(k)).unwrap_or(&empty);
            let named = if a.frame.is_empty() { b } else { a };
            FrameDelta {
                frame: named.frame.clone(),
                base_frame: (!b.frame.is_empty() && b.frame != named.frame)
                    .then(|| b.frame.clone()),
                function: named.function.clone(),
                module: named.module.clone(),
                category: named.category.clone(),
                file: named.file.clone(),
                line: named.line,
                matched: matched.to_owned(),
                base_self: b.self_value,
                target_self: a.self_value,
                delta_self: a.self_value - b.self_value,
                base_inclusive: b.inclusive,
                target_inclusive: a.inclusive,
                delta_inclusive: a.inclusive - b.inclusive,
                base_count: b.count,
                target_count: a.count,
                one_slice_ns: None,
                base_function: b.function.clone(),
            }
        })
        .collect();
    let total_frames = rows.len() as u64;
    let base_total: i64 = before.values().map(|s| s.self_value).sum();
    let target_total: i64 = after.values().map(|s| s.self_value).sum();
    let both = |r: &&FrameDelta| r.matched == "function_and_file" || r.matched == "function_only";
    let share = |part: i64, whole: i64| {
        if whole > 0 {
            (part as f64 / whole as f64 * 1000.0).round() / 1000.0
        } else {
            1.0
        }
    };
    let matched_share_of_base = share(
        rows.iter().filter(both).map(|r| r.base_self).sum(),
        base_total,
    );
    let matched_share_of_target = share(
        rows.iter().filter(both).map(|r| r.target_self).sum(),
        target_total,
    );
    let warning = (matched_share_of_base < LOW_MATCHED_SHARE
        || matched_share_of_target < LOW_MATCHED_SHARE)
        .then(|| {
            format!(
                "frames found on both sides hold only {:.0} % of the base's and {:.0} % of the target's self {}: most of the change is in frames one side lacks (different code, or a different producer's naming)",
                matched_share_of_base * 100.0,
                matched_share_of_target * 100.0,
                if metric.ends_with("_ns") { "time" } else { "samples" }
            )
        });
    rows.sort_by(|x, y| {
        y.delta_self
            .abs()
            .cmp(&x.delta_self.abs())
            .then_with(|| x.frame.cmp(&y.frame))
    });
    rows.truncate(limit);
    if metric == "trace.wall_ns" {
        one_slice(ctx, target, base, &mut rows).await?;
    }
    Ok(FrameDeltaAnswer {
        metric: metric.to_owned(),
        unit: crate::hotspots::unit_of(metric),
        whole: WholeDelta {
            base_total_self: base_total,
            target_total_self: target_total,
            delta_self: target_total - base_total,
            ratio: (base_total > 0).then(|| target_total as f64 / base_total as f64),
        },
        matched_by: if by_line {
            "function_file_and_line"
        } else {
            "function_and_file"
        }
        .to_owned(),
        matched_share_of_base,
        matched_share_of_target,
        warning,
        total_frames,
        rows,
    })
}

/// The longest slice's self time of each row's name on the side that grew,
/// kept when it is at least half of the row's change.
async fn one_slice(
    ctx: &SessionContext,
    target: &ArtifactScope,
    base: &ArtifactScope,
    rows: &mut [FrameDelta],
) -> RecipeResult<()> {
    let longest = |scope: &ArtifactScope, names: Vec<String>| {
        let scope = scope.clone();
        async move {
            let mut out: HashMap<String, i64> = HashMap::new();
            if names.is_empty() {
                return Ok::<_, crate::common::RecipeError>(out);
            }
            let df = table(ctx, "trace_events")
                .await?
                .filter(scope.filter().and(
                    col("name").in_list(names.iter().map(|n| lit(n.as_str())).collect(), false),
                ))?
                .aggregate(vec![col("name")], vec![max(col("self_ns")).alias("m")])?;
            for batch in collect(df).await? {
                for i in 0..batch.num_rows() {
                    if let Some(name) = string_at(column(&batch, "name")?, i) {
                        out.insert(name, i64_at(column(&batch, "m")?, i).unwrap_or(0));
                    }
                }
            }
            Ok(out)
        }
    };
    let grew: Vec<String> = rows
        .iter()
        .filter(|r| r.delta_self > 0)
        .map(|r| r.function.clone())
        .collect();
    let shrank: Vec<String> = rows
        .iter()
        .filter(|r| r.delta_self < 0)
        .map(|r| r.base_function.clone())
        .collect();
    let in_target = longest(target, grew).await?;
    let in_base = longest(base, shrank).await?;
    for r in rows.iter_mut() {
        let (side, name) = if r.delta_self > 0 {
            (&in_target, &r.function)
        } else {
            (&in_base, &r.base_function)
        };
        if let Some(&ns) = side.get(name)
            && ns * 2 >= r.delta_self.abs()
            && r.delta_self != 0
        {
            r.one_slice_ns = Some(ns);
        }
    }
    Ok(())
}
