//! `analyze gpu-diagnosis`: launch geometry against the device's SMs,
//! copies by memory kind with the host's synchronizing calls, collectives
//! with bandwidth and exposed time, and ranks side by side (who arrives
//! last at the collectives, and why) over one or several targets — one
//! per rank when a job left one trace per rank.

use std::collections::BTreeMap;

use flameox_recipes::ArtifactScope;
use flameox_recipes::gpu_diagnosis::{
    self, ArtifactFacts, DiagnosisAnswer, DiagnosisParams, DiagnosisSection, SmLimits,
    geometry::GeometryDevice, rules,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::catalog::Snapshot;
use crate::error::{FlameoxError, Result};
use crate::query::{recipe_error, run_budgeted};
use crate::services::gpu_breakdown::{Targets, combined_scope, distributed_number};
use crate::services::phase_window::{TimeScope, time_scope};
use crate::services::{EvidenceStatus, QueryContext, ResolvedScope, answer_status, resolve_scope};

/// Rows per section when the request names no limit.
pub const DEFAULT_LIMIT: usize = 5;

/// At most this many targets side by side.
const MAX_TARGETS: usize = 64;

/// Past this many artifacts, scopes name only those the answer shows.
const SCOPE_NAMED: usize = 4;

/// What counts inside a phase: device work that starts in its host span.
const WINDOW_RULE: &str = "device work starting inside the window";

/// What `analyze_gpu_diagnosis` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GpuDiagnosisRequest {
    /// Run or artifact id, or a list of them (one per rank).
    pub target: Targets,
    /// One section; default all.
    #[serde(default)]
    #[schemars(schema_with = "section_schema")]
    pub section: Option<String>,
    /// Rows per artifact and section; ranks shown (default 5).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// Geometry of kernels whose name contains this only; the headline is the heaviest's.
    #[schemars(length(min = 1, max = 200))]
    pub kernel: Option<String>,
    /// Device work starting in this phase's host span only (ProfilerStep#5).
    #[schemars(length(min = 1, max = 200))]
    pub phase: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuDiagnosisResult {
    pub targets: Vec<ResolvedScope>,
    pub commit_id: String,
    /// The `kernel` asked about (geometry lists only its shapes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    #[serde(flatten)]
    pub answer: DiagnosisAnswer,
    pub time: TimeScope,
    pub evidence: EvidenceStatus,
}

/// The section names, from the one list of sections.
fn section_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names: Vec<&str> = DiagnosisSection::ALL.iter().map(|s| s.name()).collect();
    schemars::json_schema!({ "type": "string", "enum": names })
}

/// What the artifact's metadata says of each device: SMs, names and SM
/// limits per device id, from Kineto `deviceProperties[]` (`numSms`,
/// `name`, `computeMajor`, …) or Nsight `gpus[]` (`sm_count`, `name`,
/// `compute_capability`, …; by id and by CUDA device number).
#[derive(Default)]
struct DeviceFacts {
    sm_counts: BTreeMap<i64, i64>,
    names: BTreeMap<i64, String>,
    sm_limits: BTreeMap<i64, SmLimits>,
}

/// The SM limits of one metadata device entry, Kineto's or Nsight's names.
fn sm_limits(d: &Value) -> Option<SmLimits> {
    let int = |keys: &[&str]| keys.iter().find_map(|k| d.get(*k).and_then(Value::as_i64));
    let warp_size = int(&["warpSize", "threads_per_warp"]).unwrap_or(32);
    let cc = match d.get("compute_capability").and_then(Value::as_array) {
        Some(cc) => (cc.first()?.as_i64()?, cc.get(1)?.as_i64()?),
        None => (int(&["computeMajor"])?, int(&["computeMinor"])?),
    };
    let warps = int(&["max_warps_per_sm"])
        .or_else(|| Some(int(&["maxThreadsPerMultiprocessor"])? / warp_size.max(1)))?;
    SmLimits::new(
        cc,
        warps,
        int(&["max_blocks_per_sm"]),
        int(&["regsPerMultiprocessor", "max_registers_per_sm"])?,
        int(&["sharedMemPerMultiprocessor", "max_shared_memory_per_sm"])?,
        warp_size,
    )
}

fn device_facts(snapshot: &Snapshot, artifact_id: &str) -> DeviceFacts {
    let mut facts = DeviceFacts::default();
    for g in snapshot.generations_for(artifact_id) {
        let m = &g.summary.metadata;
        for (list, count, ids) in [
            ("deviceProperties", "numSms", &["id"][..]),
            ("gpus", "sm_count", &["id", "cuda_device"][..]),
        ] {
            let Some(Value::Array(devices)) = m.get(list) else {
                continue;
            };
            for d in devices {
                let limits = sm_limits(d);
                for key in ids {
                    let Some(id) = d.get(*key).and_then(Value::as_i64) else {
                        continue;
                    };
                    if let Some(n) = d.get(count).and_then(Value::as_i64) {
                        facts.sm_counts.entry(id).or_insert(n);
                    }
                    if let Some(n) = d.get("name").and_then(Value::as_str) {
                        facts.names.entry(id).or_insert_with(|| n.to_owned());
                    }
                    if let Some(l) = limits {
                        facts.sm_limits.entry(id).or_insert(l);
                    }
                }
            }
        }
    }
    facts
}

