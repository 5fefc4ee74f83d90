//! `compare_artifact_pipelines`: two pipelines, each over its own target
//! (a run or an artifact), compared by what their analysis says — each
//! frame's share of its side's total self value (percent; the
//! denominator is that side's `total_self` of its metric), so a sampling
//! profiler's samples and a tracer's wall time compare. Frames match by
//! function and file: a name written `function (file:line)` (viztracer,
//! py-spy's folded output) is read the way the folded extractor reads it,
//! so the same function matches across profilers; lines are merged.
//! Read-only: a side whose evidence was not extracted as its pipeline says
//! is refused with the `extract_artifact` call that makes it so.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::registry::{ArtifactPipeline, read_pipeline};
use crate::error::{ErrorCode, FlameoxError, Result};
use crate::services::query::analyze::{HotspotsRequest, analyze_hotspots};
use crate::services::{EvidenceStatus, QueryContext, resolve_scope};

/// Top frames compared for rank agreement.
const TOP: usize = 10;

/// One side of a comparison: a pipeline, what it runs over, and the
/// commit it reads (HEAD when none).
#[derive(Debug, Clone, Default)]
pub struct PipelineSide {
    pub pipeline: String,
    pub target: String,
    pub commit: Option<String>,
}

/// What `compare_artifact_pipelines` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ComparePipelinesRequest {
    /// Run id (or a unique prefix, or latest) or artifact id the target pipeline runs over.
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// The target side's registered pipeline.
    #[schemars(length(min = 1, max = 80))]
    pub pipeline: String,
    /// Run or artifact the base pipeline runs over.
    #[schemars(length(min = 1, max = 200))]
    pub base: String,
    /// The base side's pipeline (default: the target's).
    #[schemars(length(min = 1, max = 80))]
    pub base_pipeline: Option<String>,
    /// Read the base side at this retained commit (e.g. the import's, before a re-extraction).
    #[schemars(length(min = 64, max = 64))]
    pub base_commit: Option<String>,
    /// Share difference that counts, percentage points of each side's total (default 5).
    #[schemars(range(min = 0, max = 100))]
    pub tolerance_pp: Option<f64>,
    /// Frames per list (default 20).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

/// What one side read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideSummary {
    pub pipeline: String,
    pub revision: u64,
    pub target: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The commit this side read.
    pub commit_id: String,
    pub artifacts: usize,
    pub producers: Vec<String>,
    /// `name version` of the extractors that made its evidence.
    pub extractors: Vec<String>,
    /// Rows per evidence table over its artifacts (tables with rows).
    pub evidence_rows: BTreeMap<String, u64>,
    pub metric: String,
    pub unit: String,
    /// The denominator of this side's shares.
    pub total_self: i64,
    pub frames: usize,
    /// Every frame was read (at most 1000 are).
    pub complete: bool,
}

/// One frame on both sides (a share is absent on the side without it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameShare {
    pub function: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Percent of the base side's total self value.
    pub base_share_pct: Option<f64>,
    /// Percent of the target side's total self value.
    pub target_share_pct: Option<f64>,
    /// target − base, percentage points (a missing share counts as 0).
    pub delta_pp: f64,
    /// target share ÷ base share, when both are above 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_ratio: Option<f64>,
}

/// The top frames of both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopAgreement {
    pub top: usize,
    /// Frames in both top lists.
    pub shared: usize,
    pub base_top: Vec<String>,
    pub target_top: Vec<String>,
}

/// An evidence table whose row count differs between the sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceChange {
    pub table: String,
    pub base_rows: u64,
    pub target_rows: u64,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineComparison {
    pub base: SideSummary,
    pub target: SideSummary,
    /// Where the evidence itself differs (row counts per table).
    pub evidence_changes: Vec<EvidenceChange>,
    pub tolerance_pp: f64,
    pub matched_frames: usize,
    /// Frames on both sides whose shares differ by more than the
    /// tolerance, largest difference first.
    pub differing_total: usize,
    pub differing: Vec<FrameShare>,
    /// Frames only one side has, largest share first (those above the
    /// tolerance counted in `*_total`).
    pub only_in_base_total: usize,
    pub only_in_base: Vec<FrameShare>,
    pub only_in_target_total: usize,
    pub only_in_target: Vec<FrameShare>,
    pub top_frames: TopAgreement,
    pub evidence: EvidenceStatus,
}

/// `function (file)` as the match key, and its two parts.
fn match_key(function: &str, file: Option<&str>) -> (String, String, Option<String>) {
    let (function, file) = match file {
        Some(f) => (function.to_owned(), Some(f.to_owned())),
        None => {
            let parsed = flameox_extractors::folded::parse_frame(function);
            (parsed.function.to_owned(), parsed.file.map(str::to_owned))
        }
    };
    let key = match &file {
        Some(f) => format!("{function} ({f})"),
        None => function.clone(),
    };
    (key, function, file)
}

