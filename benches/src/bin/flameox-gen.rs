//! `flameox-gen <format> [options] --out FILE`: writes a seeded trace (same
//! seed and size → same bytes) in any format flameox imports.
//!
//! - `kineto --seed S --events N --streams K [--ops-per-step M]`:
//!   Kineto-shaped Chrome JSON (M: mean operators per `ProfilerStep`,
//!   default 20..60 per step).
//!   `--rich-args`: the args `record_shapes=True` and CUPTI add (~300
//!   bytes per event instead of ~180).
//! - `chromium --seed S --events N [--renderers R]`: a Chromium browser
//!   session in Chrome JSON (nested tasks, begin/end pairs, async loads,
//!   instants, counters, flows).
//! - `viztracer --seed S --events N [--threads K]`: viztracer's JSON of a
//!   Python program (deep call trees, children written before parents).
//! - `kineto-job --ranks R [kineto options] --out DIR`: one Kineto file
//!   per rank of an R-process job (`rank<r>.pt.trace.json`, each with its
//!   own seed, GPU and `distributedInfo`), as a multi-GPU run leaves them.
//! - `nccl-job --ranks R [--steps S] [--slow-rank K] [--slow-factor F]
//!   [--slow-cause compute|host] [--seed N] --out DIR`: one data-parallel
//!   PyTorch/NCCL job, one Kineto file per rank on one shared clock
//!   (`rank<r>.pt.trace.json`): S steps of forward/backward kernels and a
//!   gradient all-reduce that ends on every rank together, so every rank
//!   waits in it for the slowest. Rank K (none by default) is F× slower
//!   (default 1.6): its GPU kernels (`compute`, the default) or its host,
//!   stalled in the DataLoader before each step (`host`). The exact
//!   timing model is in `flameox_benches::nccl_job`.
//! - `perfetto --seed S --bytes N --threads K --samples M`: Perfetto
//!   SDK-shaped protobuf; M `perf_sample`s per round of K × 64 thread packets.
//! - `nsys --seed S --events N --threads K --streams M --gpus G`: an Nsight
//!   Systems SQLite export of a training process (N: CUPTI + NVTX rows; K
//!   launching threads, M streams each, on G GPUs).
//! - `folded --seed S --events N [--roots R] [--depth D]`: folded stacks
//!   (`stackcollapse-perf` shape), N distinct stack lines under R roots.
//! - `pprof --seed S --events N [--kind cpu|heap] [--depth D]`: a gzipped
//!   Go-shaped pprof profile with N samples.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use flameox_benches::chromium::{ChromiumSpec, write_chromium};
use flameox_benches::folded::{FoldedSpec, write_folded};
use flameox_benches::kineto::{KinetoArgs, KinetoSpec, write_kineto_args, write_kineto_rank};
use flameox_benches::nccl_job::{NcclJobSpec, SlowCause, write_nccl_job};
use flameox_benches::nsight::{NsightSpec, write_nsight};
use flameox_benches::perfetto::{PerfettoSpec, write_perfetto};
use flameox_benches::pprof::{PprofKind, PprofSpec, write_pprof};
use flameox_benches::viztracer::{VizTracerSpec, write_viztracer};

const USAGE: &str = "usage: flameox-gen kineto [--seed S] [--events N] [--streams K] [--ops-per-step M] [--rich-args] --out FILE\n       \
     flameox-gen chromium [--seed S] [--events N] [--renderers R] --out FILE\n       \
     flameox-gen viztracer [--seed S] [--events N] [--threads K] --out FILE\n       \
     flameox-gen kineto-job --ranks R [--seed S] [--events N] [--streams K] [--ops-per-step M] --out DIR\n       \
     flameox-gen nccl-job --ranks R [--steps S] [--slow-rank K] [--slow-factor F] [--slow-cause compute|host] [--seed N] --out DIR\n       \
     flameox-gen perfetto [--seed S] [--bytes N] [--threads K] [--samples M] --out FILE\n       \
     flameox-gen nsys [--seed S] [--events N] [--threads K] [--streams M] [--gpus G] --out FILE\n       \
     flameox-gen folded [--seed S] [--events N] [--roots R] [--depth D] --out FILE\n       \
     flameox-gen pprof [--seed S] [--events N] [--kind cpu|heap] [--depth D] --out FILE";

