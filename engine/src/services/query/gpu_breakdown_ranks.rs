//! Many ranks in one GPU breakdown. Past [`RANKS_IN_FULL`] artifacts (one
//! per rank) the answer keeps every section's rows only for a few ranks —
//! the ones the request names (`ranks`), else the [`STRAGGLERS_SHOWN`]
//! ranks with the most idle device time — and says how all of them spread:
//! per measure the minimum, median and maximum over ranks and the rank at
//! each end. An agent sees the stragglers and the spread of a 1,024-rank
//! job in one answer of a few tens of kilobytes and asks for any rank by
//! number; every rank is still computed.

use std::collections::{BTreeMap, BTreeSet};

use flameox_recipes::gpu_breakdown::BreakdownAnswer;
use serde::{Deserialize, Serialize};

use crate::error::{FlameoxError, Result};
use crate::services::NextCall;
use crate::services::gpu_breakdown::ArtifactLabel;

/// Artifacts an answer shows in full; more are digested.
pub const RANKS_IN_FULL: usize = 8;

/// Ranks shown in full when a digested answer names none.
pub const STRAGGLERS_SHOWN: usize = 4;

/// How one measure spreads over the ranks that have it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Ranks (artifacts) the measure has a value for.
    pub ranks: usize,
    pub min: f64,
    pub median: f64,
    pub max: f64,
    /// The rank (or, without one, the artifact) at each end; `all` when
    /// every rank has the same value.
    pub min_at: String,
    pub max_at: String,
}

/// What a digested answer kept and how every rank spreads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankDigest {
    /// Artifacts (ranks) in scope; the sections list rows of `shown` only.
    pub artifacts_total: usize,
    pub with_device_work: usize,
    /// Ranks (or artifacts without one) whose rows the sections keep.
    pub shown: Vec<String>,
    /// Why these: `requested`, or the measure they lead by.
    pub chosen_by: String,
    /// Per measure over every rank: `compute_pct`, `communication_pct`,
    /// `memory_pct`, `idle_pct` and `span_ns` (temporal, summed over a
    /// rank's devices), `overlap_pct`, `stream_idle_ns` and
    /// `host_wait_ns` (idle), `kernel_ns` (kernels),
    /// `launch_delay_outliers` and `runtime_outliers` (launches),
    /// `copy_gb_per_s` (bandwidth, copies of every direction).
    pub spread: BTreeMap<String, Spread>,
    /// The same breakdown for other ranks.
    pub next: Vec<NextCall>,
}

/// A rank's name in answers: its number, or its artifact id without one.
fn rank_name(label: &ArtifactLabel) -> String {
    label
        .rank
        .map_or_else(|| label.artifact_id.clone(), |r| r.to_string())
}

