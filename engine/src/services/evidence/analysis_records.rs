//! `analyze record` / `record_analysis` and `analyze record-comparison` /
//! `record_comparison`: run the same read-only recipe (scaling, compare)
//! and persist its result as `records/analyses/<id>.json` or
//! `records/comparisons/<id>.json` with the result digest (sha256 of the
//! canonical JSON), the pinned commit, the inputs, coverage and
//! limitations. The id digests the recipe, commit and inputs, so recording
//! the same analysis twice returns the first record (results are
//! deterministic for a commit and inputs).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::{FlameoxError, Result};
use crate::fsutil::{digest_json, now_rfc3339};
use crate::records::{self, RECORD_SCHEMA_VERSION, RecordKind};
use crate::services::QueryContext;
use crate::services::compare::{CompareRequest, compare_run_sets};
use crate::services::scaling::{ScalingRequest, analyze_scaling};

/// A persisted analysis or comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnalysisRecord {
    pub schema_version: u32,
    pub record_id: String,
    /// `analysis` or `comparison`.
    pub kind: String,
    /// `scaling` or `compare`.
    pub recipe: String,
    pub created_at: String,
    pub commit_id: String,
    /// The normalized request.
    pub inputs: Value,
    /// sha256 of the canonical JSON of `result`.
    pub result_digest: String,
    pub coverage: Value,
    pub limitations: Vec<String>,
    pub result: Value,
}

/// What recording answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordOutcome {
    /// False when the same analysis was recorded before.
    pub created: bool,
    pub record: AnalysisRecord,
}

fn to_json<T: Serialize>(value: &T) -> Result<Value> {
    serde_json::to_value(value)
        .map_err(|e| FlameoxError::internal(format!("serializing a result: {e}")))
}

struct Draft {
    kind: RecordKind,
    recipe: &'static str,
    commit_id: String,
    inputs: Value,
    coverage: Value,
    limitations: Vec<String>,
    result: Value,
}

fn persist(qc: &QueryContext<'_>, d: Draft) -> Result<RecordOutcome> {
    let prefix = match d.kind {
        RecordKind::Comparisons => "cmp_",
        _ => "an_",
    };
    let key = digest_json(&json!({
        "recipe": d.recipe, "commit_id": d.commit_id, "inputs": d.inputs,
    }));
    let record_id = format!("{prefix}{}", &key[..32]);
    let record = AnalysisRecord {
        schema_version: RECORD_SCHEMA_VERSION,
        record_id: record_id.clone(),
        kind: d.kind.reference().to_owned(),
        recipe: d.recipe.to_owned(),
        created_at: now_rfc3339(),
        commit_id: d.commit_id,
        inputs: d.inputs,
        result_digest: digest_json(&d.result),
        coverage: d.coverage,
        limitations: d.limitations,
        result: d.result,
    };
    let (record, created) = records::write_record_once(qc.ws, d.kind, &record_id, &record)?;
    Ok(RecordOutcome { created, record })
}

/// Runs `analyze scaling` and records it as an analysis.
pub async fn record_scaling(qc: &QueryContext<'_>, req: &ScalingRequest) -> Result<RecordOutcome> {
    let result = analyze_scaling(qc, req).await?;
    let mut limitations = Vec::new();
    if !result.failed_runs.is_empty() {
        limitations.push(format!(
            "{} failed run(s) left out",
            result.failed_runs.len()
        ));
    }
    if !result.missing_metric_runs.is_empty() {
        limitations.push(format!(
            "{} run(s) without {} left out",
            result.missing_metric_runs.len(),
            result.metric
        ));
    }
    for v in &result.variants {
        if let Some(why) = &v.fit_unavailable {
            limitations.push(format!(
                "variant {}: no fit ({why})",
                v.variant.as_deref().unwrap_or("(none)")
            ));
        }
    }
    limitations.push("no claim outside each variant's supported_range".to_owned());
    let coverage = json!({
        "runs_attempted": result.attempted,
        "runs_failed": result.failed_runs.len(),
        "runs_used": result.variants.iter().map(|v| v.runs).sum::<usize>(),
        "variants": result.variants.len(),
    });
    persist(
        qc,
        Draft {
            kind: RecordKind::Analyses,
            recipe: "scaling",
            commit_id: result.commit_id.clone(),
            inputs: to_json(req)?,
            coverage,
            limitations,
            result: to_json(&result)?,
        },
    )
}

/// Runs `analyze compare` and records it as a comparison.
pub async fn record_comparison(
    qc: &QueryContext<'_>,
    req: &CompareRequest,
) -> Result<RecordOutcome> {
    let result = compare_run_sets(qc, req).await?;
    let mut limitations = result.validity_reasons.clone();
    for (side, counts) in [
        ("baseline", &result.baseline),
        ("candidate", &result.candidate),
    ] {
        if counts.failed > 0 {
            limitations.push(format!("{side}: {} failed run(s) left out", counts.failed));
        }
        if !counts.missing_metric_runs.is_empty() {
            limitations.push(format!(
                "{side}: {} run(s) without {} left out",
                counts.missing_metric_runs.len(),
                result.metric
            ));
        }
    }
    let coverage = json!({
        "pairs": result.pairing.pairs.len(),
        "pairing": result.pairing.method,
        "baseline_used": result.baseline.used,
        "candidate_used": result.candidate.used,
        "unpaired_blocks": result.pairing.unpaired_baseline_blocks.len()
            + result.pairing.unpaired_candidate_blocks.len(),
    });
    persist(
        qc,
        Draft {
            kind: RecordKind::Comparisons,
            recipe: "compare",
            commit_id: result.commit_id.clone(),
            inputs: to_json(req)?,
            coverage,
            limitations,
            result: to_json(&result)?,
        },
    )
}
