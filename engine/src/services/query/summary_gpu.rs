//! The GPU part of `summarize_target`: each device's busy and idle time
//! over the profiler steps (or the whole trace), its idle time split by why
//! (before its first activity, starved, stalled, unlinked, after its last),
//! and the longest device gaps, each with its class and what explains it —
//! the launching thread's time until it launched the work (starved), or
//! what held the queued work (stalled). One gap definition: the one of
//! `analyze_gpu_gaps`, which this calls.

use std::collections::BTreeMap;

use flameox_recipes::gpu_diagnosis::DiagnosisSection;
use flameox_recipes::gpu_diagnosis::rules::{self, Diagnosis};
use flameox_recipes::gpu_gaps::{ClassTotal, GpuGap};
use flameox_recipes::time_accounting::{DeviceTime, GapClass, NamedSpan};
use serde::{Deserialize, Serialize};

use crate::services::QueryContext;
use crate::services::gpu_breakdown::Targets;
use crate::services::gpu_diagnosis::{self, GpuDiagnosisRequest};
use crate::services::gpu_gaps::{self, GpuGapsRequest};
use crate::units::duration_ns;

use super::summary::brief;

/// Longest device gaps shown.
const GAPS: usize = 3;
/// Devices shown.
const DEVICES: usize = 4;
/// Streams shown per device.
const STREAMS: usize = 2;
/// Diagnoses shown (the summary's 7 KiB budget).
const DIAGNOSES: usize = 2;

/// GPU time, when the target has device activity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSummary {
    /// Per device over the named span: busy (the union of every stream's
    /// kernels, copies and memsets), idle, and idle by why.
    pub devices: Vec<DeviceTime>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub devices_total: usize,
    /// Device gaps at least `min_gap_ns` long inside the span: count,
    /// total and by class.
    pub gaps: u64,
    pub gaps_total_ns: i64,
    pub min_gap_ns: i64,
    pub gaps_by_class: BTreeMap<GapClass, ClassTotal>,
    /// The longest, with what explains each.
    pub longest: Vec<GapSummary>,
    /// Anti-patterns the GPU diagnosis found (declared rules, most time at
    /// stake first), each with its fix; `analyze_gpu_diagnosis` has the
    /// measured values and thresholds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnoses: Vec<DiagnosisLine>,
}

/// A diagnosis in a line: the rule, its numbers in words, the fix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiagnosisLine {
    pub rule: String,
    pub evidence: String,
    pub fix: String,
    /// The operation that shows its numbers, and its section if any.
    pub operation: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<DiagnosisSection>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One device gap, explained in a line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GapSummary {
    pub device: Option<i64>,
    pub start_ns: i64,
    pub duration_ns: i64,
    pub class: GapClass,
    /// The activity that ended the gap (shortened).
    pub next_op: String,
    /// The thread and call that launched it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launched_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_late_ns: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_for_ns: Option<i64>,
    /// Why, in words.
    pub cause: String,
}

/// The GPU section over `span` (the steps; None: the trace); half the
/// devices when the target holds several artifacts (ranks).
pub(crate) async fn gpu_of(
    qc: &QueryContext<'_>,
    target: &str,
    span: Option<NamedSpan>,
    several_artifacts: bool,
) -> Option<GpuSummary> {
    let request = GpuGapsRequest {
        target: target.to_owned(),
        limit: Some(GAPS),
        chunks: Some(1),
        // No chunk is under 0: the summary reports gaps, not chunks.
        below: Some(0.0),
        ..Default::default()
    };
    let r = gpu_gaps::gpu_gaps_over(qc, &request, span).await.ok()?;
    let a = r.answer;
    if !a.has_device_activity {
        return None;
    }
    let mut devices: Vec<DeviceTime> = a.devices.into_iter().map(|d| d.time).collect();
    let devices_total = devices.len();
    let starved = rules::starvation(&devices);
    devices.sort_by(|x, y| y.busy_ns.cmp(&x.busy_ns).then(x.device.cmp(&y.device)));
    // A run of one trace per rank: its diagnoses compare the ranks.
    devices.truncate(if several_artifacts {
        DEVICES / 2
    } else {
        DEVICES
    });
    // The two busiest streams per device (analyze_gpu_gaps lists more).
    for d in &mut devices {
        d.streams.truncate(STREAMS);
    }
    Some(GpuSummary {
        devices,
        devices_total: if devices_total > DEVICES {
            devices_total
        } else {
            0
        },
        gaps: a.gaps_found,
        gaps_total_ns: a.gaps_total_ns,
        min_gap_ns: r.min_gap_ns,
        gaps_by_class: a.gaps_by_class,
        longest: a.gaps.iter().map(gap_summary).collect(),
        diagnoses: diagnoses_of(qc, target, starved).await,
    })
}

