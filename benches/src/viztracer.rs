//! A viztracer-shaped Chrome JSON trace generator: what `viztracer` writes
//! for a Python program (every function entry and exit).
//!
//! Shape: `X` events only (category `FEE`), named `function (file:line)`
//! or `builtins.name`, fractional microsecond `ts` and `dur`, emitted when
//! each call returns (children before their parent), deep recursive call
//! trees on a few threads of one process, `viztracer_metadata` at the end.

use std::io::{self, Write};

use crate::rng::SeededRng;

/// What to generate.
#[derive(Debug, Clone)]
pub struct VizTracerSpec {
    pub seed: u64,
    /// Approximate number of calls to write.
    pub events: u64,
    pub threads: u64,
}

const FUNCTIONS: &[&str] = &[
    "fib (/home/user/project/compute.py:12)",
    "parse_record (/home/user/project/io/reader.py:88)",
    "normalize (/home/user/project/transform.py:41)",
    "__init__ (/usr/lib/python3.12/dataclasses.py:310)",
    "_compile (/usr/lib/python3.12/re/__init__.py:280)",
    "visit (/home/user/project/tree.py:27)",
    "<listcomp> (/home/user/project/transform.py:57)",
    "run (/home/user/project/main.py:5)",
];

const BUILTINS: &[&str] = &[
    "builtins.len",
    "builtins.isinstance",
    "method 'append' of 'list' objects",
    "builtins.sorted",
    "method 'join' of 'str' objects",
];

/// `12.345` µs text for a ns value.
fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// Writes the trace; returns the number of events written.
pub fn write_viztracer<W: Write>(spec: &VizTracerSpec, mut out: W) -> io::Result<u64> {
    let mut rng = SeededRng::new(spec.seed);
    out.write_all(b"{\"traceEvents\": [")?;
    let pid = 31_337u64;
    let mut written = 0u64;
    let mut first = true;
    let mut emit = |out: &mut W, body: String| -> io::Result<()> {
        out.write_all(if first { b"" } else { b", " })?;
        first = false;
        out.write_all(body.as_bytes())
    };
    emit(
        &mut out,
        format!(
            "{{\"ph\": \"M\", \"pid\": {pid}, \"tid\": {pid}, \"name\": \"process_name\", \"args\": {{\"name\": \"python3 main.py\"}}}}"
        ),
    )?;
    let threads = spec.threads.max(1);
    for t in 0..threads {
        let tid = pid + t;
        let name = if t == 0 {
            "MainThread".to_string()
        } else {
            format!("Thread-{t} (worker)")
        };
        emit(
            &mut out,
            format!(
                "{{\"ph\": \"M\", \"pid\": {pid}, \"tid\": {tid}, \"name\": \"thread_name\", \"args\": {{\"name\": \"{name}\"}}}}"
            ),
        )?;
    }
    let mut clock = vec![5_000_000_000u64; threads as usize];
    // A call tree is built depth first; each call is written when it returns.
    let mut stack: Vec<(usize, u64, u32)> = Vec::new();
    while written < spec.events {
        let t = rng.range(0, threads) as usize;
        let tid = pid + t as u64;
        let mut now = clock[t] + rng.range(200, 3_000);
        stack.clear();
        stack.push((
            rng.range(0, FUNCTIONS.len() as u64) as usize,
            now,
            rng.range(2, 6) as u32,
        ));
        while let Some(&(_, _, children_left)) = stack.last() {
            let depth = stack.len() as u32;
            now += rng.range(100, 1_500);
            if children_left > 0 && depth < 40 && written < spec.events {
                if let Some(top) = stack.last_mut() {
                    top.2 -= 1;
                }
                if rng.chance(40) {
                    // A builtin: a leaf, returns at once.
                    let name = BUILTINS[rng.range(0, BUILTINS.len() as u64) as usize];
                    let dur = rng.range(80, 900);
                    emit(
                        &mut out,
                        format!(
                            "{{\"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": {}, \"name\": \"{name}\", \"ph\": \"X\", \"cat\": \"FEE\"}}",
                            us(now),
                            us(dur)
                        ),
                    )?;
                    written += 1;
                    now += dur;
                } else {
                    let fanout = if rng.chance(30) {
                        rng.range(1, 4) as u32
                    } else {
                        0
                    };
                    stack.push((rng.range(0, FUNCTIONS.len() as u64) as usize, now, fanout));
                }
                continue;
            }
            let Some((function, start, _)) = stack.pop() else {
                break;
            };
            emit(
                &mut out,
                format!(
                    "{{\"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": {}, \"name\": \"{}\", \"ph\": \"X\", \"cat\": \"FEE\"}}",
                    us(start),
                    us(now - start),
                    FUNCTIONS[function]
                ),
            )?;
            written += 1;
        }
        clock[t] = now;
    }
    out.write_all(b"], \"viztracer_metadata\": {\"version\": \"1.1.1\", \"overflow\": false}}\n")?;
    out.flush()?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viztracer_same_seed_same_bytes_nested_calls_children_first() {
        let spec = VizTracerSpec {
            seed: 3,
            events: 5_000,
            threads: 2,
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let n = write_viztracer(&spec, &mut a).unwrap();
        write_viztracer(&spec, &mut b).unwrap();
        assert_eq!(a, b);
        let doc: serde_json::Value = serde_json::from_slice(&a).unwrap();
        let calls: Vec<&serde_json::Value> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .collect();
        assert_eq!(calls.len() as u64, n);
        // Some call contains the one written just before it (a child
        // returns first), and none overlaps it partially.
        let span = |e: &serde_json::Value| {
            let ts = e["ts"].as_f64().unwrap();
            (ts, ts + e["dur"].as_f64().unwrap())
        };
        let nested = calls
            .windows(2)
            .filter(|w| w[0]["tid"] == w[1]["tid"])
            .filter(|w| {
                let (child, parent) = (span(w[0]), span(w[1]));
                parent.0 <= child.0 && child.1 <= parent.1
            })
            .count();
        assert!(nested > 100, "only {nested} children before their parent");
        let mut c = Vec::new();
        write_viztracer(&VizTracerSpec { seed: 4, ..spec }, &mut c).unwrap();
        assert_ne!(a, c);
    }
}
