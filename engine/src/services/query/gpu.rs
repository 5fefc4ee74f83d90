//! GPU activity services: the `nsys stats`-style summaries
//! (`analyze gpu-summary --report kernels|api|memcpy-time|memcpy-size|
//! memset-time`) over any artifact with device evidence (Kineto traces
//! today, Nsight exports when their extractor lands).

use flameox_recipes::ArtifactScope;
use flameox_recipes::accelerator::{self, AcceleratorAnswer};
use flameox_recipes::gpu_summary::{self, GpuReport, SummaryRow};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::Result;
use crate::query::run_budgeted;
use crate::services::narrower::{Narrowing, narrow};
use crate::services::{EvidenceStatus, QueryContext, ResolvedScope, answer_status, resolve_scope};

/// What `analyze_gpu_summary` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GpuSummaryRequest {
    /// Run id (or a unique prefix, or latest) or artifact id (sha256:…).
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// Which table (default kernels).
    #[schemars(extend("enum" = ["kernels", "api", "memcpy-time", "memcpy-size", "memset-time"]))]
    pub report: Option<String>,
    /// Group kernels by family (name without templates or parameters).
    pub family: Option<bool>,
    /// Names returned, largest total first (default 20).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

/// One summary table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSummaryResult {
    pub scope: ResolvedScope,
    pub commit_id: String,
    pub report: GpuReport,
    pub unit: String,
    pub grand_total: i64,
    /// Distinct kernel families among the names (see `family`).
    pub families: u64,
    /// Rows are kernel families, each with its number of `variants`.
    pub by_family: bool,
    pub rows: Vec<SummaryRow>,
    pub total: u64,
    pub returned: usize,
    pub truncated: bool,
    pub evidence: EvidenceStatus,
}

pub async fn gpu_summary(
    qc: &QueryContext<'_>,
    req: &GpuSummaryRequest,
) -> Result<GpuSummaryResult> {
    summary_of(qc, req).await.map_err(|e| {
        narrow(
            qc,
            e,
            Narrowing::Scope {
                operation: "analyze_gpu_summary",
                target: &req.target,
                keep: json!({ "report": req.report, "limit": req.limit }),
                advice: None,
            },
        )
    })
}

async fn summary_of(qc: &QueryContext<'_>, req: &GpuSummaryRequest) -> Result<GpuSummaryResult> {
    let limit = qc.ws.config.row_limit(req.limit)?;
    let session = qc.session(None)?;
    let report = gpu_summary::parse_report(req.report.as_deref().unwrap_or("kernels"))
        .map_err(|e| crate::query::recipe_error(e, &session.budget))?;
    let scope = resolve_scope(qc.ws, &session.snapshot, &req.target)?;
    let artifacts = ArtifactScope {
        artifact_ids: scope.artifact_ids.clone(),
    };
    let answer = run_budgeted(
        &session,
        gpu_summary::gpu_summary(
            &session.ctx,
            &artifacts,
            report,
            req.family.unwrap_or(false),
            limit,
        ),
    )
    .await?;
    let mut evidence = answer_status(&session.snapshot, &scope, answer.names > 0, false);
    if answer.names == 0 && evidence.status == "empty" {
        // No device (or API) activity is not a negative answer: the trace
        // may simply not have recorded it.
        evidence = EvidenceStatus::new("partial", "accelerator_tracks_missing").with_next(
            "get_run",
            json!({ "target": scope.run_id.as_deref().unwrap_or(&scope.requested) }),
        );
    }
    Ok(GpuSummaryResult {
        commit_id: session.snapshot.commit_id().to_owned(),
        scope,
        report: answer.report,
        unit: answer.unit,
        grand_total: answer.grand_total,
        families: answer.families,
        by_family: answer.by_family,
        returned: answer.rows.len(),
        truncated: (answer.rows.len() as u64) < answer.names,
        total: answer.names,
        rows: answer.rows,
        evidence,
    })
}

/// What `analyze_accelerator_launches` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceleratorRequest {
    /// Run id (or a unique prefix, or latest) or artifact id (sha256:…).
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// Only this phase, e.g. ProfilerStep#3.
    #[schemars(length(max = 200))]
    pub phase: Option<String>,
    /// Run or artifact to compare with: adds per-phase deltas (descriptive).
    #[schemars(length(min = 1, max = 200))]
    pub base: Option<String>,
    /// Phases returned, heaviest kernel time first (default 20).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

/// Target minus base for one region (descriptive: no noise estimate).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionDelta {
    pub region: String,
    /// Whether the region exists on each side.
    pub in_target: bool,
    pub in_base: bool,
    pub direct_launches: i64,
    pub graph_launches: i64,
    pub kernels: i64,
    pub kernel_time_ns: i64,
    pub correlation_coverage: f64,
    /// p50 launch latency delta, when both sides have one.
    pub latency_p50_ns: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcceleratorComparison {
    pub base_scope: ResolvedScope,
    pub regions: Vec<RegionDelta>,
}

/// The gap rule this answer applies, said in the answer.
pub const GAP_DEFINITION: &str = "A stream gap, per stream and kernels only (the launch view): the next kernel starts after every earlier kernel on the stream ended (start minus the latest earlier end, when positive). Not device idle: another stream, a copy or a set may run meanwhile; analyze_gpu_gaps has device gaps (no kernel, copy or set on any stream) and why (starved, stalled).";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcceleratorResult {
    pub scope: ResolvedScope,
    pub commit_id: String,
    #[serde(flatten)]
    pub answer: AcceleratorAnswer,
    pub comparison: Option<AcceleratorComparison>,
    /// Regions in scope; `returned` of them are listed (heaviest first).
    pub total: u64,
    pub returned: usize,
    pub truncated: bool,
    /// What a gap is in this answer (the three GPU answers use one rule).
    #[serde(default)]
    pub gap_definition: String,
    pub evidence: EvidenceStatus,
}

