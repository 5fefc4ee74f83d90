//! The CPU samples a thread took during given time windows (the launching
//! thread of a GPU gap), by the function they were in: what the host was
//! doing when it made no traced call. Read once for every window (the
//! samples of the windows' threads inside their overall time range), then
//! counted per window in Rust; only the few leaf frames shown are looked up.

use std::collections::{BTreeMap, HashMap};

use datafusion::logical_expr::{col, lit};
use datafusion::prelude::SessionContext;

use crate::common::{ArtifactScope, RecipeResult, collect, column, string_at, table};
use crate::device_pass::{Interner, for_each_batch, ints};
use crate::host_activity::{HostSamples, SampledFunction, TimeWindow};

/// The sampled-stacks metric.
const CPU_SAMPLES: &str = "cpu.samples";

/// Per window id, the samples of its thread (windows naming no thread are
/// left out, and so are windows with no sample).
pub async fn samples_in(
    ctx: &SessionContext,
    windows: &[TimeWindow],
    top: usize,
) -> RecipeResult<HashMap<i64, HostSamples>> {
    let wanted: Vec<&TimeWindow> = windows.iter().filter(|w| w.tid.is_some()).collect();
    let (Some(from), Some(to)) = (
        wanted.iter().map(|w| w.start_ns).min(),
        wanted.iter().map(|w| w.end_ns).max(),
    ) else {
        return Ok(HashMap::new());
    };
    let scope = ArtifactScope {
        artifact_ids: wanted.iter().map(|w| w.artifact_id.clone()).collect(),
    };
    let tids = wanted
        .iter()
        .filter_map(|w| w.tid)
        .map(lit)
        .collect::<Vec<_>>();
    let rows = table(ctx, "samples")
        .await?
        .filter(
            scope
                .filter()
                .and(col("metric").eq(lit(CPU_SAMPLES)))
                .and(col("ts_ns").gt_eq(lit(from)))
                .and(col("ts_ns").lt(lit(to)))
                .and(col("tid").in_list(tids, false)),
        )?
        .select_columns(&["artifact_id", "ts_ns", "tid", "stack_id"])?;
    let mut strings = Interner::default();
    // (window, artifact, stack) → samples
    let mut counts: BTreeMap<(i64, u32, i64), u64> = BTreeMap::new();
    for_each_batch(rows, |b| {
        let artifacts = strings.column(column(b, "artifact_id")?)?;
        let ts = ints(column(b, "ts_ns")?)?;
        let tid = ints(column(b, "tid")?)?;
        let stack = ints(column(b, "stack_id")?)?;
        for i in 0..b.num_rows() {
            let (Some(a), Some(t), Some(s)) = (artifacts[i], ts[i], stack[i]) else {
                continue;
            };
            for w in &wanted {
                if w.tid == tid[i]
                    && (w.start_ns..w.end_ns).contains(&t)
                    && strings.find(&w.artifact_id) == Some(a)
                {
                    *counts.entry((w.id, a, s)).or_default() += 1;
                }
            }
        }
        Ok(())
    })
    .await?;
    let mut by_window: BTreeMap<i64, Vec<(u64, u32, i64)>> = BTreeMap::new();
    for ((w, a, s), n) in counts {
        by_window.entry(w).or_default().push((n, a, s));
    }
    // The heaviest stacks of each window, enough to name `top` functions.
    for stacks in by_window.values_mut() {
        stacks.sort_by(|x, y| y.0.cmp(&x.0).then(x.2.cmp(&y.2)));
    }
    let shown: Vec<(u32, i64)> = by_window
        .values()
        .flat_map(|stacks| stacks.iter().take(top * 4).map(|&(_, a, s)| (a, s)))
        .collect();
    let leaves = leaf_functions(ctx, &strings, &shown).await?;
    let mut out: HashMap<i64, HostSamples> = HashMap::new();
    for (w, stacks) in by_window {
        let total = stacks.iter().map(|s| s.0).sum();
        let mut functions: BTreeMap<String, u64> = BTreeMap::new();
        for (n, a, s) in stacks.iter().take(top * 4) {
            let name = leaves
                .get(&(*a, *s))
                .cloned()
                .unwrap_or_else(|| format!("stack#{s}"));
            *functions.entry(name).or_default() += n;
        }
        let mut top_functions: Vec<SampledFunction> = functions
            .into_iter()
            .map(|(function, samples)| SampledFunction { function, samples })
            .collect();
        top_functions.sort_by(|x, y| {
            y.samples
                .cmp(&x.samples)
                .then_with(|| x.function.cmp(&y.function))
        });
        top_functions.truncate(top);
        out.insert(
            w,
            HostSamples {
                samples: total,
                top: top_functions,
            },
        );
    }
    Ok(out)
}

/// The function of each stack's leaf frame, in one join.
async fn leaf_functions(
    ctx: &SessionContext,
    strings: &Interner,
    stacks: &[(u32, i64)],
) -> RecipeResult<HashMap<(u32, i64), String>> {
    let mut out = HashMap::new();
    if stacks.is_empty() {
        return Ok(out);
    }
    let scope = ArtifactScope {
        artifact_ids: stacks
            .iter()
            .map(|(a, _)| strings.get(*a).to_owned())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
    };
    let ids = stacks.iter().map(|(_, s)| lit(*s as u64)).collect();
    let nodes = table(ctx, "stack_nodes")
        .await?
        .filter(scope.filter().and(col("stack_id").in_list(ids, false)))?
        .select_columns(&["artifact_id", "stack_id", "frame_id"])?;
    let frames = table(ctx, "frames")
        .await?
        .filter(scope.filter())?
        .select(vec![
            col("artifact_id").alias("f_artifact"),
            col("frame_id").alias("f_id"),
            col("function"),
        ])?;
    let named = nodes.join(
        frames,
        datafusion::prelude::JoinType::Inner,
        &["artifact_id", "frame_id"],
        &["f_artifact", "f_id"],
        None,
    )?;
    for b in collect(named).await? {
        for i in 0..b.num_rows() {
            let artifact = string_at(column(&b, "artifact_id")?, i);
            let stack = crate::common::i64_at(column(&b, "stack_id")?, i);
            let function = string_at(column(&b, "function")?, i);
            if let (Some(a), Some(s), Some(f)) = (artifact, stack, function)
                && let Some(id) = strings.find(&a)
            {
                out.insert((id, s), f);
            }
        }
    }
    Ok(out)
}
