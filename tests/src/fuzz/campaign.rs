//! The campaign: mutants of every seed input imported through the real
//! binary, each judged on how the import ended, and the workspaces checked
//! with `validate --full` as they fill.
//!
//! Mutant `i` of campaign seed `s` depends on nothing else, so a find is
//! reproduced with `flameox-fuzz --seed s --only i`. Workers take indices in
//! order from a shared counter until the time or count runs out.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::child::{Launcher, run_limited};
use super::plan::{MutantBody, mutant_body, plan, schedule};
use super::report::{CampaignReport, MutantResult, keep_find};
use super::seeds::SeedInput;
use super::verdict::{SeedRefusal, error_code, head, judge, tail};

/// What to run.
#[derive(Debug, Clone)]
pub struct CampaignConfig {
    /// `flameox`, and the supervisor each command runs through.
    pub launcher: Launcher,
    pub seed: u64,
    /// No new mutant starts after this long.
    pub duration: Duration,
    /// At most this many mutants (after `first`).
    pub max_mutants: u64,
    /// The first mutant index.
    pub first: u64,
    /// Run exactly this mutant (and nothing else).
    pub only: Option<u64>,
    /// A mutant's import is a hang past this.
    pub per_mutant_limit: Duration,
    pub workers: usize,
    /// Where finds (mutant bytes and a description) are written.
    pub finds_dir: PathBuf,
    /// `validate --full` after this many mutants of one worker.
    pub validate_every: u64,
    /// Peak RSS above this many MiB (plus 10 % of the mutant) is a failure.
    pub max_rss_mib: u64,
    /// Only seeds whose name contains this.
    pub seed_filter: Option<String>,
}

/// A worker's project: a scratch folder with a workspace, renewed when it
/// has grown past a size so the campaign's disk use stays bounded.
struct WorkerProject {
    dir: tempfile::TempDir,
    since_validation: u64,
    imported_bytes: u64,
}

impl WorkerProject {
    fn new(launcher: &Launcher) -> std::io::Result<WorkerProject> {
        let dir = tempfile::Builder::new().prefix("flameox-fuzz-").tempdir()?;
        let out = run_limited(
            launcher,
            &["init", "--json"],
            dir.path(),
            dir.path(),
            Duration::from_secs(30),
        )?;
        if out.code != Some(0) {
            return Err(std::io::Error::other(format!(
                "flameox init failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        Ok(WorkerProject {
            dir,
            since_validation: 0,
            imported_bytes: 0,
        })
    }

    /// `validate --full`; problems as text (empty when clean).
    fn validate(&mut self, launcher: &Launcher) -> Vec<String> {
        self.since_validation = 0;
        let path = self.dir.path();
        let out = match run_limited(
            launcher,
            &["validate", "--full", "--json"],
            path,
            path,
            Duration::from_secs(120),
        ) {
            Ok(out) => out,
            Err(e) => return vec![format!("validate did not run: {e}")],
        };
        let report: serde_json::Value = match serde_json::from_slice(&out.stdout) {
            Ok(v) => v,
            Err(_) => {
                return vec![format!(
                    "validate printed no report (exit {:?}): {}",
                    out.code,
                    tail(&String::from_utf8_lossy(&out.stderr))
                )];
            }
        };
        let mut problems = Vec::new();
        if report["ok"] != true || out.code != Some(0) {
            problems.push(format!("validate --full is not ok: {}", report["errors"]));
        }
        for key in ["orphans"] {
            if report[key].as_array().is_some_and(|a| !a.is_empty()) {
                problems.push(format!("validate --full found {key}: {}", report[key]));
            }
        }
        if report["staging_entries"].as_u64().unwrap_or(0) > 0 {
            problems.push(format!(
                "staging entries after the import: {}",
                report["staging_entries"]
            ));
        }
        problems
    }
}

/// Shared state of the workers.
struct Shared<'a> {
    config: &'a CampaignConfig,
    seeds: &'a [SeedInput],
    turns: Vec<Vec<usize>>,
    next: AtomicU64,
    end: u64,
    deadline: Instant,
    report: Mutex<CampaignReport>,
    /// How each seed's own import ended, when it ended with a refusal
    /// (filled on first need).
    seed_refusals: Mutex<BTreeMap<usize, Option<SeedRefusal>>>,
}

/// Runs the campaign over `seeds`.
pub fn run_campaign(
    config: &CampaignConfig,
    seeds: &[SeedInput],
) -> std::io::Result<CampaignReport> {
    std::fs::create_dir_all(&config.finds_dir)?;
    let started = Instant::now();
    let (first, end) = match config.only {
        Some(i) => (i, i + 1),
        None => (
            config.first,
            config.first.saturating_add(config.max_mutants),
        ),
    };
    let shared = Shared {
        config,
        seeds,
        turns: schedule(seeds),
        next: AtomicU64::new(first),
        end,
        deadline: started + config.duration,
        report: Mutex::new(CampaignReport::default()),
        seed_refusals: Mutex::new(BTreeMap::new()),
    };
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..config.workers.max(1))
            .map(|_| scope.spawn(|| worker(&shared)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("a worker panicked")))
            })
            .collect::<std::io::Result<Vec<()>>>()
    })?;
    let mut report = shared
        .report
        .into_inner()
        .map_err(|_| std::io::Error::other("report lock poisoned"))?;
    report.results.sort_by_key(|r| r.plan.index);
    report.elapsed = started.elapsed();
    Ok(report)
}

