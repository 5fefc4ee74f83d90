//! Publication: staging → Parquet → generation manifest → corpus commit →
//! atomic HEAD swap. Several staged generations (a multi-artifact run)
//! publish in one commit.
//!
//! Extraction runs without the write lock (it can take minutes); only the
//! short move-and-commit step holds `write.lock`. Under the lock HEAD is read
//! again, so a publisher always commits on top of whatever landed meanwhile
//! (generations are independent, so this rebase cannot conflict). An operation
//! already present in HEAD is returned as it is: publishing is idempotent.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use flameox_extractors::{BatchSink, ExtractionSummary, SCHEMA_VERSION};
use sha2::{Digest, Sha256};

use crate::catalog::{
    self, GenerationFile, GenerationInputs, GenerationManifest, MANIFEST_SCHEMA_VERSION,
    OperationKey, Snapshot,
};
use crate::error::{FlameoxError, Result, io_error, wrapped_io_error};
use crate::fsutil::{now_rfc3339, sync_dir};
use crate::late_identity::{LateArtifactId, LateIdSink};
use crate::lock::FileLock;
use crate::shared_store::{self, PublishAttempt, SharedStore, StoreHead};
use crate::staging::{BackgroundParquetSink, StagedFile, StagingArea, clean_abandoned};
use crate::workspace::Workspace;

/// What a publish did.
#[derive(Debug, Clone)]
pub struct PublishOutcome {
    pub generation: GenerationManifest,
    pub commit_id: String,
    /// True when HEAD already had this exact operation and nothing was written.
    pub reused: bool,
}

/// The commit a publication's outcomes landed in: the one that wrote
/// something, else the commit that already held them all.
pub fn commit_of(outcomes: &[PublishOutcome]) -> String {
    outcomes
        .iter()
        .find(|o| !o.reused)
        .or(outcomes.last())
        .map(|o| o.commit_id.clone())
        .unwrap_or_default()
}

/// Runs `extract` into staging and publishes its output as one generation.
/// `extract` gets the sink and a private staging folder for spill files.
pub fn publish_extraction(
    ws: &Workspace,
    operation: OperationKey,
    run_id: &str,
    extract: impl FnOnce(&mut dyn BatchSink, &Path) -> Result<ExtractionSummary>,
) -> Result<PublishOutcome> {
    let staged = stage_extraction(ws, operation, run_id, None, extract)?;
    let mut outcomes = commit_staged(ws, vec![staged])?;
    outcomes
        .pop()
        .ok_or_else(|| FlameoxError::internal("publishing produced no outcome"))
}

/// One extraction ready to publish: either already in HEAD (nothing to
/// write) or staged as hashed Parquet files in a private folder.
pub enum StagedGeneration {
    AlreadyPublished(Box<PublishOutcome>),
    Staged(Box<Staged>),
}

/// The staged output of one extraction (its folder lives until publish).
pub struct Staged {
    generation_id: String,
    operation: OperationKey,
    digest: String,
    run_id: String,
    summary: ExtractionSummary,
    files: Vec<(StagedFile, String, u64)>,
    /// Generations this one replaces besides those of its supersede key
    /// (a re-extraction with another extractor or options).
    replaces: Vec<String>,
    _staging: StagingArea,
}

impl StagedGeneration {
    /// The extractor summary (of the staged or the existing generation).
    pub fn summary(&self) -> &ExtractionSummary {
        match self {
            StagedGeneration::AlreadyPublished(o) => &o.generation.summary,
            StagedGeneration::Staged(s) => &s.summary,
        }
    }

    /// Publishing it also takes `generations` out of HEAD (those still in
    /// it): a re-extraction replaces what the artifact had, whatever the
    /// operation that made it.
    pub fn replacing(mut self, generations: Vec<String>) -> Self {
        if let StagedGeneration::Staged(s) = &mut self {
            s.replaces = generations;
        }
        self
    }
}

