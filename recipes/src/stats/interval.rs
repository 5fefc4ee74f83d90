//! The interval results of the bootstrap: bounds, or the reason there are
//! none, serialized with a `status` tag so consumers branch on one field.

use serde::{Deserialize, Serialize};

/// Why valid input still has no interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum UnavailableReason {
    /// Fewer than [`MIN_OBSERVATIONS`](super::bootstrap::MIN_OBSERVATIONS) observations (or pairs).
    TooFewObservations { observed: usize, required: usize },
    /// Every observation is equal: resampling cannot show any uncertainty.
    NoVariation,
    /// The estimate lies outside the bootstrap distribution (`z0` infinite).
    DegenerateBiasCorrection,
    /// `1 - a (z0 + z) <= 0`: the acceleration is too large for the formula.
    DegenerateAcceleration,
}

/// Lower and upper bounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub lower: f64,
    pub upper: f64,
}

/// The percentile interval: bootstrap quantiles at `alpha/2`, `1 - alpha/2`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum PercentileInterval {
    Available { lower: f64, upper: f64 },
    Unavailable { reason: UnavailableReason },
}

/// The BCa interval and the quantities that produced it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum BcaInterval {
    Available {
        lower: f64,
        upper: f64,
        /// `z0`.
        bias_correction: f64,
        /// `a`.
        acceleration: f64,
        /// Every leave-one-out median was equal (ties at the middle), so
        /// `a = 0/0`; it is taken as 0, which makes this the bias-corrected
        /// (BC) percentile interval.
        jackknife_degenerate: bool,
        /// The bootstrap quantile levels the bounds were read at.
        lower_level: f64,
        upper_level: f64,
    },
    Unavailable {
        reason: UnavailableReason,
    },
}

impl BcaInterval {
    /// The bounds, when available.
    pub fn bounds(&self) -> Option<Interval> {
        match *self {
            BcaInterval::Available { lower, upper, .. } => Some(Interval { lower, upper }),
            BcaInterval::Unavailable { .. } => None,
        }
    }
}

impl PercentileInterval {
    /// The bounds, when available.
    pub fn bounds(&self) -> Option<Interval> {
        match *self {
            PercentileInterval::Available { lower, upper } => Some(Interval { lower, upper }),
            PercentileInterval::Unavailable { .. } => None,
        }
    }
}
