//! Rank correlation and multiple-testing adjustment for "which hotspots'
//! share grows with n": Spearman ρ with a t-approximation p-value, and
//! Benjamini–Hochberg q-values over the hotspots tested.

use serde::{Deserialize, Serialize};

use super::special::student_t_two_sided_p;
use super::{StatsError, check_same_length, check_values};

/// Spearman's ρ needs at least this many pairs for a p-value (n - 2 df).
pub const MIN_CORRELATION_PAIRS: usize = 3;

/// Spearman's ρ and its two-sided p-value, or why there is none.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Correlation {
    Available {
        n: usize,
        rho: f64,
        /// Two-sided, from `t = rho sqrt((n-2)/(1-rho^2))` with n - 2 df.
        p_value: f64,
    },
    Unavailable {
        n: usize,
        reason: CorrelationUnavailable,
    },
}

/// Why a correlation could not be computed from valid input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CorrelationUnavailable {
    /// Fewer than [`MIN_CORRELATION_PAIRS`] pairs.
    TooFewPairs,
    /// One side has a single distinct value: ranks carry no order.
    ConstantInput,
}

/// Spearman's rank correlation of paired values: the Pearson correlation of
/// their average ranks (ties share the mean of the ranks they span).
///
/// The p-value uses the t approximation of Student's t with n - 2 degrees of
/// freedom — what SciPy's `spearmanr` reports — as
/// `I_{1-rho^2}((n-2)/2, 1/2)` (the same quantity, computed without
/// cancellation); `|rho| = 1` gives 0.
pub fn spearman(x: &[f64], y: &[f64]) -> Result<Correlation, StatsError> {
    check_same_length("spearman", x, y)?;
    check_values("spearman x", x, false)?;
    check_values("spearman y", y, false)?;
    let n = x.len();
    if n < MIN_CORRELATION_PAIRS {
        return Ok(Correlation::Unavailable {
            n,
            reason: CorrelationUnavailable::TooFewPairs,
        });
    }
    let (rx, ry) = (average_ranks(x), average_ranks(y));
    let Some(rho) = pearson(&rx, &ry) else {
        return Ok(Correlation::Unavailable {
            n,
            reason: CorrelationUnavailable::ConstantInput,
        });
    };
    let rho = rho.clamp(-1.0, 1.0);
    let df = (n - 2) as f64;
    let p_value = if rho.abs() == 1.0 {
        0.0
    } else {
        let t = rho * (df / ((1.0 + rho) * (1.0 - rho))).sqrt();
        student_t_two_sided_p(t, df)
    };
    Ok(Correlation::Available { n, rho, p_value })
}

/// 1-based ranks, ties replaced by the mean of the ranks they occupy.
pub fn average_ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Positions start..end hold ranks start+1 ..= end; their mean:
        let mean_rank = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = mean_rank;
        }
        start = end;
    }
    ranks
}

/// The Pearson correlation, `None` when either side has zero variance.
fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        let (dx, dy) = (a - mx, b - my);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// Benjamini–Hochberg adjusted p-values (q-values), in the input order:
/// `q_(i) = min_{j >= i} min(1, m p_(j) / j)` over the ascending p-values —
/// monotone in p and capped at 1 (Benjamini & Hochberg 1995; SciPy's
/// `false_discovery_control(method='bh')`). Rejecting `q <= Q` controls the
/// false discovery rate at `Q` for independent or positively dependent tests.
pub fn benjamini_hochberg(p_values: &[f64]) -> Result<Vec<f64>, StatsError> {
    for (index, &value) in p_values.iter().enumerate() {
        if !(0.0..=1.0).contains(&value) {
            return Err(StatsError::InvalidProbability { index, value });
        }
    }
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let mut q = vec![0.0; m];
    let mut running_min = 1.0_f64;
    for (position, &i) in order.iter().enumerate().rev() {
        let scaled = p_values[i] * m as f64 / (position + 1) as f64;
        running_min = running_min.min(scaled);
        q[i] = running_min;
    }
    Ok(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_average_ties() {
        assert_eq!(
            average_ranks(&[10.0, 20.0, 20.0, 5.0]),
            [2.0, 3.5, 3.5, 1.0]
        );
    }

    #[test]
    fn textbook_spearman() {
        // Wikipedia's IQ / TV-hours table: rho = -29/165 ≈ -0.175757575...
        let iq = [106., 100., 86., 101., 99., 103., 97., 113., 112., 110.];
        let tv = [7., 27., 2., 50., 28., 29., 20., 12., 6., 17.];
        let Correlation::Available { rho, p_value, .. } = spearman(&iq, &tv).unwrap() else {
            panic!("expected a correlation");
        };
        assert!((rho + 29.0 / 165.0).abs() < 1e-14, "{rho}");
        assert!(p_value > 0.5 && p_value < 0.7, "{p_value}"); // SciPy: 0.6272
        let perfect = spearman(&[1., 2., 3., 4.], &[1., 4., 9., 16.]).unwrap();
        assert_eq!(
            perfect,
            Correlation::Available {
                n: 4,
                rho: 1.0,
                p_value: 0.0
            }
        );
        assert!(matches!(
            spearman(&[1., 2., 3.], &[5., 5., 5.]).unwrap(),
            Correlation::Unavailable {
                reason: CorrelationUnavailable::ConstantInput,
                ..
            }
        ));
    }

    #[test]
    fn textbook_benjamini_hochberg() {
        // p = (0.01, 0.04, 0.03, 0.005), m = 4: sorted 0.005, 0.01, 0.03, 0.04
        // → 0.02, 0.02, 0.04, 0.04 (the third and fourth take min(0.04, 0.04)).
        let q = benjamini_hochberg(&[0.01, 0.04, 0.03, 0.005]).unwrap();
        let want = [0.02, 0.04, 0.04, 0.02];
        assert!(
            q.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-15),
            "{q:?}"
        );
        assert_eq!(benjamini_hochberg(&[0.9, 0.8]).unwrap(), [0.9, 0.9]);
        assert!(benjamini_hochberg(&[1.5]).is_err());
    }
}
