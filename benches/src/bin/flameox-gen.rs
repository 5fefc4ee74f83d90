//! `flameox-gen <format> [options] --out FILE`: writes a seeded trace (same
//! seed and size → same bytes).
//!
//! - `kineto --seed S --events N --streams K [--ops-per-step M]`:
//!   Kineto-shaped Chrome JSON (M: mean operators per `ProfilerStep`,
//!   default 20..60 per step).
//! - `perfetto --seed S --bytes N --threads K --samples M`: Perfetto
//!   SDK-shaped protobuf; M `perf_sample`s per round of K × 64 thread packets.

use std::io::BufWriter;
use std::process::ExitCode;

use flameox_benches::kineto::{KinetoSpec, write_kineto};
use flameox_benches::perfetto::{PerfettoSpec, write_perfetto};

const USAGE: &str = "usage: flameox-gen kineto [--seed S] [--events N] [--streams K] [--ops-per-step M] --out FILE\n       \
     flameox-gen perfetto [--seed S] [--bytes N] [--threads K] [--samples M] --out FILE";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(format) = args.first().cloned() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let (mut seed, mut events, mut streams, mut ops_per_step) = (1, 100_000, 4, 0);
    let (mut bytes, mut threads, mut samples) = (64 << 20, 4, 4);
    let mut out_path: Option<String> = None;
    let mut i = 1;
    while i < args.len() {
        let value = args.get(i + 1).cloned().unwrap_or_default();
        let parsed = value.parse::<u64>();
        match (args[i].as_str(), parsed) {
            ("--seed", Ok(v)) => seed = v,
            ("--events", Ok(v)) => events = v,
            ("--streams", Ok(v)) => streams = v,
            ("--ops-per-step", Ok(v)) => ops_per_step = v,
            ("--bytes", Ok(v)) => bytes = v,
            ("--threads", Ok(v)) => threads = v,
            ("--samples", Ok(v)) => samples = v,
            ("--out", _) => out_path = Some(value),
            (flag, _) => {
                eprintln!("unknown or malformed option {flag}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
        i += 2;
    }
    let Some(path) = out_path else {
        eprintln!("--out FILE is required\n{USAGE}");
        return ExitCode::from(2);
    };
    let file = match std::fs::File::create(&path) {
        Ok(f) => BufWriter::with_capacity(1 << 20, f),
        Err(e) => {
            eprintln!("cannot create {path}: {e}");
            return ExitCode::from(1);
        }
    };
    let written = match format.as_str() {
        "kineto" => write_kineto(
            &KinetoSpec {
                seed,
                events,
                streams,
                ops_per_step,
            },
            file,
        )
        .map(|n| format!("{n} events")),
        "perfetto" => write_perfetto(
            &PerfettoSpec {
                seed,
                bytes,
                threads,
                samples_per_round: samples,
            },
            file,
        )
        .map(|(packets, bytes)| format!("{packets} packets, {bytes} bytes")),
        other => {
            eprintln!("unknown format {other}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match written {
        Ok(what) => {
            eprintln!("wrote {what} to {path}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("writing {path} failed: {e}");
            ExitCode::from(1)
        }
    }
}
