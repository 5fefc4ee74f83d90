//! The mutations of the campaign: the damage real files suffer on the way
//! (truncation, flipped bits, zeroed blocks, duplicated or swapped slices)
//! and the shapes that break parsers (deep nesting, invalid UTF-8, a
//! structural byte replaced, varints, lengths and numbers set to extremes).
//!
//! A mutant depends only on its seed input and a [`SeededRng`]: the same
//! campaign seed and mutant index always give the same bytes.

use flameox_benches::rng::SeededRng;

/// One kind of damage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mutation {
    /// Cut at a random offset.
    Truncate,
    /// 1–8 random bits flipped.
    BitFlips,
    /// A run of 1 byte to 8 KiB set to zero (a lost disk block).
    ZeroRun,
    /// A slice copied and inserted elsewhere.
    DuplicateSlice,
    /// Two slices exchanged.
    SwapSlices,
    /// One JSON structural byte (`[]{}",:`) replaced by another or by `\`.
    StructuralByte,
    /// Thousands of opening brackets, or nested protobuf length headers.
    DeepNesting,
    /// Overlong, surrogate and stray continuation bytes inserted.
    InvalidUtf8,
    /// A varint or length prefix set to its maximum; a JSON number to an
    /// extreme (huge, negative, overflowing, `1e999`).
    ExtremeValue,
}

