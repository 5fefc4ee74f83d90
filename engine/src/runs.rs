//! Run manifests: one folder per run, every change a new numbered revision,
//! `manifest.json` always the latest.

use std::collections::BTreeMap;
use std::fs;

use flameox_extractors::Limitation;
use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, FlameoxError, Result, closest};
use crate::fsutil::{now_rfc3339, read_json, write_json_atomic};
use crate::workspace::Workspace;

/// Independent status fields of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStatus {
    /// `not_applicable` for imports.
    pub execution: String,
    pub capture: String,
    /// `pending`, `completed`, `failed` or `interrupted`.
    pub extraction: String,
    /// `pending`, `passed` or `failed`.
    pub validation: String,
}

/// An artifact as one run uses it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunArtifact {
    pub artifact_id: String,
    pub kind: String,
    pub producer: Option<String>,
    pub role: String,
    pub original_name: String,
    pub bytes: u64,
    /// This artifact's producer metadata (e.g. Kineto `distributedInfo`
    /// with its rank); absent in manifests written before it existed.
    #[serde(default)]
    pub metadata: BTreeMap<String, serde_json::Value>,
}

/// The extractor that made a run's evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Collector {
    pub name: String,
    pub version: String,
}

/// `runs/<run_id>/manifest.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunManifest {
    pub schema_version: u32,
    pub run_id: String,
    pub revision: u32,
    pub run_type: String,
    pub created_at: String,
    pub updated_at: String,
    pub status: RunStatus,
    pub collector: Option<Collector>,
    pub artifacts: Vec<RunArtifact>,
    pub generation_ids: Vec<String>,
    /// The commit that made this run's evidence visible.
    pub commit_id: Option<String>,
    /// True when the evidence was already published by an earlier run.
    pub reused_generation: bool,
    /// Rows per evidence table.
    pub rows: BTreeMap<String, u64>,
    pub time_span_ns: Option<(i64, i64)>,
    pub limitations: Vec<String>,
    pub limitation_details: Vec<Limitation>,
    pub metadata: BTreeMap<String, serde_json::Value>,
    pub parameters: BTreeMap<String, String>,
    pub variant: Option<String>,
    pub error: Option<FlameoxError>,
    /// Each time one of its artifacts was extracted again (`flameox
    /// extract`), oldest first: the run then reads the new generation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extractions: Vec<ReExtraction>,
}

/// One re-extraction of a run's artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReExtraction {
    pub at: String,
    pub artifact_id: String,
    /// The generation the run reads from now on.
    pub generation_id: String,
    /// The generations it replaced in HEAD.
    pub replaced: Vec<String>,
    /// The extractor (and version) that made it.
    pub extractor: Collector,
}

impl RunManifest {
    /// Marks a run whose flameox died before it finished: extraction (and
    /// a running execution and its capture) `interrupted`, validation
    /// `failed`. `recover` and `repair` both write it.
    pub fn mark_interrupted(&mut self) {
        self.status.extraction = "interrupted".into();
        self.status.validation = "failed".into();
        // An execution whose flameox died mid-run (see docs/workloads.md).
        if self.status.execution == "running" {
            self.status.execution = "interrupted".into();
            self.status.capture = "interrupted".into();
        }
    }

    /// A new import run (UUID v7), extraction pending.
    pub fn new_import() -> RunManifest {
        let now = now_rfc3339();
        RunManifest {
            schema_version: 1,
            run_id: uuid::Uuid::now_v7().to_string(),
            revision: 0,
            run_type: "import".to_owned(),
            created_at: now.clone(),
            updated_at: now,
            status: RunStatus {
                execution: "not_applicable".to_owned(),
                capture: "not_applicable".to_owned(),
                extraction: "pending".to_owned(),
                validation: "pending".to_owned(),
            },
            collector: None,
            artifacts: Vec::new(),
            generation_ids: Vec::new(),
            commit_id: None,
            reused_generation: false,
            rows: BTreeMap::new(),
            time_span_ns: None,
            limitations: Vec::new(),
            limitation_details: Vec::new(),
            metadata: BTreeMap::new(),
            parameters: BTreeMap::new(),
            variant: None,
            error: None,
            extractions: Vec::new(),
        }
    }

