//! The sample-level comparison `analyze compare` adds when fewer than three
//! block pairs exist: a two-sample bootstrap of `ln(median(candidate) /
//! median(baseline))` over the raw samples of each side, with the percentile
//! interval and the same decision rule as the paired comparison.
//!
//! Always exploratory: samples within one run share that run's conditions,
//! so this interval ignores run-to-run variation and is narrower than the
//! truth whenever runs differ. It describes the runs measured, not the
//! variants.

use serde::{Deserialize, Serialize};

use super::bootstrap::{BootstrapSettings, Interval, bootstrap_medians};
use super::compare::{Decision, Polarity, Validity, decide};
use super::summary::{median_of_buffer, quantile_of_sorted};
use super::{StatsError, check_confidence, check_values};

/// Added to the seed for the candidate's resamples, so the two sides draw
/// independent streams from one caller seed.
const CANDIDATE_STREAM: u64 = 0x9E37_79B9_7F4A_7C15;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TwoSampleComparison {
    pub baseline_samples: usize,
    pub candidate_samples: usize,
    pub log_ratio: f64,
    pub relative_change: f64,
    /// Percentile interval of the relative change.
    pub relative_interval: Interval,
    pub confidence_level: f64,
    pub resamples: usize,
    pub seed: u64,
    pub decision: Decision,
    pub validity: Validity,
}

/// Compares the medians of two independent samples of positive values.
pub fn compare_two_samples(
    baseline: &[f64],
    candidate: &[f64],
    polarity: Polarity,
    threshold: f64,
    settings: &BootstrapSettings,
) -> Result<TwoSampleComparison, StatsError> {
    check_values("baseline samples", baseline, true)?;
    check_values("candidate samples", candidate, true)?;
    check_confidence(settings.confidence_level)?;
    if !(0.0..1.0).contains(&threshold) {
        return Err(StatsError::InvalidThreshold(threshold));
    }
    if settings.resamples < super::bootstrap::MIN_RESAMPLES {
        return Err(StatsError::TooFewResamples {
            minimum: super::bootstrap::MIN_RESAMPLES,
        });
    }
    let log_ratio =
        (median_of_buffer(&mut candidate.to_vec()) / median_of_buffer(&mut baseline.to_vec())).ln();
    let base = bootstrap_medians(baseline, settings.resamples, settings.seed);
    let cand = bootstrap_medians(
        candidate,
        settings.resamples,
        settings.seed.wrapping_add(CANDIDATE_STREAM),
    );
    let mut ratios: Vec<f64> = base.iter().zip(&cand).map(|(b, c)| (c / b).ln()).collect();
    ratios.sort_unstable_by(f64::total_cmp);
    let alpha = (1.0 - settings.confidence_level) / 2.0;
    let relative_interval = Interval {
        lower: quantile_of_sorted(&ratios, alpha).exp_m1(),
        upper: quantile_of_sorted(&ratios, 1.0 - alpha).exp_m1(),
    };
    Ok(TwoSampleComparison {
        baseline_samples: baseline.len(),
        candidate_samples: candidate.len(),
        log_ratio,
        relative_change: log_ratio.exp_m1(),
        relative_interval,
        confidence_level: settings.confidence_level,
        resamples: settings.resamples,
        seed: settings.seed,
        decision: decide(relative_interval, polarity, threshold),
        validity: Validity::Exploratory,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> BootstrapSettings {
        BootstrapSettings {
            confidence_level: 0.95,
            resamples: 2_000,
            seed: 5,
        }
    }

    #[test]
    fn a_clear_shift_is_seen_and_labelled_exploratory() {
        let base: Vec<f64> = (0..40).map(|i| 100.0 + (i % 7) as f64).collect();
        let fast: Vec<f64> = base.iter().map(|v| v * 0.8).collect();
        let r =
            compare_two_samples(&base, &fast, Polarity::LowerIsBetter, 0.02, &settings()).unwrap();
        assert_eq!(r.decision, Decision::Improvement);
        assert_eq!(r.validity, Validity::Exploratory);
        assert!((r.relative_change + 0.2).abs() < 1e-12, "{r:?}");
        assert!(r.relative_interval.lower <= -0.2 && -0.2 <= r.relative_interval.upper);
        let again =
            compare_two_samples(&base, &fast, Polarity::LowerIsBetter, 0.02, &settings()).unwrap();
        assert_eq!(r, again);
        assert!(
            compare_two_samples(&base, &[0.0], Polarity::LowerIsBetter, 0.02, &settings()).is_err()
        );
    }
}