/// Parsed options (defaults where not given).
struct Options {
    seed: u64,
    events: u64,
    streams: u64,
    ops_per_step: u64,
    bytes: u64,
    threads: Option<u64>,
    samples: u64,
    gpus: u64,
    roots: u64,
    depth: u64,
    heap: bool,
    ranks: u64,
    rich_args: bool,
    renderers: u64,
    steps: u64,
    slow_rank: Option<u64>,
    slow_factor: f64,
    slow_cause: SlowCause,
    out: Option<String>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        seed: 1,
        events: 100_000,
        streams: 4,
        ops_per_step: 0,
        bytes: 64 << 20,
        threads: None,
        samples: 4,
        gpus: 2,
        roots: 8,
        depth: 40,
        heap: false,
        ranks: 8,
        rich_args: false,
        renderers: 3,
        steps: 4,
        slow_rank: None,
        slow_factor: 1.6,
        slow_cause: SlowCause::Compute,
        out: None,
    };
    let mut i = 0;
    while i < args.len() {
        if args[i] == "--rich-args" {
            o.rich_args = true;
            i += 1;
            continue;
        }
        let value = args.get(i + 1).cloned().unwrap_or_default();
        if args[i] == "--slow-factor" {
            match value.parse::<f64>() {
                Ok(f) if f.is_finite() && (1.0..=100.0).contains(&f) => o.slow_factor = f,
                _ => {
                    return Err(format!(
                        "--slow-factor needs a number in 1..=100, not {value:?}"
                    ));
                }
            }
            i += 2;
            continue;
        }
        let parsed = value.parse::<u64>();
        match (args[i].as_str(), parsed) {
            ("--seed", Ok(v)) => o.seed = v,
            ("--events", Ok(v)) => o.events = v,
            ("--streams", Ok(v)) => o.streams = v,
            ("--ops-per-step", Ok(v)) => o.ops_per_step = v,
            ("--bytes", Ok(v)) => o.bytes = v,
            ("--threads", Ok(v)) => o.threads = Some(v),
            ("--samples", Ok(v)) => o.samples = v,
            ("--gpus", Ok(v)) => o.gpus = v,
            ("--roots", Ok(v)) => o.roots = v,
            ("--depth", Ok(v)) => o.depth = v,
            ("--ranks", Ok(v)) if v > 0 => o.ranks = v,
            ("--renderers", Ok(v)) if v > 0 => o.renderers = v,
            ("--steps", Ok(v)) if v > 0 => o.steps = v,
            ("--slow-rank", Ok(v)) => o.slow_rank = Some(v),
            ("--slow-cause", _) if value == "compute" => o.slow_cause = SlowCause::Compute,
            ("--slow-cause", _) if value == "host" => o.slow_cause = SlowCause::Host,
            ("--kind", _) if value == "cpu" || value == "heap" => o.heap = value == "heap",
            ("--out", _) => o.out = Some(value),
            (flag, _) => return Err(format!("unknown or malformed option {flag}")),
        }
        i += 2;
    }
    Ok(o)
}

fn create(path: &str) -> std::io::Result<BufWriter<std::fs::File>> {
    Ok(BufWriter::with_capacity(
        1 << 20,
        std::fs::File::create(path)?,
    ))
}

