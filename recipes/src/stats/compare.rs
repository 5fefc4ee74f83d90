//! The paired comparison decision of `analyze compare`: median log ratio over
//! blocks, its BCa interval, and a decision by polarity and a practical
//! threshold.
//!
//! Rule (on the relative scale `exp(log ratio) - 1`, threshold `t`):
//! - the BCa interval lies wholly beyond `t` in the good direction
//!   (strictly: below `-t` when lower is better, above `+t` when higher is
//!   better) → `improvement`;
//! - wholly beyond `t` in the bad direction → `regression`;
//! - wholly inside `[-t, +t]` → `no_meaningful_difference`;
//! - otherwise, or when no interval is available → `inconclusive`.
//!
//! `validity` is `valid` with at least 3 pairs, else `exploratory`.

use serde::{Deserialize, Serialize};

use super::bootstrap::{BcaInterval, BootstrapSettings, Interval, median_interval};
use super::bootstrap::{MIN_OBSERVATIONS, paired_log_ratios};
use super::{StatsError, check_values};

/// Which direction of the metric is good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Polarity {
    LowerIsBetter,
    HigherIsBetter,
}

/// What the comparison concludes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Improvement,
    Regression,
    NoMeaningfulDifference,
    Inconclusive,
}

/// Whether the design supports a claim (≥ 3 pairs) or only a look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Validity {
    Valid,
    Exploratory,
}

/// How to decide: polarity, the smallest relative change that matters, and
/// the bootstrap's confidence level, resamples and seed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CompareSettings {
    pub polarity: Polarity,
    /// A fraction: 0.02 means changes within ±2 % do not matter.
    pub practical_threshold: f64,
    pub bootstrap: BootstrapSettings,
}

/// The result of a paired comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedComparison {
    pub pairs: usize,
    pub polarity: Polarity,
    pub practical_threshold: f64,
    pub confidence_level: f64,
    pub resamples: usize,
    pub seed: u64,
    /// `median(ln(candidate / baseline))`.
    pub median_log_ratio: f64,
    /// `exp(median_log_ratio) - 1`: -0.1 is 10 % lower than the baseline.
    pub relative_change: f64,
    /// BCa interval of the median log ratio.
    pub log_ratio_interval: BcaInterval,
    /// The same bounds on the relative scale, `exp(bound) - 1`.
    pub relative_interval: Option<Interval>,
    pub decision: Decision,
    pub validity: Validity,
}

/// Compares paired measurements (`baseline[i]` and `candidate[i]` from the
/// same block); all values positive.
pub fn compare_paired(
    baseline: &[f64],
    candidate: &[f64],
    settings: &CompareSettings,
) -> Result<PairedComparison, StatsError> {
    compare_log_ratios(&paired_log_ratios(baseline, candidate)?, settings)
}

/// Compares from per-pair log ratios `ln(candidate / baseline)`.
pub fn compare_log_ratios(
    log_ratios: &[f64],
    settings: &CompareSettings,
) -> Result<PairedComparison, StatsError> {
    check_values("log ratios", log_ratios, false)?;
    let threshold = settings.practical_threshold;
    if !(0.0..1.0).contains(&threshold) {
        return Err(StatsError::InvalidThreshold(threshold));
    }
    let bootstrap = median_interval(log_ratios, &settings.bootstrap)?;
    let log_ratio_interval = bootstrap.bca;
    let relative_interval = log_ratio_interval.bounds().map(|b| Interval {
        lower: b.lower.exp_m1(),
        upper: b.upper.exp_m1(),
    });
    let decision = match relative_interval {
        Some(interval) => decide(interval, settings.polarity, threshold),
        None => Decision::Inconclusive,
    };
    Ok(PairedComparison {
        pairs: log_ratios.len(),
        polarity: settings.polarity,
        practical_threshold: threshold,
        confidence_level: bootstrap.confidence_level,
        resamples: bootstrap.resamples,
        seed: bootstrap.seed,
        median_log_ratio: bootstrap.estimate,
        relative_change: bootstrap.estimate.exp_m1(),
        log_ratio_interval,
        relative_interval,
        decision,
        validity: if log_ratios.len() >= MIN_OBSERVATIONS {
            Validity::Valid
        } else {
            Validity::Exploratory
        },
    })
}

