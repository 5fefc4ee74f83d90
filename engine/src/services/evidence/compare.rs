//! `analyze compare <candidate> <baseline>` / `compare_run_sets`: is the
//! candidate run set faster than the baseline, and how sure is that?
//!
//! Estimand (`docs/recipes.md`): per block present in both sets, the
//! per-run statistic is the median of the run's non-warmup samples of the
//! metric (several runs in one block: the median of their medians); the
//! paired log ratio candidate/baseline per block; the median of those
//! ratios, `exp(m) − 1`, and a paired BCa interval (seeded) — the stats
//! kernel `compare_log_ratios`. Blocks pair by the sets' block keys when
//! both sets use the same kind (experiment block index, or `block`
//! parameter), else by position in run order; the result names which.
//! Inside a block, runs pair by the parameters both sets share (a scaling
//! experiment's `n`), so each pair compares like with like; parameters
//! whose values differ entirely between the sets define the variants.
//! With fewer than 3 pairs a sample-level two-sample bootstrap is added,
//! labelled exploratory. Read-only; deterministic for the same commit and
//! parameters (no clocks in the result).

use std::collections::{BTreeMap, BTreeSet};

use flameox_recipes::stats::bootstrap::{DEFAULT_RESAMPLES, MIN_OBSERVATIONS};
use flameox_recipes::stats::{
    BootstrapSettings, CompareSettings, Decision, PairedComparison, Polarity, TwoSampleComparison,
    Validity, compare::compare_log_ratios, compare_two_samples, median,
};
use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, FlameoxError, Result};
pub use crate::services::analysis_requests::CompareRequest;
use crate::services::compare_checks::{
    CompatibilityCheck, ProfileChanges, compatibility, profile_changes,
};
use crate::services::experiment_plan::ExperimentPlan;
use crate::services::experiments::shared_experiment_plan;
use crate::services::run_set_samples::{MemberEvidence, MetricNames, single_unit, stats_error};
use crate::services::run_sets::{PairingKey, ResolvedRunSet, RunSetMember, resolve_run_set};
use crate::services::{EvidenceStatus, QueryContext};

/// Runs attempted, failed and used on one side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideCounts {
    pub requested: String,
    pub run_set_id: Option<String>,
    pub pairing_key: PairingKey,
    pub attempted: usize,
    pub failed: usize,
    pub failed_runs: Vec<String>,
    /// Runs without samples of the metric.
    pub missing_metric_runs: Vec<String>,
    pub used: usize,
}

/// One block present in both sets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockPair {
    pub block: String,
    pub baseline_runs: Vec<String>,
    pub candidate_runs: Vec<String>,
    pub baseline_statistic: f64,
    pub candidate_statistic: f64,
    pub log_ratio: f64,
}

/// How blocks were paired, and which were left out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pairing {
    /// `experiment_block`, `block_parameter` or `run_order`.
    pub method: PairingKey,
    pub pairs: Vec<BlockPair>,
    pub unpaired_baseline_blocks: Vec<String>,
    pub unpaired_candidate_blocks: Vec<String>,
}

/// The answer of `analyze compare`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonResult {
    pub commit_id: String,
    pub metric: String,
    pub unit: String,
    pub baseline: SideCounts,
    pub candidate: SideCounts,
    pub pairing: Pairing,
    /// The paired estimate (median log ratio, BCa interval, decision).
    pub estimate: PairedComparison,
    pub decision: Decision,
    /// `valid` with ≥ 3 pairs and no downgrading check, else `exploratory`.
    pub validity: Validity,
    pub validity_reasons: Vec<String>,
    /// Two-sample bootstrap over the raw samples, only with < 3 pairs.
    pub sample_level: Option<TwoSampleComparison>,
    pub compatibility: Vec<CompatibilityCheck>,
    pub profile_changes: ProfileChanges,
    pub evidence: EvidenceStatus,
}

