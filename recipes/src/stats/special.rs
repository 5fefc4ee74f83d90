//! Special functions the statistics need (normal and Student t distributions),
//! written here so results do not depend on a platform's libm beyond `exp`,
//! `ln`, `sqrt` and `tan`, and so every algorithm is named.
//!
//! Accuracy target: about 1e-14 relative in the ranges the statistics use;
//! `tests/tests/stats_oracle.rs` checks them against SciPy to 1e-9.

use std::f64::consts::PI;

/// `1/sqrt(pi)`.
const FRAC_1_SQRT_PI: f64 = 0.564_189_583_547_756_3;
/// Relative stopping tolerance of the series and continued fractions.
const SERIES_EPSILON: f64 = 1e-16;
/// Iteration cap of the series and continued fractions (never reached in the
/// ranges used; a cap keeps a bad argument from spinning).
const MAX_TERMS: usize = 1_000;
/// Below this magnitude a Lentz denominator is replaced (Lentz's trick).
const TINY: f64 = 1e-300;

/// The complementary error function `erfc(x) = 1 - erf(x)`.
///
/// For `|x| < 2.5`: `erf(x) = (2/sqrt(pi)) exp(-x^2) sum_{n>=0} 2^n x^(2n+1) / (1*3*...*(2n+1))`
/// (Abramowitz & Stegun 7.1.6; all terms positive, so no cancellation).
/// For `x >= 2.5`: the Laplace continued fraction
/// `erfc(x) = exp(-x^2)/sqrt(pi) * 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))`
/// (A&S 7.1.14), evaluated with the modified Lentz method (Thompson & Barnett 1986).
/// Negative `x` uses `erfc(-x) = 2 - erfc(x)`.
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x < 2.5 {
        return 1.0 - erf_series(x);
    }
    if x > 27.3 {
        return 0.0; // below the smallest subnormal
    }
    // Lentz: f = b0 + a1/(b1 + a2/(b2 + ...)), b_k = x, a_k = k/2.
    let mut f = x;
    let mut c = x;
    let mut d = 0.0;
    for k in 1..MAX_TERMS {
        let a = k as f64 / 2.0;
        d = x + a * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = x + a / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < SERIES_EPSILON {
            break;
        }
    }
    (-x * x).exp() * FRAC_1_SQRT_PI / f
}

/// `erf(x)` for `0 <= x < 2.5` by the positive-term series (A&S 7.1.6).
fn erf_series(x: f64) -> f64 {
    let two_x2 = 2.0 * x * x;
    let mut term = x;
    let mut sum = x;
    for n in 1..MAX_TERMS {
        term *= two_x2 / (2 * n + 1) as f64;
        sum += term;
        if term < sum * SERIES_EPSILON {
            break;
        }
    }
    2.0 * FRAC_1_SQRT_PI * (-x * x).exp() * sum
}

/// The standard normal CDF `Phi(x) = erfc(-x/sqrt(2))/2`.
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// The standard normal density.
pub fn normal_pdf(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * PI).sqrt()
}

/// The standard normal quantile `Phi^-1(p)`; `-inf` at 0, `+inf` at 1, NaN
/// outside `[0, 1]`.
///
/// Start: Abramowitz & Stegun 26.2.23 (rational approximation, |error| <
/// 4.5e-4), then Halley's method on [`normal_cdf`] (cubic convergence; the
/// refinement Acklam 2003 recommends), always in the lower tail so the CDF
/// is computed without cancellation.
pub fn normal_quantile(p: f64) -> f64 {
    if !(0.0..=1.0).contains(&p) || p.is_nan() {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    if p > 0.5 {
        // 1 - p is exact for p in [0.5, 1] (Sterbenz).
        return -normal_quantile(1.0 - p);
    }
    if p == 0.5 {
        return 0.0;
    }
    let t = (-2.0 * p.ln()).sqrt();
    let mut x = -(t
        - (2.515_517 + 0.802_853 * t + 0.010_328 * t * t)
            / (1.0 + 1.432_788 * t + 0.189_269 * t * t + 0.001_308 * t * t * t));
    for _ in 0..8 {
        let density = normal_pdf(x);
        if density == 0.0 {
            break;
        }
        let u = (normal_cdf(x) - p) / density;
        let step = u / (1.0 + 0.5 * x * u);
        x -= step;
        if step.abs() <= 1e-15 * x.abs().max(1e-300) {
            break;
        }
    }
    x
}

/// `ln Gamma(x)` for `x > 0`.
///
/// Stirling's series with Bernoulli-number terms up to `B14` (A&S 6.1.41),
/// applied at `z >= 15` (truncation error below 1e-17); smaller arguments are
/// shifted up with `Gamma(x) = Gamma(x + n) / (x (x+1) ... (x+n-1))`.
pub fn ln_gamma(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return f64::NAN;
    }
    let mut z = x;
    let mut shift = 1.0;
    while z < 15.0 {
        shift *= z;
        z += 1.0;
    }
    // B_{2k} / (2k (2k-1)) for k = 1..7.
    const STIRLING: [f64; 7] = [
        1.0 / 12.0,
        -1.0 / 360.0,
        1.0 / 1260.0,
        -1.0 / 1680.0,
        1.0 / 1188.0,
        -691.0 / 360_360.0,
        1.0 / 156.0,
    ];
    let inv = 1.0 / z;
    let inv2 = inv * inv;
    let mut power = inv;
    let mut series = 0.0;
    for coefficient in STIRLING {
        series += coefficient * power;
        power *= inv2;
    }
    (z - 0.5) * z.ln() - z + 0.5 * (2.0 * PI).ln() + series - shift.ln()
}

