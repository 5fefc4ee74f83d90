//! `analyze scaling <run-set> --parameter n` / `analyze_scaling`: how a
//! metric grows with a numeric parameter, per variant.
//!
//! Per variant and parameter value: the per-run statistic is the median of
//! the run's non-warmup samples; the point summary is the median of those
//! per-run medians with their MAD and a seeded BCa interval. The fit uses
//! every run's median as a point (repeated sizes allowed) through the
//! stats kernel `fit_scaling` (constant, log n, n, n log n, n², power law
//! with a CI on k, offset power law with its fixed cost; AICc ranking with the ≥ 2 rule; supported range). When
//! the runs carry profiles, each frame's self share is correlated with n
//! over runs (Spearman ρ), q-values by Benjamini–Hochberg over the frames
//! tested; frames with ρ > 0 and q < 0.05 are reported as growing, each with
//! its own time (share × the run's metric) fitted against n and compared
//! with the whole metric's exponent (`faster`/`same`/`slower`): a share can
//! rise only because a fixed cost elsewhere shrinks in proportion.
//! Read-only: never runs anything.

use std::collections::BTreeMap;

use flameox_recipes::stats::bootstrap::median_interval;
use flameox_recipes::stats::{
    BcaInterval, Correlation, GrowthExponent, ScalingFit, ScalingPoint, benjamini_hochberg,
    fit_scaling, median, robust_summary, spearman,
};
use serde::{Deserialize, Serialize};

use crate::error::{FlameoxError, Result};
pub use crate::services::analysis_requests::ScalingRequest;
use crate::services::compare::bootstrap_settings;
use crate::services::experiments::resolve_analysis_target;
use crate::services::run_set_samples::{
    FrameShare, MemberEvidence, MetricNames, leading_frames, single_unit, stats_error,
};
use crate::services::run_sets::RunSetMember;
use crate::services::{EvidenceStatus, QueryContext, check_id};

/// Growing hotspots listed per variant.
pub const GROWING_HOTSPOTS_LIMIT: usize = 20;
/// False discovery rate of the growing-hotspot report.
pub const HOTSPOT_Q_THRESHOLD: f64 = 0.05;

/// One parameter value of one variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScalingValue {
    pub n: f64,
    pub runs: usize,
    /// Median of the per-run medians.
    pub median: f64,
    pub mad_raw: f64,
    pub mad_normal: f64,
    pub interval: BcaInterval,
}

/// A frame whose self share grows with n.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrowingFrame {
    pub frame: String,
    pub function: String,
    pub rho: f64,
    pub p_value: f64,
    pub q_value: f64,
    /// Median share at the smallest and the largest n.
    pub share_at_min_n: f64,
    pub share_at_max_n: f64,
    /// The frame's own time (share × the run's metric) fitted against n:
    /// its stated exponent. A share can rise only because a fixed cost
    /// elsewhere shrinks in proportion; this says how the frame grows.
    pub growth_exponent: Option<GrowthExponent>,
    /// `faster` or `slower` than the whole metric (the frame's interval
    /// excludes the whole's exponent), `same`, or `unknown` (no fit).
    pub growth_vs_total: String,
}

/// Growing hotspots of one variant, or why there are none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrowingHotspots {
    /// `available`, or `unavailable` with `reason`.
    pub status: String,
    pub reason: Option<String>,
    pub metric: Option<String>,
    pub frames_tested: usize,
    pub rows: Vec<GrowingFrame>,
    pub truncated: bool,
}

impl GrowingHotspots {
    fn unavailable(reason: &str) -> GrowingHotspots {
        GrowingHotspots {
            status: "unavailable".into(),
            reason: Some(reason.into()),
            metric: None,
            frames_tested: 0,
            rows: Vec::new(),
            truncated: false,
        }
    }
}

/// One variant's scaling answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantScaling {
    pub variant: Option<String>,
    pub runs: usize,
    pub values: Vec<ScalingValue>,
    /// The fit, or `None` with `fit_unavailable` saying why.
    pub fit: Option<ScalingFit>,
    pub fit_unavailable: Option<String>,
    pub hotspots: GrowingHotspots,
}

