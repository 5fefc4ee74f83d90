//! Turning one raw tracepoint record into named values with its format.
//!
//! The record bytes come from a trace-cmd ring-buffer page or a perf.data
//! sample's `raw` data; [`EventFormat::decode`] reads them with the field
//! layout `tracefs_format` parsed, in the traced machine's byte order.
//! Anything that points outside the record is cut to what is there:
//! the bytes are the kernel's, but a damaged file must not stop a decode.

use super::endian_reader::Endian;
use super::model::FieldValue;
use super::tracefs_format::{EventFormat, FieldKind, FormatField};

impl EventFormat {
    /// `common_pid` and the event's own fields (common ones left out) in
    /// format order. Integers by their size and sign, `char[N]` as text cut
    /// at the first NUL, `__data_loc`/`__rel_loc` as text (char) or bytes
    /// (clipped to the record), other arrays as bytes. `None` when `raw` is
    /// too short for a fixed-position field. A format without `common_pid`
    /// gives pid -1.
    pub fn decode(&self, raw: &[u8], big_endian: bool) -> Option<(i32, Vec<(String, FieldValue)>)> {
        let endian = if big_endian {
            Endian::Big
        } else {
            Endian::Little
        };
        let mut pid = -1;
        let mut values = Vec::with_capacity(self.fields.len());
        for field in &self.fields {
            if field.common {
                if field.name == "common_pid" {
                    let v = read_value(field, raw, endian)?;
                    pid = v.as_i64().and_then(|p| i32::try_from(p).ok()).unwrap_or(-1);
                }
                continue;
            }
            values.push((field.name.clone(), read_value(field, raw, endian)?));
        }
        Some((pid, values))
    }
}

/// The record's event id (`common_type`, a 16-bit word at offset 0 in
/// every kernel since 2.6.31).
pub fn record_event_id(raw: &[u8], big_endian: bool) -> Option<u32> {
    let endian = if big_endian {
        Endian::Big
    } else {
        Endian::Little
    };
    endian.uint_at(raw, 0, 2).map(|v| v as u32)
}

fn fixed_slice<'a>(field: &FormatField, raw: &'a [u8]) -> Option<&'a [u8]> {
    raw.get(field.offset..field.offset.checked_add(field.size)?)
}

fn read_value(field: &FormatField, raw: &[u8], endian: Endian) -> Option<FieldValue> {
    match field.kind {
        FieldKind::Integer => {
            let v = endian.uint_at(raw, field.offset, field.size)?;
            Some(if field.signed {
                FieldValue::Int(sign_extend(v, field.size))
            } else {
                FieldValue::Uint(v)
            })
        }
        FieldKind::CharArray => Some(text(fixed_slice(field, raw)?)),
        FieldKind::Bytes => Some(FieldValue::Bytes(fixed_slice(field, raw)?.to_vec())),
        FieldKind::Trailing { chars } => {
            let tail = raw.get(field.offset..).unwrap_or_default();
            Some(if chars {
                text(tail)
            } else {
                FieldValue::Bytes(tail.to_vec())
            })
        }
        FieldKind::DynamicLoc { relative, chars } => {
            let word_size = if field.size == 2 { 2 } else { 4 };
            let word = endian.uint_at(raw, field.offset, word_size)?;
            let (offset, len) = if word_size == 2 {
                (word as usize, 0)
            } else {
                ((word & 0xffff) as usize, (word >> 16) as usize)
            };
            let start = if relative {
                offset
                    .saturating_add(field.offset)
                    .saturating_add(field.size)
            } else {
                offset
            };
            let start = start.min(raw.len());
            let end = start.saturating_add(len).min(raw.len());
            let bytes = raw.get(start..end).unwrap_or_default();
            Some(if chars {
                text(bytes)
            } else {
                FieldValue::Bytes(bytes.to_vec())
            })
        }
    }
}

