//! Scaling fits for `analyze scaling`: which of constant, log n, n, n log n,
//! n² or a power law `a·n^k` describes how a metric grows with a size `n`.
//!
//! Scale: timings carry multiplicative noise, so every model is fitted and
//! judged on the log scale, `ln y_i = ln f(n_i) + e_i` with normal `e_i` of
//! one variance — a single likelihood for all six models, which is what
//! makes their AICc comparable (see `scaling_fit`). The power law is then
//! ordinary least squares in log-log space, with a t interval on `k`.
//!
//! Conclusion: models are ranked by AICc; the best is named when it beats
//! the runner-up by at least 2, else `inconclusive`. The runner-up is the
//! best-ranked model describing a *different* growth: a model that merely
//! adds a parameter to the best one (any model, when the best is the
//! constant) is not a rival (Arnold 2010, "Uninformative parameters and
//! model selection using Akaike's Information Criterion"), and neither is
//! the power law when its interval on `k` contains the exponent (0, 1, 2) of
//! the constant, `n` or `n²` model it is compared with — the same curve.

use serde::{Deserialize, Serialize};

pub use super::offset_power_law::ProfileInterval;
use super::offset_power_law::fit_offset_power_law;
use super::scaling_advice::{
    FIXED_COST_SHARE_LIMIT, TARGET_HALF_WIDTH, fixed_cost_shares, separating_experiment,
    sizes_for_width,
};
pub use super::scaling_advice::{SeparatingExperiment, SizeShare, SizesForWidth};
pub use super::scaling_fit::RESIDUAL_VARIANCE_FLOOR;
use super::scaling_fit::{fit_constant, fit_linear_family, fit_power_law, model_fit};
pub use super::scaling_model::{ModelFit, ScalingModel};
use super::special::student_t_quantile;
use super::{StatsError, check_confidence, check_values};

/// AICc of a model with 2 parameters plus the variance needs 5 points.
pub const MIN_POINTS: usize = 5;
/// Fewer distinct sizes cannot tell curves apart.
pub const MIN_DISTINCT_SIZES: usize = 3;
/// A best model must beat its rival by this much AICc to be named.
pub const AICC_MARGIN: f64 = 2.0;

/// One measurement: a size and a positive value (e.g. a trial median).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScalingPoint {
    pub n: f64,
    pub value: f64,
}

/// The power law's exponent with a t interval (n - 2 df).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ExponentInterval {
    pub estimate: f64,
    pub standard_error: f64,
    pub lower: f64,
    pub upper: f64,
    pub degrees_of_freedom: usize,
    pub confidence_level: f64,
}

/// The sizes the fit saw: conclusions hold inside this range only.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SizeRange {
    pub min_n: f64,
    pub max_n: f64,
}

/// The named model, or why none is named.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ScalingConclusion {
    /// `best` beats `runner_up` by `margin >= 2` (or has no rival).
    Best {
        model: ScalingModel,
        runner_up: Option<ScalingModel>,
        margin: Option<f64>,
    },
    /// The rival is within 2 AICc of the best.
    Inconclusive {
        best: ScalingModel,
        runner_up: ScalingModel,
        margin: f64,
    },
}

/// The offset power law `a + b n^k`: the fixed cost, the exponent of the
/// growing part with its profile interval, and what they mean for the design.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffsetPowerLawSummary {
    /// `a`, in the metric's unit.
    pub fixed_cost: f64,
    pub b: f64,
    pub exponent: ProfileInterval,
    /// `a / f(n)` at each measured size.
    pub fixed_cost_share: Vec<SizeShare>,
    /// The fixed cost is more than a quarter of the time at the smallest size.
    pub exponent_poorly_determined: bool,
    /// Sizes that would bring the interval on `k` to ±0.1 (absent when the
    /// measured sizes already do).
    pub sizes_for_width: Option<SizesForWidth>,
}

/// The exponent the answer states: the offset power law's when it could be
/// fitted (6 points or more), else the plain power law's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GrowthExponent {
    pub model: ScalingModel,
    pub estimate: f64,
    pub lower: f64,
    pub upper: f64,
    pub confidence_level: f64,
}