/// The regularized incomplete beta function `I_x(a, b)`, with `1 - x` passed
/// separately so callers that know it exactly avoid cancellation.
///
/// The continued fraction of A&S 26.5.8 (as arranged in Press et al.,
/// *Numerical Recipes*, 3rd ed., §6.4), evaluated with the modified Lentz
/// method; for `x > (a+1)/(a+b+2)` the symmetry `I_x(a,b) = 1 - I_{1-x}(b,a)`
/// keeps the fraction in its fast-converging region.
pub fn regularized_incomplete_beta(a: f64, b: f64, x: f64, one_minus_x: f64) -> f64 {
    if x.is_nan() || a <= 0.0 || b <= 0.0 || !(0.0..=1.0).contains(&x) {
        return f64::NAN;
    }
    if x == 0.0 {
        return 0.0;
    }
    if one_minus_x == 0.0 {
        return 1.0;
    }
    let ln_front = a * x.ln() + b * one_minus_x.ln() + ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b);
    let front = ln_front.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_continued_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_continued_fraction(b, a, one_minus_x) / b
    }
}

/// `1/(1 + d1/(1 + d2/(1 + ...)))` with
/// `d_{2m+1} = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1))` and
/// `d_{2m} = m (b-m) x / ((a+2m-1)(a+2m))`.
fn beta_continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0));
    let mut f = d;
    for m in 1..MAX_TERMS {
        let m = m as f64;
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 / guard(1.0 + even * d);
        c = guard(1.0 + even / c);
        f *= d * c;
        let odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 / guard(1.0 + odd * d);
        c = guard(1.0 + odd / c);
        let delta = d * c;
        f *= delta;
        if (delta - 1.0).abs() < SERIES_EPSILON {
            break;
        }
    }
    f
}

/// Two-sided tail `P(|T| >= |t|)` of Student's t with `df > 0` degrees of
/// freedom: `I_{df/(df+t^2)}(df/2, 1/2)` (A&S 26.7.1), computed directly so
/// small p-values keep their relative accuracy.
pub fn student_t_two_sided_p(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if t.is_infinite() {
        return 0.0;
    }
    let t2 = t * t;
    regularized_incomplete_beta(0.5 * df, 0.5, df / (df + t2), t2 / (df + t2))
}

/// Student's t CDF with `df > 0` degrees of freedom.
pub fn student_t_cdf(t: f64, df: f64) -> f64 {
    let tail = 0.5 * student_t_two_sided_p(t, df);
    if t > 0.0 { 1.0 - tail } else { tail }
}

/// Student's t density.
fn student_t_pdf(t: f64, df: f64) -> f64 {
    let ln_norm = ln_gamma(0.5 * (df + 1.0)) - ln_gamma(0.5 * df) - 0.5 * (df * PI).ln();
    (ln_norm - 0.5 * (df + 1.0) * (t * t / df).ln_1p()).exp()
}