/// The answer of `analyze scaling`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScalingResult {
    pub commit_id: String,
    pub requested: String,
    pub run_set_id: Option<String>,
    pub parameter: String,
    pub metric: String,
    pub unit: String,
    pub attempted: usize,
    pub failed_runs: Vec<String>,
    pub missing_metric_runs: Vec<String>,
    pub variants: Vec<VariantScaling>,
    pub evidence: EvidenceStatus,
}

/// The parameter value of each member; non-numeric or missing values are
/// `INVALID_ARGUMENTS` naming the runs and values.
fn sizes(members: &[&RunSetMember], parameter: &str) -> Result<BTreeMap<String, f64>> {
    let mut out = BTreeMap::new();
    let mut bad = Vec::new();
    for m in members {
        match m.parameters.get(parameter) {
            Some(text) => match text.trim().parse::<f64>() {
                Ok(v) if v.is_finite() && v > 0.0 => {
                    out.insert(m.run_id.clone(), v);
                }
                _ => bad.push(serde_json::json!({ "run_id": m.run_id, "value": text })),
            },
            None => bad.push(serde_json::json!({ "run_id": m.run_id, "value": null })),
        }
    }
    if !bad.is_empty() {
        let mut names: Vec<String> = members
            .iter()
            .flat_map(|m| m.parameters.keys().cloned())
            .collect();
        names.sort();
        names.dedup();
        return Err(FlameoxError::invalid_argument(
            "parameter",
            format!("{parameter} must be a positive number on every run; some runs lack it or hold a non-numeric value"),
        )
        .detail("invalid_values", serde_json::Value::Array(bad))
        .detail("parameters", names));
    }
    Ok(out)
}

/// The frame's own time against n (runs where it has time), fitted; and
/// how its exponent compares with the whole metric's.
fn frame_growth(
    frame: &str,
    runs: &[(&str, f64, f64)],
    shares: &BTreeMap<String, BTreeMap<String, FrameShare>>,
    total: Option<&GrowthExponent>,
    confidence: f64,
) -> (Option<GrowthExponent>, String) {
    let points: Vec<ScalingPoint> = runs
        .iter()
        .filter_map(|(run, n, value)| {
            let share = shares.get(*run)?.get(frame)?.share;
            (share > 0.0).then_some(ScalingPoint {
                n: *n,
                value: share * value,
            })
        })
        .collect();
    let Ok(fit) = fit_scaling(&points, confidence) else {
        return (None, "unknown".into());
    };
    let k = fit.growth_exponent;
    let relation = match total {
        Some(t) if k.lower > t.estimate => "faster",
        Some(t) if k.upper < t.estimate => "slower",
        Some(_) => "same",
        None => "unknown",
    };
    (Some(k), relation.into())
}