pub async fn gpu_diagnosis(
    qc: &QueryContext<'_>,
    req: &GpuDiagnosisRequest,
) -> Result<GpuDiagnosisResult> {
    gpu_diagnosis_of(qc, req, None).await
}

/// The sections the declared rules read, over `req`'s targets: what a
/// summary needs to name the anti-patterns, and no more.
pub async fn rule_diagnosis(
    qc: &QueryContext<'_>,
    req: &GpuDiagnosisRequest,
) -> Result<GpuDiagnosisResult> {
    let sections = gpu_diagnosis::rules::RULES
        .iter()
        .filter_map(|r| r.section)
        .collect::<std::collections::BTreeSet<_>>();
    gpu_diagnosis_of(qc, req, Some(sections.into_iter().collect())).await
}

/// `req`, with `sections` in place of its section when given.
async fn gpu_diagnosis_of(
    qc: &QueryContext<'_>,
    req: &GpuDiagnosisRequest,
    sections: Option<Vec<DiagnosisSection>>,
) -> Result<GpuDiagnosisResult> {
    let targets_asked = req.target.as_slice();
    if targets_asked.is_empty() || targets_asked.len() > MAX_TARGETS {
        return Err(FlameoxError::invalid_argument(
            "target",
            format!("give 1..={MAX_TARGETS} run or artifact ids"),
        ));
    }
    let limit = qc
        .ws
        .config
        .row_limit(Some(req.limit.unwrap_or(DEFAULT_LIMIT)))?;
    let session = qc.session(None)?;
    let sections = match (sections, &req.section) {
        (Some(s), _) => s,
        (None, None) => DiagnosisSection::ALL.to_vec(),
        (None, Some(name)) => {
            vec![DiagnosisSection::parse(name).map_err(|e| recipe_error(e, &session.budget))?]
        }
    };
    let mut targets = Vec::new();
    let mut facts: BTreeMap<String, ArtifactFacts> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for target in targets_asked {
        let scope = resolve_scope(qc.ws, &session.snapshot, target)?;
        for id in &scope.artifact_ids {
            if !facts.contains_key(id) {
                order.push(id.clone());
                let devices = device_facts(&session.snapshot, id);
                let trace_span = (session.snapshot.generations_for(id))
                    .filter_map(|g| g.summary.time_span_ns)
                    .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)));
                facts.insert(
                    id.clone(),
                    ArtifactFacts {
                        rank: distributed_number(&session.snapshot, id, "rank"),
                        world_size: distributed_number(&session.snapshot, id, "world_size"),
                        sm_counts: devices.sm_counts,
                        device_names: devices.names,
                        sm_limits: devices.sm_limits,
                        trace_span,
                    },
                );
            }
        }
        targets.push(scope);
    }
    let combined = combined_scope(targets_asked, &targets, order.clone());
    let (window, phase) = time_scope(&session, &combined, req.phase.as_deref(), None).await?;
    let params = DiagnosisParams {
        sections,
        limit,
        facts,
        kernel: req.kernel.clone(),
        window,
    };
    let order_total = order.len();
    let artifacts = ArtifactScope {
        artifact_ids: order,
    };
    let answer = run_budgeted(
        &session,
        gpu_diagnosis::gpu_diagnosis(&session.ctx, &artifacts, &params),
    )
    .await?;
    let found = answer.artifacts_with_device_work > 0;
    let mut evidence = answer_status(&session.snapshot, &combined, found, false);
    if (evidence.status == "available" || evidence.status == "empty")
        && let Some(missing) = answer.artifacts_without_device_work.first()
    {
        evidence = EvidenceStatus::new("partial", "accelerator_tracks_missing")
            .with_next("get_run", json!({ "target": missing }));
    }
    if order_total > SCOPE_NAMED {
        // The scopes name the artifacts the answer shows; the counts
        // above cover them all.
        let shown = shown_artifacts(&answer);
        for scope in &mut targets {
            scope.artifact_ids.retain(|a| shown.contains(a));
        }
    }
    Ok(GpuDiagnosisResult {
        commit_id: session.snapshot.commit_id().to_owned(),
        targets,
        kernel: req.kernel.clone(),
        answer,
        time: TimeScope::new(window, phase, WINDOW_RULE),
        evidence,
    })
}