/// Runs `extract` into a private staging folder, writes and hashes its
/// Parquet files and checks their row counts; makes nothing visible. An
/// operation HEAD already has is not extracted again.
pub fn stage_extraction(
    ws: &Workspace,
    operation: OperationKey,
    run_id: &str,
    within: Option<&Arc<StagingArea>>,
    extract: impl FnOnce(&mut dyn BatchSink, &Path) -> Result<ExtractionSummary>,
) -> Result<StagedGeneration> {
    clean_before_staging(ws, within);
    let digest = operation.digest();
    let before = catalog::pin_head(ws)?;
    if let Some(existing) = before.find_operation(&digest) {
        return Ok(StagedGeneration::AlreadyPublished(Box::new(reuse(
            &before, existing,
        ))));
    }
    let mut staging = start_staging(ws, within)?;
    let summary = extract(&mut staging.sink, staging.area.dir())?;
    finish_staging(staging, operation, digest, run_id, summary)
}

/// [`stage_extraction`] for an artifact whose id arrives in `id` while it
/// is extracted (the copier's hash): batches are stamped by
/// [`LateIdSink`], and the check for an operation HEAD already has runs
/// once the id is known.
pub fn stage_extraction_with_late_id(
    ws: &Workspace,
    mut operation: OperationKey,
    id: Arc<LateArtifactId>,
    run_id: &str,
    within: Option<&Arc<StagingArea>>,
    extract: impl FnOnce(&mut dyn BatchSink, &Path) -> Result<ExtractionSummary>,
) -> Result<StagedGeneration> {
    clean_before_staging(ws, within);
    let mut staging = start_staging(ws, within)?;
    let mut stamping = LateIdSink::new(&mut staging.sink, id);
    let summary = extract(&mut stamping, staging.area.dir())?;
    operation.artifact_id = stamping
        .finish()
        .map_err(|e| wrapped_io_error("naming the staged evidence", &*e))?;
    let digest = operation.digest();
    let head = catalog::pin_head(ws)?;
    if let Some(existing) = head.find_operation(&digest) {
        return Ok(StagedGeneration::AlreadyPublished(Box::new(reuse(
            &head, existing,
        ))));
    }
    finish_staging(staging, operation, digest, run_id, summary)
}

/// A new generation's id, its private folder and the Parquet writer.
struct Staging {
    generation_id: String,
    area: StagingArea,
    sink: BackgroundParquetSink,
}

/// Removes dead writers' staging folders, as every writer does first; an
/// import staging `within` its own folder did so when it made that folder.
fn clean_before_staging(ws: &Workspace, within: Option<&Arc<StagingArea>>) {
    if within.is_none() {
        let _ = clean_abandoned(ws);
    }
}

/// The generation's folder is `within` an import's shared staging folder,
/// or its own under `staging/`.
fn start_staging(ws: &Workspace, within: Option<&Arc<StagingArea>>) -> Result<Staging> {
    let generation_id = uuid::Uuid::now_v7().to_string();
    let name = format!("generation-{generation_id}");
    let area = match within {
        Some(parent) => StagingArea::create_within(parent, &name)?,
        None => StagingArea::create(ws, &name)?,
    };
    let sink = BackgroundParquetSink::new(area.dir())
        .map_err(|e| wrapped_io_error("starting the Parquet writer", &*e))?;
    Ok(Staging {
        generation_id,
        area,
        sink,
    })
}

/// Closes the Parquet files, checks them against the summary and hashes
/// them.
fn finish_staging(
    staging: Staging,
    operation: OperationKey,
    digest: String,
    run_id: &str,
    summary: ExtractionSummary,
) -> Result<StagedGeneration> {
    let Staging {
        generation_id,
        area,
        sink,
    } = staging;
    let staged = sink
        .finish()
        .map_err(|e| wrapped_io_error("finishing staged Parquet", &*e))?;
    check_row_counts(&summary, &staged)?;
    let mut files = Vec::with_capacity(staged.len());
    for file in staged {
        let (sha256, bytes) = hash_file(&file.path)?;
        files.push((file, sha256, bytes));
    }
    pause_point("staged");
    Ok(StagedGeneration::Staged(Box::new(Staged {
        generation_id,
        operation,
        digest,
        run_id: run_id.to_owned(),
        summary,
        files,
        replaces: Vec::new(),
        _staging: area,
    })))
}

