//! What decoding a profile whole will cost, known before decoding it.
//!
//! A pprof profile is decoded into owned structs at once, and protobuf's
//! compactness makes that expensive on hostile input: an empty `Sample` is
//! two bytes on the wire and 72 in memory, a packed location id one byte and
//! eight. So before `prost` runs, one pass over the wire counts every
//! element the decoder would allocate (samples, their location ids, values
//! and labels; locations and their lines; mappings, functions, strings) and
//! a profile whose decoded size would pass [`MAX_DECODED_BYTES`], or that
//! declares more than [`MAX_SAMPLE_TYPES`] sample types (each one a column
//! of every sample and a metric of the reductions), is refused.

use std::mem::size_of;

use super::proto::{Function, Label, Line, Location, Mapping, Sample, ValueType};
use crate::api::ExtractError;
use crate::varint::get_u64;

/// Largest decoded size of a profile (structs and their vectors).
pub const MAX_DECODED_BYTES: u64 = 4 << 30;
/// Most sample types (value columns) a profile may declare.
pub const MAX_SAMPLE_TYPES: u64 = 1024;

/// Elements the decoder would allocate, by kind.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DecodeCost {
    pub sample_types: u64,
    pub samples: u64,
    pub mappings: u64,
    pub locations: u64,
    pub functions: u64,
    pub strings: u64,
    pub string_bytes: u64,
    /// Location ids, values and comments: eight bytes each.
    pub numbers: u64,
    pub labels: u64,
    pub lines: u64,
}

impl DecodeCost {
    /// Bytes of memory the decoded profile takes (structs and vectors).
    pub fn bytes(&self) -> u64 {
        let each = |n: u64, size: usize| n.saturating_mul(size as u64);
        [
            each(self.sample_types, size_of::<ValueType>()),
            each(self.samples, size_of::<Sample>()),
            each(self.mappings, size_of::<Mapping>()),
            each(self.locations, size_of::<Location>()),
            each(self.functions, size_of::<Function>()),
            each(self.strings, size_of::<Vec<u8>>()),
            self.string_bytes,
            each(self.numbers, 8),
            each(self.labels, size_of::<Label>()),
            each(self.lines, size_of::<Line>()),
        ]
        .into_iter()
        .fold(0u64, u64::saturating_add)
    }
}

/// One field of a message: its number and, for a length-delimited one,
/// its payload (`None` for a scalar). `None` at the end or on bytes that
/// are not protobuf (the decoder reports those).
fn next_field<'a>(bytes: &mut &'a [u8]) -> Option<(u64, Option<&'a [u8]>)> {
    let tag = get_u64(bytes)?;
    let field = tag >> 3;
    match tag & 7 {
        0 => get_u64(bytes).map(|_| (field, None)),
        1 => skip(bytes, 8).map(|_| (field, None)),
        5 => skip(bytes, 4).map(|_| (field, None)),
        2 => {
            let len = usize::try_from(get_u64(bytes)?).ok()?;
            let payload = bytes.get(..len)?;
            *bytes = &bytes[len..];
            Some((field, Some(payload)))
        }
        _ => None,
    }
}

fn skip(bytes: &mut &[u8], n: usize) -> Option<()> {
    *bytes = bytes.get(n..)?;
    Some(())
}

/// Varints in a packed payload (bytes whose continuation bit is clear).
fn packed_count(payload: &[u8]) -> u64 {
    payload.iter().filter(|b| **b & 0x80 == 0).count() as u64
}

