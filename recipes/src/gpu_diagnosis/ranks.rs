//! Ranks side by side: per rank, device busy time split into compute and
//! communication, idle, time spent waiting inside collectives for the
//! last rank to arrive, and step times; then the ranks the others waited
//! for and why. A collective starts on every rank when its host launches
//! it but finishes only when the last rank has arrived, so the rank that
//! arrives last at most collectives holds the job up; comparing what its
//! device did before each of those collectives with the median rank's
//! tells its own GPU work (compute kernels ran longer) from a late host
//! (its device sat idle until the host launched).

use std::collections::BTreeMap;

use datafusion::arrow::datatypes::DataType;
use datafusion::functions_aggregate::expr_fn::{count, max, median};
use datafusion::logical_expr::{col, lit};
use datafusion::prelude::{SessionContext, cast};
use serde::{Deserialize, Serialize};

use super::collectives::CollectiveInstances;
use super::device_rows::{WorkClass, WorkRows};
use super::params::{DiagnosisParams, median_i64};
use super::unions::{DeviceUnions, device_unions};
use crate::common::{ArtifactScope, RecipeResult, collect, column, i64_at, string_at, table};
use crate::kernel_family::readable_name;
use crate::time_accounting::intervals::{covered_in, total};

/// Holders shown.
const HOLDERS: usize = 3;
/// Kernel differences shown per holder.
const KERNEL_DIFFERENCES: usize = 3;

/// `ProfilerStep#N` host spans of one rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepTimes {
    pub steps: i64,
    pub median_ns: i64,
    pub max_ns: i64,
}

/// One rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankRow {
    pub rank: Option<i64>,
    pub artifact_id: String,
    /// First to last device activity (all devices of the artifact).
    pub span_ns: i64,
    /// Union of compute kernels; of communication kernels; of neither
    /// (idle = span − union of all work).
    pub compute_ns: i64,
    pub communication_ns: i64,
    pub idle_ns: i64,
    /// Collectives matched with other ranks.
    pub collectives: i64,
    /// Σ (last rank's arrival − own arrival) over them.
    pub wait_ns: i64,
    pub wait_pct_of_span: f64,
    /// Collectives at which this rank arrived last.
    pub times_last: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<StepTimes>,
}

/// A kernel that ran longer on a rank than on the median rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelDifference {
    pub name: String,
    pub rank_ns: i64,
    pub median_rank_ns: i64,
}

/// A rank the others waited for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Holder {
    pub rank: Option<i64>,
    pub artifact_id: String,
    pub times_last: i64,
    /// Σ (its arrival − the median rank's arrival) where it was last.
    pub late_ns: i64,
    /// Before those collectives, against the median rank: more compute
    /// kernel time, and more time with no device work at all.
    pub compute_excess_ns: i64,
    pub idle_excess_ns: i64,
    /// `own GPU work`, `host launched late` or `mixed`.
    pub cause: String,
    /// Kernels that ran longer here than on the median rank (the first
    /// holder's only, and not when its host launched late).
    pub kernel_differences: Vec<KernelDifference>,
}

/// Smallest, median and largest over ranks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub min: i64,
    pub median: i64,
    pub max: i64,
}

