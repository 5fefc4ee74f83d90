//! Corpus commits and generation manifests: the only authority on what
//! evidence exists.
//!
//! A generation is the output of one extraction (its Parquet files and a
//! manifest). A commit names the full set of active generations and its
//! parent; `corpus/HEAD` names the current commit. Readers pin a commit and
//! read exactly the files its generations list.

use std::collections::BTreeMap;
use std::fs;

use flameox_extractors::ExtractionSummary;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::{ErrorCode, FlameoxError, Result, io_error};
use crate::fsutil::{
    digest_json, now_rfc3339, read_versioned_json, write_atomic, write_json_atomic,
};
use crate::workspace::Workspace;

pub const MANIFEST_SCHEMA_VERSION: u32 = 1;

/// One Parquet file of a generation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerationFile {
    pub table: String,
    /// Path relative to the `.flameox` folder.
    pub path: String,
    pub sha256: String,
    pub bytes: u64,
    pub rows: u64,
    pub schema_version: u32,
}

/// What a generation was extracted from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerationInputs {
    pub run_id: String,
    pub artifact_id: String,
}

/// The identity of an extraction: same key → same generation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperationKey {
    pub extractor: String,
    pub extractor_version: String,
    pub artifact_id: String,
    pub options: Value,
}

impl OperationKey {
    /// Covers extractor name and version, input, options and the evidence
    /// schema version.
    pub fn digest(&self) -> String {
        digest_json(&json!({
            "extractor": self.extractor,
            "extractor_version": self.extractor_version,
            "artifact_id": self.artifact_id,
            "options": self.options,
            // Files of another evidence schema are another extraction: a
            // re-import after a schema change extracts again.
            "evidence_schema_version": flameox_extractors::SCHEMA_VERSION,
        }))
    }

    /// Same operation in any extractor version: a new version supersedes.
    pub fn supersede_key(&self) -> String {
        digest_json(&json!({
            "extractor": self.extractor,
            "artifact_id": self.artifact_id,
            "options": self.options,
        }))
    }
}

/// `generations/<id>/manifest.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerationManifest {
    pub schema_version: u32,
    pub generation_id: String,
    pub operation: OperationKey,
    pub operation_digest: String,
    pub supersede_key: String,
    pub inputs: GenerationInputs,
    pub files: Vec<GenerationFile>,
    pub publisher: String,
    pub flameox_version: String,
    pub created_at: String,
    pub superseded: Vec<String>,
    pub summary: ExtractionSummary,
}

/// `corpus/commits/<id>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommitManifest {
    pub schema_version: u32,
    pub commit_id: String,
    pub parent: Option<String>,
    pub created_at: String,
    /// Active generation id → sha256 of its manifest file.
    pub generations: BTreeMap<String, String>,
    /// Table name → evidence schema version of the files listed for it.
    pub tables: BTreeMap<String, u32>,
}

impl CommitManifest {
    /// The commit id is the digest of everything but itself and the time.
    pub fn compute_id(
        parent: &Option<String>,
        generations: &BTreeMap<String, String>,
        tables: &BTreeMap<String, u32>,
    ) -> String {
        digest_json(&json!({ "parent": parent, "generations": generations, "tables": tables }))
    }
}

/// A pinned commit with its generation manifests loaded.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub commit: Option<CommitManifest>,
    pub generations: Vec<GenerationManifest>,
}

impl Snapshot {
    pub fn commit_id(&self) -> &str {
        self.commit
            .as_ref()
            .map(|c| c.commit_id.as_str())
            .unwrap_or("empty")
    }

    /// Active generations extracted from one artifact.
    pub fn generations_for<'a>(
        &'a self,
        artifact_id: &'a str,
    ) -> impl Iterator<Item = &'a GenerationManifest> {
        self.generations
            .iter()
            .filter(move |g| g.inputs.artifact_id == artifact_id)
    }

    /// The active generations a run reads: those it lists, and those that
    /// superseded one it lists (a re-extraction the run was not yet
    /// rewritten for, e.g. after a crash between the commit and the run).
    pub fn generations_listed<'a>(
        &'a self,
        listed: &'a [String],
    ) -> impl Iterator<Item = &'a GenerationManifest> {
        self.generations.iter().filter(move |g| {
            listed.contains(&g.generation_id) || g.superseded.iter().any(|s| listed.contains(s))
        })
    }

    pub fn find_operation(&self, digest: &str) -> Option<&GenerationManifest> {
        self.generations
            .iter()
            .find(|g| g.operation_digest == digest)
    }
}

/// Evidence rows per table of the generations a run lists (read from
/// `head`, or from their manifests when HEAD no longer holds them).
pub fn rows_of(ws: &Workspace, head: &Snapshot, listed: &[String]) -> BTreeMap<String, u64> {
    let mut rows = BTreeMap::new();
    for id in listed {
        let manifest = match head.generations.iter().find(|g| &g.generation_id == id) {
            Some(g) => Some(g.clone()),
            None => read_generation(ws, id).ok(),
        };
        for (table, n) in manifest.iter().flat_map(|g| &g.summary.rows) {
            *rows.entry(table.clone()).or_default() += n;
        }
    }
    rows.retain(|_, n| *n > 0);
    rows
}