/// The rules the GPU diagnosis fires over the whole target, with
/// `starved` (the starvation rule over the summary's own device time),
/// most time at stake first (a summary never fails for want of them).
async fn diagnoses_of(
    qc: &QueryContext<'_>,
    target: &str,
    starved: Option<Diagnosis>,
) -> Vec<DiagnosisLine> {
    let request = GpuDiagnosisRequest {
        target: Targets::One(target.to_owned()),
        limit: Some(1),
        ..Default::default()
    };
    let mut all: Vec<Diagnosis> = match gpu_diagnosis::rule_diagnosis(qc, &request).await {
        Ok(r) => r.answer.diagnoses,
        Err(_) => Vec::new(),
    };
    all.extend(starved);
    all.sort_by(|a, b| b.time_ns.cmp(&a.time_ns).then_with(|| a.rule.cmp(&b.rule)));
    all.into_iter()
        .take(DIAGNOSES)
        .map(|d| DiagnosisLine {
            rule: d.rule,
            evidence: d.evidence,
            fix: d.fix,
            operation: d.operation,
            section: d.section,
        })
        .collect()
}

fn gap_summary(g: &GpuGap) -> GapSummary {
    let launched_by = g.launched_by.as_ref().map(|l| {
        let who = l.thread.clone().unwrap_or_else(|| "thread".into());
        match l.tid {
            Some(tid) if !who.contains(&tid.to_string()) => {
                format!("{who} (tid {tid}) via {}", l.name)
            }
            _ => format!("{who} via {}", l.name),
        }
    });
    GapSummary {
        device: g.device,
        start_ns: g.start_ns,
        duration_ns: g.duration_ns,
        class: g.class,
        next_op: brief(&g.next_op),
        launched_by,
        host_late_ns: g.host_late_ns,
        queued_for_ns: g.queued_for_ns,
        cause: cause(g),
    }
}

/// A gap's explanation in words.
pub(crate) fn cause(g: &GpuGap) -> String {
    match g.class {
        GapClass::Starved => {
            let late = g.host_late_ns.map(duration_ns).unwrap_or_default();
            let shares: Vec<String> = g
                .host
                .time_shares
                .iter()
                .filter(|s| s.share >= 0.005)
                .take(3)
                .map(|s| format!("{:.0} % {}", s.share * 100.0, brief(&s.what)))
                .collect();
            let mut text = if shares.is_empty() {
                format!("the host launched it {late} after the device went idle")
            } else {
                format!(
                    "the host launched it {late} after the device went idle; until then the launching thread was: {}",
                    shares.join(", ")
                )
            };
            if let Some(s) = g.host.samples.as_ref().filter(|s| s.samples > 0)
                && let Some(f) = s.top.first()
            {
                text.push_str(&format!(
                    " ({} CPU samples there, most in {})",
                    s.samples,
                    brief(&f.function)
                ));
            }
            text
        }
        GapClass::Stalled => format!(
            "already queued for {} when it started: held by {}",
            g.queued_for_ns.map(duration_ns).unwrap_or_default(),
            g.waited_on
                .as_deref()
                .unwrap_or("a dependency the trace does not record")
        ),
        GapClass::Unlinked => {
            let top = g.host.top.first().map(|s| brief(&s.name));
            match top {
                Some(t) => format!("no launch recorded for it; the host was mostly in {t}"),
                None => "no launch recorded for it, and no host activity".into(),
            }
        }
    }
}