/// Publishes staged generations together: under the write lock, on top of
/// the current HEAD, as ONE commit, so a multi-artifact run's evidence
/// becomes visible all at once. Outcomes come back in input order; an
/// operation that landed meanwhile (or twice in `staged`) is reused.
pub fn commit_staged(ws: &Workspace, staged: Vec<StagedGeneration>) -> Result<Vec<PublishOutcome>> {
    let needs_commit = staged
        .iter()
        .any(|s| matches!(s, StagedGeneration::Staged(_)));
    if !needs_commit {
        return Ok(staged
            .into_iter()
            .filter_map(|s| match s {
                StagedGeneration::AlreadyPublished(o) => Some(*o),
                StagedGeneration::Staged(_) => None,
            })
            .collect());
    }
    let shared = SharedStore::of(ws)?;
    let _lock = FileLock::acquire(
        &ws.locks_dir().join("write.lock"),
        Duration::from_millis(ws.config.locks.write_timeout_ms),
    )?;
    let base = match &shared {
        Some(store) => shared_store::pull(ws, store)?,
        None => StoreHead::default(),
    };
    let current = catalog::pin_local_head(ws)?;
    let mut active: BTreeMap<String, String> = current
        .commit
        .as_ref()
        .map(|c| c.generations.clone())
        .unwrap_or_default();
    // Per input: an outcome already known, or the manifest written now.
    let mut results: Vec<std::result::Result<PublishOutcome, GenerationManifest>> = Vec::new();
    let mut written: BTreeMap<String, GenerationManifest> = BTreeMap::new();
    for item in staged {
        let s = match item {
            StagedGeneration::AlreadyPublished(o) => {
                results.push(Ok(*o));
                continue;
            }
            StagedGeneration::Staged(s) => s,
        };
        if let Some(existing) = current.find_operation(&s.digest) {
            results.push(Ok(reuse(&current, existing)));
            continue;
        }
        if let Some(same) = written.get(&s.digest) {
            results.push(Ok(PublishOutcome {
                generation: same.clone(),
                commit_id: String::new(),
                reused: true,
            }));
            continue;
        }
        let manifest = write_generation_files(ws, &current, *s, &mut active)?;
        written.insert(manifest.operation_digest.clone(), manifest.clone());
        results.push(Err(manifest));
    }
    let commit = match &shared {
        Some(store) => {
            let new: Vec<(GenerationManifest, String)> = written
                .values()
                .filter_map(|m| {
                    active
                        .get(&m.generation_id)
                        .map(|sha| (m.clone(), sha.clone()))
                })
                .collect();
            shared_store::publish_commit(
                ws,
                store,
                PublishAttempt {
                    base,
                    active,
                    written: &new,
                },
            )?
        }
        None => {
            let parent = current.commit.as_ref().map(|c| c.commit_id.clone());
            let commit = catalog::write_commit(ws, parent, active)?;
            pause_point("commit_written");
            catalog::swap_head(ws, &commit.commit_id)?;
            commit
        }
    };
    for manifest in written.values() {
        ws.log_operation(&serde_json::json!({
            "at": now_rfc3339(), "op": "publish", "generation_id": manifest.generation_id,
            "commit_id": commit.commit_id, "run_id": manifest.inputs.run_id,
        }));
    }
    Ok(results
        .into_iter()
        .map(|r| match r {
            Ok(mut o) if o.commit_id.is_empty() => {
                o.commit_id = commit.commit_id.clone();
                o
            }
            Ok(o) => o,
            Err(manifest) => PublishOutcome {
                generation: manifest,
                commit_id: commit.commit_id.clone(),
                reused: false,
            },
        })
        .collect())
}