/// Parses a polarity name.
pub fn parse_polarity(text: Option<&str>) -> Result<Polarity> {
    match text {
        None | Some("lower_is_better") => Ok(Polarity::LowerIsBetter),
        Some("higher_is_better") => Ok(Polarity::HigherIsBetter),
        Some(other) => Err(FlameoxError::invalid_argument(
            "polarity",
            format!("{other:?} is not lower_is_better or higher_is_better"),
        )
        .detail(
            "closest",
            crate::error::closest(other, ["lower_is_better", "higher_is_better"], 1),
        )),
    }
}

/// Bootstrap settings from a request's confidence and seed.
pub fn bootstrap_settings(confidence: Option<f64>, seed: Option<u64>) -> BootstrapSettings {
    BootstrapSettings {
        confidence_level: confidence.unwrap_or(0.95),
        resamples: DEFAULT_RESAMPLES,
        seed: seed.unwrap_or(0),
    }
}

/// The metric both sides have (requested, `wall_time`, or the single
/// shared name) and its one unit.
fn choose_metric(
    requested: Option<&str>,
    names: &MetricNames,
    base: &[&RunSetMember],
    cand: &[&RunSetMember],
) -> Result<(String, String)> {
    let side_names = |side: &[&RunSetMember]| {
        let mut all: Vec<String> = side
            .iter()
            .filter_map(|m| names.get(&m.run_id))
            .flat_map(|n| n.keys().cloned())
            .collect();
        all.sort();
        all.dedup();
        all
    };
    let (in_base, in_cand) = (side_names(base), side_names(cand));
    let shared: Vec<String> = in_base
        .iter()
        .filter(|n| in_cand.contains(n))
        .cloned()
        .collect();
    let metric = match requested {
        Some(m) if shared.iter().any(|s| s == m) => m.to_owned(),
        Some(m) => {
            return Err(FlameoxError::new(
                ErrorCode::ComparisonInvalid,
                format!("metric {m} is not measured by both sets"),
            )
            .detail("baseline_metrics", in_base.clone())
            .detail("candidate_metrics", in_cand.clone())
            .detail(
                "closest",
                crate::error::closest(m, shared.iter().map(String::as_str), 3),
            )
            .remedy("pass --metric with a name both sets have (see `measurements query`)"));
        }
        None if shared.iter().any(|s| s == "wall_time") => "wall_time".to_owned(),
        None if shared.len() == 1 => shared[0].clone(),
        None if shared.is_empty() => {
            return Err(FlameoxError::new(
                ErrorCode::ComparisonInvalid,
                "the two sets share no measurement name",
            )
            .detail("baseline_metrics", in_base)
            .detail("candidate_metrics", in_cand));
        }
        None => {
            return Err(FlameoxError::invalid_argument(
                "metric",
                "both sets measure several names: choose one",
            )
            .detail("valid", shared));
        }
    };
    let runs = base.iter().chain(cand).map(|m| m.run_id.as_str());
    single_unit(names, runs, metric)
}

/// The parameters that place a run inside a block (e.g. the scaling
/// parameter `n`): those with a value both sets use. A parameter whose values
/// on the two sides never meet defines the variants (e.g. `algorithm`) and
/// does not place runs; `block` is the block itself.
fn shared_parameter_names(base: &[&RunSetMember], cand: &[&RunSetMember]) -> Vec<String> {
    fn values<'m>(side: &[&'m RunSetMember]) -> BTreeMap<&'m str, BTreeSet<&'m str>> {
        let mut out: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for m in side {
            for (k, v) in &m.parameters {
                out.entry(k.as_str()).or_default().insert(v.as_str());
            }
        }
        out
    }
    let (b, c) = (values(base), values(cand));
    b.iter()
        .filter(|(k, _)| **k != crate::services::run_sets::BLOCK_PARAMETER)
        .filter(|(k, vs)| c.get(*k).is_some_and(|cv| !vs.is_disjoint(cv)))
        .map(|(k, _)| (*k).to_owned())
        .collect()
}