/// All fits, ranked, with the conclusion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScalingFit {
    pub points: usize,
    pub distinct_sizes: usize,
    pub supported_range: SizeRange,
    /// Best first (ascending AICc; ties: fewer parameters, then model order).
    pub models: Vec<ModelFit>,
    /// The plain power law's exponent (bent down by any fixed cost; kept
    /// for comparison).
    pub power_law_exponent: ExponentInterval,
    pub offset_power_law: Option<OffsetPowerLawSummary>,
    pub growth_exponent: GrowthExponent,
    pub conclusion: ScalingConclusion,
    /// For an inconclusive answer: the measurement that separates the two.
    pub separating_experiment: Option<SeparatingExperiment>,
    /// What to read with the conclusion: an exponent that disagrees with
    /// the named model and why, a poorly determined exponent and the sizes
    /// that would fix it, the experiment an inconclusive answer needs.
    pub notes: Vec<String>,
}

/// Fits the six models to `points` (`n > 0`, `value > 0`; repeated sizes
/// welcome) and concludes; `confidence_level` is that of the interval on `k`.
pub fn fit_scaling(
    points: &[ScalingPoint],
    confidence_level: f64,
) -> Result<ScalingFit, StatsError> {
    check_confidence(confidence_level)?;
    let n: Vec<f64> = points.iter().map(|p| p.n).collect();
    let y: Vec<f64> = points.iter().map(|p| p.value).collect();
    check_values("sizes", &n, true)?;
    check_values("values", &y, true)?;
    let m = points.len();
    if m < MIN_POINTS {
        return Err(StatsError::TooFewPoints {
            what: "scaling points",
            needed: MIN_POINTS,
            got: m,
        });
    }
    let mut sizes = n.clone();
    sizes.sort_unstable_by(f64::total_cmp);
    sizes.dedup();
    if sizes.len() < MIN_DISTINCT_SIZES {
        return Err(StatsError::TooFewPoints {
            what: "distinct sizes",
            needed: MIN_DISTINCT_SIZES,
            got: sizes.len(),
        });
    }
    let ln_n: Vec<f64> = n.iter().map(|v| v.ln()).collect();
    let ln_y: Vec<f64> = y.iter().map(|v| v.ln()).collect();
    let power = fit_power_law(&ln_n, &ln_y).ok_or(StatsError::TooFewPoints {
        what: "distinct sizes",
        needed: MIN_DISTINCT_SIZES,
        got: 1,
    })?;
    let df = m - 2;
    let t = student_t_quantile(0.5 + confidence_level / 2.0, df as f64);
    let k = power.fit.k.unwrap_or_default();
    let exponent = ExponentInterval {
        estimate: k,
        standard_error: power.standard_error,
        lower: k - t * power.standard_error,
        upper: k + t * power.standard_error,
        degrees_of_freedom: df,
        confidence_level,
    };
    let mut models = Vec::with_capacity(ScalingModel::ALL.len());
    for model in ScalingModel::ALL {
        let fit = match model {
            ScalingModel::Constant => Some(fit_constant(&ln_y)),
            ScalingModel::PowerLaw => Some(power.fit),
            _ => {
                let g: Vec<f64> = n.iter().filter_map(|&v| model.growth(v)).collect();
                fit_linear_family(&g, &y, &ln_y)
            }
        };
        // A model whose g(n) is constant over these sizes cannot be fitted
        // (n log n at n = 1/e...); it simply does not compete.
        if let Some(fit) = fit {
            models.push(model_fit(model, fit, m));
        }
    }
    let offset = fit_offset_power_law(&n, &y, &ln_y, confidence_level);
    if let Some(offset) = &offset {
        models.push(model_fit(ScalingModel::OffsetPowerLaw, offset.fit, m));
    }
    models.sort_by(|x, y| {
        x.aicc
            .total_cmp(&y.aicc)
            .then(x.parameters.cmp(&y.parameters))
            .then(rank_of(x.model).cmp(&rank_of(y.model)))
    });
    let best_aicc = models.first().map_or(0.0, |f| f.aicc);
    for fit in &mut models {
        fit.delta_aicc = fit.aicc - best_aicc;
    }
    let runs = (m / sizes.len()).max(1);
    let offset_summary = offset.map(|o| {
        let (a, b, k) = (o.fit.a, o.fit.b.unwrap_or_default(), o.interval.estimate);
        let shares = fixed_cost_shares(a, b, k, &sizes);
        let s2 = (o.fit.rss / (m - 3) as f64).max(RESIDUAL_VARIANCE_FLOOR);
        OffsetPowerLawSummary {
            fixed_cost: a,
            b,
            exponent: o.interval,
            exponent_poorly_determined: shares
                .first()
                .is_some_and(|s| s.share > FIXED_COST_SHARE_LIMIT),
            fixed_cost_share: shares,
            sizes_for_width: sizes_for_width(a, b, k, s2, &sizes, runs, confidence_level),
        }
    });
    let growth_exponent = match &offset_summary {
        Some(o) => GrowthExponent {
            model: ScalingModel::OffsetPowerLaw,
            estimate: o.exponent.estimate,
            lower: o.exponent.lower,
            upper: o.exponent.upper,
            confidence_level,
        },
        None => GrowthExponent {
            model: ScalingModel::PowerLaw,
            estimate: exponent.estimate,
            lower: exponent.lower,
            upper: exponent.upper,
            confidence_level,
        },
    };
    let conclusion = conclude(&models, &exponent, offset_summary.as_ref());
    let supported_range = SizeRange {
        min_n: sizes[0],
        max_n: sizes[sizes.len() - 1],
    };
    let separating = match conclusion {
        ScalingConclusion::Inconclusive {
            best, runner_up, ..
        } => {
            let fit_of = |model| models.iter().find(|f| f.model == model);
            match (fit_of(best), fit_of(runner_up)) {
                (Some(b), Some(r)) => {
                    let mean_parameters = b.parameters.saturating_sub(1);
                    let sigma = b.log_residual_rms
                        * (m as f64 / m.saturating_sub(mean_parameters).max(1) as f64).sqrt();
                    separating_experiment(
                        b,
                        r,
                        sigma,
                        runs,
                        supported_range.min_n,
                        supported_range.max_n,
                    )
                }
                _ => None,
            }
        }
        ScalingConclusion::Best { .. } => None,
    };
    let mut fit = ScalingFit {
        points: m,
        distinct_sizes: sizes.len(),
        supported_range,
        models,
        power_law_exponent: exponent,
        offset_power_law: offset_summary,
        growth_exponent,
        conclusion,
        separating_experiment: separating,
        notes: Vec::new(),
    };
    fit.notes = super::scaling_notes::notes(&fit, TARGET_HALF_WIDTH);
    Ok(fit)
}

