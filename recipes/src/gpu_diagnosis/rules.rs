//! The anti-patterns a diagnosis names, each a declared rule with its
//! threshold, what it costs, the fix, and the call that shows it.
//! `summarize_target` lists the ones that fire, most time at stake first;
//! every threshold lives here and nowhere else. Most rules read an
//! `analyze_gpu_diagnosis` answer ([`diagnose`]); starvation reads the
//! device time of the one idle definition (`analyze_gpu_gaps`,
//! [`starvation`]).

use serde::{Deserialize, Serialize};

use super::answer::DiagnosisAnswer;
use super::params::DiagnosisSection;
use crate::time_accounting::DeviceTime;

/// The operation that shows most rules' numbers.
const DIAGNOSIS: &str = "analyze_gpu_diagnosis";

/// One rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    pub name: &'static str,
    /// Fires at or above this, in `unit`.
    pub threshold: f64,
    pub unit: &'static str,
    pub fix: &'static str,
    /// The operation that shows the numbers, and its section if it has any.
    pub operation: &'static str,
    pub section: Option<DiagnosisSection>,
}

pub const SYNC_PER_LAUNCH: Rule = Rule {
    name: "sync_after_launches",
    threshold: 0.5,
    unit: "synchronize calls per kernel launch",
    fix: "synchronize once per step or where a result is read; order streams with events; capture the loop in a CUDA graph",
    operation: DIAGNOSIS,
    section: Some(DiagnosisSection::Copies),
};

pub const PAGEABLE_COPIES: Rule = Rule {
    name: "pageable_copies",
    threshold: 1_048_576.0,
    unit: "bytes copied from or to pageable host memory",
    fix: "pin host buffers (cudaHostAlloc/cudaHostRegister, DataLoader pin_memory=True) and copy asynchronously (cudaMemcpyAsync, non_blocking=True)",
    operation: DIAGNOSIS,
    section: Some(DiagnosisSection::Copies),
};

pub const UNDERFILLED_GRIDS: Rule = Rule {
    name: "underfilled_grids",
    threshold: 10.0,
    unit: "% of compute kernel time in kernels with fewer blocks than SMs",
    fix: "launch at least one block per SM, ideally several waves: bigger batches or tiles, split-K, a grid sized to SMs × resident blocks",
    operation: DIAGNOSIS,
    section: Some(DiagnosisSection::Geometry),
};

pub const EXPOSED_COMMUNICATION: Rule = Rule {
    name: "exposed_communication",
    threshold: 50.0,
    unit: "% of collective kernel time transferring with no compute kernel running (waits for a late rank excluded)",
    fix: "overlap collectives with compute: DDP bucket_cap_mb, FSDP prefetch, async collectives waited on late",
    operation: DIAGNOSIS,
    section: Some(DiagnosisSection::Collectives),
};

pub const GPU_STARVATION: Rule = Rule {
    name: "gpu_starvation",
    threshold: 20.0,
    unit: "% of the span (the steps, else the trace) a device sat idle because its next work was launched after it went idle (starved gaps), when that is its largest kind of gap",
    fix: "see the launching thread in the longest starved gaps; load data in workers (num_workers, pin_memory), drop per-step syncs and .item(), use CUDA graphs",
    operation: "analyze_gpu_gaps",
    section: None,
};

/// A straggler also arrives last at this share of matched collectives.
pub const STRAGGLER_LAST_SHARE: f64 = 0.5;

pub const STRAGGLER: Rule = Rule {
    name: "straggler_rank",
    threshold: 5.0,
    unit: "% of the median rank's device span by which the rank arriving last at most collectives (at least half) was late",
    fix: "look at that rank alone: its kernels (uneven shards, a slower or throttled GPU) or its host (data loading, CPU contention)",
    operation: DIAGNOSIS,
    section: Some(DiagnosisSection::Ranks),
};

/// Every rule, in the order they are checked.
pub const RULES: [Rule; 6] = [
    GPU_STARVATION,
    STRAGGLER,
    SYNC_PER_LAUNCH,
    PAGEABLE_COPIES,
    UNDERFILLED_GRIDS,
    EXPOSED_COMMUNICATION,
];

/// A rule that fired.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    pub rule: String,
    /// The measured value, in the rule's unit, and its threshold.
    pub measured: f64,
    pub threshold: f64,
    pub unit: String,
    /// Device or host time at stake.
    pub time_ns: i64,
    /// The numbers behind it, in words.
    pub evidence: String,
    pub fix: String,
    /// The operation that shows it, and its section if it has any.
    pub operation: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<DiagnosisSection>,
}

fn fired(rule: &Rule, measured: f64, time_ns: i64, evidence: String) -> Option<Diagnosis> {
    (measured >= rule.threshold).then(|| Diagnosis {
        rule: rule.name.to_owned(),
        measured,
        threshold: rule.threshold,
        unit: rule.unit.to_owned(),
        time_ns,
        evidence,
        fix: rule.fix.to_owned(),
        operation: rule.operation.to_owned(),
        section: rule.section,
    })
}

fn ms(ns: i64) -> String {
    format!("{:.2} ms", ns as f64 / 1e6)
}

