//! What a scaling fit says about its own design: the share of the time
//! that is fixed cost at each size, the sizes that would pin the growth
//! exponent down, and the one measurement that separates two rival models.
//!
//! Sizes for a width: the offset power law's Fisher information. With
//! `ln f = ln(a + b n^k)`, the Jacobian rows are `(1/f, n^k/f, b n^k ln n / f)`
//! and `cov = s² (JᵀJ)⁻¹` with `s²` the fit's residual variance; the
//! doubling ladder extended past the largest size (same runs per size) is
//! grown until `t · se(k)` reaches the stated half-width.
//!
//! Separation: the first size past the measured range (doublings up to
//! 64×), else below it, where the two models' predictions differ by four
//! standard errors of a mean of that many runs, `4 s / sqrt(runs)` on the
//! log scale.

use serde::{Deserialize, Serialize};

use super::scaling_model::ModelFit;
use super::special::student_t_quantile;

/// Above this share of fixed cost at the smallest size the exponent is
/// poorly determined there.
pub const FIXED_COST_SHARE_LIMIT: f64 = 0.25;
/// The half-width of the interval on `k` the advice aims for.
pub const TARGET_HALF_WIDTH: f64 = 0.1;
/// How far past the largest size the advice looks (2^10).
const MAX_DOUBLINGS: i32 = 10;

/// The fixed cost's share of the fitted time at one size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SizeShare {
    pub n: f64,
    pub share: f64,
}

/// Sizes that would bring the interval on `k` to `±target_half_width`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizesForWidth {
    pub target_half_width: f64,
    /// The half-width the measured sizes give (same formula).
    pub current_half_width: f64,
    /// The ladder: the measured sizes, then doublings up to `max_n`.
    pub sizes: Vec<f64>,
    pub max_n: f64,
    pub runs_per_size: usize,
}

/// The measurement that tells two models apart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeparatingExperiment {
    pub n: f64,
    pub runs: usize,
    pub predictions: Vec<(super::ScalingModel, f64)>,
    /// `|ln f1 - ln f2|` in units of the log-scale noise of a mean of `runs`.
    pub separation_sigmas: f64,
}

/// `a / (a + b n^k)` at each size.
pub fn fixed_cost_shares(a: f64, b: f64, k: f64, sizes: &[f64]) -> Vec<SizeShare> {
    sizes
        .iter()
        .map(|&n| SizeShare {
            n,
            share: a / (a + b * n.powf(k)),
        })
        .collect()
}

/// `t · se(k)` of the offset power law for `sizes` measured `runs` times.
fn half_width(a: f64, b: f64, k: f64, s2: f64, sizes: &[f64], runs: usize, confidence: f64) -> f64 {
    let mut m = [[0.0_f64; 3]; 3];
    for &n in sizes {
        let g = n.powf(k);
        let f = a + b * g;
        let row = [1.0 / f, g / f, b * g * n.ln() / f];
        for i in 0..3 {
            for j in 0..3 {
                m[i][j] += runs as f64 * row[i] * row[j];
            }
        }
    }
    let minor =
        |r0: usize, r1: usize, c0: usize, c1: usize| m[r0][c0] * m[r1][c1] - m[r0][c1] * m[r1][c0];
    let det =
        m[0][0] * minor(1, 2, 1, 2) - m[0][1] * minor(1, 2, 0, 2) + m[0][2] * minor(1, 2, 0, 1);
    // (JᵀJ)⁻¹ at (k, k): the cofactor of the a-b block over the determinant.
    let kk = minor(0, 1, 0, 1) / det;
    let points = sizes.len() * runs;
    if !(kk.is_finite() && kk > 0.0 && points > 3) {
        return f64::INFINITY;
    }
    let t = student_t_quantile(0.5 + confidence / 2.0, (points - 3) as f64);
    t * (s2 * kk).sqrt()
}

/// The doubling ladder that reaches [`TARGET_HALF_WIDTH`], `None` when the
/// measured sizes already do (or `b` is 0: nothing grows).
#[allow(clippy::too_many_arguments)]
pub fn sizes_for_width(
    a: f64,
    b: f64,
    k: f64,
    s2: f64,
    sizes: &[f64],
    runs: usize,
    confidence: f64,
) -> Option<SizesForWidth> {
    if b <= 0.0 || sizes.is_empty() || runs == 0 {
        return None;
    }
    let current = half_width(a, b, k, s2, sizes, runs, confidence);
    if current <= TARGET_HALF_WIDTH {
        return None;
    }
    let max = sizes.iter().fold(0.0_f64, |m, &v| m.max(v));
    let mut ladder = sizes.to_vec();
    for doubling in 1..=MAX_DOUBLINGS {
        ladder.push(max * 2f64.powi(doubling));
        if half_width(a, b, k, s2, &ladder, runs, confidence) <= TARGET_HALF_WIDTH {
            return Some(SizesForWidth {
                target_half_width: TARGET_HALF_WIDTH,
                current_half_width: current,
                max_n: max * 2f64.powi(doubling),
                sizes: ladder,
                runs_per_size: runs,
            });
        }
    }
    None
}

/// The first size — doublings past the largest measured size up to 64×,
/// then a half and a quarter of the smallest — where `best` and `rival`
/// differ by 4 noise units of a mean of `runs`.
pub fn separating_experiment(
    best: &ModelFit,
    rival: &ModelFit,
    sigma: f64,
    runs: usize,
    min_n: f64,
    max_n: f64,
) -> Option<SeparatingExperiment> {
    if sigma <= 0.0 || runs == 0 {
        return None;
    }
    let noise = sigma / (runs as f64).sqrt();
    // Past the measured range first (where growth shows), then below it.
    let candidates = (1..=6)
        .map(|i| max_n * 2f64.powi(i))
        .chain((1..=2).map(|i| min_n / 2f64.powi(i)))
        .filter(|&n| n >= 1.0);
    candidates.into_iter().find_map(|n| {
        let (p, q) = (best.predict(n), rival.predict(n));
        if !(p > 0.0 && q > 0.0) {
            return None;
        }
        let sigmas = (p.ln() - q.ln()).abs() / noise;
        (sigmas >= 4.0).then(|| SeparatingExperiment {
            n,
            runs,
            predictions: vec![(best.model, p), (rival.model, q)],
            separation_sigmas: sigmas,
        })
    })
}
