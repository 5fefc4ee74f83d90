//! `get_artifact`: one artifact's metadata as the seed describes it —
//! identity, kind, size, sensitivity, integrity, the analyses its evidence
//! supports, and its registrations (the runs that used it, paged; one of
//! them in context with `run_id`). Never bytes, never a host path.

use serde::{Deserialize, Serialize};

use super::inventory::{ListPage, page};
use crate::catalog::{self, GenerationManifest};
use crate::error::{ErrorCode, FlameoxError, Result};
use crate::runs;
use crate::services::stale_extractions::{StaleExtraction, stale};
use crate::services::{NextCall, check_id};
use crate::store::{self, ArtifactRecord};
use crate::workspace::Workspace;

/// One run's use of the artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Registration {
    pub run_id: String,
    /// `profile`, `trace`, `stdout`, `stderr`, `receipt`, …
    pub role: String,
    /// The name it was registered under in that run.
    pub original_name: String,
    /// The producer the run's extraction detected or was told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer: Option<String>,
    /// Its rank in a multi-process job (Kineto `distributedInfo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<i64>,
}

/// What the stored copy was checked against, cheaply (no hashing here).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Integrity {
    /// `size_matches` (the stored payload has the recorded size),
    /// `size_differs`, `payload_missing`, `in_shared_store` (not yet
    /// fetched from the workspace's store), or `stored_folder` (an export
    /// folder: only the full check reads its files).
    pub status: String,
    /// The call that re-hashes every stored byte against the id.
    pub full_check: NextCall,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtifactDetail {
    #[serde(flatten)]
    pub record: ArtifactRecord,
    /// `profile` (names the profiled program's functions, files and
    /// threads), `process_output` (a workload's stdout or stderr: whatever
    /// it printed) or `execution_metadata` (a capture's receipt: argv and
    /// environment names). MCP never returns an artifact's bytes.
    pub sensitivity: String,
    pub integrity: Integrity,
    /// Whether HEAD holds evidence extracted from it.
    pub extracted: bool,
    /// The extractor and version that made that evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extractor: Option<String>,
    /// When an older extractor made that evidence: which, and the
    /// `extract_artifact` call that refreshes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_extraction: Option<StaleExtraction>,
    /// The analyses its evidence in HEAD supports (tool names).
    pub supported_analyses: Vec<String>,
    /// The runs that used it, newest first, paged.
    pub registrations: ListPage<Registration>,
    /// With `run_id`: that run's registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration: Option<Registration>,
}

/// The artifact `artifact_id` (a full `sha256:` id).
pub fn show_artifact(
    ws: &Workspace,
    artifact_id: &str,
    run_id: Option<&str>,
    limit: Option<usize>,
    cursor: Option<&str>,
) -> Result<ArtifactDetail> {
    check_id("artifact_id", artifact_id)?;
    // A run of one artifact names it too (`latest`, a run id or prefix).
    let resolved = crate::services::viewer::artifact_of(ws, artifact_id)?;
    let artifact_id = resolved.as_str();
    let record = store::read_artifact(ws, artifact_id)?;
    let mut all = Vec::new();
    for run in runs::list_runs(ws)? {
        for (index, a) in run.artifacts.iter().enumerate() {
            if a.artifact_id != artifact_id {
                continue;
            }
            let registration = Registration {
                run_id: run.run_id.clone(),
                role: a.role.clone(),
                original_name: a.original_name.clone(),
                producer: a.producer.clone(),
                rank: a
                    .metadata
                    .get("distributedInfo")
                    .and_then(|d| d.get("rank"))
                    .and_then(serde_json::Value::as_i64),
            };
            // Newest run first (run ids are time-ordered); within a run,
            // its order.
            let key = format!(
                "{}|{index:06}",
                crate::revisions::newest_first_key(&run.run_id)
            );
            all.push((key, registration));
        }
    }
    all.sort_by(|a, b| a.0.cmp(&b.0));
    let registration = match run_id {
        Some(wanted) => {
            let run = runs::resolve_run_id(ws, wanted)?;
            let found = all
                .iter()
                .find(|(_, r)| r.run_id == run)
                .map(|(_, r)| r.clone());
            Some(found.ok_or_else(|| {
                FlameoxError::new(
                    ErrorCode::RunNotFound,
                    format!("run {run} did not register this artifact"),
                )
                .with_run(run.clone())
                .remedy("leave run_id out to list the runs that used it")
            })?)
        }
        None => None,
    };
    let snapshot = catalog::pin_head(ws)?;
    let generations: Vec<&GenerationManifest> = snapshot.generations_for(artifact_id).collect();
    let extractor = generations
        .first()
        .map(|g| format!("{} {}", g.summary.extractor, g.summary.extractor_version));
    let stale_extraction = generations.iter().find_map(|g| stale(g));

    let supported_analyses = supported_analyses(&generations, &record.kind);
    let sensitivity = sensitivity(&all).to_owned();
    let integrity = integrity(ws, &record);
    Ok(ArtifactDetail {
        extracted: !generations.is_empty(),
        extractor,
        stale_extraction,
        supported_analyses,
        sensitivity,
        integrity,
        registrations: page(ws, "artifact_registrations", all, limit, cursor)?,
        registration,
        record,
    })
}

