//! `flameox validate` / `catalog validate`: checks that what HEAD says exists
//! does, and reports what nothing references. `recover` cleans up after a
//! crashed writer.

use std::collections::BTreeSet;
use std::fs::{self, File};

use datafusion::parquet::file::reader::{FileReader, SerializedFileReader};
use flameox_extractors::{EvidenceTable, OLDEST_READ_SCHEMA_VERSION, SCHEMA_VERSION};
use serde::{Deserialize, Serialize};

use crate::catalog::{self, CommitManifest};
use crate::error::Result;
use crate::publish::hash_file;
use crate::staging::{clean_abandoned, expected_metadata};
use crate::store;
use crate::workspace::Workspace;

/// One problem found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValidationIssue {
    pub code: String,
    pub message: String,
    /// What the problem is in (`generation:<id>`, `artifact:<id>`,
    /// `commit:<id>`), for `repair` to act on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

/// The validation report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValidationReport {
    pub ok: bool,
    pub full: bool,
    pub head_commit: Option<String>,
    pub commits_checked: usize,
    pub generations_checked: usize,
    pub files_checked: usize,
    pub artifacts_checked: usize,
    pub errors: Vec<ValidationIssue>,
    /// Files and folders no commit references (left by a crash; `recover` removes them).
    pub orphans: Vec<String>,
    pub staging_entries: usize,
}

fn issue(code: &str, message: String) -> ValidationIssue {
    ValidationIssue {
        code: code.into(),
        message,
        subject: None,
    }
}

fn issue_in(code: &str, message: String, subject: String) -> ValidationIssue {
    ValidationIssue {
        subject: Some(subject),
        ..issue(code, message)
    }
}

/// Validates manifests, row counts, schemas; with `full`, file and artifact hashes.
pub fn validate(ws: &Workspace, full: bool) -> Result<ValidationReport> {
    let mut errors = Vec::new();
    let head = catalog::read_head(ws)?;
    let mut report = ValidationReport {
        ok: true,
        full,
        head_commit: head.clone(),
        commits_checked: 0,
        generations_checked: 0,
        files_checked: 0,
        artifacts_checked: 0,
        errors: Vec::new(),
        orphans: Vec::new(),
        staging_entries: fs::read_dir(ws.staging_dir())
            .map(|d| d.count())
            .unwrap_or(0),
    };
    let mut referenced_generations = BTreeSet::new();
    let mut referenced_files = BTreeSet::new();
    // Walk the commit chain from HEAD.
    let mut cursor = head.clone();
    let mut seen = BTreeSet::new();
    while let Some(id) = cursor {
        if !seen.insert(id.clone()) {
            errors.push(issue("commit_cycle", format!("commit chain loops at {id}")));
            break;
        }
        let commit: CommitManifest = match catalog::read_commit(ws, &id) {
            Ok(c) => c,
            // A store-backed workspace caches the commits it pulled; the
            // store's log holds the rest of the chain.
            Err(_) if in_store(ws) && !ws.commits_dir().join(format!("{id}.json")).is_file() => {
                break;
            }
            Err(e) => {
                errors.push(issue_in(
                    "commit_unreadable",
                    e.message.clone(),
                    format!("commit:{id}"),
                ));
                break;
            }
        };
        report.commits_checked += 1;
        let recomputed =
            CommitManifest::compute_id(&commit.parent, &commit.generations, &commit.tables);
        if recomputed != commit.commit_id || commit.commit_id != id {
            errors.push(issue_in(
                "commit_digest_mismatch",
                format!("commit {id} does not match its digest"),
                format!("commit:{id}"),
            ));
        }
        for (table, version) in &commit.tables {
            if *version > SCHEMA_VERSION {
                errors.push(issue(
                    "evidence_schema_newer",
                    format!(
                        "commit {id}: table {table} was written by a newer flameox \
                         (evidence schema version {version}); this build (flameox {}) \
                         reads schema version {SCHEMA_VERSION}: upgrade flameox",
                        env!("CARGO_PKG_VERSION")
                    ),
                ));
            }
        }
        let is_head = Some(&id) == head.as_ref();
        for (generation_id, manifest_sha) in &commit.generations {
            if !referenced_generations.insert(generation_id.clone()) {
                continue;
            }
            check_generation(
                ws,
                generation_id,
                manifest_sha,
                is_head,
                full,
                &mut report,
                &mut errors,
                &mut referenced_files,
            );
        }
        cursor = commit.parent.clone();
    }
    // Orphans: generation folders and evidence files nothing references.
    if let Ok(entries) = fs::read_dir(ws.generations_dir()) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !referenced_generations.contains(&name) {
                report.orphans.push(format!("generations/{name}"));
            }
        }
    }
    for table in EvidenceTable::ALL {
        let Ok(gens) = fs::read_dir(ws.evidence_dir().join(table.name())) else {
            continue;
        };
        for g in gens.flatten() {
            let Ok(files) = fs::read_dir(g.path()) else {
                continue;
            };
            for f in files.flatten() {
                let rel = format!(
                    "evidence/{}/{}/{}",
                    table.name(),
                    g.file_name().to_string_lossy(),
                    f.file_name().to_string_lossy()
                );
                if !referenced_files.contains(&rel) {
                    report.orphans.push(rel);
                }
            }
        }
    }
    for artifact in store::list_artifacts(ws)? {
        if in_store(ws) && !store::payload_path(ws, &artifact).is_file() {
            continue;
        }
        report.artifacts_checked += 1;
        if full && !store::verify_payload(ws, &artifact)? {
            errors.push(issue_in(
                "artifact_hash_mismatch",
                format!("artifact {} does not match its id", artifact.artifact_id),
                format!("artifact:{}", artifact.artifact_id),
            ));
        }
    }
    report.orphans.sort();
    report.ok = errors.is_empty();
    report.errors = errors;
    Ok(report)
}