/// The rules `answer` fires, most time at stake first.
pub fn diagnose(a: &DiagnosisAnswer) -> Vec<Diagnosis> {
    let mut out = Vec::new();
    if let Some(r) = &a.ranks
        && let Some(h) = r.holders.first()
        && r.matched_collectives > 0
        && h.times_last as f64 >= STRAGGLER_LAST_SHARE * r.matched_collectives as f64
        && let Some(span) = r.span_ns.as_ref().filter(|s| s.median > 0)
    {
        let late_pct = h.late_ns as f64 * 100.0 / span.median as f64;
        let who = h
            .rank
            .map_or(h.artifact_id.clone(), |n| format!("rank {n}"));
        let fix = match h.cause.as_str() {
            "own GPU work" => format!(
                "{who}'s kernels ran longer: check its shard or batch size and its GPU's clocks (analyze_gpu_breakdown on {who} against another rank)"
            ),
            "host launched late" => format!(
                "{who}'s host launched late: check its data loading and CPU contention (analyze_gpu_gaps on {who})"
            ),
            _ => STRAGGLER.fix.to_owned(),
        };
        out.extend(
            fired(
                &STRAGGLER,
                late_pct,
                h.late_ns,
                format!(
                    "{who} arrived last at {} of {} collectives, {} after the median rank ({})",
                    h.times_last,
                    r.matched_collectives,
                    ms(h.late_ns),
                    h.cause
                ),
            )
            .map(|d| Diagnosis { fix, ..d }),
        );
    }
    if let Some(c) = &a.copies {
        if let Some(w) = c.host_waits.first()
            && let Some(per) = w.syncs_per_launch
            && w.sync_calls >= 10
        {
            out.extend(fired(
                &SYNC_PER_LAUNCH,
                per,
                w.sync_ns,
                format!(
                    "{} synchronize calls ({}) for {} kernel launches",
                    w.sync_calls,
                    ms(w.sync_ns),
                    w.kernel_launches
                ),
            ));
        }
        out.extend(fired(
            &PAGEABLE_COPIES,
            c.pageable_bytes as f64,
            c.pageable_ns,
            format!(
                "{} copies of {:.1} MB from or to pageable memory took {}",
                c.pageable_copies,
                c.pageable_bytes as f64 / 1e6,
                ms(c.pageable_ns)
            ),
        ));
    }
    if let Some(d) = a
        .geometry
        .iter()
        .flatten()
        .max_by_key(|d| (d.underfilled_ns, d.compute_ns))
        && d.underfilled_ns > 0
    {
        let top = d
            .underfilled_heaviest
            .as_ref()
            .map(|s| format!("; most: {} with {} blocks", s.name, s.blocks))
            .unwrap_or_default();
        out.extend(fired(
            &UNDERFILLED_GRIDS,
            d.underfilled_pct_of_compute,
            d.underfilled_ns,
            format!(
                "{} kernels ({}) ran fewer blocks than the device's {} SMs{top}",
                d.underfilled_kernels,
                ms(d.underfilled_ns),
                d.sm_count.unwrap_or(0)
            ),
        ));
    }
    if let Some(c) = a.collectives.as_ref().filter(|c| c.time_ns > 0) {
        out.extend(fired(
            &EXPOSED_COMMUNICATION,
            c.exposed_after_last_arrival_ns as f64 * 100.0 / c.time_ns as f64,
            c.exposed_after_last_arrival_ns,
            format!(
                "{} of {} in {} collective kernels transferred with no compute kernel beside them{}",
                ms(c.exposed_after_last_arrival_ns),
                ms(c.time_ns),
                c.kernels,
                match c.matched_instances {
                    // No other rank's trace to tell when the last arrived.
                    0 => " (not matched across ranks: includes waiting for the other ranks)",
                    _ => "",
                }
            ),
        ));
    }
    out.sort_by(|a, b| b.time_ns.cmp(&a.time_ns).then_with(|| a.rule.cmp(&b.rule)));
    out
}

/// The starvation rule over each device's time in its span: the device
/// starved longest, when starved gaps are its largest kind of gap and last
/// at least the threshold's share of its span. `devices` is every device of
/// the target (all ranks), before any is left out of an answer.
pub fn starvation(devices: &[DeviceTime]) -> Option<Diagnosis> {
    let starved_pct = |d: &DeviceTime| d.idle.starved_ns as f64 * 100.0 / d.span.dur_ns as f64;
    let firing = |d: &&DeviceTime| {
        d.span.dur_ns > 0
            && d.idle.starved_ns >= d.idle.stalled_ns.max(d.idle.unlinked_ns)
            && starved_pct(d) >= GPU_STARVATION.threshold
    };
    let count = devices.iter().filter(firing).count();
    let d = devices.iter().filter(firing).max_by(|a, b| {
        (a.idle.starved_ns, &b.artifact_id).cmp(&(b.idle.starved_ns, &a.artifact_id))
    })?;
    let name = d.device.map_or("GPU".to_owned(), |n| format!("GPU {n}"));
    let others = match count {
        1 => String::new(),
        n => format!("; {} of {} devices starved so", n, devices.len()),
    };
    fired(
        &GPU_STARVATION,
        starved_pct(d),
        d.idle.starved_ns,
        format!(
            "{name} starved {} = {:.1} % of {} ({}): the host launched late{others}",
            ms(d.idle.starved_ns),
            starved_pct(d),
            d.span.name.words(),
            ms(d.span.dur_ns),
        ),
    )
}
