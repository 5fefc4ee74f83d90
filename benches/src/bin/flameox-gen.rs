//! `flameox-gen kineto --seed S --events N [--streams K] --out FILE`: writes a
//! seeded Kineto-shaped trace (same seed → same bytes).

use std::io::BufWriter;
use std::process::ExitCode;

use flameox_benches::kineto::{KinetoSpec, write_kineto};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut spec = KinetoSpec {
        seed: 1,
        events: 100_000,
        streams: 4,
    };
    let mut out_path: Option<String> = None;
    let Some(format) = args.first() else {
        eprintln!("usage: flameox-gen kineto [--seed S] [--events N] [--streams K] --out FILE");
        return ExitCode::from(2);
    };
    let mut i = 1;
    while i < args.len() {
        let value = args.get(i + 1).cloned().unwrap_or_default();
        let parsed = value.parse::<u64>();
        match (args[i].as_str(), parsed) {
            ("--seed", Ok(v)) => spec.seed = v,
            ("--events", Ok(v)) => spec.events = v,
            ("--streams", Ok(v)) => spec.streams = v,
            ("--out", _) => out_path = Some(value),
            (flag, _) => {
                eprintln!("unknown or malformed option {flag}");
                return ExitCode::from(2);
            }
        }
        i += 2;
    }
    if format != "kineto" {
        eprintln!("unknown format {format}; available: kineto");
        return ExitCode::from(2);
    }
    let Some(path) = out_path else {
        eprintln!("--out FILE is required");
        return ExitCode::from(2);
    };
    let file = match std::fs::File::create(&path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("cannot create {path}: {e}");
            return ExitCode::from(1);
        }
    };
    match write_kineto(&spec, BufWriter::with_capacity(1 << 20, file)) {
        Ok(n) => {
            eprintln!("wrote {n} events to {path}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("writing {path} failed: {e}");
            ExitCode::from(1)
        }
    }
}