/// Per-rank values of every measure the answer's sections allow.
fn measures(answer: &BreakdownAnswer) -> BTreeMap<&'static str, BTreeMap<String, f64>> {
    let mut sums: BTreeMap<&'static str, BTreeMap<String, f64>> = BTreeMap::new();
    let mut add = |measure: &'static str, artifact: &str, value: f64| {
        *sums
            .entry(measure)
            .or_default()
            .entry(artifact.to_owned())
            .or_default() += value;
    };
    let mut spans: BTreeMap<String, f64> = BTreeMap::new();
    for row in answer.temporal.iter().flatten() {
        let a = row.key.artifact_id.as_str();
        add("compute_ns", a, row.compute_ns as f64);
        add("communication_ns", a, row.communication_ns as f64);
        add("memory_ns", a, row.memory_ns as f64);
        add("idle_ns", a, row.idle_ns as f64);
        add("device_span_ns", a, row.span_ns as f64);
        let span = spans.entry(a.to_owned()).or_default();
        *span = span.max(row.span_ns as f64);
    }
    for row in answer.overlap.iter().flatten() {
        add(
            "overlap_comm_ns",
            &row.key.artifact_id,
            row.communication_ns as f64,
        );
        add(
            "overlapped_ns",
            &row.key.artifact_id,
            row.overlapped_ns as f64,
        );
    }
    for row in answer.idle.iter().flatten() {
        add("stream_idle_ns", &row.key.artifact_id, row.idle_ns as f64);
        add(
            "host_wait_ns",
            &row.key.artifact_id,
            row.host_wait_ns as f64,
        );
    }
    for k in answer.kernels.iter().flatten() {
        add(
            "kernel_ns",
            &k.artifact_id,
            k.types.iter().map(|t| t.total_ns as f64).sum(),
        );
    }
    for l in answer.launches.iter().flatten() {
        add(
            "launch_delay_outliers",
            &l.artifact_id,
            l.launch_delay_outliers.count as f64,
        );
        add(
            "runtime_outliers",
            &l.artifact_id,
            l.runtime_outliers.count as f64,
        );
    }
    for b in answer.bandwidth.iter().flatten() {
        if b.direction != "memset" {
            add("copy_bytes", &b.key.artifact_id, b.bytes as f64);
            add("copy_time_ns", &b.key.artifact_id, b.time_ns as f64);
        }
    }
    let mut out: BTreeMap<&'static str, BTreeMap<String, f64>> = BTreeMap::new();
    let ratio = |num: Option<&BTreeMap<String, f64>>, den: Option<&BTreeMap<String, f64>>| {
        let mut values = BTreeMap::new();
        if let (Some(num), Some(den)) = (num, den) {
            for (artifact, d) in den {
                if *d > 0.0 {
                    values.insert(artifact.clone(), num.get(artifact).unwrap_or(&0.0) / d);
                }
            }
        }
        values
    };
    let span = sums.get("device_span_ns");
    for (pct, ns) in [
        ("compute_pct", "compute_ns"),
        ("communication_pct", "communication_ns"),
        ("memory_pct", "memory_ns"),
        ("idle_pct", "idle_ns"),
    ] {
        let shares = ratio(sums.get(ns), span);
        if !shares.is_empty() {
            out.insert(
                pct,
                shares.into_iter().map(|(a, v)| (a, v * 100.0)).collect(),
            );
        }
    }
    if !spans.is_empty() {
        out.insert("span_ns", spans);
    }
    let overlap = ratio(sums.get("overlapped_ns"), sums.get("overlap_comm_ns"));
    if !overlap.is_empty() {
        out.insert(
            "overlap_pct",
            overlap.into_iter().map(|(a, v)| (a, v * 100.0)).collect(),
        );
    }
    let bandwidth = ratio(sums.get("copy_bytes"), sums.get("copy_time_ns"));
    if !bandwidth.is_empty() {
        out.insert("copy_gb_per_s", bandwidth);
    }
    for kept in [
        "stream_idle_ns",
        "host_wait_ns",
        "kernel_ns",
        "launch_delay_outliers",
        "runtime_outliers",
    ] {
        if let Some(values) = sums.remove(kept) {
            out.insert(kept, values);
        }
    }
    out
}

/// Minimum, median and maximum of one measure, named by rank.
fn spread_of(values: &BTreeMap<String, f64>, names: &BTreeMap<&str, String>) -> Option<Spread> {
    let mut sorted: Vec<(&String, f64)> = values.iter().map(|(a, v)| (a, *v)).collect();
    sorted.sort_by(|x, y| x.1.total_cmp(&y.1));
    let (first, last) = (sorted.first()?, sorted.last()?);
    let n = sorted.len();
    let median = if n % 2 == 1 {
        sorted[n / 2].1
    } else {
        (sorted[n / 2 - 1].1 + sorted[n / 2].1) / 2.0
    };
    let name = |a: &String| match first.1 == last.1 {
        // Every rank alike: no rank stands at an end.
        true => "all".to_owned(),
        false => names.get(a.as_str()).cloned().unwrap_or_else(|| a.clone()),
    };
    Some(Spread {
        ranks: n,
        min: first.1,
        median,
        max: last.1,
        min_at: name(first.0),
        max_at: name(last.0),
    })
}

/// The measure stragglers are chosen by, and whether more is worse.
const STRAGGLER_MEASURES: [(&str, bool); 5] = [
    ("idle_pct", true),
    ("stream_idle_ns", true),
    ("kernel_ns", true),
    ("launch_delay_outliers", true),
    ("copy_gb_per_s", false),
];