fn rank_of(model: ScalingModel) -> usize {
    ScalingModel::ALL
        .iter()
        .position(|&m| m == model)
        .unwrap_or(usize::MAX)
}

/// Whether two models describe the same curve: directly (below), or both
/// the same curve as the offset power law (`n²` and a plain power law whose
/// exponent both lie inside its interval describe one growth).
fn same_curve(
    x: ScalingModel,
    y: ScalingModel,
    exponent: &ExponentInterval,
    offset: Option<&OffsetPowerLawSummary>,
) -> bool {
    use ScalingModel::OffsetPowerLaw;
    same_curve_directly(x, y, exponent, offset)
        || (offset.is_some()
            && x != OffsetPowerLaw
            && y != OffsetPowerLaw
            && same_curve_directly(x, OffsetPowerLaw, exponent, offset)
            && same_curve_directly(y, OffsetPowerLaw, exponent, offset))
}

/// A polynomial (0, 1, 2) inside a power law's interval on `k`; `n` or
/// `n²` (both with an offset) inside the offset power law's; the plain
/// power law's exponent inside the offset power law's (no material fixed
/// cost).
fn same_curve_directly(
    x: ScalingModel,
    y: ScalingModel,
    exponent: &ExponentInterval,
    offset: Option<&OffsetPowerLawSummary>,
) -> bool {
    use ScalingModel::{N, NSquared, OffsetPowerLaw, PowerLaw};
    let inside = |e: f64, lower: f64, upper: f64| lower <= e && e <= upper;
    match (x, y) {
        (PowerLaw, OffsetPowerLaw) | (OffsetPowerLaw, PowerLaw) => {
            offset.is_some_and(|o| inside(exponent.estimate, o.exponent.lower, o.exponent.upper))
        }
        (OffsetPowerLaw, other) | (other, OffsetPowerLaw) => {
            matches!(other, N | NSquared)
                && offset.is_some_and(|o| {
                    other
                        .power_law_exponent()
                        .is_some_and(|e| inside(e, o.exponent.lower, o.exponent.upper))
                })
        }
        (PowerLaw, other) | (other, PowerLaw) => other
            .power_law_exponent()
            .is_some_and(|e| inside(e, exponent.lower, exponent.upper)),
        _ => false,
    }
}