fn sign_extend(v: u64, size: usize) -> i64 {
    match size {
        1 => i64::from(v as u8 as i8),
        2 => i64::from(v as u16 as i16),
        4 => i64::from(v as u32 as i32),
        _ => v as i64,
    }
}

fn text(bytes: &[u8]) -> FieldValue {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    FieldValue::Str(String::from_utf8_lossy(bytes.get(..end).unwrap_or_default()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::super::tracefs_format::parse_event_format;
    use super::*;

    fn format(text: &str) -> EventFormat {
        match parse_event_format("sched", text) {
            Ok(f) => f,
            Err(e) => panic!("{e}"),
        }
    }

    const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n";

    fn switch_record(big: bool) -> Vec<u8> {
        let mut r = Vec::new();
        let put16 = |v: u16| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let put32 = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        r.extend(put16(316));
        r.extend([0, 0]);
        r.extend(put32(24501));
        let mut comm = [0u8; 16];
        comm[..4].copy_from_slice(b"bash");
        r.extend(comm);
        r.extend(put32((-7i32) as u32));
        r.extend(if big {
            0x0100u64.to_be_bytes()
        } else {
            0x0100u64.to_le_bytes()
        });
        r
    }

    fn switch_format() -> EventFormat {
        format(&format!(
            "name: sched_switch\nID: 316\nformat:\n{COMMON}\n\
\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
\tfield:long prev_state;\toffset:28;\tsize:8;\tsigned:0;\n"
        ))
    }

    #[test]
    fn integers_and_char_arrays_in_both_byte_orders() {
        let f = switch_format();
        for big in [false, true] {
            let raw = switch_record(big);
            assert_eq!(record_event_id(&raw, big), Some(316));
            let got = f.decode(&raw, big);
            let want = vec![
                ("prev_comm".to_string(), FieldValue::Str("bash".into())),
                ("prev_pid".to_string(), FieldValue::Int(-7)),
                ("prev_state".to_string(), FieldValue::Uint(0x100)),
            ];
            assert_eq!(got, Some((24501, want)), "big endian {big}");
        }
    }

    #[test]
    fn a_short_record_is_none_not_a_panic() {
        let f = switch_format();
        let raw = switch_record(false);
        for len in 0..raw.len() {
            assert_eq!(f.decode(&raw[..len], false), None, "len {len}");
        }
    }

    #[test]
    fn dynamic_and_trailing_fields_are_clipped_to_the_record() {
        let f = format(&format!(
            "name: e\nID: 9\nformat:\n{COMMON}\n\
\tfield:__data_loc char[] filename;\toffset:8;\tsize:4;\tsigned:0;\n\
\tfield:__rel_loc u8[] blob;\toffset:12;\tsize:4;\tsigned:0;\n\
\tfield:char tail[];\toffset:16;\tsize:0;\tsigned:0;\n"
        ));
        let mut raw = vec![9, 0, 0, 0, 1, 0, 0, 0];
        raw.extend((16u32 | (4 << 16)).to_le_bytes()); // "abc\0" at 16
        raw.extend((2u32 | (2 << 16)).to_le_bytes()); // 2 bytes at 16+2
        raw.extend(b"abc\0");
        let got = f.decode(&raw, false).map(|(_, v)| v);
        let want = vec![
            ("filename".to_string(), FieldValue::Str("abc".into())),
            ("blob".to_string(), FieldValue::Bytes(b"c\0".to_vec())),
            ("tail".to_string(), FieldValue::Str("abc".into())),
        ];
        assert_eq!(got, Some(want));
        // A location past the end gives an empty value, not a panic.
        raw[8..12].copy_from_slice(&(0xfff0u32 | (0xffff << 16)).to_le_bytes());
        raw[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        let got = f.decode(&raw, false).map(|(_, v)| v);
        assert_eq!(
            got.as_ref().map(|v| (v[0].1.clone(), v[1].1.clone())),
            Some((
                FieldValue::Str(String::new()),
                FieldValue::Bytes(Vec::new())
            ))
        );
    }
}