fn growing_hotspots(
    metric: &str,
    runs: &[(&str, f64, f64)],
    shares: &BTreeMap<String, BTreeMap<String, FrameShare>>,
    total: Option<&GrowthExponent>,
    confidence: f64,
) -> Result<GrowingHotspots> {
    let with: Vec<(&BTreeMap<String, FrameShare>, f64)> = runs
        .iter()
        .filter_map(|(run, n, _)| shares.get(*run).map(|s| (s, *n)))
        .collect();
    if with.len() < runs.len() {
        return Ok(GrowingHotspots::unavailable("some_runs_have_no_profile"));
    }
    let ns: Vec<f64> = with.iter().map(|(_, n)| *n).collect();
    let (min_n, max_n) = ns
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &n| {
            (lo.min(n), hi.max(n))
        });
    let mut tested = Vec::new();
    for (frame, function) in leading_frames(with.iter().map(|(s, _)| *s)) {
        let share: Vec<f64> = with
            .iter()
            .map(|(s, _)| s.get(&frame).map_or(0.0, |f| f.share))
            .collect();
        if let Correlation::Available { rho, p_value, .. } =
            spearman(&ns, &share).map_err(stats_error)?
        {
            let at = |target: f64| {
                let v: Vec<f64> = share
                    .iter()
                    .zip(&ns)
                    .filter(|(_, n)| **n == target)
                    .map(|(s, _)| *s)
                    .collect();
                median(&v).unwrap_or(0.0)
            };
            tested.push(GrowingFrame {
                frame,
                function,
                rho,
                p_value,
                q_value: 1.0,
                share_at_min_n: at(min_n),
                share_at_max_n: at(max_n),
                growth_exponent: None,
                growth_vs_total: "unknown".into(),
            });
        }
    }
    let p: Vec<f64> = tested.iter().map(|t| t.p_value).collect();
    let q = if p.is_empty() {
        Vec::new()
    } else {
        benjamini_hochberg(&p).map_err(stats_error)?
    };
    for (t, q) in tested.iter_mut().zip(q) {
        t.q_value = q;
    }
    let frames_tested = tested.len();
    let mut rows: Vec<GrowingFrame> = tested
        .into_iter()
        .filter(|t| t.rho > 0.0 && t.q_value < HOTSPOT_Q_THRESHOLD)
        .collect();
    rows.sort_by(|a, b| {
        a.q_value
            .total_cmp(&b.q_value)
            .then(b.rho.total_cmp(&a.rho))
            .then_with(|| a.frame.cmp(&b.frame))
    });
    let truncated = rows.len() > GROWING_HOTSPOTS_LIMIT;
    rows.truncate(GROWING_HOTSPOTS_LIMIT);
    for row in &mut rows {
        (row.growth_exponent, row.growth_vs_total) =
            frame_growth(&row.frame, runs, shares, total, confidence);
    }
    Ok(GrowingHotspots {
        status: "available".into(),
        reason: None,
        metric: Some(metric.to_owned()),
        frames_tested,
        rows,
        truncated,
    })
}

/// The metric every usable run has: requested, `wall_time`, or the single
/// shared name.
fn shared_metric(requested: Option<&str>, names: &MetricNames) -> Result<(String, String)> {
    let mut shared: Option<Vec<String>> = None;
    for run in names.values() {
        let mine: Vec<String> = run.keys().cloned().collect();
        shared = Some(match shared {
            None => mine,
            Some(prev) => prev.into_iter().filter(|n| mine.contains(n)).collect(),
        });
    }
    let shared = shared.unwrap_or_default();
    let metric = match requested {
        Some(m) if shared.iter().any(|s| s == m) => m.to_owned(),
        None if shared.iter().any(|s| s == "wall_time") => "wall_time".to_owned(),
        None if shared.len() == 1 => shared[0].clone(),
        _ => {
            let near = requested
                .map(|m| crate::error::closest(m, shared.iter().map(String::as_str), 3))
                .unwrap_or_default();
            return Err(FlameoxError::invalid_argument(
                "metric",
                "choose a measurement name every run of the set has",
            )
            .detail("valid", shared)
            .detail("closest", near));
        }
    };
    single_unit(names, names.keys().map(String::as_str), metric)
}