fn sensitivity(registrations: &[(String, Registration)]) -> &'static str {
    let role = registrations.first().map(|(_, r)| r.role.as_str());
    match role {
        Some("stdout" | "stderr") => "process_output",
        Some("receipt" | "observations") => "execution_metadata",
        _ => "profile",
    }
}

fn integrity(ws: &Workspace, record: &ArtifactRecord) -> Integrity {
    let status = match std::fs::metadata(store::payload_path(ws, record)) {
        // A stored export folder's size is its files'; only the full
        // check reads them.
        Ok(m) if m.is_dir() => "stored_folder",
        Ok(m) if m.len() == record.bytes => "size_matches",
        Ok(_) => "size_differs",
        // On a shared store the bytes come down when first needed.
        Err(_) if ws.config.store.shared_url().is_some() => "in_shared_store",
        Err(_) => "payload_missing",
    };
    Integrity {
        status: status.to_owned(),
        full_check: NextCall {
            operation: "validate_workspace".to_owned(),
            arguments: serde_json::json!({ "full": true }),
            why: "re-hash every stored byte against its id".to_owned(),
        },
    }
}

/// Tool names whose evidence the generations hold, in the order an agent
/// would use them.
fn supported_analyses(generations: &[&GenerationManifest], kind: &str) -> Vec<String> {
    let rows = |table: &str| -> u64 {
        generations
            .iter()
            .map(|g| g.summary.rows.get(table).copied().unwrap_or(0))
            .sum()
    };
    let mut tools: Vec<&str> = Vec::new();
    if rows("trace_events") > 0 {
        tools.extend(["summarize_target", "list_threads", "get_trace_window"]);
    }
    if rows("frame_totals") > 0 || rows("samples") > 0 {
        tools.extend([
            "analyze_hotspots",
            "get_frame_callers",
            "get_frame_callees",
            "get_stack_examples",
            "compare_hotspots",
        ]);
    }
    if rows("stream_gaps") > 0 || rows("launch_latency") > 0 {
        tools.extend([
            "analyze_gpu_summary",
            "analyze_gpu_breakdown",
            "analyze_gpu_gaps",
            "analyze_accelerator_launches",
        ]);
    }
    if generations
        .iter()
        .any(|g| g.summary.producer == "torch.profiler")
    {
        tools.push("analyze_pytorch");
    }
    if rows("counters") > 0 {
        tools.push("analyze_memory");
    }
    if rows("measurements") > 0 {
        tools.push("query_measurements");
    }
    if matches!(kind, "junit_xml" | "coverage_json" | "python_importtime") {
        tools.push("analyze_execution");
    }
    tools.into_iter().map(str::to_owned).collect()
}
