//! Least-squares fits of the scaling models on the log scale: every model is
//! fitted by minimizing `sum (ln y_i - ln f(n_i))^2`, so their residual sums
//! are likelihoods of the same data and AICc compares them fairly.

use super::scaling_model::{ModelFit, ScalingModel};

/// The residual variance floor on the log scale (relative error 1e-9,
/// beyond any timer): keeps a perfect fit's likelihood finite.
pub const RESIDUAL_VARIANCE_FLOOR: f64 = 1e-18;

/// One model's fitted parameters and log-scale residual sum of squares.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LogScaleFit {
    pub a: f64,
    pub b: Option<f64>,
    pub k: Option<f64>,
    pub rss: f64,
    /// The slope wanted to be negative and was held at 0.
    pub at_bound: bool,
}

/// The power law's slope on the log-log scale with its standard error.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PowerLawFit {
    pub fit: LogScaleFit,
    pub standard_error: f64,
}

/// `y = a`: `ln a` is the mean of `ln y` (a is the geometric mean).
pub(crate) fn fit_constant(ln_y: &[f64]) -> LogScaleFit {
    let mean = ln_y.iter().sum::<f64>() / ln_y.len() as f64;
    LogScaleFit {
        a: mean.exp(),
        b: None,
        k: None,
        rss: ln_y.iter().map(|z| (z - mean).powi(2)).sum(),
        at_bound: false,
    }
}

/// `y = a n^k`: ordinary least squares of `ln y` on `ln n`; the slope's
/// standard error is `sqrt(rss / (m - 2) / Sxx)` (the textbook OLS formula,
/// what SciPy's `linregress` reports). `None` when all `n` are equal.
pub(crate) fn fit_power_law(ln_n: &[f64], ln_y: &[f64]) -> Option<PowerLawFit> {
    let m = ln_n.len() as f64;
    let x_mean = ln_n.iter().sum::<f64>() / m;
    let z_mean = ln_y.iter().sum::<f64>() / m;
    let (mut sxx, mut sxz) = (0.0, 0.0);
    for (x, z) in ln_n.iter().zip(ln_y) {
        sxx += (x - x_mean) * (x - x_mean);
        sxz += (x - x_mean) * (z - z_mean);
    }
    if sxx <= 0.0 || m < 3.0 {
        return None;
    }
    let k = sxz / sxx;
    let ln_a = z_mean - k * x_mean;
    let rss: f64 = ln_n
        .iter()
        .zip(ln_y)
        .map(|(x, z)| (z - ln_a - k * x).powi(2))
        .sum();
    Some(PowerLawFit {
        fit: LogScaleFit {
            a: ln_a.exp(),
            b: None,
            k: Some(k),
            rss,
            at_bound: false,
        },
        standard_error: (rss / (m - 2.0) / sxx).sqrt(),
    })
}

/// `y = a + b g(n)` with `a >= 0` and `b >= 0`, minimizing the log-scale
/// residuals. The fixed cost `a` is held at 0 or above because a measured
/// quantity is never below zero at small sizes: with `a < 0`, `a + b n`
/// bends upward over a narrow range of sizes and mimics `n²` (a quadratic
/// workload fitted "n log n or n" under load before this bound).
///
/// Start: relative-error weighted least squares (weights `1/y^2`, linear in
/// `a, b` and equal to the log-scale objective to first order). Then
/// projected Gauss–Newton on `(a, c = b max|g|)` with step halving, keeping
/// every `f(n_i) > 0` and `b >= 0`. `None` when `g` takes a single value.
pub(crate) fn fit_linear_family(g: &[f64], y: &[f64], ln_y: &[f64]) -> Option<LogScaleFit> {
    let scale = g.iter().fold(0.0_f64, |s, v| s.max(v.abs()));
    if scale <= 0.0 || !scale.is_finite() {
        return None;
    }
    let h: Vec<f64> = g.iter().map(|v| v / scale).collect();
    let (mut a, mut c) = weighted_start(&h, y)?;
    let floor = 0.0;
    let feasible = |a: f64, c: f64| a >= floor && h.iter().all(|hi| a + c * hi > 0.0);
    let rss_of = |a: f64, c: f64| -> f64 {
        h.iter()
            .zip(ln_y)
            .map(|(hi, z)| (z - (a + c * hi).ln()).powi(2))
            .sum()
    };
    if a < 0.0 && h.iter().all(|&hi| hi > 0.0) {
        // Start on the bound: `c h` through the geometric mean of y / h.
        let log_scale = h.iter().zip(ln_y).map(|(hi, z)| z - hi.ln()).sum::<f64>() / h.len() as f64;
        a = 0.0;
        c = log_scale.exp();
    }
    if c < 0.0 || !feasible(a, c) {
        a = fit_constant(ln_y).a;
        c = 0.0;
    }
    let mut rss = rss_of(a, c);
    for _ in 0..200 {
        // Normal equations of the linearized residuals r_i = ln y_i - ln f_i,
        // with Jacobian rows (-1/f_i, -h_i/f_i).
        let (mut jaa, mut jac, mut jcc, mut ga, mut gc) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for (hi, z) in h.iter().zip(ln_y) {
            let f = a + c * hi;
            let r = z - f.ln();
            let (da, dc) = (-1.0 / f, -hi / f);
            jaa += da * da;
            jac += da * dc;
            jcc += dc * dc;
            ga += da * r;
            gc += dc * r;
        }
        let det = jaa * jcc - jac * jac;
        let (mut step_a, mut step_c) = if det > 0.0 && det.is_finite() {
            ((-jcc * ga + jac * gc) / det, (jac * ga - jaa * gc) / det)
        } else {
            (-ga / jaa, 0.0)
        };
        if c == 0.0 && step_c < 0.0 {
            // On the bound and pushing past it: optimize `a` alone.
            step_a = -ga / jaa;
            step_c = 0.0;
        } else if a == floor && step_a < 0.0 {
            // No fixed cost, and the data want less: optimize `c` alone.
            step_a = 0.0;
            step_c = -gc / jcc;
        }
        let mut accepted = None;
        let mut lambda = 1.0;
        for _ in 0..60 {
            let (na, nc) = (
                (a + lambda * step_a).max(floor),
                (c + lambda * step_c).max(0.0),
            );
            if feasible(na, nc) {
                let new_rss = rss_of(na, nc);
                if new_rss < rss {
                    accepted = Some((na, nc, new_rss));
                    break;
                }
            }
            lambda /= 2.0;
        }
        let Some((na, nc, new_rss)) = accepted else {
            break;
        };
        let gain = rss - new_rss;
        (a, c, rss) = (na, nc, new_rss);
        if gain <= 1e-15 * rss.max(1e-300) {
            break;
        }
    }
    Some(LogScaleFit {
        a,
        b: Some(c / scale),
        k: None,
        rss,
        at_bound: c == 0.0,
    })
}

