//! Which evidence in HEAD an older extractor made: a generation whose
//! extractor version, accelerator reductions version or evidence schema is
//! not this build's. `validate` lists them with the `extract_artifact`
//! call that refreshes each ([`super::re_extract`]).

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::input_extraction::REDUCTIONS_VERSION;
use crate::catalog::{GenerationManifest, Snapshot};
use crate::services::NextCall;

/// Stale artifacts an answer lists (the total counts all).
pub const STALE_LISTED: usize = 20;

/// One artifact whose evidence an older extractor made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StaleExtraction {
    pub artifact_id: String,
    /// The run whose rows it holds.
    pub run_id: String,
    pub generation_id: String,
    pub extractor: String,
    /// The version that made it, and this build's.
    pub extractor_version: String,
    pub current_version: String,
    /// `extractor_version`, `reductions_version`, `evidence_schema`.
    pub reasons: Vec<String>,
    pub refresh: NextCall,
}

/// The stale extractions of a snapshot: the first [`STALE_LISTED`] by
/// artifact, and how many there are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StaleExtractions {
    pub total: usize,
    pub items: Vec<StaleExtraction>,
}

/// Every active generation an older extractor made (one entry per
/// artifact; a generation whose extractor this build no longer has is not
/// listed, since nothing could refresh it).
pub fn stale_extractions(snapshot: &Snapshot) -> StaleExtractions {
    let mut all: Vec<StaleExtraction> = Vec::new();
    for g in &snapshot.generations {
        let Some(entry) = stale(g) else { continue };
        if all.iter().any(|s| s.artifact_id == entry.artifact_id) {
            continue;
        }
        all.push(entry);
    }
    all.sort_by(|a, b| a.artifact_id.cmp(&b.artifact_id));
    let total = all.len();
    all.truncate(STALE_LISTED);
    StaleExtractions { total, items: all }
}

/// The generation's entry when an older extractor made it.
pub fn stale(g: &GenerationManifest) -> Option<StaleExtraction> {
    let current = flameox_extractors::formats::FORMATS
        .iter()
        .filter_map(|f| f.extractor())
        .find(|e| e.name == g.operation.extractor)?;
    let mut reasons = Vec::new();
    if current.version != g.operation.extractor_version {
        reasons.push("extractor_version".to_owned());
    }
    let reductions = g
        .operation
        .options
        .get("reductions")
        .and_then(|v| v.as_u64());
    if reductions != Some(u64::from(REDUCTIONS_VERSION)) {
        reasons.push("reductions_version".to_owned());
    }
    if g.files
        .iter()
        .any(|f| f.schema_version < flameox_extractors::SCHEMA_VERSION)
    {
        reasons.push("evidence_schema".to_owned());
    }
    if reasons.is_empty() {
        return None;
    }
    Some(StaleExtraction {
        artifact_id: g.inputs.artifact_id.clone(),
        run_id: g.inputs.run_id.clone(),
        generation_id: g.generation_id.clone(),
        extractor: g.operation.extractor.clone(),
        extractor_version: g.operation.extractor_version.clone(),
        current_version: current.version.to_owned(),
        reasons,
        refresh: NextCall {
            operation: "extract_artifact".into(),
            arguments: json!({ "artifact": g.inputs.artifact_id }),
            why: "extracts the stored bytes again with this build's extractor".into(),
        },
    })
}

/// What `validate_workspace` answers: the workspace's integrity, and the
/// evidence an older extractor made (not an error: it reads, and one call
/// refreshes it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceValidation {
    #[serde(flatten)]
    pub report: crate::validate::ValidationReport,
    #[serde(default)]
    pub stale_extractions: StaleExtractions,
}