/// Student's t quantile with `df > 0` degrees of freedom; `±inf` at 0 and 1.
///
/// Start: the closed forms for 1 and 2 degrees of freedom, else the
/// Cornish–Fisher expansion around the normal quantile (A&S 26.7.5); then
/// Newton's method on the upper tail, safeguarded by bisection inside a
/// bracket `[lo, hi]` with `tail(lo) >= target >= tail(hi)`.
pub fn student_t_quantile(p: f64, df: f64) -> f64 {
    if p.is_nan() || df.is_nan() || df <= 0.0 || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    if p == 0.5 {
        return 0.0;
    }
    // Work with the smaller tail so it keeps full relative precision
    // (1 - p is exact for p >= 0.5; p itself is the tail below 0.5).
    let (target, sign) = if p < 0.5 { (p, -1.0) } else { (1.0 - p, 1.0) };
    let upper_tail = |t: f64| 0.5 * student_t_two_sided_p(t, df);
    let mut t = quantile_start(target, df).max(0.0);
    let mut lo = 0.0;
    let mut hi = t.max(1.0);
    while upper_tail(hi) > target {
        lo = hi;
        hi *= 2.0;
        if !hi.is_finite() {
            return sign * f64::INFINITY;
        }
    }
    if !(lo..=hi).contains(&t) {
        t = 0.5 * (lo + hi);
    }
    for _ in 0..200 {
        let excess = upper_tail(t) - target;
        if excess > 0.0 {
            lo = t;
        } else {
            hi = t;
        }
        let density = student_t_pdf(t, df);
        let mut next = if density > 0.0 {
            t + excess / density
        } else {
            f64::NAN
        };
        if !(next > lo && next < hi) {
            next = 0.5 * (lo + hi);
        }
        if (next - t).abs() <= 1e-15 * next.abs() || hi - lo <= 1e-15 * hi {
            return sign * next;
        }
        t = next;
    }
    sign * t
}

/// A first guess of the positive t quantile with upper tail `tail < 0.5`.
fn quantile_start(tail: f64, df: f64) -> f64 {
    if df < 1.5 {
        return 1.0 / (PI * tail).tan();
    }
    if df < 3.0 {
        return (1.0 - 2.0 * tail) / (2.0 * tail * (1.0 - tail)).sqrt();
    }
    let z = -normal_quantile(tail);
    let z2 = z * z;
    let g1 = (z2 + 1.0) * z / 4.0;
    let g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0;
    let g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0;
    z + g1 / df + g2 / (df * df) + g3 / (df * df * df)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn textbook_values() {
        // Phi(1.96) and the familiar quantiles (A&S tables, 15+ digits).
        assert!(close(normal_cdf(1.96), 0.975_002_104_851_780, 1e-13));
        assert!(close(normal_quantile(0.975), 1.959_963_984_540_054, 1e-14));
        assert!(close(normal_quantile(0.75), 0.674_489_750_196_081_7, 1e-14));
        // ln Gamma(1/2) = ln sqrt(pi); Gamma(10) = 9!.
        assert!(close(ln_gamma(0.5), 0.5 * PI.ln(), 1e-14));
        assert!(close(ln_gamma(10.0), 362_880f64.ln(), 1e-14));
        // t with 1 df is Cauchy: F(1) = 3/4; with 2 df: closed form.
        assert!(close(student_t_cdf(1.0, 1.0), 0.75, 1e-13));
        let t2 = 2.0_f64;
        assert!(close(
            student_t_cdf(t2, 2.0),
            0.5 + t2 / (2.0 * (2.0 + t2 * t2).sqrt()),
            1e-13
        ));
        assert!(close(
            student_t_quantile(0.975, 1.0),
            (PI * 0.475).tan(),
            1e-12
        ));
    }

    #[test]
    fn quantiles_invert_their_cdfs() {
        for &p in &[1e-12, 1e-6, 0.001, 0.025, 0.3, 0.5, 0.7, 0.975, 0.999_999] {
            assert!(
                close(normal_cdf(normal_quantile(p)), p, 1e-12),
                "normal p={p}"
            );
            for &df in &[1.0, 2.0, 2.5, 3.0, 7.0, 30.0, 1000.0] {
                let t = student_t_quantile(p, df);
                assert!(
                    close(student_t_cdf(t, df), p, 1e-11),
                    "t p={p} df={df} t={t}"
                );
            }
        }
    }

    #[test]
    fn erfc_is_continuous_where_the_methods_meet() {
        let below = erfc(2.5 - 1e-12);
        let at = erfc(2.5);
        assert!(close(below, at, 1e-10), "{below} vs {at}");
        assert_eq!(erfc(f64::INFINITY), 0.0);
        assert_eq!(erfc(f64::NEG_INFINITY), 2.0);
    }
}
