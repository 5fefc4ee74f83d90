//! The offset power law `y = a + b·n^k` (`a >= 0`, `b >= 0`): a fixed cost
//! (start-up, allocation, the interpreter) plus a growing part. Without the
//! offset, any fixed cost bends a fitted exponent down and its interval
//! does not know it; with it, `k` is the growth of the part that grows.
//!
//! Fit: for each `k`, `a` and `b` are a bounded two-parameter log-scale fit
//! (`scaling_fit::fit_linear_family`), so the residual sum `rss(k)`
//! is a profile; its minimum over `k` in [`K_MIN`, `K_MAX`] (a 0.05 grid,
//! then golden-section refinement) is the estimate. Interval: the profile
//! likelihood, calibrated for few points like the F test of nested least
//! squares — `k` is in when `rss(k) <= rss_min (1 + F(1, m-3) / (m-3))`,
//! `F(1, d) = t(d)²`. An end that reaches the search range is reported as
//! open (the data do not bound it there).

use serde::{Deserialize, Serialize};

use super::scaling_fit::{LogScaleFit, RESIDUAL_VARIANCE_FLOOR, fit_linear_family};
use super::special::student_t_quantile;

/// The exponents searched: below 0.1 the growing part is a second constant.
pub const K_MIN: f64 = 0.1;
pub const K_MAX: f64 = 4.0;
const GRID_STEP: f64 = 0.05;

/// A profile-likelihood interval on `k`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProfileInterval {
    pub estimate: f64,
    pub lower: f64,
    pub upper: f64,
    /// `false`: the data do not bound `k` from below inside the search
    /// range (`lower` is [`K_MIN`]).
    pub lower_bounded: bool,
    /// `false`: not bounded from above (`upper` is [`K_MAX`]).
    pub upper_bounded: bool,
    pub confidence_level: f64,
}

/// The fit and its interval on `k`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OffsetPowerLawFit {
    pub fit: LogScaleFit,
    pub interval: ProfileInterval,
}

fn profile(n: &[f64], y: &[f64], ln_y: &[f64], k: f64) -> Option<LogScaleFit> {
    let g: Vec<f64> = n.iter().map(|v| v.powf(k)).collect();
    let mut fit = fit_linear_family(&g, y, ln_y)?;
    fit.k = Some(k);
    Some(fit)
}

/// Fits `a + b n^k`; `None` with fewer than 6 points (AICc of four
/// parameters needs `m > 5`) or when no `k` gives a fit.
pub(crate) fn fit_offset_power_law(
    n: &[f64],
    y: &[f64],
    ln_y: &[f64],
    confidence_level: f64,
) -> Option<OffsetPowerLawFit> {
    let m = n.len();
    if m < 6 {
        return None;
    }
    let steps = ((K_MAX - K_MIN) / GRID_STEP).round() as usize;
    let grid: Vec<(f64, f64)> = (0..=steps)
        .filter_map(|i| {
            let k = K_MIN + GRID_STEP * i as f64;
            profile(n, y, ln_y, k).map(|f| (k, f.rss))
        })
        .collect();
    let best = grid
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.1.total_cmp(&b.1.1))
        .map(|(i, _)| i)?;
    let rss_at = |k: f64| profile(n, y, ln_y, k).map_or(f64::INFINITY, |f| f.rss);
    // Golden section between the grid neighbours of the minimum.
    let (mut lo, mut hi) = (
        grid[best.saturating_sub(1)].0,
        grid[(best + 1).min(grid.len() - 1)].0,
    );
    let ratio = (5f64.sqrt() - 1.0) / 2.0;
    let (mut x1, mut x2) = (hi - ratio * (hi - lo), lo + ratio * (hi - lo));
    let (mut f1, mut f2) = (rss_at(x1), rss_at(x2));
    while hi - lo > 1e-10 {
        if f1 <= f2 {
            (hi, x2, f2) = (x2, x1, f1);
            x1 = hi - ratio * (hi - lo);
            f1 = rss_at(x1);
        } else {
            (lo, x1, f1) = (x1, x2, f2);
            x2 = lo + ratio * (hi - lo);
            f2 = rss_at(x2);
        }
    }
    let mut k_hat = (lo + hi) / 2.0;
    let mut fit = profile(n, y, ln_y, k_hat)?;
    if grid[best].1 < fit.rss {
        k_hat = grid[best].0;
        fit = profile(n, y, ln_y, k_hat)?;
    }
    let df = (m - 3) as f64;
    let t = student_t_quantile(0.5 + confidence_level / 2.0, df);
    let floor = RESIDUAL_VARIANCE_FLOOR * m as f64;
    let threshold = fit.rss.max(floor) * (1.0 + t * t / df);
    let crossing = |inside: f64, outside: f64| {
        let (mut a, mut b) = (inside, outside);
        for _ in 0..50 {
            let mid = (a + b) / 2.0;
            if rss_at(mid) <= threshold {
                a = mid;
            } else {
                b = mid;
            }
        }
        (a + b) / 2.0
    };
    let below = grid
        .iter()
        .rev()
        .find(|(k, r)| *k < k_hat && *r > threshold);
    let above = grid.iter().find(|(k, r)| *k > k_hat && *r > threshold);
    let inner_below = |k_out: f64| {
        grid.iter()
            .find(|(k, _)| *k > k_out)
            .map_or(k_hat, |(k, _)| k.min(k_hat))
    };
    let inner_above = |k_out: f64| {
        grid.iter()
            .rev()
            .find(|(k, _)| *k < k_out)
            .map_or(k_hat, |(k, _)| k.max(k_hat))
    };
    let (lower, lower_bounded) = match below {
        Some(&(k_out, _)) => (crossing(inner_below(k_out), k_out), true),
        None => (K_MIN, false),
    };
    let (upper, upper_bounded) = match above {
        Some(&(k_out, _)) => (crossing(inner_above(k_out), k_out), true),
        None => (K_MAX, false),
    };
    Some(OffsetPowerLawFit {
        fit,
        interval: ProfileInterval {
            estimate: k_hat,
            lower,
            upper,
            lower_bounded,
            upper_bounded,
            confidence_level,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(n: &[f64], f: impl Fn(f64) -> f64) -> OffsetPowerLawFit {
        let y: Vec<f64> = n.iter().map(|&v| f(v)).collect();
        let ln_y: Vec<f64> = y.iter().map(|v| v.ln()).collect();
        fit_offset_power_law(n, &y, &ln_y, 0.95).unwrap()
    }

    #[test]
    fn exact_data_recovers_the_fixed_cost_and_the_exponent() {
        let n = [1000.0, 2000.0, 4000.0, 8000.0, 16000.0, 32000.0];
        let quadratic = fit(&n, |v| 0.2 + 1e-8 * v * v);
        assert!(
            (quadratic.interval.estimate - 2.0).abs() < 1e-4,
            "{quadratic:?}"
        );
        assert!((quadratic.fit.a - 0.2).abs() < 1e-4, "{quadratic:?}");
        let pure = fit(&n, |v| 3e-6 * v.powf(1.5));
        assert!((pure.interval.estimate - 1.5).abs() < 1e-4, "{pure:?}");
        assert!(pure.fit.a < 1e-9, "no fixed cost: {pure:?}");
        assert!(fit_offset_power_law(&n[..5], &[1.0; 5], &[0.0; 5], 0.95).is_none());
    }
}