/// AICc of a log-scale fit: `m (ln(2 pi s2) + 1) + 2p + 2p(p+1)/(m-p-1)`
/// with `s2 = max(rss/m, floor)` (the Gaussian maximum likelihood).
pub(crate) fn model_fit(model: ScalingModel, fit: LogScaleFit, m: usize) -> ModelFit {
    let p = model.parameter_count();
    let mf = m as f64;
    let variance = (fit.rss / mf).max(RESIDUAL_VARIANCE_FLOOR);
    let pf = p as f64;
    let aicc = mf * ((2.0 * std::f64::consts::PI * variance).ln() + 1.0)
        + 2.0 * pf
        + 2.0 * pf * (pf + 1.0) / (mf - pf - 1.0);
    ModelFit {
        model,
        a: fit.a,
        b: fit.b,
        k: fit.k,
        parameters: p,
        log_residual_rms: (fit.rss / mf).sqrt(),
        aicc,
        delta_aicc: 0.0,
        at_bound: fit.at_bound,
    }
}

/// Weighted least squares of `y` on `(1, h)` with weights `1/y^2`.
fn weighted_start(h: &[f64], y: &[f64]) -> Option<(f64, f64)> {
    let weights: Vec<f64> = y.iter().map(|v| 1.0 / (v * v)).collect();
    let total: f64 = weights.iter().sum();
    let h_mean = weights.iter().zip(h).map(|(w, x)| w * x).sum::<f64>() / total;
    let y_mean = weights.iter().zip(y).map(|(w, v)| w * v).sum::<f64>() / total;
    let (mut shh, mut shy) = (0.0, 0.0);
    for ((w, x), v) in weights.iter().zip(h).zip(y) {
        shh += w * (x - h_mean) * (x - h_mean);
        shy += w * (x - h_mean) * (v - y_mean);
    }
    if shh <= 0.0 {
        return None;
    }
    let c = shy / shh;
    Some((y_mean - c * h_mean, c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_data_is_recovered() {
        let n = [10.0, 20.0, 40.0, 80.0, 160.0];
        let y: Vec<f64> = n.iter().map(|v| 3.0 + 0.5 * v).collect();
        let ln_y: Vec<f64> = y.iter().map(|v| v.ln()).collect();
        let fit = fit_linear_family(&n, &y, &ln_y).unwrap();
        assert!(
            (fit.a - 3.0).abs() < 1e-9 && (fit.b.unwrap() - 0.5).abs() < 1e-10,
            "{fit:?}"
        );
        assert!(fit.rss < 1e-20 && !fit.at_bound);

        let ln_n: Vec<f64> = n.iter().map(|v| v.ln()).collect();
        let power: Vec<f64> = n.iter().map(|v| 2.0 * v.powf(1.5)).collect();
        let ln_power: Vec<f64> = power.iter().map(|v| v.ln()).collect();
        let pl = fit_power_law(&ln_n, &ln_power).unwrap();
        assert!((pl.fit.k.unwrap() - 1.5).abs() < 1e-12 && (pl.fit.a - 2.0).abs() < 1e-10);
    }

    #[test]
    fn a_falling_series_holds_the_slope_at_zero() {
        let g = [1.0, 2.0, 3.0, 4.0, 5.0];
        let y = [10.0_f64, 9.0, 8.5, 8.0, 7.0];
        let ln_y: Vec<f64> = y.iter().map(|v| v.ln()).collect();
        let fit = fit_linear_family(&g, &y, &ln_y).unwrap();
        let constant = fit_constant(&ln_y);
        assert!(fit.at_bound && fit.b == Some(0.0), "{fit:?}");
        assert!((fit.rss - constant.rss).abs() < 1e-12 * constant.rss);
        assert!(fit_linear_family(&[2.0; 5], &y, &ln_y).is_none());
    }
}