/// Counts what decoding `bytes` as a `Profile` would allocate.
pub fn decode_cost(bytes: &[u8]) -> DecodeCost {
    let mut cost = DecodeCost::default();
    let mut rest = bytes;
    while let Some((field, payload)) = next_field(&mut rest) {
        match (field, payload) {
            (1, _) => cost.sample_types += 1,
            (2, Some(sample)) => {
                cost.samples += 1;
                let mut inner = sample;
                while let Some((f, p)) = next_field(&mut inner) {
                    match (f, p) {
                        (1 | 2, Some(packed)) => cost.numbers += packed_count(packed),
                        (1 | 2, None) => cost.numbers += 1,
                        (3, _) => cost.labels += 1,
                        _ => {}
                    }
                }
            }
            (3, _) => cost.mappings += 1,
            (4, Some(location)) => {
                cost.locations += 1;
                let mut inner = location;
                while let Some((f, _)) = next_field(&mut inner) {
                    if f == 4 {
                        cost.lines += 1;
                    }
                }
            }
            (5, _) => cost.functions += 1,
            (6, payload) => {
                cost.strings += 1;
                cost.string_bytes += payload.map_or(0, |p| p.len() as u64);
            }
            (13, Some(packed)) => cost.numbers += packed_count(packed),
            (13, None) => cost.numbers += 1,
            _ => {}
        }
    }
    cost
}

/// Refuses a profile too costly to decode whole.
pub fn check_decode_cost(bytes: &[u8]) -> Result<DecodeCost, ExtractError> {
    let cost = decode_cost(bytes);
    if cost.sample_types > MAX_SAMPLE_TYPES {
        return Err(ExtractError::TooLarge {
            message: format!(
                "the pprof profile declares {} sample types (at most {MAX_SAMPLE_TYPES} are read)",
                cost.sample_types
            ),
        });
    }
    let decoded = cost.bytes();
    if decoded > MAX_DECODED_BYTES {
        return Err(ExtractError::TooLarge {
            message: format!(
                "decoding the pprof profile would take {} MiB of memory ({} samples, {} numbers, \
                 {} labels, {} locations, {} lines from {} bytes); at most {} MiB are allowed",
                decoded >> 20,
                cost.samples,
                cost.numbers,
                cost.labels,
                cost.locations,
                cost.lines,
                bytes.len(),
                MAX_DECODED_BYTES >> 20
            ),
        });
    }
    Ok(cost)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pprof::proto::Profile;
    use prost::Message;

    fn profile() -> Profile {
        Profile {
            sample_type: vec![ValueType::default(); 2],
            sample: vec![
                Sample {
                    location_id: vec![1, 2, 300],
                    value: vec![5, 6],
                    label: vec![Label::default()],
                },
                Sample::default(),
            ],
            location: vec![Location {
                line: vec![Line::default(); 3],
                ..Location::default()
            }],
            function: vec![Function::default()],
            string_table: vec![Vec::new(), b"abc".to_vec()],
            comment: vec![1, 1],
            ..Profile::default()
        }
    }

    #[test]
    fn the_count_matches_what_prost_decodes() {
        let bytes = profile().encode_to_vec();
        let cost = decode_cost(&bytes);
        // An empty sample and empty messages are still counted; a default
        // `ValueType` encodes as an empty message.
        assert_eq!(cost.sample_types, 2);
        assert_eq!(cost.samples, 2);
        assert_eq!(cost.numbers, 3 + 2 + 2);
        assert_eq!(cost.labels, 1);
        assert_eq!(cost.locations, 1);
        assert_eq!(cost.lines, 3);
        assert_eq!(cost.functions, 1);
        assert_eq!(cost.strings, 2);
        assert_eq!(cost.string_bytes, 3);
        assert!(check_decode_cost(&bytes).is_ok());
    }

    #[test]
    fn empty_samples_that_would_explode_are_refused_before_decoding() {
        // Two bytes per empty sample: 40 MiB of them would decode to ~1.4 GiB.
        let cost = decode_cost(&b"\x12\x00".repeat(1 << 20));
        assert_eq!(cost.samples, 1 << 20);
        assert_eq!(cost.bytes(), (1u64 << 20) * size_of::<Sample>() as u64);
        let many_types = b"\x0a\x00".repeat(MAX_SAMPLE_TYPES as usize + 1);
        assert!(matches!(
            check_decode_cost(&many_types),
            Err(ExtractError::TooLarge { .. })
        ));
        // Packed numbers: a one-byte varint decodes to eight bytes.
        let mut packed = vec![0x12, 0x05, 0x0a, 0x03, 1, 2, 3];
        packed.extend_from_slice(b"\x12\x00");
        assert_eq!(decode_cost(&packed).numbers, 3);
    }
}
