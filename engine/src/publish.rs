//! Publication: staging → Parquet → generation manifest → corpus commit →
//! atomic HEAD swap.
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
use std::time::Duration;

use flameox_extractors::{BatchSink, ExtractionSummary, SCHEMA_VERSION};
use sha2::{Digest, Sha256};

use crate::catalog::{
    self, GenerationFile, GenerationInputs, GenerationManifest, MANIFEST_SCHEMA_VERSION,
    OperationKey, Snapshot,
};
use crate::error::{FlameoxError, Result, io_error};
use crate::fsutil::{now_rfc3339, sync_dir};
use crate::lock::FileLock;
use crate::staging::{ParquetStagingSink, StagedFile, StagingArea, clean_abandoned};
use crate::workspace::Workspace;

/// What a publish did.
#[derive(Debug, Clone)]
pub struct PublishOutcome {
    pub generation: GenerationManifest,
    pub commit_id: String,
    /// True when HEAD already had this exact operation and nothing was written.
    pub reused: bool,
}

/// Runs `extract` into staging and publishes its output as one generation.
/// `extract` gets the sink and a private staging folder for spill files.
pub fn publish_extraction(
    ws: &Workspace,
    operation: OperationKey,
    run_id: &str,
    extract: impl FnOnce(&mut dyn BatchSink, &Path) -> Result<ExtractionSummary>,
) -> Result<PublishOutcome> {
    let _ = clean_abandoned(ws);
    let digest = operation.digest();
    let before = catalog::pin_head(ws)?;
    if let Some(existing) = before.find_operation(&digest) {
        return Ok(reuse(&before, existing));
    }
    let generation_id = uuid::Uuid::now_v7().to_string();
    let staging = StagingArea::create(ws, &format!("generation-{generation_id}"))?;
    let mut sink = ParquetStagingSink::new(staging.dir());
    let summary = extract(&mut sink, staging.dir())?;
    let staged = sink
        .finish()
        .map_err(|e| FlameoxError::internal(format!("finishing staged Parquet: {e}")))?;
    check_row_counts(&summary, &staged)?;
    let mut hashed = Vec::with_capacity(staged.len());
    for file in &staged {
        hashed.push((file, hash_file(&file.path)?));
    }
    pause_point("staged");

    let _lock = FileLock::acquire(
        &ws.locks_dir().join("write.lock"),
        Duration::from_millis(ws.config.locks.write_timeout_ms),
    )?;
    let current = catalog::pin_head(ws)?;
    if let Some(existing) = current.find_operation(&digest) {
        return Ok(reuse(&current, existing));
    }
    let mut files = Vec::with_capacity(hashed.len());
    for (file, (sha256, bytes)) in hashed {
        files.push(move_into_evidence(ws, &generation_id, file, sha256, bytes)?);
    }
    pause_point("moved");

    let supersede_key = operation.supersede_key();
    let superseded: Vec<String> = current
        .generations
        .iter()
        .filter(|g| g.supersede_key == supersede_key)
        .map(|g| g.generation_id.clone())
        .collect();
    let manifest = GenerationManifest {
        schema_version: MANIFEST_SCHEMA_VERSION,
        generation_id: generation_id.clone(),
        operation_digest: digest,
        supersede_key,
        inputs: GenerationInputs {
            run_id: run_id.to_owned(),
            artifact_id: operation.artifact_id.clone(),
        },
        operation,
        files,
        publisher: "flameox".to_owned(),
        flameox_version: env!("CARGO_PKG_VERSION").to_owned(),
        created_at: now_rfc3339(),
        superseded: superseded.clone(),
        summary,
    };
    let manifest_sha = catalog::write_generation(ws, &manifest)?;
    pause_point("generation_written");

    let mut active: BTreeMap<String, String> = current
        .commit
        .as_ref()
        .map(|c| c.generations.clone())
        .unwrap_or_default();
    for id in &superseded {
        active.remove(id);
    }
    active.insert(generation_id, manifest_sha);
    let parent = current.commit.as_ref().map(|c| c.commit_id.clone());
    let commit = catalog::write_commit(ws, parent, active)?;
    pause_point("commit_written");
    catalog::swap_head(ws, &commit.commit_id)?;
    ws.log_operation(&serde_json::json!({
        "at": now_rfc3339(), "op": "publish", "generation_id": manifest.generation_id,
        "commit_id": commit.commit_id, "run_id": run_id,
    }));
    drop(staging);
    Ok(PublishOutcome {
        generation: manifest,
        commit_id: commit.commit_id,
        reused: false,
    })
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
/// process at a named step of publication so it can be killed there.
fn pause_point(name: &str) {
    if std::env::var("FLAMEOX_TEST_PAUSE_AT").as_deref() == Ok(name) {
        eprintln!("flameox: paused at {name}");
        std::thread::sleep(Duration::from_secs(120));
    }
}