impl Spread {
    fn of(values: &[i64]) -> Option<Spread> {
        Some(Spread {
            min: *values.iter().min()?,
            median: median_i64(values)?,
            max: *values.iter().max()?,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ranks {
    /// Artifacts with device work (one per rank).
    pub ranks_total: usize,
    pub matched_collectives: usize,
    /// Median (latest − earliest end) of matched collectives; arrivals are
    /// compared only when this is under a tenth of their median length.
    pub end_spread_median_ns: Option<i64>,
    pub clocks_comparable: bool,
    pub span_ns: Option<Spread>,
    pub wait_ns: Option<Spread>,
    pub compute_ns: Option<Spread>,
    pub idle_ns: Option<Spread>,
    pub step_median_ns: Option<Spread>,
    pub holders: Vec<Holder>,
    /// Holders first, then the ranks that waited most; ordered by rank.
    pub rows: Vec<RankRow>,
    /// One sentence: who holds the others up and why.
    pub verdict: String,
}

async fn step_times(
    ctx: &SessionContext,
    scope: &ArtifactScope,
) -> RecipeResult<BTreeMap<String, StepTimes>> {
    let df = table(ctx, "trace_events")
        .await?
        .filter(
            scope
                .filter()
                .and(cast(col("name"), DataType::Utf8).like(lit("ProfilerStep#%")))
                .and(col("stream").is_null())
                .and(cast(col("kind"), DataType::Utf8).not_eq(lit("gpu_user_annotation")))
                .and(col("dur_ns").gt_eq(lit(0i64))),
        )?
        .aggregate(
            vec![cast(col("artifact_id"), DataType::Utf8).alias("artifact")],
            vec![
                count(lit(1)).alias("n"),
                cast(median(col("dur_ns")), DataType::Int64).alias("median"),
                max(col("dur_ns")).alias("max"),
            ],
        )?;
    let mut out = BTreeMap::new();
    for batch in collect(df).await? {
        for i in 0..batch.num_rows() {
            let get =
                |c: &str| -> RecipeResult<i64> { Ok(i64_at(column(&batch, c)?, i).unwrap_or(0)) };
            out.insert(
                string_at(column(&batch, "artifact")?, i).unwrap_or_default(),
                StepTimes {
                    steps: get("n")?,
                    median_ns: get("median")?,
                    max_ns: get("max")?,
                },
            );
        }
    }
    Ok(out)
}

/// An artifact's devices merged (ranks usually drive one device each).
fn merged(unions: &BTreeMap<(u32, Option<i64>), DeviceUnions>, artifact: u32) -> DeviceUnions {
    use crate::time_accounting::intervals::union_segments;
    let mut all = Vec::new();
    let mut compute = Vec::new();
    let mut communication = Vec::new();
    for ((a, _), u) in unions.range((artifact, None)..) {
        if *a != artifact {
            break;
        }
        all.extend(&u.all);
        compute.extend(&u.compute);
        communication.extend(&u.communication);
    }
    DeviceUnions {
        all: union_segments(all),
        compute: union_segments(compute),
        communication: union_segments(communication),
    }
}

pub async fn ranks(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    work: &WorkRows,
    inst: &CollectiveInstances,
    params: &DiagnosisParams,
) -> RecipeResult<Ranks> {
    let unions = device_unions(work);
    let artifacts: Vec<u32> = {
        let mut a: Vec<u32> = unions.keys().map(|(a, _)| *a).collect();
        a.dedup();
        a
    };
    let per: BTreeMap<u32, DeviceUnions> = artifacts
        .iter()
        .map(|a| (*a, merged(&unions, *a)))
        .collect();
    let steps = step_times(ctx, scope).await?;
    // Clock check: a collective ends together on every rank.
    let spreads: Vec<i64> = inst.matched.iter().map(|m| m.end_spread_ns).collect();
    let lengths: Vec<i64> = inst
        .matched
        .iter()
        .flat_map(|m| m.members.iter().map(|(_, r)| work.rows[*r].dur()))
        .collect();
    let end_spread = median_i64(&spreads);
    let clocks_comparable = match (end_spread, median_i64(&lengths)) {
        (Some(s), Some(l)) => s * 10 <= l.max(1) || s <= 1_000,
        _ => false,
    };
    let mut wait: BTreeMap<u32, i64> = BTreeMap::new();
    let mut joined: BTreeMap<u32, i64> = BTreeMap::new();
    let mut last: BTreeMap<u32, i64> = BTreeMap::new();
    if clocks_comparable {
        for m in &inst.matched {
            for (a, r) in &m.members {
                *wait.entry(*a).or_default() += m.last_arrival - work.rows[*r].ts;
                *joined.entry(*a).or_default() += 1;
            }
            *last.entry(m.last).or_default() += 1;
        }
    }
    let mut rows: Vec<RankRow> = per
        .iter()
        .map(|(a, u)| {
            let name = work.strings.get(*a);
            let span = match (u.all.first(), u.all.last()) {
                (Some(f), Some(l)) => l.1 - f.0,
                _ => 0,
            };
            let waited = wait.get(a).copied().unwrap_or(0);
            RankRow {
                rank: params.rank(name),
                artifact_id: name.to_owned(),
                span_ns: span,
                compute_ns: total(&u.compute),
                communication_ns: total(&u.communication),
                idle_ns: span - total(&u.all),
                collectives: joined.get(a).copied().unwrap_or(0),
                wait_ns: waited,
                wait_pct_of_span: if span > 0 {
                    waited as f64 * 100.0 / span as f64
                } else {
                    0.0
                },
                times_last: last.get(a).copied().unwrap_or(0),
                steps: steps.get(name).cloned(),
            }
        })
        .collect();
    let holders: Vec<Holder> = if clocks_comparable && artifacts.len() >= 2 {
        let mut by_last: Vec<(u32, i64)> = last.iter().map(|(a, n)| (*a, *n)).collect();
        by_last.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
        by_last
            .into_iter()
            .take(HOLDERS)
            .enumerate()
            .map(|(i, (a, n))| holder(work, inst, &per, params, a, n, i == 0))
            .collect()
    } else {
        Vec::new()
    };
    let col = |f: fn(&RankRow) -> i64| Spread::of(&rows.iter().map(f).collect::<Vec<_>>());
    let span_ns = col(|r| r.span_ns);
    let wait_ns = col(|r| r.wait_ns);
    let compute_ns = col(|r| r.compute_ns);
    let idle_ns = col(|r| r.idle_ns);
    let step_median_ns = Spread::of(
        &rows
            .iter()
            .filter_map(|r| r.steps.as_ref().map(|s| s.median_ns))
            .collect::<Vec<_>>(),
    );
    let verdict = verdict(
        &rows,
        &holders,
        inst.matched.len(),
        clocks_comparable,
        &wait_ns,
    );
    // Holders, then the ranks that waited most.
    let ranks_total = rows.len();
    rows.sort_by(|x, y| {
        let held = |r: &RankRow| holders.iter().any(|h| h.artifact_id == r.artifact_id);
        held(y)
            .cmp(&held(x))
            .then(y.wait_ns.cmp(&x.wait_ns))
            .then((x.rank, &x.artifact_id).cmp(&(y.rank, &y.artifact_id)))
    });
    rows.truncate(params.limit.max(1));
    rows.sort_by(|x, y| (x.rank, &x.artifact_id).cmp(&(y.rank, &y.artifact_id)));
    Ok(Ranks {
        ranks_total,
        matched_collectives: inst.matched.len(),
        end_spread_median_ns: end_spread,
        clocks_comparable,
        span_ns,
        wait_ns,
        compute_ns,
        idle_ns,
        step_median_ns,
        holders,
        rows,
        verdict,
    })
}

/// What `h` did before the collectives it arrived last at, against the
/// median rank, and which kernels ran longer on it.
fn holder(
    work: &WorkRows,
    inst: &CollectiveInstances,
    per: &BTreeMap<u32, DeviceUnions>,
    params: &DiagnosisParams,
    h: u32,
    times_last: i64,
    with_kernels: bool,
) -> Holder {
    // Each rank's previous collective end, to start the window.
    let mut prev_end: BTreeMap<usize, i64> = BTreeMap::new();
    for instances in inst.per_artifact.values() {
        let mut before: Option<i64> = None;
        for i in instances {
            if let Some(b) = before {
                prev_end.insert(i.row, b);
            }
            before = Some(work.rows[i.row].end);
        }
    }
    let first_activity = |a: u32| per.get(&a).and_then(|u| u.all.first()).map_or(0, |s| s.0);
    let (mut late, mut compute_excess, mut idle_excess) = (0, 0, 0);
    for m in inst.matched.iter().filter(|m| m.last == h) {
        let start = m
            .members
            .iter()
            .map(|(a, r)| {
                prev_end
                    .get(r)
                    .copied()
                    .unwrap_or_else(|| first_activity(*a))
            })
            .min()
            .unwrap_or(m.median_arrival);
        let mut computes = Vec::new();
        let mut idles = Vec::new();
        let (mut h_compute, mut h_idle) = (0, 0);
        for (a, r) in &m.members {
            let arrival = work.rows[*r].ts;
            let Some(u) = per.get(a) else { continue };
            let from = start.min(arrival);
            let c = covered_in(&u.compute, from, arrival);
            let idle = (arrival - from) - covered_in(&u.all, from, arrival);
            computes.push(c);
            idles.push(idle);
            if *a == h {
                h_compute = c;
                h_idle = idle;
            }
        }
        late += m.last_arrival - m.median_arrival;
        compute_excess += h_compute - median_i64(&computes).unwrap_or(0);
        idle_excess += h_idle - median_i64(&idles).unwrap_or(0);
    }
    let cause = if late > 0 && compute_excess * 2 >= late {
        "own GPU work"
    } else if late > 0 && idle_excess * 2 >= late {
        "host launched late"
    } else {
        "mixed"
    };
    let name = work.strings.get(h);
    Holder {
        rank: params.rank(name),
        artifact_id: name.to_owned(),
        times_last,
        late_ns: late,
        compute_excess_ns: compute_excess,
        idle_excess_ns: idle_excess,
        cause: cause.to_owned(),
        // A late host explains itself; kernels matter when the device worked.
        kernel_differences: if cause == "host launched late" || !with_kernels {
            Vec::new()
        } else {
            kernel_differences(work, per.len(), h)
        },
    }
}

/// Kernels (by name) whose total time on `h` most exceeds the median rank's.
fn kernel_differences(work: &WorkRows, ranks: usize, h: u32) -> Vec<KernelDifference> {
    let mut per_name: BTreeMap<u32, BTreeMap<u32, i64>> = BTreeMap::new();
    for r in work.rows.iter().filter(|r| r.class == WorkClass::Compute) {
        *per_name
            .entry(r.name)
            .or_default()
            .entry(r.artifact)
            .or_default() += r.dur();
    }
    let mut out: Vec<KernelDifference> = per_name
        .into_iter()
        .filter_map(|(name, by_rank)| {
            let own = by_rank.get(&h).copied().unwrap_or(0);
            let mut all: Vec<i64> = by_rank.values().copied().collect();
            all.resize(ranks.max(all.len()), 0);
            let median = median_i64(&all).unwrap_or(0);
            (own > median).then(|| KernelDifference {
                name: readable_name(work.strings.get(name)),
                rank_ns: own,
                median_rank_ns: median,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        (b.rank_ns - b.median_rank_ns)
            .cmp(&(a.rank_ns - a.median_rank_ns))
            .then_with(|| a.name.cmp(&b.name))
    });
    out.truncate(KERNEL_DIFFERENCES);
    out
}

fn who(rank: Option<i64>, artifact: &str) -> String {
    match rank {
        Some(r) => format!("rank {r}"),
        None => format!("artifact {artifact}"),
    }
}

fn ms(ns: i64) -> String {
    format!("{:.2} ms", ns as f64 / 1e6)
}

fn verdict(
    rows: &[RankRow],
    holders: &[Holder],
    matched: usize,
    clocks: bool,
    wait: &Option<Spread>,
) -> String {
    if rows.len() < 2 {
        return "one rank in scope: nothing to compare (give every rank's run or artifact id)"
            .into();
    }
    if matched == 0 {
        return format!(
            "{} ranks, but no collective kernel matched on two of them: ranks cannot wait on each other here",
            rows.len()
        );
    }
    if !clocks {
        return format!(
            "{} ranks and {matched} matched collectives, but their ends disagree by more than a tenth of their length: the ranks' clocks are not comparable, so arrivals are not",
            rows.len()
        );
    }
    let Some(h) = holders.first() else {
        return format!("{} ranks: no rank arrived last", rows.len());
    };
    let waits = wait
        .as_ref()
        .map(|w| {
            format!(
                "; time waiting in collectives per rank: min {}, median {}, max {}",
                ms(w.min),
                ms(w.median),
                ms(w.max)
            )
        })
        .unwrap_or_default();
    let why = match h.cause.as_str() {
        "own GPU work" => {
            let k = h
                .kernel_differences
                .first()
                .map(|k| {
                    format!(
                        " (most in {}: {} against {} on the median rank)",
                        k.name,
                        ms(k.rank_ns),
                        ms(k.median_rank_ns)
                    )
                })
                .unwrap_or_default();
            format!(
                "its own GPU work: its compute kernels ran {} longer than the median rank's before those collectives{k}",
                ms(h.compute_excess_ns)
            )
        }
        "host launched late" => format!(
            "its host launched late: its device sat idle {} longer than the median rank's before those collectives",
            ms(h.idle_excess_ns)
        ),
        _ => format!(
            "no single cause: {} more compute and {} more idle than the median rank",
            ms(h.compute_excess_ns),
            ms(h.idle_excess_ns)
        ),
    };
    format!(
        "{} arrived last at {} of {matched} matched collectives, {} after the median rank in all: {why}{waits}",
        who(h.rank, &h.artifact_id),
        h.times_last,
        ms(h.late_ns)
    )
}