/// Launches, kernels, latency, coverage and per-stream gaps.
pub async fn accelerator_launches(
    qc: &QueryContext<'_>,
    req: &AcceleratorRequest,
) -> Result<AcceleratorResult> {
    launches_of(qc, req).await.map_err(|e| {
        narrow(
            qc,
            e,
            Narrowing::Scope {
                operation: "analyze_accelerator_launches",
                target: &req.target,
                keep: json!({ "phase": req.phase, "limit": req.limit }),
                advice: Some("give a phase (e.g. ProfilerStep#3) to read one step"),
            },
        )
    })
}

async fn launches_of(qc: &QueryContext<'_>, req: &AcceleratorRequest) -> Result<AcceleratorResult> {
    let limit = qc.ws.config.row_limit(req.limit)?;
    let session = qc.session(None)?;
    if let Some(p) = &req.phase {
        crate::services::check_id("phase", p)?;
    }
    let scope = resolve_scope(qc.ws, &session.snapshot, &req.target)?;
    let artifacts = ArtifactScope {
        artifact_ids: scope.artifact_ids.clone(),
    };
    let mut answer = run_budgeted(
        &session,
        accelerator::accelerator_launches(&session.ctx, &artifacts, req.phase.as_deref()),
    )
    .await?;
    let found = answer.has_kernels || answer.has_launches;
    let mut evidence = answer_status(&session.snapshot, &scope, found, req.phase.is_some());
    if evidence.status == "available" || evidence.status == "empty" {
        let reason = match (answer.has_launches, answer.has_kernels) {
            (true, true) => None,
            (true, false) => Some("kernel_tracks_missing"),
            (false, true) => Some("runtime_tracks_missing"),
            (false, false) if req.phase.is_some() => None,
            (false, false) => Some("accelerator_tracks_missing"),
        };
        if let Some(reason) = reason {
            evidence = EvidenceStatus::new("partial", reason).with_next(
                "get_run",
                json!({ "target": scope.run_id.as_deref().unwrap_or(&scope.requested) }),
            );
        }
    }
    let comparison = match &req.base {
        None => None,
        Some(base) => {
            let base_scope = resolve_scope(qc.ws, &session.snapshot, base)?;
            let base_artifacts = ArtifactScope {
                artifact_ids: base_scope.artifact_ids.clone(),
            };
            let before = run_budgeted(
                &session,
                accelerator::accelerator_launches(
                    &session.ctx,
                    &base_artifacts,
                    req.phase.as_deref(),
                ),
            )
            .await?;
            let mut regions = region_deltas(&answer, &before);
            regions.truncate(limit);
            Some(AcceleratorComparison {
                base_scope,
                regions,
            })
        }
    };
    let total = answer.regions.len() as u64;
    answer.regions.sort_by(|a, b| {
        b.kernels
            .time_ns
            .cmp(&a.kernels.time_ns)
            .then_with(|| a.region.cmp(&b.region))
    });
    answer.regions.truncate(limit);
    Ok(AcceleratorResult {
        commit_id: session.snapshot.commit_id().to_owned(),
        scope,
        total,
        returned: answer.regions.len(),
        truncated: (answer.regions.len() as u64) < total,
        answer,
        comparison,
        gap_definition: GAP_DEFINITION.to_owned(),
        evidence,
    })
}

/// Per region (union of both sides, by name): target − base, largest
/// |Δ kernel time| first (ties by name).
fn region_deltas(after: &AcceleratorAnswer, before: &AcceleratorAnswer) -> Vec<RegionDelta> {
    use std::collections::BTreeMap;
    let by_name = |a: &'_ AcceleratorAnswer| -> BTreeMap<String, accelerator::Region> {
        a.regions
            .iter()
            .map(|r| (r.region.clone(), r.clone()))
            .collect()
    };
    let (after, before) = (by_name(after), by_name(before));
    let mut names: Vec<&String> = after.keys().chain(before.keys()).collect();
    names.sort();
    names.dedup();
    let mut deltas: Vec<RegionDelta> = names
        .into_iter()
        .map(|name| {
            let a = after.get(name);
            let b = before.get(name);
            let get = |r: Option<&accelerator::Region>, f: fn(&accelerator::Region) -> i64| {
                r.map_or(0, f)
            };
            let diff = |f: fn(&accelerator::Region) -> i64| get(a, f) - get(b, f);
            let p50 = |r: Option<&accelerator::Region>| {
                r.and_then(|r| r.launch_latency.as_ref()).map(|l| l.p50_ns)
            };
            RegionDelta {
                region: name.clone(),
                in_target: a.is_some(),
                in_base: b.is_some(),
                direct_launches: diff(|r| r.direct_launches.count),
                graph_launches: diff(|r| r.graph_launches.count),
                kernels: diff(|r| r.kernels.count),
                kernel_time_ns: diff(|r| r.kernels.time_ns),
                correlation_coverage: a.map_or(0.0, |r| r.correlation_coverage)
                    - b.map_or(0.0, |r| r.correlation_coverage),
                latency_p50_ns: match (p50(a), p50(b)) {
                    (Some(x), Some(y)) => Some(x - y),
                    _ => None,
                },
            }
        })
        .collect();
    deltas.sort_by(|x, y| {
        y.kernel_time_ns
            .abs()
            .cmp(&x.kernel_time_ns.abs())
            .then_with(|| x.region.cmp(&y.region))
    });
    deltas
}
