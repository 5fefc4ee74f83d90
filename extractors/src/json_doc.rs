//! Whole-document JSON formats (speedscope, V8 `.cpuprofile`) read with
//! serde straight from the input stream into typed structs.
//!
//! These formats are one JSON object whose parts refer to each other by
//! index (speedscope's `profiles` before `shared.frames`; cpuprofile's
//! `samples` naming `nodes` ids), so they are read whole — but into compact
//! typed structs, never a `serde_json::Value` tree. This module holds what
//! both need: a reader that reports progress and polls cancellation while
//! serde pulls bytes, the mapping of serde errors to [`ExtractError`], and
//! exact decimal numbers ([`Decimal`]) so `0.002` seconds is 2 000 000 ns,
//! not whatever the nearest `f64` times 10⁹ rounds to.

use std::io::{BufRead, Read};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::api::{ExtractError, ExtractObserver};

/// How often (in bytes) progress is reported and cancellation polled.
const POLL_BYTES: u64 = 256 * 1024;

/// Counts bytes as serde reads them; stops with an error once the observer
/// asks to cancel.
struct ObservedReader<'o, R> {
    inner: R,
    observer: &'o dyn ExtractObserver,
    offset: u64,
    next_poll: u64,
    cancelled: bool,
}

impl<'o, R> ObservedReader<'o, R> {
    fn new(inner: R, observer: &'o dyn ExtractObserver) -> Self {
        ObservedReader {
            inner,
            observer,
            offset: 0,
            next_poll: 0,
            cancelled: false,
        }
    }
}

impl<R: BufRead> Read for ObservedReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.offset >= self.next_poll {
            self.next_poll = self.offset + POLL_BYTES;
            self.observer.bytes_read(self.offset);
            if self.observer.cancelled() {
                self.cancelled = true;
                return Err(std::io::Error::other("extraction was cancelled"));
            }
        }
        let n = self.inner.read(buf)?;
        self.offset += n as u64;
        Ok(n)
    }
}

/// Deserializes one JSON document of type `T` from `reader` (trailing
/// whitespace only). Returns the document and the bytes read.
///
/// Errors: cancellation → [`ExtractError::Cancelled`]; I/O (including the
/// input's too-large and corrupt-gzip markers) → [`ExtractError::from`];
/// anything serde rejects (not JSON, cut off, wrong shape) →
/// [`ExtractError::Parse`] with the byte offset reached, prefixed by `what`.
pub(crate) fn read_document<T: DeserializeOwned, R: BufRead>(
    reader: R,
    observer: &dyn ExtractObserver,
    what: &str,
) -> Result<(T, u64), ExtractError> {
    let mut observed = ObservedReader::new(reader, observer);
    let result = serde_json::from_reader::<_, T>(&mut observed);
    observer.bytes_read(observed.offset);
    match result {
        Ok(doc) => Ok((doc, observed.offset)),
        Err(_) if observed.cancelled => Err(ExtractError::Cancelled),
        Err(e) if e.is_io() => Err(ExtractError::from(std::io::Error::from(e))),
        Err(e) => Err(ExtractError::Parse {
            message: format!("not a {what} document: {e}"),
            offset: Some(observed.offset),
        }),
    }
}

/// How a sequence of JSON documents ended.
pub(crate) struct DocumentsRead {
    /// Documents read whole.
    pub documents: u64,
    /// Bytes consumed.
    pub bytes: u64,
    /// Why reading stopped before the end, when a document after the first
    /// one is cut off or malformed (the documents before it were kept).
    pub stopped: Option<String>,
}

