//! The statistics behind `analyze scaling` and `analyze compare`: robust
//! summaries, seeded bootstrap intervals (BCa), the paired comparison
//! decision, scaling-model fits ranked by AICc, and Spearman ρ with
//! Benjamini–Hochberg adjustment.
//!
//! Pure functions over slices of `f64`: no I/O, no clocks, no global state.
//! Every random choice comes from [`rng::Xoshiro256StarStar`] seeded by the
//! caller, so the same inputs and seed give the same numbers everywhere.
//! Definitions, formulas and measured properties: `docs/statistics.md`.

pub mod bootstrap;
pub mod compare;
pub mod interval;
pub mod offset_power_law;
pub mod rank;
pub mod rng;
pub mod scaling;
pub mod scaling_advice;
mod scaling_fit;
mod scaling_model;
mod scaling_notes;
pub mod special;
pub mod summary;
pub mod two_sample;

pub use bootstrap::{
    BcaInterval, BootstrapSettings, MedianBootstrap, PercentileInterval, UnavailableReason,
};
pub use compare::{CompareSettings, Decision, PairedComparison, Polarity, Validity};
pub use rank::{Correlation, benjamini_hochberg, spearman};
pub use scaling::{
    GrowthExponent, OffsetPowerLawSummary, ScalingConclusion, ScalingFit, ScalingModel,
    ScalingPoint, fit_scaling,
};
pub use summary::{RobustSummary, mad_normal, mad_raw, median, robust_summary};
pub use two_sample::{TwoSampleComparison, compare_two_samples};

/// Why a statistics call rejected its input (the engine reports these as
/// `INVALID_ARGUMENTS`). Valid input that merely cannot support an interval
/// is not an error: see [`UnavailableReason`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("{what}: no values")]
    Empty { what: &'static str },
    #[error("{what}: value {index} is not finite")]
    NonFinite { what: &'static str, index: usize },
    #[error("{what}: value {index} is not positive")]
    NonPositive { what: &'static str, index: usize },
    #[error("{what}: lengths differ ({left} vs {right})")]
    LengthMismatch {
        what: &'static str,
        left: usize,
        right: usize,
    },
    #[error("confidence level {0} is not strictly between 0 and 1")]
    InvalidConfidenceLevel(f64),
    #[error("practical threshold {0} is not in [0, 1)")]
    InvalidThreshold(f64),
    #[error("p-value {value} at {index} is not in [0, 1]")]
    InvalidProbability { index: usize, value: f64 },
    #[error("the number of bootstrap resamples must be at least {minimum}")]
    TooFewResamples { minimum: usize },
    #[error("{what}: {got} given, at least {needed} needed")]
    TooFewPoints {
        what: &'static str,
        needed: usize,
        got: usize,
    },
}

/// Checks that every value is finite (and, with `positive`, above zero).
pub(crate) fn check_values(
    what: &'static str,
    values: &[f64],
    positive: bool,
) -> Result<(), StatsError> {
    if values.is_empty() {
        return Err(StatsError::Empty { what });
    }
    for (index, &v) in values.iter().enumerate() {
        if !v.is_finite() {
            return Err(StatsError::NonFinite { what, index });
        }
        if positive && v <= 0.0 {
            return Err(StatsError::NonPositive { what, index });
        }
    }
    Ok(())
}

/// Checks that paired slices have the same length.
pub(crate) fn check_same_length(
    what: &'static str,
    left: &[f64],
    right: &[f64],
) -> Result<(), StatsError> {
    if left.len() == right.len() {
        Ok(())
    } else {
        Err(StatsError::LengthMismatch {
            what,
            left: left.len(),
            right: right.len(),
        })
    }
}

/// Checks a confidence level (strictly between 0 and 1).
pub(crate) fn check_confidence(level: f64) -> Result<(), StatsError> {
    if level > 0.0 && level < 1.0 {
        Ok(())
    } else {
        Err(StatsError::InvalidConfidenceLevel(level))
    }
}