/// The decision rule of this module's documentation, on a relative-scale
/// interval.
pub fn decide(relative: Interval, polarity: Polarity, threshold: f64) -> Decision {
    let wholly_below = relative.upper < -threshold;
    let wholly_above = relative.lower > threshold;
    let (good, bad) = match polarity {
        Polarity::LowerIsBetter => (wholly_below, wholly_above),
        Polarity::HigherIsBetter => (wholly_above, wholly_below),
    };
    if good {
        Decision::Improvement
    } else if bad {
        Decision::Regression
    } else if relative.lower >= -threshold && relative.upper <= threshold {
        Decision::NoMeaningfulDifference
    } else {
        Decision::Inconclusive
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(lower: f64, upper: f64) -> Interval {
        Interval { lower, upper }
    }

    #[test]
    fn the_rule_by_polarity() {
        use Decision::*;
        let t = 0.02;
        let lower = Polarity::LowerIsBetter;
        let higher = Polarity::HigherIsBetter;
        assert_eq!(decide(interval(-0.12, -0.05), lower, t), Improvement);
        assert_eq!(decide(interval(-0.12, -0.05), higher, t), Regression);
        assert_eq!(decide(interval(0.03, 0.2), lower, t), Regression);
        assert_eq!(decide(interval(0.03, 0.2), higher, t), Improvement);
        assert_eq!(
            decide(interval(-0.01, 0.015), lower, t),
            NoMeaningfulDifference
        );
        assert_eq!(
            decide(interval(-0.02, 0.02), higher, t),
            NoMeaningfulDifference
        );
        // Touching the threshold is not "wholly past" it.
        assert_eq!(decide(interval(-0.1, -0.02), lower, t), Inconclusive);
        assert_eq!(decide(interval(-0.05, 0.01), lower, t), Inconclusive);
        assert_eq!(decide(interval(-0.05, 0.05), higher, t), Inconclusive);
    }

    #[test]
    fn paired_timings_end_to_end() {
        let settings = CompareSettings {
            polarity: Polarity::LowerIsBetter,
            practical_threshold: 0.02,
            bootstrap: BootstrapSettings {
                confidence_level: 0.95,
                resamples: 4_000,
                seed: 3,
            },
        };
        let baseline = [10.0, 10.4, 9.8, 10.1, 10.3, 9.9, 10.2, 10.0];
        let faster: Vec<f64> = baseline
            .iter()
            .zip([0.80, 0.82, 0.79, 0.81, 0.80, 0.83, 0.78, 0.80])
            .map(|(b, f)| b * f)
            .collect();
        let result = compare_paired(&baseline, &faster, &settings).unwrap();
        assert_eq!(result.decision, Decision::Improvement, "{result:?}");
        assert_eq!(result.validity, Validity::Valid);
        assert!((result.relative_change + 0.2).abs() < 0.01, "{result:?}");
        let rel = result.relative_interval.unwrap();
        assert!(rel.lower < result.relative_change && result.relative_change < rel.upper);

        let two = compare_paired(&baseline[..2], &faster[..2], &settings).unwrap();
        assert_eq!(
            (two.decision, two.validity),
            (Decision::Inconclusive, Validity::Exploratory)
        );
        assert!(two.relative_interval.is_none());
        let same = compare_paired(&baseline, &baseline, &settings).unwrap();
        assert_eq!(same.relative_change, 0.0);
        assert_eq!(same.decision, Decision::Inconclusive);

        let json = serde_json::to_value(&result).unwrap();
        assert_eq!(json["decision"], "improvement");
        assert_eq!(json["validity"], "valid");
        assert_eq!(json["polarity"], "lower_is_better");
        assert_eq!(json["log_ratio_interval"]["status"], "available");
        assert!(json["relative_interval"]["lower"].is_number());
        let reason = serde_json::to_value(two.log_ratio_interval).unwrap();
        assert_eq!(reason["reason"]["kind"], "too_few_observations");

        let bad = CompareSettings {
            practical_threshold: 1.0,
            ..settings
        };
        assert!(matches!(
            compare_paired(&baseline, &faster, &bad),
            Err(StatsError::InvalidThreshold(_))
        ));
    }
}