/// Artifacts any section of the answer names.
fn shown_artifacts(a: &DiagnosisAnswer) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    out.extend(a.artifacts_without_device_work.iter().cloned());
    for d in a.geometry.iter().flatten() {
        out.insert(d.key.artifact_id.clone());
    }
    if let Some(c) = &a.copies {
        out.extend(c.rows.iter().map(|r| r.key.artifact_id.clone()));
        out.extend(c.host_waits.iter().map(|w| w.artifact_id.clone()));
    }
    if let Some(c) = &a.collectives {
        out.extend(c.rows.iter().map(|r| r.artifact_id.clone()));
    }
    if let Some(i) = &a.iterations {
        out.extend(i.streams.iter().map(|s| s.key.artifact_id.clone()));
    }
    out.extend(a.fusion.iter().flatten().map(|f| f.artifact_id.clone()));
    if let Some(m) = &a.mfu {
        out.extend(m.artifacts.iter().map(|m| m.artifact_id.clone()));
        out.extend(m.without_flop.iter().map(|w| w.artifact_id.clone()));
    }
    if let Some(r) = &a.ranks {
        out.extend(r.rows.iter().map(|r| r.artifact_id.clone()));
        out.extend(r.holders.iter().map(|h| h.artifact_id.clone()));
    }
    out
}

/// The answer's first line: the ranks' verdict when several ranks were
/// compared, then what each section found worst, with its numbers.
/// The heaviest shape of the kernel asked about on one device: its time,
/// its grid against the SMs, its theoretical occupancy and what limits it.
fn asked_kernel(d: &GeometryDevice) -> Option<String> {
    use crate::units::duration_ns;
    let s = d.shapes.first()?;
    let shapes = match d.shapes_total {
        1 => String::new(),
        n => format!(" (heaviest of {n} shapes)"),
    };
    let grid = match (d.sm_count, s.blocks_per_sm) {
        (Some(sms), Some(per_sm)) if s.blocks < sms => {
            format!(
                "{} blocks on {sms} SMs: {} SMs idle while it runs ({per_sm:.2} blocks per SM)",
                s.blocks,
                sms - s.blocks
            )
        }
        (Some(sms), Some(per_sm)) => {
            format!("{} blocks on {sms} SMs ({per_sm:.1} per SM)", s.blocks)
        }
        _ => format!("{} blocks", s.blocks),
    };
    let occupancy = match (
        s.theoretical_occupancy_pct,
        s.occupancy_limited_by,
        s.resident_blocks_per_sm,
    ) {
        (Some(pct), Some(by), Some(resident)) => format!(
            "; theoretical occupancy {pct:.0} % ({resident} block{} of {} threads per SM, limited by {})",
            if resident == 1 { "" } else { "s" },
            s.threads_per_block,
            by.words()
        ),
        _ => String::new(),
    };
    // Kineto's calculator is not told of shared memory a kernel opted in
    // to past the default 48 KiB per block and says 0 % for a kernel that ran.
    let achieved = match s.achieved_occupancy_pct {
        Some(a) if a == 0.0 && s.shared_memory_bytes.is_some_and(|b| b > 48 * 1024) => {
            "; Kineto's achieved estimate 0 % (its calculator does not see shared memory opted in past 48 KiB)".to_owned()
        }
        Some(a) => format!("; Kineto's achieved estimate {a:.0} %"),
        None => String::new(),
    };
    Some(format!(
        "{}{shapes} on device {}: {} launches, {} = {:.0} % of its compute kernel time; {grid}{occupancy}{achieved}",
        s.name,
        d.key.device.map_or("?".into(), |x| x.to_string()),
        s.count,
        duration_ns(s.total_ns),
        s.time_pct_of_compute,
    ))
}