/// Pairing key → (runs, median of per-run medians), for the usable members.
/// Within a block, runs pair by their shared parameters (one pair per block
/// and scaling value in a scaling experiment): the key is the block, then
/// `name=value` of each shared parameter.
fn block_statistics(
    side: &[&RunSetMember],
    medians: &BTreeMap<String, f64>,
    by_order: bool,
    cell_keys: &[String],
) -> BTreeMap<String, (Vec<String>, f64)> {
    let mut blocks: BTreeMap<String, Vec<&RunSetMember>> = BTreeMap::new();
    for (position, m) in side.iter().enumerate() {
        let mut key = if by_order {
            position.to_string()
        } else {
            m.block.clone()
        };
        if !by_order {
            for name in cell_keys {
                if let Some(value) = m.parameters.get(name) {
                    key.push_str(&format!(" {name}={value}"));
                }
            }
        }
        blocks.entry(key).or_default().push(m);
    }
    blocks
        .into_iter()
        .map(|(block, members)| {
            let values: Vec<f64> = members.iter().map(|m| medians[&m.run_id]).collect();
            let runs = members.iter().map(|m| m.run_id.clone()).collect();
            (block, (runs, median(&values).unwrap_or(f64::NAN)))
        })
        .collect()
}

/// Pairing keys in order: word by word (`3 n=500`), numbers (also the
/// value after `=`) in numeric order before text, else text order.
fn block_order(a: &str, b: &str) -> std::cmp::Ordering {
    fn word_order(a: &str, b: &str) -> std::cmp::Ordering {
        let value = |w: &str| -> Option<f64> { w.rsplit('=').next()?.parse().ok() };
        match (value(a), value(b)) {
            (Some(x), Some(y)) => a
                .split('=')
                .next()
                .cmp(&b.split('=').next())
                .then(x.total_cmp(&y))
                .then_with(|| a.cmp(b)),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            _ => a.cmp(b),
        }
    }
    let mut left = a.split(' ');
    let mut right = b.split(' ');
    loop {
        match (left.next(), right.next()) {
            (Some(x), Some(y)) => match word_order(x, y) {
                std::cmp::Ordering::Equal => continue,
                other => return other,
            },
            (None, None) => return std::cmp::Ordering::Equal,
            (None, Some(_)) => return std::cmp::Ordering::Less,
            (Some(_), None) => return std::cmp::Ordering::Greater,
        }
    }
}

fn side_counts(set: &ResolvedRunSet, missing: Vec<String>, used: usize) -> SideCounts {
    let failed_runs: Vec<String> = set
        .members
        .iter()
        .filter(|m| m.failed)
        .map(|m| m.run_id.clone())
        .collect();
    SideCounts {
        requested: set.requested.clone(),
        run_set_id: set.run_set_id.clone(),
        pairing_key: set.pairing_key,
        attempted: set.members.len(),
        failed: failed_runs.len(),
        failed_runs,
        missing_metric_runs: missing,
        used,
    }
}

/// The members with a median of the metric, and the ids of those without.
fn split_by_metric<'a>(
    side: &'a [RunSetMember],
    medians: &BTreeMap<String, f64>,
) -> (Vec<&'a RunSetMember>, Vec<String>) {
    let (with, without): (Vec<&RunSetMember>, Vec<&RunSetMember>) =
        side.iter().partition(|m| medians.contains_key(&m.run_id));
    (with, without.iter().map(|m| m.run_id.clone()).collect())
}

/// `req` with every unset setting taken from the experiment both sets came
/// from (its primary metric, polarity, practical threshold, confidence level
/// and seed); explicit settings always win.
fn with_declared_defaults(req: &CompareRequest, plan: Option<&ExperimentPlan>) -> CompareRequest {
    let mut req = req.clone();
    if let Some(plan) = plan {
        req.metric
            .get_or_insert_with(|| plan.primary_metric.clone());
        req.polarity.get_or_insert_with(|| {
            match plan.polarity {
                crate::project::schema::Polarity::LowerIsBetter => "lower_is_better",
                crate::project::schema::Polarity::HigherIsBetter => "higher_is_better",
            }
            .to_owned()
        });
        req.threshold.get_or_insert(plan.practical_threshold);
        req.confidence.get_or_insert(plan.confidence_level);
        req.seed.get_or_insert(plan.seed);
    }
    req
}