/// Cuts a breakdown of many artifacts down to the ranks shown (see the
/// module doc); `None` when it has at most [`RANKS_IN_FULL`] artifacts
/// and no ranks were asked for. `target` is the request's, for the next
/// calls.
pub fn digest(
    labels: &mut Vec<ArtifactLabel>,
    answer: &mut BreakdownAnswer,
    requested: Option<&[i64]>,
    target: &serde_json::Value,
) -> Result<Option<RankDigest>> {
    if labels.len() <= RANKS_IN_FULL && requested.is_none() {
        return Ok(None);
    }
    let names: BTreeMap<&str, String> = labels
        .iter()
        .map(|l| (l.artifact_id.as_str(), rank_name(l)))
        .collect();
    let measures = measures(answer);
    let spread: BTreeMap<String, Spread> = measures
        .iter()
        .filter_map(|(m, values)| Some(((*m).to_owned(), spread_of(values, &names)?)))
        .collect();
    let (keep, chosen_by): (BTreeSet<String>, String) = match requested {
        Some(ranks) => {
            let keep: BTreeSet<String> = labels
                .iter()
                .filter(|l| l.rank.is_some_and(|r| ranks.contains(&r)))
                .map(|l| l.artifact_id.clone())
                .collect();
            let found: BTreeSet<i64> = labels.iter().filter_map(|l| l.rank).collect();
            let missing: Vec<i64> = ranks
                .iter()
                .filter(|r| !found.contains(r))
                .copied()
                .collect();
            if !missing.is_empty() {
                let (low, high) = (found.first(), found.last());
                return Err(FlameoxError::invalid_argument(
                    "ranks",
                    format!(
                        "no artifact in scope has rank {missing:?}; the scope holds ranks {}",
                        match (low, high) {
                            (Some(l), Some(h)) => format!("{l}..={h} ({} ranks)", found.len()),
                            _ => "none (its traces record no distributedInfo.rank)".into(),
                        }
                    ),
                ));
            }
            (keep, "requested".into())
        }
        None => {
            let by = STRAGGLER_MEASURES
                .iter()
                .find_map(|(m, worse_up)| Some((*m, *worse_up, measures.get(m)?)));
            match by {
                Some((measure, worse_up, values)) => {
                    let mut ranked: Vec<(&String, f64)> =
                        values.iter().map(|(a, v)| (a, *v)).collect();
                    ranked.sort_by(|x, y| match worse_up {
                        true => y.1.total_cmp(&x.1),
                        false => x.1.total_cmp(&y.1),
                    });
                    let keep = ranked
                        .into_iter()
                        .take(STRAGGLERS_SHOWN)
                        .map(|(a, _)| a.clone())
                        .collect();
                    let order = if worse_up { "highest" } else { "lowest" };
                    (keep, format!("{measure}, {order} first"))
                }
                None => (
                    labels
                        .iter()
                        .take(STRAGGLERS_SHOWN)
                        .map(|l| l.artifact_id.clone())
                        .collect(),
                    "first in scope (no device work to rank them by)".into(),
                ),
            }
        }
    };
    let with_device_work = answer.artifacts_with_device_work.len();
    let shown: Vec<String> = labels
        .iter()
        .filter(|l| keep.contains(&l.artifact_id))
        .map(rank_name)
        .collect();
    let next = best_rank_call(&spread, &chosen_by, target)
        .into_iter()
        .collect();
    let artifacts_total = names.len();
    drop(names);
    keep_only(labels, answer, &keep);
    Ok(Some(RankDigest {
        artifacts_total,
        with_device_work,
        shown,
        chosen_by,
        spread,
        next,
    }))
}

/// A call showing the best rank by the measure the stragglers were chosen
/// by, to compare them against.
fn best_rank_call(
    spread: &BTreeMap<String, Spread>,
    chosen_by: &str,
    target: &serde_json::Value,
) -> Option<NextCall> {
    let measure = chosen_by.split(',').next()?;
    let s = spread.get(measure)?;
    let best = if measure == "copy_gb_per_s" {
        &s.max_at
    } else {
        &s.min_at
    };
    let best: i64 = best.parse().ok()?;
    Some(NextCall {
        operation: "analyze_gpu_breakdown".into(),
        arguments: serde_json::json!({ "target": target, "ranks": [best] }),
        why: format!("the best rank by {measure} in full, to compare with the ones shown"),
    })
}

/// Drops every row, label and id of artifacts not in `keep`.
fn keep_only(
    labels: &mut Vec<ArtifactLabel>,
    answer: &mut BreakdownAnswer,
    keep: &BTreeSet<String>,
) {
    let kept = |a: &str| keep.contains(a);
    labels.retain(|l| kept(&l.artifact_id));
    answer.artifacts_with_device_work.retain(|a| kept(a));
    if let Some(rows) = &mut answer.temporal {
        rows.retain(|r| kept(&r.key.artifact_id));
    }
    if let Some(rows) = &mut answer.overlap {
        rows.retain(|r| kept(&r.key.artifact_id));
    }
    if let Some(rows) = &mut answer.idle {
        rows.retain(|r| kept(&r.key.artifact_id));
    }
    if let Some(rows) = &mut answer.kernels {
        rows.retain(|r| kept(&r.artifact_id));
    }
    if let Some(rows) = &mut answer.launches {
        rows.retain(|r| kept(&r.artifact_id));
    }
    if let Some(rows) = &mut answer.bandwidth {
        rows.retain(|r| kept(&r.key.artifact_id));
    }
}