/// Reads the JSON documents of `reader` one after another — one document,
/// JSON lines, or documents simply concatenated — handing each to `each`
/// as soon as it is read. A first document that does not read is
/// [`ExtractError::Parse`]; a later one ends the read with
/// [`DocumentsRead::stopped`] set, the earlier ones kept.
pub(crate) fn for_each_document<T: DeserializeOwned, R: BufRead>(
    reader: R,
    observer: &dyn ExtractObserver,
    what: &str,
    mut each: impl FnMut(T) -> Result<(), ExtractError>,
) -> Result<DocumentsRead, ExtractError> {
    let mut observed = ObservedReader::new(reader, observer);
    let mut documents = 0u64;
    let mut stopped = None;
    let mut failure = None;
    {
        let stream = serde_json::Deserializer::from_reader(&mut observed).into_iter::<T>();
        for doc in stream {
            match doc {
                Ok(doc) => {
                    documents += 1;
                    each(doc)?;
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
    }
    observer.bytes_read(observed.offset);
    if let Some(e) = failure {
        if observed.cancelled {
            return Err(ExtractError::Cancelled);
        }
        if e.is_io() {
            return Err(ExtractError::from(std::io::Error::from(e)));
        }
        if documents == 0 {
            return Err(ExtractError::Parse {
                message: format!("not a {what} document: {e}"),
                offset: Some(observed.offset),
            });
        }
        stopped = Some(format!(
            "document #{} does not read ({e}); the {documents} before it were kept",
            documents + 1
        ));
    }
    if documents == 0 {
        return Err(ExtractError::Parse {
            message: format!("not a {what} document: the input is empty"),
            offset: Some(0),
        });
    }
    Ok(DocumentsRead {
        documents,
        bytes: observed.offset,
        stopped,
    })
}

/// A JSON number kept exactly as written: `mantissa × 10^exponent`.
/// Written values that are not numbers (or do not fit) are
/// [`Decimal::Invalid`], so one bad value is a limitation, not a failed file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decimal {
    Value { mantissa: i128, exponent: i32 },
    Invalid,
}

/// Significant digits kept; later ones only move the exponent (inputs never
/// come close: an `f64` prints at most 17).
const MAX_DIGITS: u32 = 36;

impl Decimal {
    /// Parses JSON number text (`12`, `-0.002`, `1.5e-3`). A quoted number
    /// (`"12"`) is accepted too.
    pub(crate) fn parse(text: &str) -> Decimal {
        let t = text.trim();
        let t = t
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .unwrap_or(t);
        let bytes = t.as_bytes();
        let (negative, mut i) = match bytes.first() {
            Some(b'-') => (true, 1),
            Some(b'+') => (false, 1),
            _ => (false, 0),
        };
        let mut mantissa: i128 = 0;
        let mut exponent: i64 = 0;
        let mut digits = 0u32;
        let mut any = false;
        let mut in_fraction = false;
        while let Some(&b) = bytes.get(i) {
            match b {
                b'0'..=b'9' => {
                    any = true;
                    if digits < MAX_DIGITS {
                        mantissa = mantissa * 10 + i128::from(b - b'0');
                        if mantissa != 0 {
                            digits += 1;
                        }
                        if in_fraction {
                            exponent -= 1;
                        }
                    } else if !in_fraction {
                        exponent += 1;
                    }
                }
                b'.' if !in_fraction => in_fraction = true,
                _ => break,
            }
            i += 1;
        }
        if !any {
            return Decimal::Invalid;
        }
        if let Some(b'e' | b'E') = bytes.get(i) {
            let Ok(e) = t[i + 1..].parse::<i64>() else {
                return Decimal::Invalid;
            };
            exponent = exponent.saturating_add(e);
            i = bytes.len();
        }
        if i != bytes.len() {
            return Decimal::Invalid;
        }
        let Ok(exponent) = i32::try_from(exponent) else {
            return Decimal::Invalid;
        };
        Decimal::Value {
            mantissa: if negative { -mantissa } else { mantissa },
            exponent,
        }
    }

    /// The value × 10^`pow`, rounded half away from zero to an integer;
    /// `None` when invalid or outside `i64`.
    pub(crate) fn scaled(self, pow: i32) -> Option<i64> {
        let Decimal::Value { mantissa, exponent } = self else {
            return None;
        };
        let e = i64::from(exponent) + i64::from(pow);
        let value: i128 = if e >= 0 {
            let factor = 10i128.checked_pow(u32::try_from(e).ok()?)?;
            mantissa.checked_mul(factor)?
        } else if e < -38 {
            0
        } else {
            let divisor = 10i128.pow(u32::try_from(-e).ok()?);
            let (q, r) = (mantissa / divisor, mantissa % divisor);
            if r.abs() * 2 >= divisor {
                q + mantissa.signum()
            } else {
                q
            }
        };
        i64::try_from(value).ok()
    }

    /// Whether the value has no fractional part.
    pub(crate) fn is_integral(self) -> bool {
        match self {
            Decimal::Value { mantissa, exponent } => {
                exponent >= 0
                    || 10i128
                        .checked_pow(exponent.unsigned_abs())
                        .is_some_and(|d| mantissa % d == 0)
                    || mantissa == 0
            }
            Decimal::Invalid => false,
        }
    }
}

impl<'de> Deserialize<'de> for Decimal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        Ok(Decimal::parse(raw.get()))
    }
}

