//! Robust one-sample summaries: the median and the median absolute deviation.

use serde::Serialize;

use super::{StatsError, check_values};

/// `Phi^-1(3/4)`: dividing the raw MAD by it gives a consistent estimator of
/// the standard deviation for normal data (the familiar factor 1.4826 is its
/// reciprocal; SciPy's `median_abs_deviation(scale='normal')` uses the same).
pub const NORMAL_MAD_DIVISOR: f64 = 0.674_489_750_196_081_7;

/// The median, MAD and count of one sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RobustSummary {
    pub n: usize,
    pub median: f64,
    /// `median(|x_i - median(x)|)`, unscaled.
    pub mad_raw: f64,
    /// `mad_raw / Phi^-1(3/4)` (≈ 1.4826 × `mad_raw`).
    pub mad_normal: f64,
}

/// The median: the middle value for odd `n`, the mean of the two middle
/// values for even `n` (the same rule as NumPy and SciPy).
pub fn median(values: &[f64]) -> Result<f64, StatsError> {
    check_values("median", values, false)?;
    let mut buffer = values.to_vec();
    Ok(median_of_buffer(&mut buffer))
}

/// The raw median absolute deviation `median(|x_i - median(x)|)`.
pub fn mad_raw(values: &[f64]) -> Result<f64, StatsError> {
    Ok(robust_summary(values)?.mad_raw)
}

/// The normal-consistent MAD, `mad_raw / Phi^-1(3/4)`.
pub fn mad_normal(values: &[f64]) -> Result<f64, StatsError> {
    Ok(robust_summary(values)?.mad_normal)
}

/// Median and both MADs of a non-empty sample of finite values.
pub fn robust_summary(values: &[f64]) -> Result<RobustSummary, StatsError> {
    check_values("robust summary", values, false)?;
    let mut buffer = values.to_vec();
    let median = median_of_buffer(&mut buffer);
    for (slot, &v) in buffer.iter_mut().zip(values) {
        *slot = (v - median).abs();
    }
    let mad_raw = median_of_buffer(&mut buffer);
    Ok(RobustSummary {
        n: values.len(),
        median,
        mad_raw,
        mad_normal: mad_raw / NORMAL_MAD_DIVISOR,
    })
}

/// The median of a non-empty buffer of finite values (reorders the buffer).
/// Selection, not sorting: O(n) per call, which matters inside the bootstrap.
pub(crate) fn median_of_buffer(buffer: &mut [f64]) -> f64 {
    let n = buffer.len();
    if n == 0 {
        return f64::NAN;
    }
    let mid = n / 2;
    let (left, upper_middle, _) = buffer.select_nth_unstable_by(mid, f64::total_cmp);
    let upper_middle = *upper_middle;
    if n % 2 == 1 {
        return upper_middle;
    }
    let lower_middle = left.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    // `(a + b) / 2`, as NumPy's median (a mean of the two middle values).
    (lower_middle + upper_middle) / 2.0
}

/// The linear-interpolation quantile of sorted values (Hyndman & Fan type 7,
/// NumPy's and SciPy's default): position `level * (n - 1)`.
pub(crate) fn quantile_of_sorted(sorted: &[f64], level: f64) -> f64 {
    let n = sorted.len();
    if n == 0 || level.is_nan() {
        return f64::NAN;
    }
    let position = level.clamp(0.0, 1.0) * (n - 1) as f64;
    let below = position.floor() as usize;
    let above = (below + 1).min(n - 1);
    let fraction = position - below as f64;
    sorted[below] + fraction * (sorted[above] - sorted[below])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_rules_for_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]).unwrap(), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]).unwrap(), 2.5);
        assert_eq!(median(&[7.0]).unwrap(), 7.0);
        assert!(matches!(median(&[]), Err(StatsError::Empty { .. })));
        assert!(matches!(
            median(&[1.0, f64::NAN]),
            Err(StatsError::NonFinite { index: 1, .. })
        ));
    }

    #[test]
    fn textbook_mad() {
        // Wikipedia's worked example: {1,1,2,2,4,6,9} has median 2 and
        // absolute deviations {1,1,0,0,2,4,7}, so MAD = 1.
        let s = robust_summary(&[1.0, 1.0, 2.0, 2.0, 4.0, 6.0, 9.0]).unwrap();
        assert_eq!((s.median, s.mad_raw), (2.0, 1.0));
        assert!((s.mad_normal - 1.482_602_218_505_602).abs() < 1e-12);
        let constant = robust_summary(&[5.0; 4]).unwrap();
        assert_eq!((constant.median, constant.mad_raw), (5.0, 0.0));
    }

    #[test]
    fn the_normal_divisor_is_the_normal_quartile() {
        let q3 = super::super::special::normal_quantile(0.75);
        assert!((q3 - NORMAL_MAD_DIVISOR).abs() < 1e-15);
    }

    #[test]
    fn type_7_quantiles() {
        let sorted = [1.0, 2.0, 4.0, 8.0];
        assert_eq!(quantile_of_sorted(&sorted, 0.0), 1.0);
        assert_eq!(quantile_of_sorted(&sorted, 1.0), 8.0);
        assert_eq!(quantile_of_sorted(&sorted, 0.5), 3.0);
        assert!((quantile_of_sorted(&sorted, 0.25) - 1.75).abs() < 1e-15);
    }
}
