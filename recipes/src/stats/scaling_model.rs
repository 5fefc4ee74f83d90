//! The candidate growth models of a scaling fit and one model's fitted
//! parameters: what `scaling_fit` computes and `scaling` ranks.

use serde::{Deserialize, Serialize};

/// One candidate model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScalingModel {
    /// `y = a`
    Constant,
    /// `y = a + b ln n`
    LogN,
    /// `y = a + b n`
    N,
    /// `y = a + b n ln n`
    NLogN,
    /// `y = a + b n²`
    NSquared,
    /// `y = a n^k`
    PowerLaw,
}

impl ScalingModel {
    pub const ALL: [ScalingModel; 6] = [
        ScalingModel::Constant,
        ScalingModel::LogN,
        ScalingModel::N,
        ScalingModel::NLogN,
        ScalingModel::NSquared,
        ScalingModel::PowerLaw,
    ];

    /// Fitted parameters including the residual variance.
    pub fn parameter_count(self) -> usize {
        match self {
            ScalingModel::Constant => 2,
            _ => 3,
        }
    }

    /// `g(n)` of the `a + b g(n)` models.
    pub(super) fn growth(self, n: f64) -> Option<f64> {
        match self {
            ScalingModel::LogN => Some(n.ln()),
            ScalingModel::N => Some(n),
            ScalingModel::NLogN => Some(n * n.ln()),
            ScalingModel::NSquared => Some(n * n),
            ScalingModel::Constant | ScalingModel::PowerLaw => None,
        }
    }

    /// The power-law exponent this model's curve is a special case of.
    pub(super) fn power_law_exponent(self) -> Option<f64> {
        match self {
            ScalingModel::Constant => Some(0.0),
            ScalingModel::N => Some(1.0),
            ScalingModel::NSquared => Some(2.0),
            _ => None,
        }
    }
}

/// One model's fit: `a` always, `b` for `a + b g(n)`, `k` for `a n^k`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelFit {
    pub model: ScalingModel,
    pub a: f64,
    pub b: Option<f64>,
    pub k: Option<f64>,
    /// Parameters AICc counts (including the residual variance).
    pub parameters: usize,
    /// Root mean square of `ln y - ln f(n)`: the typical relative error.
    pub log_residual_rms: f64,
    pub aicc: f64,
    /// `aicc - best aicc` (0 for the best model).
    pub delta_aicc: f64,
    /// `b` was held at 0 (the data fall where the model would need `b < 0`).
    pub at_bound: bool,
}
