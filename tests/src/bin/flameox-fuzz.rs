//! `flameox-fuzz`: the seeded mutation campaign over the real binary.
//!
//! ```text
//! flameox-fuzz [--bin PATH] [--seed S] [--seconds N] [--mutants N] [--first I]
//!              [--only I] [--workers N] [--limit-seconds N] [--finds DIR]
//!              [--only-seed TEXT] [--max-rss-mib N]
//! ```
//!
//! Exits 0 when every mutant ended well and every workspace validated clean,
//! 1 on any failure (each printed with the command that reproduces it).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use flameox_tests::fuzz::campaign::{CampaignConfig, run_campaign};
use flameox_tests::fuzz::child::{Launcher, SUPERVISE_FLAG, supervise};
use flameox_tests::fuzz::report::render;
use flameox_tests::fuzz::seeds::{corpus_seeds, generated_seeds};

const USAGE: &str = "usage: flameox-fuzz [--bin PATH] [--seed S] [--seconds N] [--mutants N] [--first I] [--only I] [--workers N] [--limit-seconds N] [--finds DIR] [--only-seed TEXT] [--max-rss-mib N]";

fn parse(args: &[String]) -> Result<CampaignConfig, String> {
    let root = flameox_tests::repo_root();
    let default_bin = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("flameox")))
        .unwrap_or_else(|| PathBuf::from("flameox"));
    let mut c = CampaignConfig {
        launcher: Launcher {
            bin: default_bin,
            supervisor: std::env::current_exe().ok(),
        },
        seed: 1,
        duration: Duration::from_secs(120),
        max_mutants: u64::MAX,
        first: 0,
        only: None,
        per_mutant_limit: Duration::from_secs(10),
        workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
        finds_dir: root.join("target/fuzz-finds"),
        validate_every: 40,
        max_rss_mib: 512,
        seed_filter: None,
    };
    let mut i = 0;
    while i < args.len() {
        let value = args
            .get(i + 1)
            .cloned()
            .ok_or_else(|| format!("{} needs a value", args[i]))?;
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("{}: not a number: {value}", args[i]))
        };
        match args[i].as_str() {
            "--bin" => c.launcher.bin = PathBuf::from(&value),
            "--seed" => c.seed = number()?,
            "--seconds" => c.duration = Duration::from_secs(number()?),
            "--mutants" => c.max_mutants = number()?,
            "--first" => c.first = number()?,
            "--only" => c.only = Some(number()?),
            "--workers" => c.workers = number()?.max(1) as usize,
            "--limit-seconds" => c.per_mutant_limit = Duration::from_secs(number()?),
            "--finds" => c.finds_dir = PathBuf::from(&value),
            "--only-seed" => c.seed_filter = Some(value.clone()),
            "--max-rss-mib" => c.max_rss_mib = number()?,
            other => return Err(format!("unknown option {other}\n{USAGE}")),
        }
        i += 2;
    }
    Ok(c)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(SUPERVISE_FLAG) {
        return match supervise(&args[1..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("flameox-fuzz --supervise: {e}");
                ExitCode::from(2)
            }
        };
    }
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let config = match parse(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let root = flameox_tests::repo_root();
    let scratch = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("no scratch folder: {e}");
            return ExitCode::from(2);
        }
    };
    let mut seeds = corpus_seeds(
        &flameox_tests::corpus(),
        &root.join("tests/fixtures"),
        8 << 20,
    );
    match generated_seeds(scratch.path()) {
        Ok(generated) => seeds.extend(generated),
        Err(e) => {
            eprintln!("generating seed inputs failed: {e}");
            return ExitCode::from(2);
        }
    }
    if let Some(filter) = &config.seed_filter {
        seeds.retain(|s| s.name.contains(filter.as_str()));
    }
    if seeds.is_empty() {
        eprintln!("no seed inputs (is ../shared/corpus there?)");
        return ExitCode::from(2);
    }
    eprintln!(
        "flameox-fuzz: {} seed inputs, binary {}",
        seeds.len(),
        config.launcher.bin.display()
    );
    match run_campaign(&config, &seeds) {
        Ok(report) => {
            print!("{}", render(&report, &config));
            if report.failures() == 0 {
                ExitCode::SUCCESS
            } else {
                println!("finds kept in {}", config.finds_dir.display());
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("the campaign could not run: {e}");
            ExitCode::from(2)
        }
    }
}
