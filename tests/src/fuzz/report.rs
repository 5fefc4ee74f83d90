//! The campaign's figures, and its finds kept for reproduction.

use std::collections::BTreeMap;
use std::time::Duration;

use super::campaign::CampaignConfig;
use super::child::ChildOutcome;
use super::plan::MutantPlan;

/// The verdict on one mutant.
#[derive(Debug, Clone)]
pub struct MutantResult {
    pub plan: MutantPlan,
    pub seed_name: String,
    pub format: String,
    pub bytes: u64,
    pub outcome: String,
    pub elapsed: Duration,
    /// CPU time of the import (what the limit applies to).
    pub cpu: Duration,
    pub max_rss_kib: u64,
    /// Why this is a failure (empty when it is not).
    pub failure: Option<String>,
}

/// Totals of a campaign.
#[derive(Debug, Default)]
pub struct CampaignReport {
    pub results: Vec<MutantResult>,
    /// `validate --full` runs and the problems they found.
    pub validations: u64,
    pub validation_failures: Vec<String>,
    pub elapsed: Duration,
}

impl CampaignReport {
    pub fn failures(&self) -> usize {
        self.results.iter().filter(|r| r.failure.is_some()).count() + self.validation_failures.len()
    }
}

/// The command that runs mutant `index` again (the seed filter changes the
/// schedule, so it is part of the command).
pub fn reproduce(config: &CampaignConfig, index: u64) -> String {
    match &config.seed_filter {
        Some(filter) => format!(
            "flameox-fuzz --seed {} --only-seed '{filter}' --only {index}",
            config.seed
        ),
        None => format!("flameox-fuzz --seed {} --only {index}", config.seed),
    }
}

/// Writes a find's bytes and what happened beside them.
pub fn keep_find(
    config: &CampaignConfig,
    r: &MutantResult,
    bytes: &[u8],
    out: &ChildOutcome,
) -> std::io::Result<()> {
    let dir = &config.finds_dir;
    let stem = format!("seed{}-m{}", config.seed, r.plan.index);
    std::fs::write(dir.join(format!("{stem}.bin")), bytes)?;
    let text = format!(
        "seed input: {}\nformat: {}\nmutations: {}\noutcome: {} after {:?}, peak RSS {} MiB\nfailure: {}\nreproduce: {}\nstderr:\n{}\n",
        r.seed_name,
        r.format,
        r.plan.describe(),
        r.outcome,
        r.elapsed,
        r.max_rss_kib >> 10,
        r.failure.as_deref().unwrap_or(""),
        reproduce(config, r.plan.index),
        String::from_utf8_lossy(&out.stderr),
    );
    std::fs::write(dir.join(format!("{stem}.txt")), text)
}

/// The figures of a report as text: per format, per outcome, the slowest.
pub fn render(report: &CampaignReport, config: &CampaignConfig) -> String {
    let mut per_format: BTreeMap<&str, BTreeMap<&str, u64>> = BTreeMap::new();
    let mut per_mutation: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &report.results {
        *per_format
            .entry(&r.format)
            .or_default()
            .entry(&r.outcome)
            .or_default() += 1;
        for m in &r.plan.mutations {
            *per_mutation.entry(m.name()).or_default() += 1;
        }
    }
    let mut out = format!(
        "fuzz campaign: seed {}, {} mutants in {:.1} s ({} workers, limit {:?} each), {} validate --full runs\n",
        config.seed,
        report.results.len(),
        report.elapsed.as_secs_f64(),
        config.workers,
        config.per_mutant_limit,
        report.validations
    );
    out += "mutants per format (outcomes):\n";
    for (format, outcomes) in &per_format {
        let total: u64 = outcomes.values().sum();
        let detail: Vec<String> = outcomes.iter().map(|(o, n)| format!("{o}: {n}")).collect();
        out += &format!("  {format:<24} {total:>6}  ({})\n", detail.join(", "));
    }
    out += "mutations applied: ";
    out += &per_mutation
        .iter()
        .map(|(m, n)| format!("{m} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    out += "\n";
    let mut by_time: Vec<&MutantResult> = report.results.iter().collect();
    by_time.sort_by_key(|r| std::cmp::Reverse(r.cpu));
    for r in by_time.iter().take(3) {
        out += &format!(
            "slowest: m{} {:.2} s CPU ({:.2} s wall), {} bytes of {} ({}), {}\n",
            r.plan.index,
            r.cpu.as_secs_f64(),
            r.elapsed.as_secs_f64(),
            r.bytes,
            r.seed_name,
            r.plan.describe(),
            r.outcome
        );
    }
    if let Some(r) = report.results.iter().max_by_key(|r| r.max_rss_kib) {
        out += &format!(
            "largest peak RSS: m{} {} MiB ({}, {} bytes)\n",
            r.plan.index,
            r.max_rss_kib >> 10,
            r.seed_name,
            r.bytes
        );
    }
    for r in report.results.iter().filter(|r| r.failure.is_some()) {
        out += &format!(
            "FAILURE m{} ({}; {}): {}\n  reproduce: {}\n",
            r.plan.index,
            r.seed_name,
            r.plan.describe(),
            r.failure.as_deref().unwrap_or(""),
            reproduce(config, r.plan.index)
        );
    }
    for v in &report.validation_failures {
        out += &format!("FAILURE validate: {v}\n");
    }
    out += &format!("failures: {}\n", report.failures());
    out
}