    /// A new execution run: the workload is about to start.
    pub fn new_execution() -> RunManifest {
        let mut run = RunManifest::new_import();
        run.run_type = "execution".to_owned();
        run.status.execution = "running".to_owned();
        run.status.capture = "running".to_owned();
        run
    }
}

/// Writes the next revision of a run and makes it the current manifest.
pub fn save_run(ws: &Workspace, run: &mut RunManifest) -> Result<()> {
    run.revision += 1;
    run.updated_at = now_rfc3339();
    let dir = ws.runs_dir().join(&run.run_id);
    write_json_atomic(
        &dir.join("revisions")
            .join(format!("{:08}.json", run.revision)),
        run,
    )?;
    write_json_atomic(&dir.join("manifest.json"), run)?;
    crate::shared_store::push_run(ws, run)
}

/// Whether `run_id` has the shape of a run id (a hyphenated UUID).
pub fn valid_run_id(run_id: &str) -> bool {
    uuid::Uuid::parse_str(run_id).is_ok() && run_id.len() == 36
}

/// Whether `text` can name a run: a full run id, `latest`, or a prefix of
/// one (at least 4 hex digits or hyphens) — what a person types.
pub fn is_run_reference(text: &str) -> bool {
    valid_run_id(text)
        || text == LATEST
        || (text.len() >= 4
            && text.len() < 36
            && text.chars().all(|c| c.is_ascii_hexdigit() || c == '-'))
}

/// The word that names the newest run.
pub const LATEST: &str = "latest";

/// The full run id `text` names: itself, the newest run for `latest`, or
/// the one run whose id starts with it. No run, or several, is
/// `RUN_NOT_FOUND` with the candidates.
pub fn resolve_run_id(ws: &Workspace, text: &str) -> Result<String> {
    if valid_run_id(text) {
        return Ok(text.to_owned());
    }
    if !is_run_reference(text) {
        return Err(malformed_target("run_id"));
    }
    let ids = list_run_ids(ws);
    let matches: Vec<&String> = if text == LATEST {
        ids.last().into_iter().collect()
    } else {
        let lower = text.to_ascii_lowercase();
        ids.iter().filter(|id| id.starts_with(&lower)).collect()
    };
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(FlameoxError::new(
            ErrorCode::RunNotFound,
            if text == LATEST {
                "no runs yet: import a trace first".to_owned()
            } else {
                format!("no run id starts with {text}")
            },
        )
        .recover_with("list_runs", serde_json::json!({}), "flameox runs list")),
        several => Err(FlameoxError::new(
            ErrorCode::InvalidArguments,
            format!(
                "{text} is the start of {} run ids; give more of it",
                several.len()
            ),
        )
        .detail(
            "candidates",
            several
                .iter()
                .take(5)
                .map(|s| s.as_str())
                .collect::<Vec<_>>(),
        )
        .recover_with("list_runs", serde_json::json!({}), "flameox runs list")),
    }
}

/// Reads a run by id, unique id prefix or `latest`; an unknown id is
/// `RUN_NOT_FOUND` with the closest ids.
pub fn read_run(ws: &Workspace, run_ref: &str) -> Result<RunManifest> {
    let run_id = resolve_run_id(ws, run_ref)?;
    let run_id = run_id.as_str();
    let path = ws.runs_dir().join(run_id).join("manifest.json");
    if !path.is_file() {
        let ids = list_run_ids(ws);
        let near = closest(run_id, ids.iter().map(String::as_str), 3);
        return Err(FlameoxError::new(
            ErrorCode::RunNotFound,
            format!("no run or artifact named {run_id}"),
        )
        .detail("closest", near)
        .remedy("list runs with `flameox runs list`")
        .recover_with("list_runs", serde_json::json!({}), "flameox runs list"));
    }
    read_json(&path, "a run manifest")
}

/// A value that is neither a run id nor an artifact id: refused before any
/// lookup, so nothing shaped like SQL or a path reaches the file system.
pub fn malformed_target(field: &str) -> FlameoxError {
    FlameoxError::invalid_argument(
        field,
        "expected a run id (UUID, a unique prefix of one, or `latest`) or an artifact id (sha256:<64 hex digits>)",
    )
    .recover_with("list_runs", serde_json::json!({}), "flameox runs list")
}