impl Mutation {
    pub const ALL: [Mutation; 9] = [
        Mutation::Truncate,
        Mutation::BitFlips,
        Mutation::ZeroRun,
        Mutation::DuplicateSlice,
        Mutation::SwapSlices,
        Mutation::StructuralByte,
        Mutation::DeepNesting,
        Mutation::InvalidUtf8,
        Mutation::ExtremeValue,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mutation::Truncate => "truncate",
            Mutation::BitFlips => "bit_flips",
            Mutation::ZeroRun => "zero_run",
            Mutation::DuplicateSlice => "duplicate_slice",
            Mutation::SwapSlices => "swap_slices",
            Mutation::StructuralByte => "structural_byte",
            Mutation::DeepNesting => "deep_nesting",
            Mutation::InvalidUtf8 => "invalid_utf8",
            Mutation::ExtremeValue => "extreme_value",
        }
    }

    pub fn from_name(name: &str) -> Option<Mutation> {
        Mutation::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// A position in `0..len` (0 when empty).
fn position(rng: &mut SeededRng, len: usize) -> usize {
    rng.range(0, len as u64) as usize
}

/// A slice length, biased to short: 1..=max, log-uniform.
fn span(rng: &mut SeededRng, max: usize) -> usize {
    let bits = 64 - (max.max(1) as u64).leading_zeros() as u64;
    let cap = 1u64 << rng.range(0, bits + 1);
    rng.range(1, cap.min(max.max(1) as u64) + 1) as usize
}

/// Applies `mutation` to `data` (which is changed in place). `text` says
/// whether the bytes are a text format (JSON, folded stacks), which picks
/// the text or binary variant of the structural mutations.
pub fn apply(mutation: Mutation, data: &mut Vec<u8>, text: bool, rng: &mut SeededRng) {
    let len = data.len();
    match mutation {
        Mutation::Truncate => {
            let at = position(rng, len);
            data.truncate(at);
        }
        Mutation::BitFlips => {
            if len == 0 {
                return;
            }
            for _ in 0..rng.range(1, 9) {
                let at = position(rng, len);
                data[at] ^= 1 << rng.range(0, 8);
            }
        }
        Mutation::ZeroRun => {
            let n = span(rng, 8192.min(len));
            let at = position(rng, len.saturating_sub(n) + 1);
            for b in data.iter_mut().skip(at).take(n) {
                *b = 0;
            }
        }
        Mutation::DuplicateSlice => {
            let n = span(rng, 65536.min(len));
            let from = position(rng, len.saturating_sub(n) + 1);
            let slice: Vec<u8> = data.iter().skip(from).take(n).copied().collect();
            let at = position(rng, len + 1);
            data.splice(at..at, slice);
        }
        Mutation::SwapSlices => {
            if len < 4 {
                return;
            }
            let half = len / 2;
            let n = span(rng, 4096.min(half));
            let a = position(rng, half - n + 1);
            let b = half + position(rng, len - half - n + 1);
            for i in 0..n {
                data.swap(a + i, b + i);
            }
        }
        Mutation::StructuralByte => structural_byte(data, text, rng),
        Mutation::DeepNesting => deep_nesting(data, text, rng),
        Mutation::InvalidUtf8 => {
            const BAD: [&[u8]; 6] = [
                b"\xff",
                b"\xc0\xaf",
                b"\xed\xa0\x80",
                b"\x80\x80\x80",
                b"\xf4\x90\x80\x80",
                b"\xe2\x82",
            ];
            // Inside a string when there is one: right after a quote.
            let quotes: Vec<usize> = if text {
                data.iter()
                    .enumerate()
                    .filter(|(_, b)| **b == b'"')
                    .map(|(i, _)| i + 1)
                    .take(1 << 16)
                    .collect()
            } else {
                Vec::new()
            };
            for _ in 0..rng.range(1, 4) {
                let at = if quotes.is_empty() {
                    position(rng, data.len() + 1)
                } else {
                    quotes[position(rng, quotes.len())].min(data.len())
                };
                let bad = BAD[position(rng, BAD.len())];
                data.splice(at..at, bad.iter().copied());
            }
        }
        Mutation::ExtremeValue => extreme_value(data, text, rng),
    }
}

fn structural_byte(data: &mut [u8], text: bool, rng: &mut SeededRng) {
    const STRUCTURAL: &[u8] = b"[]{}\",:\\";
    if !text {
        // Binary formats: a tag byte or a wire type changed.
        if let Some(at) = (!data.is_empty()).then(|| position(rng, data.len())) {
            data[at] = (data[at] & 0xF8) | rng.range(0, 8) as u8;
        }
        return;
    }
    let candidates: Vec<usize> = data
        .iter()
        .enumerate()
        .filter(|(_, b)| STRUCTURAL.contains(b))
        .map(|(i, _)| i)
        .take(1 << 20)
        .collect();
    if candidates.is_empty() {
        return;
    }
    let at = candidates[position(rng, candidates.len())];
    data[at] = STRUCTURAL[position(rng, STRUCTURAL.len())];
}

fn deep_nesting(data: &mut Vec<u8>, text: bool, rng: &mut SeededRng) {
    let depth = [1_000, 10_000, 100_000, 1_000_000][position(rng, 4)];
    let at = position(rng, data.len() + 1);
    let insert: Vec<u8> = if text {
        let unit: &[u8] = match rng.range(0, 3) {
            0 => b"[",
            1 => b"{\"a\":",
            _ => b"[{\"args\":",
        };
        unit.repeat(depth)
    } else {
        // Nested length-delimited field 1 headers claiming ever longer
        // bodies: each a tag (field 1, wire type 2) and a 5-byte length.
        let mut v = Vec::with_capacity(depth.min(100_000) * 6);
        for i in 0..depth.min(100_000) {
            v.push(0x0A);
            let claimed = 0x0FFF_FFFFu32.saturating_sub(i as u32 * 6);
            let mut n = claimed;
            for _ in 0..4 {
                v.push((n as u8 & 0x7F) | 0x80);
                n >>= 7;
            }
            v.push((n & 0x7F) as u8);
        }
        v
    };
    data.splice(at..at, insert);
}

fn extreme_value(data: &mut Vec<u8>, text: bool, rng: &mut SeededRng) {
    if text {
        const EXTREMES: [&[u8]; 8] = [
            b"99999999999999999999999999",
            b"-9223372036854775808",
            b"18446744073709551616",
            b"1e999",
            b"-1e308",
            b"-1",
            b"0.0000000000000000000000001",
            b"NaN",
        ];
        // Find a digit run and replace it.
        let digits: Vec<usize> = data
            .windows(2)
            .enumerate()
            .filter(|(_, w)| !w[0].is_ascii_digit() && w[1].is_ascii_digit())
            .map(|(i, _)| i + 1)
            .take(1 << 20)
            .collect();
        if digits.is_empty() {
            return;
        }
        let start = digits[position(rng, digits.len())];
        let end = data[start..]
            .iter()
            .position(|b| !(b.is_ascii_digit() || *b == b'.'))
            .map_or(data.len(), |p| start + p);
        let value = EXTREMES[position(rng, EXTREMES.len())];
        data.splice(start..end, value.iter().copied());
        return;
    }
    // Binary: overwrite a varint-sized window with a maximal varint (10
    // bytes, all continuation bits but the last) or a 5-byte huge length.
    if data.is_empty() {
        return;
    }
    let at = position(rng, data.len());
    let value: &[u8] = if rng.chance(50) {
        b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"
    } else {
        b"\xff\xff\xff\xff\x0f"
    };
    let end = (at + value.len()).min(data.len());
    data.splice(at..end, value.iter().copied());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mutation_changes_a_nonempty_input_and_is_deterministic() {
        let input = br#"{"traceEvents": [{"name": "a", "ph": "X", "ts": 12, "dur": 3}]}"#;
        for m in Mutation::ALL {
            let mut changed = 0;
            for seed in 0..20 {
                let mut a = input.to_vec();
                let mut b = input.to_vec();
                apply(m, &mut a, true, &mut SeededRng::new(seed));
                apply(m, &mut b, true, &mut SeededRng::new(seed));
                assert_eq!(a, b, "{m:?} is not deterministic");
                changed += usize::from(a != input);
            }
            assert!(changed >= 10, "{m:?} changed only {changed} of 20 inputs");
            assert_eq!(Mutation::from_name(m.name()), Some(m));
        }
    }

    #[test]
    fn mutations_of_tiny_inputs_do_not_panic() {
        for len in 0..6 {
            for m in Mutation::ALL {
                for seed in 0..10 {
                    let mut data = vec![b'['; len];
                    apply(m, &mut data, seed % 2 == 0, &mut SeededRng::new(seed));
                }
            }
        }
    }
}