/// Writes `format` to `path`; returns what was written.
fn generate(format: &str, o: &Options, path: &str) -> Result<String, String> {
    let fail = |e: std::io::Error| format!("writing {path} failed: {e}");
    match format {
        "kineto" => write_kineto_args(
            &KinetoSpec {
                seed: o.seed,
                events: o.events,
                streams: o.streams,
                ops_per_step: o.ops_per_step,
            },
            if o.rich_args {
                KinetoArgs::Rich
            } else {
                KinetoArgs::Compact
            },
            create(path).map_err(fail)?,
        )
        .map(|n| format!("{n} events"))
        .map_err(fail),
        "chromium" => write_chromium(
            &ChromiumSpec {
                seed: o.seed,
                events: o.events,
                renderers: o.renderers,
            },
            create(path).map_err(fail)?,
        )
        .map(|n| format!("{n} events"))
        .map_err(fail),
        "viztracer" => write_viztracer(
            &VizTracerSpec {
                seed: o.seed,
                events: o.events,
                threads: o.threads.unwrap_or(3),
            },
            create(path).map_err(fail)?,
        )
        .map(|n| format!("{n} events"))
        .map_err(fail),
        "kineto-job" => write_job(o, Path::new(path)),
        "nccl-job" => write_nccl(o, Path::new(path)),
        "perfetto" => write_perfetto(
            &PerfettoSpec {
                seed: o.seed,
                bytes: o.bytes,
                threads: o.threads.unwrap_or(4),
                samples_per_round: o.samples,
            },
            create(path).map_err(fail)?,
        )
        .map(|(packets, bytes)| format!("{packets} packets, {bytes} bytes"))
        .map_err(fail),
        "nsys" => write_nsight(
            &NsightSpec {
                seed: o.seed,
                events: o.events,
                threads: o.threads.unwrap_or(2),
                streams: o.streams,
                gpus: o.gpus,
            },
            Path::new(path),
        )
        .map(|c| {
            format!(
                "{} rows ({} kernels, {} runtime calls, {} memcpy, {} memset, {} syncs, {} NVTX), {} bytes",
                c.events(),
                c.kernels,
                c.runtime,
                c.memcpy,
                c.memset,
                c.sync,
                c.nvtx_rows,
                c.bytes
            )
        })
        .map_err(fail),
        "folded" => {
            let mut out = create(path).map_err(fail)?;
            let spec = FoldedSpec {
                seed: o.seed,
                stacks: o.events,
                roots: o.roots,
                max_depth: o.depth as usize,
            };
            let c = write_folded(&spec, &mut out).map_err(fail)?;
            out.flush().map_err(fail)?;
            Ok(format!(
                "{} stacks, {} samples, {} stack nodes, {} bytes",
                c.lines, c.samples, c.stack_nodes, c.bytes
            ))
        }
        "pprof" => {
            let spec = PprofSpec {
                seed: o.seed,
                kind: if o.heap { PprofKind::Heap } else { PprofKind::Cpu },
                samples: o.events,
                max_depth: o.depth as usize,
            };
            let c = write_pprof(&spec, create(path).map_err(fail)?).map_err(fail)?;
            Ok(format!(
                "{} samples, {} stack nodes, {} locations, {} bytes (gzip)",
                c.samples, c.stack_nodes, c.locations, c.bytes
            ))
        }
        other => Err(format!("unknown format {other}\n{USAGE}")),
    }
}

/// Writes one Kineto file per rank into `dir` (created if missing).
fn write_job(o: &Options, dir: &Path) -> Result<String, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {} failed: {e}", dir.display()))?;
    let spec = KinetoSpec {
        seed: o.seed,
        events: o.events,
        streams: o.streams,
        ops_per_step: o.ops_per_step,
    };
    let mut events = 0;
    for rank in 0..o.ranks {
        let file = dir.join(format!("rank{rank}.pt.trace.json"));
        let fail = |e: std::io::Error| format!("writing {} failed: {e}", file.display());
        let out = BufWriter::with_capacity(1 << 20, std::fs::File::create(&file).map_err(fail)?);
        events += write_kineto_rank(&spec, rank, o.ranks, out).map_err(fail)?;
    }
    Ok(format!("{} rank files, {events} events", o.ranks))
}

/// Writes the per-rank files of an NCCL job into `dir` (created if
/// missing) and summarises its ground truth.
fn write_nccl(o: &Options, dir: &Path) -> Result<String, String> {
    let spec = NcclJobSpec {
        seed: o.seed,
        ranks: o.ranks,
        steps: o.steps,
        slow_rank: o.slow_rank,
        slow_factor: o.slow_factor,
        slow_cause: o.slow_cause,
    };
    let job =
        write_nccl_job(&spec, dir).map_err(|e| format!("writing {} failed: {e}", dir.display()))?;
    let waits = job.truth.per_rank.iter().flatten().map(|s| s.wait_ns);
    let max_wait = waits.clone().max().unwrap_or(0);
    let mean_wait = waits.sum::<u64>() / (job.truth.ranks * job.truth.steps).max(1);
    Ok(format!(
        "{} rank files, {} events, {} bytes (all-reduce transfer {:.3} ms, wait per rank-step max {:.3} ms, mean {:.3} ms)",
        job.files,
        job.events,
        job.bytes,
        job.truth.transfer_ns as f64 / 1e6,
        max_wait as f64 / 1e6,
        mean_wait as f64 / 1e6,
    ))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(format) = args.first().cloned() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let options = match parse(&args[1..]) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let Some(path) = options.out.clone() else {
        eprintln!("--out FILE is required\n{USAGE}");
        return ExitCode::from(2);
    };
    match generate(&format, &options, &path) {
        Ok(what) => {
            eprintln!("wrote {what} to {path}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(if e.starts_with("unknown format") {
                2
            } else {
                1
            })
        }
    }
}