#[allow(clippy::too_many_arguments)]
fn check_generation(
    ws: &Workspace,
    generation_id: &str,
    manifest_sha: &str,
    is_head: bool,
    full: bool,
    report: &mut ValidationReport,
    errors: &mut Vec<ValidationIssue>,
    referenced_files: &mut BTreeSet<String>,
) {
    let path = catalog::generation_manifest_path(ws, generation_id);
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(_) => {
            // Generations superseded long ago may have been collected.
            if is_head {
                errors.push(issue_in(
                    "generation_missing",
                    format!("generation {generation_id} is missing"),
                    format!("generation:{generation_id}"),
                ));
            }
            return;
        }
    };
    report.generations_checked += 1;
    if crate::fsutil::sha256_hex(&bytes) != manifest_sha {
        errors.push(issue_in(
            "generation_digest_mismatch",
            format!("generation {generation_id} manifest changed"),
            format!("generation:{generation_id}"),
        ));
    }
    let manifest = match catalog::read_generation(ws, generation_id) {
        Ok(m) => m,
        Err(e) => {
            errors.push(issue_in(
                "generation_unreadable",
                e.message.clone(),
                format!("generation:{generation_id}"),
            ));
            return;
        }
    };
    for file in &manifest.files {
        referenced_files.insert(file.path.clone());
        let full_path = ws.dir().join(&file.path);
        if in_store(ws) && !full_path.is_file() {
            // Read in place from the shared store, not cached here.
            continue;
        }
        report.files_checked += 1;
        let Some(table) = EvidenceTable::from_name(&file.table) else {
            errors.push(issue_in(
                "unknown_table",
                format!("{} names unknown table {}", file.path, file.table),
                format!("generation:{generation_id}"),
            ));
            continue;
        };
        if file.schema_version > SCHEMA_VERSION {
            errors.push(issue_in(
                "evidence_schema_newer",
                format!(
                    "{} was written by a newer flameox (evidence schema version {}); \
                     this build (flameox {}) reads schema version {SCHEMA_VERSION}: \
                     upgrade flameox",
                    file.path,
                    file.schema_version,
                    env!("CARGO_PKG_VERSION")
                ),
                format!("generation:{generation_id}"),
            ));
            continue;
        }
        match check_parquet(&full_path, table, file.rows) {
            Ok(()) => {}
            Err(message) => errors.push(issue_in(
                "evidence_file_invalid",
                format!("{}: {message}", file.path),
                format!("generation:{generation_id}"),
            )),
        }
        if full {
            match hash_file(&full_path) {
                Ok((sha, bytes)) if sha == file.sha256 && bytes == file.bytes => {}
                Ok(_) => errors.push(issue_in(
                    "evidence_hash_mismatch",
                    format!("{} does not match its hash", file.path),
                    format!("generation:{generation_id}"),
                )),
                Err(e) => errors.push(issue_in(
                    "evidence_file_unreadable",
                    format!("{}: {}", file.path, e.message),
                    format!("generation:{generation_id}"),
                )),
            }
        }
    }
    let _ = manifest.summary;
}