/// The commit id HEAD names, if anything was ever published.
pub fn read_head(ws: &Workspace) -> Result<Option<String>> {
    match fs::read_to_string(ws.head_path()) {
        Ok(text) => {
            let id = text.trim().to_owned();
            if id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
                Ok(Some(id))
            } else {
                Err(FlameoxError::new(
                    ErrorCode::WorkspaceInvalid,
                    "corpus/HEAD is malformed",
                ))
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error("reading corpus/HEAD", e)),
    }
}

pub fn read_commit(ws: &Workspace, commit_id: &str) -> Result<CommitManifest> {
    if commit_id.len() != 64 || !commit_id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(FlameoxError::new(
            ErrorCode::WorkspaceInvalid,
            "malformed commit id",
        ));
    }
    read_versioned_json(
        &ws.commits_dir().join(format!("{commit_id}.json")),
        &format!("corpus commit {commit_id}"),
        MANIFEST_SCHEMA_VERSION,
        |c: &CommitManifest| c.schema_version,
    )
}

pub fn generation_manifest_path(ws: &Workspace, generation_id: &str) -> std::path::PathBuf {
    ws.generations_dir()
        .join(generation_id)
        .join("manifest.json")
}

pub fn read_generation(ws: &Workspace, generation_id: &str) -> Result<GenerationManifest> {
    if uuid::Uuid::parse_str(generation_id).is_err() {
        return Err(FlameoxError::new(
            ErrorCode::WorkspaceInvalid,
            "malformed generation id",
        ));
    }
    read_versioned_json(
        &generation_manifest_path(ws, generation_id),
        &format!("generation manifest {generation_id}"),
        MANIFEST_SCHEMA_VERSION,
        |g: &GenerationManifest| g.schema_version,
    )
}

/// Loads one commit and its generations.
pub fn load_snapshot(ws: &Workspace, commit_id: Option<&str>) -> Result<Snapshot> {
    let Some(commit_id) = commit_id else {
        return Ok(Snapshot {
            commit: None,
            generations: Vec::new(),
        });
    };
    let commit = read_commit(ws, commit_id)?;
    let mut generations = Vec::with_capacity(commit.generations.len());
    for id in commit.generations.keys() {
        generations.push(read_generation(ws, id)?);
    }
    Ok(Snapshot {
        commit: Some(commit),
        generations,
    })
}

/// Pins the commit HEAD names right now; a store-backed workspace first
/// pulls what others published (see [`crate::shared_store`]).
pub fn pin_head(ws: &Workspace) -> Result<Snapshot> {
    if let Some(store) = crate::shared_store::SharedStore::of(ws)? {
        crate::shared_store::pull(ws, &store)?;
    }
    pin_local_head(ws)
}

/// Pins the commit the local HEAD names, without asking a shared store.
pub fn pin_local_head(ws: &Workspace) -> Result<Snapshot> {
    let head = read_head(ws)?;
    load_snapshot(ws, head.as_deref())
}

/// Writes a generation manifest and returns the sha256 of its bytes.
pub fn write_generation(ws: &Workspace, manifest: &GenerationManifest) -> Result<String> {
    let mut bytes = serde_json::to_vec_pretty(manifest)
        .map_err(|e| FlameoxError::internal(format!("serializing a generation: {e}")))?;
    bytes.push(b'\n');
    write_atomic(
        &generation_manifest_path(ws, &manifest.generation_id),
        &bytes,
    )?;
    Ok(crate::fsutil::sha256_hex(&bytes))
}

/// Builds and writes the commit that follows `parent` with `generations`
/// active; returns it (HEAD is not touched).
pub fn write_commit(
    ws: &Workspace,
    parent: Option<String>,
    generations: BTreeMap<String, String>,
) -> Result<CommitManifest> {
    let tables: BTreeMap<String, u32> = flameox_extractors::EvidenceTable::ALL
        .iter()
        .map(|t| (t.name().to_owned(), flameox_extractors::SCHEMA_VERSION))
        .collect();
    let commit_id = CommitManifest::compute_id(&parent, &generations, &tables);
    let commit = CommitManifest {
        schema_version: MANIFEST_SCHEMA_VERSION,
        commit_id,
        parent,
        created_at: now_rfc3339(),
        generations,
        tables,
    };
    write_json_atomic(
        &ws.commits_dir().join(format!("{}.json", commit.commit_id)),
        &commit,
    )?;
    Ok(commit)
}

/// Atomically points HEAD at a commit: the only step that makes it visible.
pub fn swap_head(ws: &Workspace, commit_id: &str) -> Result<()> {
    write_atomic(&ws.head_path(), format!("{commit_id}\n").as_bytes())
}