/// The rule of this module's documentation over AICc-ranked fits. When the
/// best is the offset power law and a simpler model within 2 is the same
/// curve (`a + b n²` for `k` near 2), the simpler one is named.
fn conclude(
    ranked: &[ModelFit],
    exponent: &ExponentInterval,
    offset: Option<&OffsetPowerLawSummary>,
) -> ScalingConclusion {
    let Some(best) = ranked.first() else {
        return ScalingConclusion::Best {
            model: ScalingModel::Constant,
            runner_up: None,
            margin: None,
        };
    };
    let same = |x, y| same_curve(x, y, exponent, offset);
    let named = ranked[1..]
        .iter()
        .filter(|fit| {
            fit.delta_aicc < AICC_MARGIN
                && fit.parameters < best.parameters
                && same(best.model, fit.model)
        })
        .min_by_key(|fit| fit.parameters)
        .unwrap_or(best);
    let rival = ranked.iter().find(|fit| {
        let nests_best = named.model == ScalingModel::Constant;
        fit.model != named.model
            && !nests_best
            && !same(named.model, fit.model)
            && !same(best.model, fit.model)
            && fit.model != best.model
    });
    match rival {
        None => ScalingConclusion::Best {
            model: named.model,
            runner_up: None,
            margin: None,
        },
        Some(rival) if rival.delta_aicc >= AICC_MARGIN => ScalingConclusion::Best {
            model: named.model,
            runner_up: Some(rival.model),
            margin: Some(rival.delta_aicc),
        },
        Some(rival) => ScalingConclusion::Inconclusive {
            best: named.model,
            runner_up: rival.model,
            margin: rival.delta_aicc,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(sizes: &[f64], f: impl Fn(f64) -> f64) -> Vec<ScalingPoint> {
        sizes
            .iter()
            .map(|&n| ScalingPoint { n, value: f(n) })
            .collect()
    }

    #[test]
    fn exact_curves_are_named_and_perfect_fits_stay_finite() {
        let sizes = [10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0];
        let flat = fit_scaling(&points(&sizes, |_| 4.0), 0.95).unwrap();
        assert!(flat.models.iter().all(|m| m.aicc.is_finite()));
        assert!(matches!(
            flat.conclusion,
            ScalingConclusion::Best {
                model: ScalingModel::Constant,
                ..
            }
        ));
        let quadratic = fit_scaling(&points(&sizes, |n| 5.0 + 0.01 * n * n), 0.95).unwrap();
        assert_eq!(quadratic.models[0].model, ScalingModel::NSquared);
        assert!(matches!(
            quadratic.conclusion,
            ScalingConclusion::Best {
                model: ScalingModel::NSquared,
                ..
            }
        ));
        assert_eq!(
            quadratic.supported_range,
            SizeRange {
                min_n: 10.0,
                max_n: 3000.0
            }
        );
        let deltas: Vec<f64> = quadratic.models.iter().map(|m| m.delta_aicc).collect();
        assert!(deltas[0] == 0.0 && deltas.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn too_little_data_is_an_error_not_a_guess() {
        let few = points(&[1.0, 2.0, 3.0, 4.0], |n| n);
        assert!(matches!(
            fit_scaling(&few, 0.95),
            Err(StatsError::TooFewPoints { needed: 5, .. })
        ));
        let two_sizes = points(&[1.0, 1.0, 1.0, 2.0, 2.0, 2.0], |n| n);
        assert!(matches!(
            fit_scaling(&two_sizes, 0.95),
            Err(StatsError::TooFewPoints {
                what: "distinct sizes",
                ..
            })
        ));
        let zero = points(&[0.0, 1.0, 2.0, 3.0, 4.0], |n| n + 1.0);
        assert!(matches!(
            fit_scaling(&zero, 0.95),
            Err(StatsError::NonPositive { .. })
        ));
    }

    #[test]
    fn field_names_are_stable() {
        let fit = fit_scaling(&points(&[1.0, 2.0, 4.0, 8.0, 16.0], |n| n), 0.95).unwrap();
        let json = serde_json::to_value(&fit).unwrap();
        for key in [
            "points",
            "distinct_sizes",
            "supported_range",
            "models",
            "power_law_exponent",
            "conclusion",
        ] {
            assert!(json.get(key).is_some(), "{key}");
        }
        assert!(json["conclusion"]["status"].is_string());
        assert!(json["models"][0]["model"].is_string());
        assert!(json["power_law_exponent"]["lower"].is_number());
    }
}