/// Fits how the metric scales with the parameter, per variant.
pub async fn analyze_scaling(qc: &QueryContext<'_>, req: &ScalingRequest) -> Result<ScalingResult> {
    let (set, experiment) = resolve_analysis_target(qc.ws, "target", &req.target)?;
    // An experiment supplies what the request leaves out: its scaling
    // parameter, primary metric, confidence level and seed.
    let req = &match experiment {
        Some(plan) => ScalingRequest {
            target: req.target.clone(),
            parameter: match req.parameter.as_str() {
                "" => plan.scaling_parameter.unwrap_or_default(),
                given => given.to_owned(),
            },
            metric: req.metric.clone().or(Some(plan.primary_metric)),
            confidence: req.confidence.or(Some(plan.confidence_level)),
            seed: req.seed.or(Some(plan.seed)),
        },
        None => req.clone(),
    };
    check_id("parameter", &req.parameter)?;
    let bootstrap = bootstrap_settings(req.confidence, req.seed);
    let usable: Vec<&RunSetMember> = set.members.iter().filter(|m| !m.failed).collect();
    let size_of = sizes(&usable, &req.parameter)?;
    let session = qc.session(None)?;
    let evidence = MemberEvidence::new(qc.ws, &session, &usable)?;
    let names = evidence.metric_names(&session).await?;
    let (metric, unit) = shared_metric(req.metric.as_deref(), &names)?;
    let samples = evidence.samples(&session, &metric).await?;
    let frame_metric = evidence.shared_frame_metric(&session, &usable).await?;
    let shares = match &frame_metric {
        Some(m) => evidence.frame_shares(&session, m).await?,
        None => BTreeMap::new(),
    };
    let mut by_variant: BTreeMap<Option<String>, Vec<(&str, f64, f64)>> = BTreeMap::new();
    let mut missing = Vec::new();
    for m in &usable {
        match samples.get(&m.run_id) {
            Some(values) => {
                let run_median = median(values).map_err(stats_error)?;
                by_variant.entry(m.variant.clone()).or_default().push((
                    m.run_id.as_str(),
                    size_of[&m.run_id],
                    run_median,
                ));
            }
            None => missing.push(m.run_id.clone()),
        }
    }
    let mut variants = Vec::new();
    let mut last_error = None;
    for (variant, runs) in &by_variant {
        let mut per_n: BTreeMap<u64, (f64, Vec<f64>)> = BTreeMap::new();
        for (_, n, value) in runs {
            per_n
                .entry(n.to_bits())
                .or_insert((*n, Vec::new()))
                .1
                .push(*value);
        }
        let mut values = Vec::new();
        let mut ordered: Vec<(f64, Vec<f64>)> = per_n.into_values().collect();
        ordered.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (n, medians) in ordered {
            let summary = robust_summary(&medians).map_err(stats_error)?;
            let interval = median_interval(&medians, &bootstrap).map_err(stats_error)?;
            values.push(ScalingValue {
                n,
                runs: medians.len(),
                median: summary.median,
                mad_raw: summary.mad_raw,
                mad_normal: summary.mad_normal,
                interval: interval.bca,
            });
        }
        let points: Vec<ScalingPoint> = runs
            .iter()
            .map(|(_, n, value)| ScalingPoint {
                n: *n,
                value: *value,
            })
            .collect();
        let (fit, fit_unavailable) = match fit_scaling(&points, bootstrap.confidence_level) {
            Ok(fit) => (Some(fit), None),
            Err(e) => {
                let text = e.to_string();
                last_error = Some(e);
                (None, Some(text))
            }
        };
        let hotspots = match &frame_metric {
            Some(m) => growing_hotspots(
                m,
                runs,
                &shares,
                fit.as_ref().map(|f| &f.growth_exponent),
                bootstrap.confidence_level,
            )?,
            None => GrowingHotspots::unavailable("no_profiles"),
        };
        variants.push(VariantScaling {
            variant: variant.clone(),
            runs: runs.len(),
            values,
            fit,
            fit_unavailable,
            hotspots,
        });
    }
    if variants.iter().all(|v| v.fit.is_none())
        && let Some(e) = last_error
    {
        return Err(stats_error(e));
    }
    let failed_runs: Vec<String> = set
        .members
        .iter()
        .filter(|m| m.failed)
        .map(|m| m.run_id.clone())
        .collect();
    let evidence_status = if missing.is_empty() && variants.iter().all(|v| v.fit.is_some()) {
        EvidenceStatus::available()
    } else {
        EvidenceStatus::new("partial", "runs_or_variants_left_out")
    };
    Ok(ScalingResult {
        commit_id: session.snapshot.commit_id().to_owned(),
        requested: set.requested.clone(),
        run_set_id: set.run_set_id.clone(),
        parameter: req.parameter.clone(),
        metric,
        unit,
        attempted: set.members.len(),
        failed_runs,
        missing_metric_runs: missing,
        variants,
        evidence: evidence_status,
    })
}