fn worker(shared: &Shared<'_>) -> std::io::Result<()> {
    let config = shared.config;
    let mut project = WorkerProject::new(&config.launcher)?;
    loop {
        if Instant::now() >= shared.deadline && config.only.is_none() {
            break;
        }
        let index = shared.next.fetch_add(1, Ordering::SeqCst);
        if index >= shared.end {
            break;
        }
        let result = run_mutant(shared, &mut project, index)?;
        let failed = result.failure.is_some();
        if let Ok(mut report) = shared.report.lock() {
            report.results.push(result);
        }
        project.since_validation += 1;
        // Validate now and then, and right after a failure (to see its state).
        if failed || project.since_validation >= config.validate_every {
            finish_project(shared, &mut project)?;
            if project.imported_bytes > 512 << 20 || failed {
                project = WorkerProject::new(&config.launcher)?;
            }
        }
    }
    if project.since_validation > 0 {
        finish_project(shared, &mut project)?;
    }
    Ok(())
}

fn finish_project(shared: &Shared<'_>, project: &mut WorkerProject) -> std::io::Result<()> {
    let problems = project.validate(&shared.config.launcher);
    if let Ok(mut report) = shared.report.lock() {
        report.validations += 1;
        report.validation_failures.extend(problems);
    }
    Ok(())
}

fn run_mutant(
    shared: &Shared<'_>,
    project: &mut WorkerProject,
    index: u64,
) -> std::io::Result<MutantResult> {
    let config = shared.config;
    let (mut plan, mut rng) = plan(config.seed, index, &shared.turns);
    let seed = &shared.seeds[plan.seed_input];
    let body = mutant_body(&mut plan, seed, &mut rng);
    let file_name = format!("m{index}-{}", seed.file_name);
    let path = project.dir.path().join(&file_name);
    body.write_to(&path)?;
    let before = head(project.dir.path());
    let scratch = project.dir.path().to_path_buf();
    let out = run_limited(
        &config.launcher,
        &["import", &file_name, "--json"],
        project.dir.path(),
        &scratch,
        config.per_mutant_limit,
    )?;
    let seed_index = plan.seed_input;
    let (outcome, mut failure) = judge(&out, &before, project.dir.path(), || {
        seed_refusal(shared, seed_index)
    });
    let rss_cap_kib = (config.max_rss_mib << 10) + body.len() / 10 / 1024;
    if failure.is_none() && out.max_rss_kib > rss_cap_kib {
        failure = Some(format!(
            "peak RSS {} MiB above the cap of {} MiB",
            out.max_rss_kib >> 10,
            rss_cap_kib >> 10
        ));
    }
    body.remove(&path);
    project.imported_bytes += body.len();
    let result = MutantResult {
        seed_name: seed.name.clone(),
        format: seed.format.clone(),
        bytes: body.len(),
        outcome,
        elapsed: out.elapsed,
        cpu: out.cpu,
        max_rss_kib: out.max_rss_kib,
        failure,
        plan,
    };
    if result.failure.is_some() {
        keep_find(
            config,
            &result,
            body.find_bytes(result.plan.damaged_file),
            &out,
        )?;
    }
    Ok(result)
}

/// Imports the undamaged seed once (in a project of its own) and notes a
/// refusal other than exit 5.
fn seed_refusal(shared: &Shared<'_>, seed_index: usize) -> Option<SeedRefusal> {
    if let Some(known) = shared.seed_refusals.lock().ok()?.get(&seed_index) {
        return known.clone();
    }
    let seed = shared.seeds.get(seed_index)?;
    let project = WorkerProject::new(&shared.config.launcher).ok()?;
    MutantBody::of_seed(seed)
        .write_to(&project.dir.path().join(&seed.file_name))
        .ok()?;
    let out = run_limited(
        &shared.config.launcher,
        &["import", &seed.file_name, "--json"],
        project.dir.path(),
        project.dir.path(),
        shared.config.per_mutant_limit,
    )
    .ok()?;
    let refusal = match out.code {
        Some(exit) if exit != 0 && exit != 5 && !out.timed_out => Some(SeedRefusal {
            exit,
            code: error_code(&out),
        }),
        _ => None,
    };
    if let Ok(mut known) = shared.seed_refusals.lock() {
        known.insert(seed_index, refusal.clone());
    }
    refusal
}