/// An integer written as a JSON number (an integral float such as `3.0`
/// counts); anything else is `None`.
pub(crate) fn lenient_int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(Option::<Decimal>::deserialize(d)?
        .filter(|v| v.is_integral())
        .and_then(|v| v.scaled(0)))
}

/// An integer that may be written as any JSON number (a float is rounded);
/// read without allocating, for long arrays of integers such as V8's
/// `timeDeltas`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Int(pub i64);

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Int;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Int, E> {
                Ok(Int(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Int, E> {
                i64::try_from(v)
                    .map(Int)
                    .map_err(|_| E::custom("integer does not fit in i64"))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Int, E> {
                let r = v.round();
                if r.is_finite() && r.abs() < 9.2e18 {
                    Ok(Int(r as i64))
                } else {
                    Err(E::custom("number does not fit in i64"))
                }
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_scale_exactly() {
        let ns = |t: &str| Decimal::parse(t).scaled(9);
        assert_eq!(ns("0.002"), Some(2_000_000));
        assert_eq!(ns("1"), Some(1_000_000_000));
        assert_eq!(ns("-1.5"), Some(-1_500_000_000));
        assert_eq!(ns("1.5e-3"), Some(1_500_000));
        assert_eq!(ns("2E2"), Some(200_000_000_000));
        assert_eq!(ns("0.0000000005"), Some(1));
        assert_eq!(ns("0.00000000049"), Some(0));
        assert_eq!(ns("-0.0000000005"), Some(-1));
        assert_eq!(ns("\"3\""), Some(3_000_000_000));
        assert_eq!(ns("1e300"), None);
        assert_eq!(ns("1e-300"), Some(0));
        assert_eq!(
            Decimal::parse("1234567890123.456").scaled(3),
            Some(1_234_567_890_123_456)
        );
        assert_eq!(Decimal::parse("0.1").scaled(0), Some(0));
        assert_eq!(Decimal::parse("2.5").scaled(0), Some(3));
        for bad in ["", "-", "abc", "1.2.3", "null", "[1]", "1e", "1x", "."] {
            assert_eq!(Decimal::parse(bad), Decimal::Invalid, "{bad}");
            assert_eq!(Decimal::parse(bad).scaled(0), None, "{bad}");
        }
    }

    #[test]
    fn lenient_integers() {
        #[derive(Deserialize)]
        struct T {
            #[serde(default, deserialize_with = "lenient_int")]
            v: Option<i64>,
        }
        let v = |s: &str| serde_json::from_str::<T>(s).unwrap().v;
        assert_eq!(v(r#"{"v": 7}"#), Some(7));
        assert_eq!(v(r#"{"v": -1}"#), Some(-1));
        assert_eq!(v(r#"{"v": 3.0}"#), Some(3));
        assert_eq!(v(r#"{"v": 3.5}"#), None);
        assert_eq!(v(r#"{"v": null}"#), None);
        assert_eq!(v(r#"{"v": "x"}"#), None);
        assert_eq!(v(r#"{}"#), None);
        let ints: Vec<Int> = serde_json::from_str("[1, -2, 3.6]").unwrap();
        assert!(serde_json::from_str::<Vec<Int>>("[18446744073709551615]").is_err());
        assert_eq!(ints, vec![Int(1), Int(-2), Int(4)]);
        assert!(serde_json::from_str::<Vec<Int>>("[\"1\"]").is_err());
    }
}