/// A side's frames: key → (function, file, share %), and its summary.
type Shares = BTreeMap<String, (String, Option<String>, f64)>;

async fn read_side(qc: &QueryContext<'_>, side: &PipelineSide) -> Result<(SideSummary, Shares)> {
    let pipeline: ArtifactPipeline = read_pipeline(qc.ws, &side.pipeline)?;
    let mut pinned = qc.clone();
    pinned.options.commit = side.commit.clone();
    let qc = &pinned;
    let session = qc.session(None)?;
    let scope = resolve_scope(qc.ws, &session.snapshot, &side.target)?;
    let mut extractors = Vec::new();
    let mut evidence_rows: BTreeMap<String, u64> = BTreeMap::new();
    for artifact in &scope.artifact_ids {
        for g in session.snapshot.generations_for(artifact) {
            let name = format!("{} {}", g.summary.extractor, g.summary.extractor_version);
            if !extractors.contains(&name) {
                extractors.push(name);
            }
            for f in &g.files {
                *evidence_rows.entry(f.table.clone()).or_default() += f.rows;
            }
        }
    }
    let mut producers = Vec::new();
    if let Some(reduction) = pipeline.reduction {
        let reduced = scope.artifact_ids.iter().all(|a| {
            crate::store::read_artifact(qc.ws, a).is_ok_and(|r| r.kind == "reduced_stacks")
        });
        if !reduced {
            return Err(FlameoxError::new(
                ErrorCode::InvalidArguments,
                format!(
                    "pipeline {} reads the run a {} reduction makes; {} holds raw evidence",
                    pipeline.name,
                    reduction.name(),
                    side.target
                ),
            )
            .detail(
                "next",
                json!({
                    "tool": "plan_reduction",
                    "arguments": { "target": side.target, "kind": reduction.name() }
                }),
            )
            .remedy("reduce the target (plan_reduction, execute_reduction), then compare the reduction's run"));
        }
    }
    // A reduced pipeline's extraction describes the reduction's inputs;
    // its target holds the reduction's output.
    let checked: &[String] = if pipeline.reduction.is_some() {
        &[]
    } else {
        &scope.artifact_ids
    };
    for artifact in checked {
        let record = crate::store::read_artifact(qc.ws, artifact)?;
        let producer = session
            .snapshot
            .generations_for(artifact)
            .map(|g| g.summary.producer.clone())
            .next()
            .unwrap_or_default();
        let kind_differs = pipeline.kind.as_ref().is_some_and(|k| *k != record.kind);
        let producer_differs = pipeline.producer.as_ref().is_some_and(|p| *p != producer);
        if kind_differs || producer_differs {
            return Err(FlameoxError::new(
                ErrorCode::InvalidArguments,
                format!(
                    "artifact {artifact} holds evidence of kind {} by {producer}; pipeline {} reads kind {} by {}",
                    record.kind,
                    pipeline.name,
                    pipeline.kind.as_deref().unwrap_or("any"),
                    pipeline.producer.as_deref().unwrap_or("any producer"),
                ),
            )
            .detail(
                "next",
                json!({
                    "tool": "extract_artifact",
                    "arguments": {
                        "artifact": artifact,
                        "kind": pipeline.kind,
                        "producer": pipeline.producer,
                    }
                }),
            )
            .remedy("extract the artifact as the pipeline says (extract_artifact), or compare another target"));
        }
        if !producers.contains(&producer) {
            producers.push(producer);
        }
    }
    let page = analyze_hotspots(
        qc,
        &HotspotsRequest {
            target: side.target.clone(),
            metric: pipeline.metric.clone(),
            limit: Some(1000),
            ..HotspotsRequest::default()
        },
    )
    .await?;
    let total = page.total_self.max(1) as f64;
    let mut shares = Shares::new();
    for row in &page.rows {
        let (key, function, file) = match_key(&row.function, row.file.as_deref());
        let slot = shares.entry(key).or_insert((function, file, 0.0));
        slot.2 += 100.0 * row.self_value as f64 / total;
    }
    Ok((
        SideSummary {
            pipeline: pipeline.name,
            revision: pipeline.revision,
            target: side.target.clone(),
            commit_id: session.snapshot.commit_id().to_owned(),
            extractors,
            evidence_rows,
            run_id: scope.run_id,
            artifacts: scope.artifact_ids.len(),
            producers,
            metric: page.metric,
            unit: page.unit,
            total_self: page.total_self,
            frames: shares.len(),
            complete: !page.truncated,
        },
        shares,
    ))
}