/// Compares a candidate run set against a baseline.
pub async fn compare_run_sets(
    qc: &QueryContext<'_>,
    req: &CompareRequest,
) -> Result<ComparisonResult> {
    let base_set = resolve_run_set(qc.ws, "base", &req.base)?;
    let cand_set = resolve_run_set(qc.ws, "target", &req.target)?;
    let members = || base_set.members.iter().chain(&cand_set.members);
    // Only trials carry a trial id: other sets skip the manifest reads.
    let declared = members()
        .all(|m| m.trial_id.is_some())
        .then(|| shared_experiment_plan(qc.ws, members().map(|m| m.run_id.as_str())))
        .flatten();
    let req = &with_declared_defaults(req, declared.as_ref());
    let polarity = parse_polarity(req.polarity.as_deref())?;
    let settings = CompareSettings {
        polarity,
        practical_threshold: req.threshold.unwrap_or(0.02),
        bootstrap: bootstrap_settings(req.confidence, req.seed),
    };
    let session = qc.session(None)?;
    let usable = |set: &ResolvedRunSet| -> Vec<RunSetMember> {
        set.members.iter().filter(|m| !m.failed).cloned().collect()
    };
    let (base_ok, cand_ok) = (usable(&base_set), usable(&cand_set));
    let all: Vec<&RunSetMember> = base_ok.iter().chain(&cand_ok).collect();
    let evidence = MemberEvidence::new(qc.ws, &session, &all)?;
    let names = evidence.metric_names(&session).await?;
    let base_refs: Vec<&RunSetMember> = base_ok.iter().collect();
    let cand_refs: Vec<&RunSetMember> = cand_ok.iter().collect();
    let (metric, unit) = choose_metric(req.metric.as_deref(), &names, &base_refs, &cand_refs)?;
    let samples = evidence.samples(&session, &metric).await?;
    let mut medians = BTreeMap::new();
    for (run, values) in &samples {
        medians.insert(run.clone(), median(values).map_err(stats_error)?);
    }
    let (base_used, base_missing) = split_by_metric(&base_ok, &medians);
    let (cand_used, cand_missing) = split_by_metric(&cand_ok, &medians);
    let checks = compatibility(&base_used, &cand_used, &unit);
    if let Some(bad) = checks.iter().find(|c| c.invalidates()) {
        return Err(FlameoxError::new(
            ErrorCode::ComparisonInvalid,
            format!("the sets are not comparable: {} differs", bad.check),
        )
        .detail("check", serde_json::json!(bad))
        .remedy("compare runs measured by the same collector"));
    }
    let method = if base_set.pairing_key == cand_set.pairing_key {
        base_set.pairing_key
    } else {
        PairingKey::RunOrder
    };
    let by_order = method == PairingKey::RunOrder;
    let cell_keys = shared_parameter_names(&base_used, &cand_used);
    let base_blocks = block_statistics(&base_used, &medians, by_order, &cell_keys);
    let cand_blocks = block_statistics(&cand_used, &medians, by_order, &cell_keys);
    let mut pairs: Vec<BlockPair> = base_blocks
        .iter()
        .filter_map(|(block, (b_runs, b))| {
            let (c_runs, c) = cand_blocks.get(block)?;
            Some(BlockPair {
                block: block.clone(),
                baseline_runs: b_runs.clone(),
                candidate_runs: c_runs.clone(),
                baseline_statistic: *b,
                candidate_statistic: *c,
                log_ratio: (c / b).ln(),
            })
        })
        .collect();
    pairs.sort_by(|a, b| block_order(&a.block, &b.block));
    let unpaired = |mine: &BTreeMap<String, (Vec<String>, f64)>,
                    other: &BTreeMap<String, (Vec<String>, f64)>| {
        let mut keys: Vec<String> = mine
            .keys()
            .filter(|k| !other.contains_key(*k))
            .cloned()
            .collect();
        keys.sort_by(|a, b| block_order(a, b));
        keys
    };
    let pairing = Pairing {
        method,
        unpaired_baseline_blocks: unpaired(&base_blocks, &cand_blocks),
        unpaired_candidate_blocks: unpaired(&cand_blocks, &base_blocks),
        pairs,
    };
    if pairing.pairs.is_empty() {
        return Err(FlameoxError::new(
            ErrorCode::ComparisonInvalid,
            "no block has usable runs in both sets",
        )
        .detail("baseline_blocks", pairing.unpaired_baseline_blocks.clone())
        .detail("candidate_blocks", pairing.unpaired_candidate_blocks.clone())
        .remedy("freeze sets whose runs carry the same `block` parameter values, or compare runs measured with the metric"));
    }
    let ratios: Vec<f64> = pairing.pairs.iter().map(|p| p.log_ratio).collect();
    let estimate = compare_log_ratios(&ratios, &settings).map_err(stats_error)?;
    let mut validity_reasons = Vec::new();
    if ratios.len() < MIN_OBSERVATIONS {
        validity_reasons.push(format!(
            "{} pair(s): at least {MIN_OBSERVATIONS} are needed for a valid comparison",
            ratios.len()
        ));
    }
    for c in checks.iter().filter(|c| c.downgrades()) {
        validity_reasons.push(format!("{} differs ({})", c.check, c.status));
    }
    let validity = if validity_reasons.is_empty() {
        estimate.validity
    } else {
        Validity::Exploratory
    };
    let sample_level = if ratios.len() < MIN_OBSERVATIONS {
        let pooled = |runs: &mut dyn Iterator<Item = &String>| -> Vec<f64> {
            runs.filter_map(|r| samples.get(r))
                .flatten()
                .copied()
                .collect()
        };
        let b = pooled(&mut pairing.pairs.iter().flat_map(|p| &p.baseline_runs));
        let c = pooled(&mut pairing.pairs.iter().flat_map(|p| &p.candidate_runs));
        Some(
            compare_two_samples(
                &b,
                &c,
                polarity,
                settings.practical_threshold,
                &settings.bootstrap,
            )
            .map_err(stats_error)?,
        )
    } else {
        None
    };
    let profile = match evidence.shared_frame_metric(&session, &all).await? {
        Some(frame_metric) => {
            let shares = evidence.frame_shares(&session, &frame_metric).await?;
            let side = |used: &[&RunSetMember]| {
                used.iter()
                    .filter_map(|m| shares.get(&m.run_id))
                    .collect::<Vec<_>>()
            };
            profile_changes(&frame_metric, &side(&base_used), &side(&cand_used))
        }
        None => ProfileChanges::unavailable("no_profiles_on_both_sides"),
    };
    let evidence_status = if base_missing.is_empty()
        && cand_missing.is_empty()
        && pairing.unpaired_baseline_blocks.is_empty()
        && pairing.unpaired_candidate_blocks.is_empty()
    {
        EvidenceStatus::available()
    } else {
        EvidenceStatus::new("partial", "runs_or_blocks_left_out")
    };
    Ok(ComparisonResult {
        commit_id: session.snapshot.commit_id().to_owned(),
        metric,
        unit,
        baseline: side_counts(&base_set, base_missing, base_used.len()),
        candidate: side_counts(&cand_set, cand_missing, cand_used.len()),
        decision: estimate.decision,
        estimate,
        validity,
        validity_reasons,
        sample_level,
        compatibility: checks,
        pairing,
        profile_changes: profile,
        evidence: evidence_status,
    })
}