pub fn headline(r: &GpuDiagnosisResult) -> String {
    use crate::units::{bytes, duration_ns};
    let a = &r.answer;
    let mut parts: Vec<String> = Vec::new();
    if let Some(ranks) = a.ranks.as_ref().filter(|k| k.ranks_total >= 2) {
        parts.push(ranks.verdict.clone());
    }
    if let Some(k) = &r.kernel {
        // The kernel asked about, not the device's other kernels.
        parts.push(
            a.geometry
                .iter()
                .flatten()
                .find_map(asked_kernel)
                .unwrap_or_else(|| format!("no compute kernel named like {k:?}")),
        );
    } else if let Some(d) = a
        .geometry
        .iter()
        .flatten()
        .filter(|d| d.underfilled_pct_of_compute >= rules::UNDERFILLED_GRIDS.threshold)
        .max_by(|x, y| x.underfilled_ns.cmp(&y.underfilled_ns))
    {
        let top = d
            .underfilled_heaviest
            .as_ref()
            .map(|s| {
                format!(
                    " (most: {} with grid {:?}, {} blocks)",
                    s.name, s.grid, s.blocks
                )
            })
            .unwrap_or_default();
        parts.push(format!(
            "{:.0} % of compute kernel time on device {} in kernels with fewer blocks than its {} SMs{top}",
            d.underfilled_pct_of_compute,
            d.key.device.map_or("?".into(), |x| x.to_string()),
            d.sm_count.unwrap_or(0)
        ));
    }
    if let Some(c) = &a.copies {
        if c.pageable_copies > 0 {
            parts.push(format!(
                "{} copies from/to pageable host memory ({}, {})",
                c.pageable_copies,
                bytes(c.pageable_bytes.max(0) as u64),
                duration_ns(c.pageable_ns)
            ));
        }
        if let Some(w) = c.host_waits.first().filter(|w| w.sync_calls > 0) {
            parts.push(format!(
                "{} synchronize calls ({}) against {} kernel launches{}",
                w.sync_calls,
                duration_ns(w.sync_ns),
                w.kernel_launches,
                w.syncs_per_launch
                    .map(|s| format!(": {s:.2} per launch"))
                    .unwrap_or_default()
            ));
        }
        if let Some(w) = c.host_waits.first().filter(|w| w.synchronous_copies > 0) {
            parts.push(format!(
                "{} synchronous copy calls ({})",
                w.synchronous_copies,
                duration_ns(w.synchronous_copy_ns)
            ));
        }
    }
    if let Some(c) = a.collectives.as_ref().filter(|c| c.kernels > 0) {
        parts.push(format!(
            "{} collective kernels, {} of which {} exposed (no compute kernel running)",
            c.kernels,
            duration_ns(c.time_ns),
            duration_ns(c.exposed_ns)
        ));
    }
    if let Some(m) = a.collectives.as_ref().and_then(|c| c.mpi.as_ref()) {
        let top = m
            .rows
            .iter()
            .max_by_key(|r| r.time_ns)
            .map(|r| format!(", most in {} ({})", r.operation, duration_ns(r.time_ns)))
            .unwrap_or_default();
        parts.push(format!(
            "{} MPI calls, {} of which {} with the device idle{top}",
            m.calls,
            duration_ns(m.time_ns),
            duration_ns(m.exposed_ns)
        ));
    }
    if let Some(s) = a.iterations.as_ref().and_then(|i| i.streams.first()) {
        parts.push(format!(
            "{} iterations of {} operations on stream {} (median {}, {:.1} % variation)",
            s.iterations,
            s.period_operations,
            s.stream.map_or("?".into(), |x| x.to_string()),
            duration_ns(s.median_ns),
            s.variation_pct
        ));
    }
    if let Some(c) = a.fusion.iter().flatten().find_map(|f| f.candidates.first()) {
        parts.push(format!(
            "{} short kernels repeated {} times back to back (fusing saves {} launches; first: {})",
            c.kernels.len(),
            c.occurrences,
            c.launches_saved,
            c.kernels.first().map_or("", String::as_str)
        ));
    }
    if let Some(p) = a.critical_path.as_ref().and_then(|p| p.first())
        && p.length_ns > 0
    {
        let bound = p
            .by_bound
            .first()
            .map(|b| format!(", {:.0} % {}", b.pct_of_path, b.bound))
            .unwrap_or_default();
        parts.push(format!("critical path {}{bound}", duration_ns(p.length_ns)));
    }
    if let Some(w) = a
        .mfu
        .as_ref()
        .filter(|m| m.artifacts.is_empty())
        .and_then(|m| m.without_flop.as_ref())
    {
        parts.push(format!(
            "no MFU: {}",
            w.caveat.as_deref().unwrap_or("no FLOP counts")
        ));
    }
    if let Some(m) = a.mfu.as_ref().and_then(|m| m.artifacts.first()) {
        let span = m.span.name.words();
        parts.push(match (m.mfu_pct_over_span, &m.caveat) {
            (Some(pct), _) => format!(
                "MFU {pct:.2} % of {span} ({:.2} TFLOP/s over {} on {}; {:.2} % of peak while its kernels ran)",
                m.tflop_per_s_over_span,
                duration_ns(m.span.dur_ns),
                m.device_name.as_deref().unwrap_or("?"),
                m.pct_of_peak_in_kernels.unwrap_or(0.0)
            ),
            (None, Some(why)) => format!("no MFU: {why}"),
            (None, None) => "no MFU".to_owned(),
        });
    }
    let what = format!(
        "GPU diagnosis of {}{} ({} artifacts with device work)",
        r.targets
            .iter()
            .map(|t| t.requested.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        r.time.words(),
        a.artifacts_with_device_work
    );
    if parts.is_empty() {
        format!("{what}: nothing found")
    } else {
        format!("{what}: {}", parts.join("; "))
    }
}
