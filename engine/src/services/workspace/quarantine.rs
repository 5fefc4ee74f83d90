//! What `.flameox/quarantine/` holds and getting evidence back from it
//! (`flameox recover [--quarantine ID]`, the seed's recovery command).
//!
//! Two things are quarantined: the possibly partial profile of a capture
//! that was interrupted or cancelled (`capture-<run>`, never imported on its
//! own), and the stored bytes of an artifact that no longer matched its id
//! (`artifact-<hex>`, moved there by `repair`). A capture's entry can be
//! salvaged: its files are extracted into the run they came from (the
//! extractors read a cut-short trace up to where it ends and say so), the
//! run gains them as `salvaged_profile` artifacts, and the entry moves to
//! trash (restorable). Damaged artifact bytes cannot be: nothing can say
//! what they should have been, so they are listed, kept, and refused.

use std::path::{Path, PathBuf};

use flameox_extractors::Limitation;
use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, FlameoxError, Result, io_error};
use crate::publish::commit_staged;
use crate::runs::{self, save_run};
use crate::services::import::{ImportProgress, stage_file_for_run};
use crate::workspace::Workspace;

/// One quarantine entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuarantineEntry {
    /// The folder's name: what `--quarantine` takes.
    pub quarantine_id: String,
    /// `capture_profile` or `damaged_artifact`.
    pub kind: String,
    /// The run it came from (capture entries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    pub files: Vec<String>,
    pub bytes: u64,
    /// Whether `recover --quarantine` can extract it.
    pub salvageable: bool,
}

/// What a salvage did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Salvaged {
    pub quarantine_id: String,
    pub run_id: String,
    pub artifact_ids: Vec<String>,
    pub generation_ids: Vec<String>,
    pub commit_id: String,
    /// What the extractors said about the partial files (`truncated_input`, …).
    pub limitations: Vec<Limitation>,
    /// Where the entry went (restorable by moving it back).
    pub moved_to: String,
}

fn quarantine_dir(ws: &Workspace) -> PathBuf {
    ws.dir().join("quarantine")
}

fn files_of(dir: &Path) -> (Vec<String>, u64) {
    let mut files = Vec::new();
    let mut bytes = 0;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if let Ok(meta) = entry.metadata()
            && meta.is_file()
        {
            files.push(entry.file_name().to_string_lossy().into_owned());
            bytes += meta.len();
        }
    }
    files.sort();
    (files, bytes)
}

/// Every quarantine entry, by id.
pub fn list(ws: &Workspace) -> Vec<QuarantineEntry> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(quarantine_dir(ws))
        .into_iter()
        .flatten()
        .flatten()
    {
        let id = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let (files, bytes) = if path.is_dir() {
            files_of(&path)
        } else {
            let size = entry.metadata().map_or(0, |m| m.len());
            (vec![id.clone()], size)
        };
        let run_id = id
            .strip_prefix("capture-")
            .filter(|r| runs::valid_run_id(r))
            .map(str::to_owned);
        out.push(QuarantineEntry {
            kind: if run_id.is_some() {
                "capture_profile"
            } else {
                "damaged_artifact"
            }
            .to_owned(),
            salvageable: run_id.is_some() && !files.is_empty(),
            quarantine_id: id,
            run_id,
            files,
            bytes,
        });
    }
    out.sort_by(|a, b| a.quarantine_id.cmp(&b.quarantine_id));
    out
}

/// Extracts a capture's quarantined files into the run they came from.
pub fn salvage(ws: &Workspace, id: &str, progress: &dyn ImportProgress) -> Result<Salvaged> {
    let entries = list(ws);
    let Some(entry) = entries.iter().find(|e| e.quarantine_id == id) else {
        let known: Vec<&str> = entries.iter().map(|e| e.quarantine_id.as_str()).collect();
        return Err(FlameoxError::invalid_argument(
            "quarantine",
            if known.is_empty() {
                format!("no quarantine entry {id}: the quarantine is empty")
            } else {
                format!("no quarantine entry {id}; there are: {}", known.join(", "))
            },
        ));
    };
    let Some(run_id) = entry.run_id.clone().filter(|_| entry.salvageable) else {
        return Err(FlameoxError::new(
            ErrorCode::ArtifactIntegrityFailed,
            format!("{id} holds bytes that no longer matched their artifact id; nothing can say what they should be"),
        )
        .detail("quarantine_id", id)
        .remedy("import the original file again; the damaged bytes stay here for inspection"));
    };
    let mut run = runs::read_run(ws, &run_id)?;
    let dir = quarantine_dir(ws).join(id);
    let mut staged = Vec::new();
    let mut artifacts = Vec::new();
    for name in &entry.files {
        let s = stage_file_for_run(
            ws,
            &run_id,
            &dir.join(name),
            None,
            "salvaged_profile",
            progress,
        )
        .map_err(|e| e.with_run(run_id.clone()).detail("quarantine_id", id))?;
        artifacts.push(s.artifact);
        staged.push(s.staged);
    }
    let outcomes = commit_staged(ws, staged)?;
    let mut limitations = Vec::new();
    for o in &outcomes {
        for l in &o.generation.summary.limitations {
            if !limitations.contains(l) {
                limitations.push(l.clone());
            }
        }
        if !run.generation_ids.contains(&o.generation.generation_id) {
            run.generation_ids.push(o.generation.generation_id.clone());
        }
    }
    run.rows = crate::catalog::rows_of(ws, &crate::catalog::pin_head(ws)?, &run.generation_ids);
    let artifact_ids: Vec<String> = artifacts.iter().map(|a| a.artifact_id.clone()).collect();
    for a in artifacts {
        if !run.artifacts.iter().any(|r| r.artifact_id == a.artifact_id) {
            run.artifacts.push(a);
        }
    }
    let salvaged = Limitation {
        code: "PROFILE_SALVAGED".into(),
        message: format!(
            "the quarantined, possibly partial profile ({}) was extracted by `flameox recover --quarantine {id}`",
            entry.files.join(", ")
        ),
        count: 1,
    };
    run.limitations
        .push(format!("{}: {}", salvaged.code, salvaged.message));
    run.limitation_details.push(salvaged);
    run.limitation_details.extend(limitations.iter().cloned());
    let commit_id = crate::publish::commit_of(&outcomes);
    save_run(ws, &mut run)?;
    // Kept, restorable: the trash of this recovery.
    let moved_to = format!(
        "trash/recover-{}/quarantine/{id}",
        uuid::Uuid::now_v7().simple()
    );
    let target = ws.dir().join(&moved_to);
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_error("creating the trash", e))?;
    }
    std::fs::rename(&dir, &target)
        .map_err(|e| io_error("moving the salvaged entry to trash", e))?;
    Ok(Salvaged {
        quarantine_id: id.to_owned(),
        run_id,
        artifact_ids,
        generation_ids: outcomes
            .iter()
            .map(|o| o.generation.generation_id.clone())
            .collect(),
        commit_id,
        limitations,
        moved_to,
    })
}

/// What `flameox recover` answers: the clean-up, and what the quarantine
/// holds (each capture entry with the command that salvages it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recovered {
    #[serde(flatten)]
    pub report: crate::validate::RecoverReport,
    pub quarantine: Vec<QuarantineEntry>,
}

/// `recover`, then the quarantine's listing.
pub fn recover(ws: &Workspace) -> Result<Recovered> {
    let report = crate::validate::recover(ws)?;
    Ok(Recovered {
        report,
        quarantine: list(ws),
    })
}
