//! Microsecond timestamps written as decimal text → integer nanoseconds.
//!
//! Chrome `ts`/`dur` are microseconds, often fractional (`88437691101.729`).
//! Multiplying the parsed `f64` by 1000 drifts by a nanosecond for large
//! values, which breaks equality joins and exact ordering. So the decimal
//! text is parsed digit by digit: three fractional digits are exact, further
//! digits round half away from zero. Only exponent notation falls back to
//! `f64`.

/// Why a time value could not be converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeError {
    /// Not a number.
    Invalid,
    /// Does not fit in `i64` nanoseconds.
    Overflow,
}

/// Converts microseconds written as decimal text (`"12"`, `"-3.5"`,
/// `"1.0005"`, `"1e3"`) to nanoseconds.
pub fn micros_text_to_ns(text: &str) -> Result<i64, TimeError> {
    let t = text.trim();
    let bytes = t.as_bytes();
    let (negative, digits) = match bytes.first() {
        Some(b'-') => (true, &bytes[1..]),
        Some(b'+') => (false, &bytes[1..]),
        Some(_) => (false, bytes),
        None => return Err(TimeError::Invalid),
    };
    if digits.iter().any(|b| matches!(b, b'e' | b'E')) {
        return float_fallback(t);
    }
    let mut int_part: i128 = 0;
    let mut i = 0;
    let mut any_digit = false;
    while i < digits.len() && digits[i].is_ascii_digit() {
        int_part = int_part * 10 + i128::from(digits[i] - b'0');
        if int_part > i128::from(i64::MAX) {
            return Err(TimeError::Overflow);
        }
        any_digit = true;
        i += 1;
    }
    let mut frac_ns: i128 = 0;
    let mut round_up = false;
    if i < digits.len() && digits[i] == b'.' {
        i += 1;
        let mut n = 0;
        while i < digits.len() && digits[i].is_ascii_digit() {
            let d = i128::from(digits[i] - b'0');
            if n < 3 {
                frac_ns = frac_ns * 10 + d;
            } else if n == 3 {
                round_up = d >= 5;
            }
            n += 1;
            any_digit = true;
            i += 1;
        }
        for _ in n..3 {
            frac_ns *= 10;
        }
    }
    if i != digits.len() || !any_digit {
        return Err(TimeError::Invalid);
    }
    let mut magnitude = int_part * 1000 + frac_ns + i128::from(round_up);
    if negative {
        magnitude = -magnitude;
    }
    i64::try_from(magnitude).map_err(|_| TimeError::Overflow)
}

fn float_fallback(t: &str) -> Result<i64, TimeError> {
    let v: f64 = t.parse().map_err(|_| TimeError::Invalid)?;
    if !v.is_finite() {
        return Err(TimeError::Invalid);
    }
    let ns = (v * 1000.0).round();
    if ns >= i64::MAX as f64 || ns < i64::MIN as f64 {
        return Err(TimeError::Overflow);
    }
    Ok(ns as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_decimal_conversion() {
        let cases = [
            ("0", 0),
            ("1", 1000),
            ("88437691101.729", 88_437_691_101_729),
            ("4909914216204.635", 4_909_914_216_204_635),
            ("1.5", 1500),
            ("1.0004", 1000),
            ("1.0005", 1001),
            ("1.00049999", 1000),
            ("-1.0005", -1001),
            ("-2.5", -2500),
            (" 7 ", 7000),
            ("1e3", 1_000_000),
            ("1.5E-3", 2),
            ("+3", 3000),
            ("1695835542514261", 1_695_835_542_514_261_000),
            (".5", 500),
            ("5.", 5000),
        ];
        for (text, ns) in cases {
            assert_eq!(micros_text_to_ns(text), Ok(ns), "{text}");
        }
    }

    #[test]
    fn invalid_and_overflow() {
        for text in ["", "-", "abc", "1.2.3", "1x", ".", "NaN"] {
            assert_eq!(micros_text_to_ns(text), Err(TimeError::Invalid), "{text}");
        }
        for text in ["9223372036854775807", "99999999999999999999999", "1e300"] {
            assert_eq!(micros_text_to_ns(text), Err(TimeError::Overflow), "{text}");
        }
        assert_eq!(
            micros_text_to_ns("9223372036854775"),
            Ok(9_223_372_036_854_775_000)
        );
    }
}