/// Every run id, oldest first (UUID v7 sorts by creation time).
pub fn list_run_ids(ws: &Workspace) -> Vec<String> {
    let mut ids: Vec<String> = fs::read_dir(ws.runs_dir())
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                .filter(|id| valid_run_id(id))
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

/// Every run manifest, oldest first.
pub fn list_runs(ws: &Workspace) -> Result<Vec<RunManifest>> {
    let mut runs = Vec::new();
    for id in list_run_ids(ws) {
        let path = ws.runs_dir().join(&id).join("manifest.json");
        if path.is_file() {
            runs.push(read_json(&path, "a run manifest")?);
        }
    }
    Ok(runs)
}

/// Held by the process importing a run until the run's final status is
/// written: `locks/run-<run_id>.lock`. The operating system releases it
/// when the process dies (even on SIGKILL), so a `pending` import whose
/// lock is free lost its writer.
#[derive(Debug)]
pub struct RunWriter {
    path: std::path::PathBuf,
    _lock: crate::lock::FileLock,
}

impl Drop for RunWriter {
    fn drop(&mut self) {
        // The run's status is final by now: the file goes before the lock.
        let _ = fs::remove_file(&self.path);
    }
}

fn writer_lock_path(ws: &Workspace, run_id: &str) -> std::path::PathBuf {
    ws.locks_dir().join(format!("run-{run_id}.lock"))
}

/// Takes the writer lock of a new run (before its first manifest is saved).
pub fn hold_run_writer(ws: &Workspace, run_id: &str) -> Result<RunWriter> {
    let path = writer_lock_path(ws, run_id);
    let lock = crate::lock::FileLock::acquire(&path, std::time::Duration::from_secs(5))?;
    Ok(RunWriter { path, _lock: lock })
}

/// A run as listings show it: a `pending` import whose writer is gone
/// (killed mid-import) reads `interrupted` / `failed`, as `flameox recover`
/// will record it; the manifest on disk is left to `recover`.
pub fn with_live_status(ws: &Workspace, run: RunManifest) -> RunManifest {
    if run.run_type != "import" || run.status.extraction != "pending" {
        return run;
    }
    let path = writer_lock_path(ws, &run.run_id);
    let alive = path.exists() && matches!(crate::lock::FileLock::try_acquire(&path), Ok(None));
    if alive {
        return run;
    }
    // The writer saves the final status before it lets the lock go: read
    // again, so a run that just finished is shown as it ended.
    let manifest = ws.runs_dir().join(&run.run_id).join("manifest.json");
    let mut run = read_json::<RunManifest>(&manifest, "a run manifest").unwrap_or(run);
    if run.status.extraction == "pending" {
        run.status.extraction = "interrupted".into();
        run.status.validation = "failed".into();
    }
    run
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pending import reads `interrupted` only once its writer is gone;
    /// a run that finished reads as it ended.
    #[test]
    fn a_pending_import_without_its_writer_reads_interrupted() {
        let project = tempfile::tempdir().unwrap();
        let (ws, _) = Workspace::init(project.path()).unwrap();
        let listed = |id: &str| with_live_status(&ws, read_run(&ws, id).unwrap());

        let mut run = RunManifest::new_import();
        let writer = hold_run_writer(&ws, &run.run_id).unwrap();
        save_run(&ws, &mut run).unwrap();
        assert_eq!(listed(&run.run_id).status.extraction, "pending");
        run.status.extraction = "completed".into();
        save_run(&ws, &mut run).unwrap();
        drop(writer);
        assert_eq!(listed(&run.run_id).status.extraction, "completed");

        // A writer killed before the final status holds no lock.
        let mut orphan = RunManifest::new_import();
        save_run(&ws, &mut orphan).unwrap();
        let shown = listed(&orphan.run_id);
        assert_eq!(shown.status.extraction, "interrupted");
        assert_eq!(shown.status.validation, "failed");
        // The manifest itself is left to `recover`.
        assert_eq!(
            read_run(&ws, &orphan.run_id).unwrap().status.extraction,
            "pending"
        );
        // Executions are not imports: left as they are.
        let mut execution = RunManifest::new_execution();
        save_run(&ws, &mut execution).unwrap();
        assert_eq!(listed(&execution.run_id).status.extraction, "pending");
    }
}
