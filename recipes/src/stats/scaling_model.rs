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
    /// `y = a + b n^k` with `a >= 0`: a fixed cost plus a growing part.
    OffsetPowerLaw,
}

impl ScalingModel {
    pub const ALL: [ScalingModel; 7] = [
        ScalingModel::Constant,
        ScalingModel::LogN,
        ScalingModel::N,
        ScalingModel::NLogN,
        ScalingModel::NSquared,
        ScalingModel::PowerLaw,
        ScalingModel::OffsetPowerLaw,
    ];

    /// The model as a person writes it (`n²`, `offset power law`).
    pub fn label(self) -> &'static str {
        match self {
            ScalingModel::Constant => "constant",
            ScalingModel::LogN => "log n",
            ScalingModel::N => "n",
            ScalingModel::NLogN => "n log n",
            ScalingModel::NSquared => "n²",
            ScalingModel::PowerLaw => "power law",
            ScalingModel::OffsetPowerLaw => "offset power law",
        }
    }

    /// Fitted parameters including the residual variance.
    pub fn parameter_count(self) -> usize {
        match self {
            ScalingModel::Constant => 2,
            ScalingModel::OffsetPowerLaw => 4,
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
            ScalingModel::Constant | ScalingModel::PowerLaw | ScalingModel::OffsetPowerLaw => None,
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

/// One model's fit: `a` always, `b` for `a + b g(n)`, `k` for `a n^k`,
/// `b` and `k` for `a + b n^k`.
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

impl ModelFit {
    /// The fitted curve at `n`.
    pub fn predict(&self, n: f64) -> f64 {
        let b = self.b.unwrap_or_default();
        match self.model {
            ScalingModel::Constant => self.a,
            ScalingModel::PowerLaw => self.a * n.powf(self.k.unwrap_or_default()),
            ScalingModel::OffsetPowerLaw => self.a + b * n.powf(self.k.unwrap_or_default()),
            model => self.a + b * model.growth(n).unwrap_or_default(),
        }
    }
}
