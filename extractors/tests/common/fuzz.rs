//! The driver of the structure-aware fuzz targets (`structured_fuzz.rs`):
//! seeded random bytes → `arbitrary::Unstructured` → a well-framed input of
//! one format (built by the target) → the extractor, in-process, on a
//! thread with a time limit. A panic, or a case that does not end in time,
//! fails the test with the environment that replays exactly that case.
//!
//! - `FLAMEOX_FUZZ_SECONDS` (default 6): time per target.
//! - `FLAMEOX_FUZZ_SEED` (default 1): campaign seed.
//! - `FLAMEOX_FUZZ_CASE`: run only this case of the seed.
//!
//! Every case a campaign once failed on is listed in [`FINDS`] and runs
//! first on every run: how far the budget reaches depends on the machine,
//! a regression must not.
//!
//! Stable Rust, no sanitizer: this is `arbitrary`-driven generation, not
//! coverage-guided fuzzing. Each `case` function is also a ready libFuzzer
//! body (`fuzz_target!(|data: &[u8]| case(data))`).

use std::sync::mpsc;
use std::time::{Duration, Instant};

use arbitrary::Unstructured;

/// A case past this is a hang.
const CASE_LIMIT: Duration = Duration::from_secs(10);

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// xorshift64*: the bytes of case `i` depend on the seed and `i` only.
fn case_bytes(seed: u64, case: u64) -> Vec<u8> {
    let mut x = (seed ^ case.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1;
    let mut next = || {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let len = 256 + (next() % 16_384) as usize;
    (0..len).map(|_| next() as u8).collect()
}

/// `(target, seed, case)` the campaign failed on, fixed since.
const FINDS: &[(&str, u64, u64)] = &[
    // A slice from near i64::MIN to near i64::MAX: self time overflowed.
    ("perfetto_protobuf", 1, 4000),
];

/// Runs case `i` of `seed` on a thread with the time limit; panics with
/// the replay environment if it panicked or hung; whether it made evidence.
fn run_case(target: &str, case: fn(&[u8]) -> bool, seed: u64, i: u64) -> bool {
    let data = case_bytes(seed, i);
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::Builder::new()
        .name(format!("fuzz-{target}-{i}"))
        .spawn(move || {
            let _ = tx.send(case(&data));
        })
        .expect("spawning a fuzz case");
    let replay = format!("FLAMEOX_FUZZ_SEED={seed} FLAMEOX_FUZZ_CASE={i}");
    let evidence = match rx.recv_timeout(CASE_LIMIT) {
        Ok(evidence) => evidence,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{target}: case {i} did not end within {CASE_LIMIT:?} (replay: {replay})")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            let _ = worker.join();
            panic!("{target}: case {i} panicked (replay: {replay})");
        }
    };
    let _ = worker.join();
    evidence
}

/// Runs `case` over seeded inputs for the time budget, after this
/// target's [`FINDS`]; returns how many cases ran. A case returns whether
/// its input made evidence (rows), so the figures show how far past
/// parsing the generated inputs get.
pub fn drive(target: &str, case: fn(&[u8]) -> bool) -> u64 {
    let seed = env_u64("FLAMEOX_FUZZ_SEED").unwrap_or(1);
    let budget = Duration::from_secs(env_u64("FLAMEOX_FUZZ_SECONDS").unwrap_or(6));
    let only = env_u64("FLAMEOX_FUZZ_CASE");
    let started = Instant::now();
    let mut ran = 0;
    let mut with_evidence = 0;
    if only.is_none() {
        for &(_, find_seed, i) in FINDS.iter().filter(|f| f.0 == target) {
            with_evidence += u64::from(run_case(target, case, find_seed, i));
            ran += 1;
        }
    }
    let mut i = only.unwrap_or(0);
    loop {
        with_evidence += u64::from(run_case(target, case, seed, i));
        ran += 1;
        i += 1;
        if only.is_some() || started.elapsed() >= budget {
            break;
        }
    }
    eprintln!(
        "{target}: {ran} cases in {:.1} s, {with_evidence} made evidence",
        started.elapsed().as_secs_f64()
    );
    ran
}

/// A number biased towards what breaks code: small, boundaries, extremes.
pub fn number(u: &mut Unstructured<'_>) -> i64 {
    match u.int_in_range(0..=9u8).unwrap_or(0) {
        0..=3 => u.int_in_range(0..=16).unwrap_or(0),
        4 => u.int_in_range(-16..=-1).unwrap_or(-1),
        5 => *u
            .choose(&[
                i64::MAX,
                i64::MIN,
                i64::MAX - 1,
                i32::MAX as i64,
                u32::MAX as i64,
                0,
            ])
            .unwrap_or(&0),
        6..=7 => u.int_in_range(0..=1_000_000_000_000).unwrap_or(0),
        _ => u.arbitrary().unwrap_or(0),
    }
}

/// A JSON number's text: integers, decimals, exponents, out of range.
pub fn json_number(u: &mut Unstructured<'_>) -> String {
    match u.int_in_range(0..=7u8).unwrap_or(0) {
        0..=3 => number(u).to_string(),
        4 => format!(
            "{}.{}",
            number(u),
            u.int_in_range(0..=999_999u32).unwrap_or(0)
        ),
        5 => format!(
            "{}e{}",
            number(u) % 1000,
            u.int_in_range(-400..=400i32).unwrap_or(0)
        ),
        6 => "99999999999999999999999999".to_owned(),
        _ => format!("\"{}\"", number(u)),
    }
}

/// A JSON string literal from `vocabulary`, sometimes escaped, empty,
/// with control characters or long.
pub fn json_string(u: &mut Unstructured<'_>, vocabulary: &[&str]) -> String {
    let word = u.choose(vocabulary).copied().unwrap_or("x");
    match u.int_in_range(0..=9u8).unwrap_or(0) {
        0 => "\"\"".to_owned(),
        1 => format!("\"{word}\\u00e9\\n\\\"q\\\"\""),
        2 => format!("\"{word}\t\u{1}\""),
        3 => format!(
            "\"{}\"",
            word.repeat(u.int_in_range(1..=2000usize).unwrap_or(1))
        ),
        _ => format!("\"{word}\""),
    }
}

/// Any JSON value, nested at most `depth` deep, keys from `keys`.
pub fn json_value(u: &mut Unstructured<'_>, keys: &[&str], depth: u32) -> String {
    let kind = if depth == 0 {
        u.int_in_range(0..=3u8).unwrap_or(0)
    } else {
        u.int_in_range(0..=5u8).unwrap_or(0)
    };
    match kind {
        0 => json_number(u),
        1 => json_string(u, keys),
        2 => (*u.choose(&["null", "true", "false"]).unwrap_or(&"null")).to_owned(),
        3 => json_number(u),
        4 => {
            let n = u.int_in_range(0..=6usize).unwrap_or(0);
            let items: Vec<String> = (0..n).map(|_| json_value(u, keys, depth - 1)).collect();
            format!("[{}]", items.join(","))
        }
        _ => {
            let n = u.int_in_range(0..=6usize).unwrap_or(0);
            let items: Vec<String> = (0..n)
                .map(|_| {
                    format!(
                        "{}:{}",
                        json_string(u, keys),
                        json_value(u, keys, depth - 1)
                    )
                })
                .collect();
            format!("{{{}}}", items.join(","))
        }
    }
}

/// Sometimes damages a finished text: cut, a byte replaced, a closer lost.
pub fn damage(u: &mut Unstructured<'_>, mut text: Vec<u8>) -> Vec<u8> {
    if text.is_empty() {
        return text;
    }
    match u.int_in_range(0..=7u8).unwrap_or(0) {
        0 => {
            let at = u.int_in_range(0..=text.len() - 1).unwrap_or(0);
            text.truncate(at);
        }
        1 => {
            let at = u.int_in_range(0..=text.len() - 1).unwrap_or(0);
            text[at] = *u.choose(b"[]{}\",:\\\x00\xff").unwrap_or(&b'}');
        }
        _ => {}
    }
    text
}