/// Whether the workspace keeps its evidence in a shared store (whose
/// objects this folder caches only in part).
fn in_store(ws: &Workspace) -> bool {
    ws.config.store.shared_url().is_some()
}

/// Checks row count, schema and key-value metadata from the footer.
fn check_parquet(
    path: &std::path::Path,
    table: EvidenceTable,
    rows: u64,
) -> std::result::Result<(), String> {
    let file = File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let reader = SerializedFileReader::new(file).map_err(|e| format!("not a Parquet file: {e}"))?;
    let meta = reader.metadata().file_metadata();
    if meta.num_rows() as u64 != rows {
        return Err(format!(
            "has {} rows, manifest says {rows}",
            meta.num_rows()
        ));
    }
    let kv: Vec<(String, String)> = meta
        .key_value_metadata()
        .map(|kvs| {
            kvs.iter()
                .map(|k| (k.key.clone(), k.value.clone().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    let written = kv
        .iter()
        .find(|(k, _)| k == "flameox.schema_version")
        .and_then(|(_, v)| v.parse::<u32>().ok());
    if let Some(version) = written.filter(|v| *v > SCHEMA_VERSION) {
        return Err(format!(
            "was written by a newer flameox (evidence schema version {version}); this build \
             (flameox {}) reads schema version {SCHEMA_VERSION}: upgrade flameox",
            env!("CARGO_PKG_VERSION")
        ));
    }
    let version = written.unwrap_or(SCHEMA_VERSION);
    if version < OLDEST_READ_SCHEMA_VERSION {
        return Err(format!(
            "has evidence schema version {version}, older than this build reads \
             ({OLDEST_READ_SCHEMA_VERSION}): re-import its artifact"
        ));
    }
    for expected in expected_metadata(table, version) {
        if !kv.contains(&expected) {
            return Err(format!("missing metadata {}={}", expected.0, expected.1));
        }
    }
    let columns: Vec<String> = meta
        .schema_descr()
        .columns()
        .iter()
        .map(|c| c.name().to_owned())
        .collect();
    if columns != table.columns_at(version) {
        return Err("columns differ from the table schema".into());
    }
    Ok(())
}

/// What `recover` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecoverReport {
    pub staging_removed: usize,
    pub orphans_moved_to_trash: Vec<String>,
    pub interrupted_runs: Vec<String>,
}

/// Removes dead writers' staging, moves orphans to `trash/`, and marks runs
/// whose import or execution never finished as interrupted. Holds the write lock.
pub fn recover(ws: &Workspace) -> Result<RecoverReport> {
    let _lock = crate::lock::FileLock::acquire(
        &ws.locks_dir().join("write.lock"),
        std::time::Duration::from_millis(ws.config.locks.write_timeout_ms),
    )?;
    let staging_removed = clean_abandoned(ws)?;
    let report = validate(ws, false)?;
    let trash = ws
        .trash_dir()
        .join(format!("recover-{}", uuid::Uuid::now_v7()));
    let mut moved = Vec::new();
    for orphan in &report.orphans {
        let target = trash.join(orphan);
        if let Some(parent) = target.parent() {
            let _ = fs::create_dir_all(parent);
        }
        if fs::rename(ws.dir().join(orphan), &target).is_ok() {
            moved.push(orphan.clone());
        }
    }
    let mut interrupted = Vec::new();
    for mut run in crate::runs::list_runs(ws)? {
        if run.status.extraction == "pending" && !run_is_active(ws, &run.run_id) {
            run.mark_interrupted();
            crate::runs::save_run(ws, &mut run)?;
            interrupted.push(run.run_id);
        }
    }
    Ok(RecoverReport {
        staging_removed,
        orphans_moved_to_trash: moved,
        interrupted_runs: interrupted,
    })
}

/// A pending run is active while some staging folder is locked by a live writer.
fn run_is_active(ws: &Workspace, _run_id: &str) -> bool {
    fs::read_dir(ws.staging_dir())
        .map(|entries| {
            entries.flatten().any(|e| {
                let lock = e.path().join(".lock");
                lock.exists() && matches!(crate::lock::FileLock::try_acquire(&lock), Ok(None))
            })
        })
        .unwrap_or(false)
}