fn top_keys(shares: &Shares) -> Vec<String> {
    let mut all: Vec<(&String, f64)> = shares.iter().map(|(k, v)| (k, v.2)).collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    all.into_iter().take(TOP).map(|(k, _)| k.clone()).collect()
}

/// Compares what two pipelines say about their targets.
pub async fn compare_artifact_pipelines(
    qc: &QueryContext<'_>,
    req: &ComparePipelinesRequest,
) -> Result<PipelineComparison> {
    let tolerance = req.tolerance_pp.unwrap_or(5.0);
    if !(0.0..=100.0).contains(&tolerance) {
        return Err(FlameoxError::invalid_argument("tolerance_pp", "0..=100"));
    }
    let limit = req.limit.unwrap_or(20);
    if !(1..=1000).contains(&limit) {
        return Err(FlameoxError::invalid_argument("limit", "1..=1000"));
    }
    let base_side = PipelineSide {
        pipeline: req
            .base_pipeline
            .clone()
            .unwrap_or_else(|| req.pipeline.clone()),
        target: req.base.clone(),
        commit: req.base_commit.clone(),
    };
    let target_side = PipelineSide {
        pipeline: req.pipeline.clone(),
        target: req.target.clone(),
        commit: None,
    };
    let (base, base_shares) = read_side(qc, &base_side).await?;
    let (target, target_shares) = read_side(qc, &target_side).await?;
    let mut differing = Vec::new();
    let mut only_in_base = Vec::new();
    let mut only_in_target = Vec::new();
    let mut matched = 0;
    let keys: std::collections::BTreeSet<&String> =
        base_shares.keys().chain(target_shares.keys()).collect();
    for key in keys {
        let (b, t) = (base_shares.get(key), target_shares.get(key));
        let Some((function, file, _)) = b.or(t) else {
            continue;
        };
        let (bs, ts) = (b.map(|v| v.2), t.map(|v| v.2));
        let row = FrameShare {
            function: function.clone(),
            file: file.clone(),
            base_share_pct: bs,
            target_share_pct: ts,
            delta_pp: ts.unwrap_or(0.0) - bs.unwrap_or(0.0),
            share_ratio: match (bs, ts) {
                (Some(b), Some(t)) if b > 0.0 && t > 0.0 => Some(t / b),
                _ => None,
            },
        };
        match (bs, ts) {
            (Some(_), Some(_)) => {
                matched += 1;
                if row.delta_pp.abs() > tolerance {
                    differing.push(row);
                }
            }
            (Some(_), None) => only_in_base.push(row),
            _ => only_in_target.push(row),
        }
    }
    let by_size = |a: &FrameShare, b: &FrameShare| {
        b.delta_pp
            .abs()
            .total_cmp(&a.delta_pp.abs())
            .then(a.function.cmp(&b.function))
    };
    differing.sort_by(by_size);
    only_in_base.sort_by(by_size);
    only_in_target.sort_by(by_size);
    let above = |rows: &[FrameShare]| rows.iter().filter(|r| r.delta_pp.abs() > tolerance).count();
    let (only_in_base_total, only_in_target_total) = (above(&only_in_base), above(&only_in_target));
    let differing_total = differing.len();
    differing.truncate(limit);
    only_in_base.truncate(limit);
    only_in_target.truncate(limit);
    let (base_top, target_top) = (top_keys(&base_shares), top_keys(&target_shares));
    let shared = base_top.iter().filter(|k| target_top.contains(k)).count();
    let evidence = if matched == 0 {
        EvidenceStatus::new("empty", "no_frame_in_common")
    } else {
        EvidenceStatus::available()
    };
    let tables: std::collections::BTreeSet<&String> = base
        .evidence_rows
        .keys()
        .chain(target.evidence_rows.keys())
        .collect();
    let evidence_changes = tables
        .into_iter()
        .filter_map(|t| {
            let (b, n) = (
                base.evidence_rows.get(t).copied().unwrap_or(0),
                target.evidence_rows.get(t).copied().unwrap_or(0),
            );
            (b != n).then(|| EvidenceChange {
                table: t.clone(),
                base_rows: b,
                target_rows: n,
            })
        })
        .collect();
    Ok(PipelineComparison {
        evidence_changes,
        base,
        target,
        tolerance_pp: tolerance,
        matched_frames: matched,
        differing_total,
        differing,
        only_in_base_total,
        only_in_base,
        only_in_target_total,
        only_in_target,
        top_frames: TopAgreement {
            top: TOP,
            shared,
            base_top,
            target_top,
        },
        evidence,
    })
}