/// Moves one staged generation's files into `evidence/`, writes its
/// manifest and enters it into `active` (dropping what it supersedes).
fn write_generation_files(
    ws: &Workspace,
    current: &Snapshot,
    s: Staged,
    active: &mut BTreeMap<String, String>,
) -> Result<GenerationManifest> {
    let mut files = Vec::with_capacity(s.files.len());
    for (file, sha256, bytes) in &s.files {
        files.push(move_into_evidence(
            ws,
            &s.generation_id,
            file,
            sha256.clone(),
            *bytes,
        )?);
    }
    pause_point("moved");
    let supersede_key = s.operation.supersede_key();
    let superseded: Vec<String> = current
        .generations
        .iter()
        .filter(|g| g.supersede_key == supersede_key || s.replaces.contains(&g.generation_id))
        .map(|g| g.generation_id.clone())
        .collect();
    let manifest = GenerationManifest {
        schema_version: MANIFEST_SCHEMA_VERSION,
        generation_id: s.generation_id.clone(),
        operation_digest: s.digest,
        supersede_key,
        inputs: GenerationInputs {
            run_id: s.run_id,
            artifact_id: s.operation.artifact_id.clone(),
        },
        operation: s.operation,
        files,
        publisher: "flameox".to_owned(),
        flameox_version: env!("CARGO_PKG_VERSION").to_owned(),
        created_at: now_rfc3339(),
        superseded: superseded.clone(),
        summary: s.summary,
    };
    let manifest_sha = catalog::write_generation(ws, &manifest)?;
    pause_point("generation_written");
    for id in &superseded {
        active.remove(id);
    }
    active.insert(s.generation_id, manifest_sha);
    Ok(manifest)
}

fn reuse(snapshot: &Snapshot, existing: &GenerationManifest) -> PublishOutcome {
    PublishOutcome {
        generation: existing.clone(),
        commit_id: snapshot.commit_id().to_owned(),
        reused: true,
    }
}

fn check_row_counts(summary: &ExtractionSummary, staged: &[StagedFile]) -> Result<()> {
    let mut written: BTreeMap<&str, u64> = BTreeMap::new();
    for file in staged {
        *written.entry(file.table.name()).or_default() += file.rows;
    }
    for (table, rows) in &summary.rows {
        let got = written.get(table.as_str()).copied().unwrap_or(0);
        if got != *rows {
            return Err(FlameoxError::internal(format!(
                "row count mismatch in {table}: extractor reported {rows}, staged {got}"
            )));
        }
    }
    Ok(())
}

/// sha256 and size of a file.
pub fn hash_file(path: &Path) -> Result<(String, u64)> {
    let mut file = File::open(path).map_err(|e| io_error("reading a staged file", e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| io_error("reading a staged file", e))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        hasher.update(&buf[..n]);
    }
    Ok((hex::encode(hasher.finalize()), total))
}

fn move_into_evidence(
    ws: &Workspace,
    generation_id: &str,
    file: &StagedFile,
    sha256: String,
    bytes: u64,
) -> Result<GenerationFile> {
    let relative = format!(
        "evidence/{}/generation={generation_id}/part-{:05}.parquet",
        file.table.name(),
        file.part
    );
    let target = ws.dir().join(&relative);
    let dir = target.parent().unwrap_or(ws.dir());
    fs::create_dir_all(dir).map_err(|e| io_error("creating an evidence folder", e))?;
    fs::rename(&file.path, &target).map_err(|e| io_error("moving a staged file", e))?;
    sync_dir(dir).map_err(|e| io_error("syncing an evidence folder", e))?;
    Ok(GenerationFile {
        table: file.table.name().to_owned(),
        path: relative,
        sha256,
        bytes,
        rows: file.rows,
        schema_version: SCHEMA_VERSION,
    })
}

/// Crash-safety tests set `FLAMEOX_TEST_PAUSE_AT=<point>` to stop a real
/// process at a named step of publication so it can be killed there (or,
/// with `FLAMEOX_TEST_PAUSE_MS`, so another publisher overtakes it). With
/// `FLAMEOX_TEST_RESUME_FILE` the pause ends as soon as that file exists:
/// the test says when the other publisher is done, no timing guessed.
pub(crate) fn pause_point(name: &str) {
    if std::env::var("FLAMEOX_TEST_PAUSE_AT").as_deref() == Ok(name) {
        let millis = std::env::var("FLAMEOX_TEST_PAUSE_MS")
            .ok()
            .and_then(|m| m.parse().ok())
            .unwrap_or(120_000);
        eprintln!("flameox: paused at {name}");
        let until = std::time::Instant::now() + Duration::from_millis(millis);
        match std::env::var_os("FLAMEOX_TEST_RESUME_FILE") {
            Some(file) => {
                while std::time::Instant::now() < until && !Path::new(&file).exists() {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            None => std::thread::sleep(Duration::from_millis(millis)),
        }
    }
}
