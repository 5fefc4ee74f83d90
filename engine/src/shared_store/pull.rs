//! Pulling: makes the local cache hold the store's newest commit — its
//! commit manifest, generation manifests, runs and artifact records (never
//! Parquet files or payloads, which stay in the store) — then moves HEAD.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};

use crate::catalog::{self, CommitManifest, GenerationManifest};
use crate::error::{ErrorCode, FlameoxError, Result};
use crate::fsutil::{sha256_hex, write_atomic};
use crate::lock::FileLock;
use crate::runs::RunManifest;
use crate::store::{self, ArtifactRecord};
use crate::workspace::Workspace;

use super::commit_log::{self, LogEntry, StoreHead};
use super::{SharedStore, block_on};

/// Objects fetched at once.
const CONCURRENT_FETCHES: usize = 16;

/// Brings the local cache up to the store's head; returns the head now
/// held locally.
pub fn pull(ws: &Workspace, store: &SharedStore) -> Result<StoreHead> {
    let local = commit_log::read_local_head(ws)?;
    let remote = store.clone();
    let newest = block_on(async move { commit_log::latest_after(&remote, local.seq).await })?;
    match newest {
        Some(entry) => adopt(ws, store, &entry),
        None => Ok(local),
    }
}

/// Copies what `entry`'s commit names into the cache and moves HEAD to it
/// (unless a newer entry got there first).
pub(super) fn adopt(ws: &Workspace, store: &SharedStore, entry: &LogEntry) -> Result<StoreHead> {
    fetch_commit(ws, store, &entry.commit_id)?;
    let _lock = FileLock::acquire(
        &ws.locks_dir().join("store_head.lock"),
        Duration::from_millis(ws.config.locks.write_timeout_ms),
    )?;
    let held = commit_log::read_local_head(ws)?;
    if entry.seq <= held.seq {
        return Ok(held);
    }
    let head = StoreHead {
        seq: entry.seq,
        commit_id: Some(entry.commit_id.clone()),
    };
    // HEAD first: a crash between the two leaves store_head older, and
    // the next pull simply adopts the same entry again.
    catalog::swap_head(ws, &entry.commit_id)?;
    commit_log::write_local_head(ws, &head)?;
    Ok(head)
}

/// The path of a workspace file relative to `.flameox` (the object key).
pub(super) fn relative(ws: &Workspace, path: &Path) -> Result<String> {
    path.strip_prefix(ws.dir())
        .ok()
        .and_then(Path::to_str)
        .map(|s| s.replace('\\', "/"))
        .ok_or_else(|| FlameoxError::internal("a workspace path outside the workspace"))
}

/// Fetches one commit and every manifest, run and artifact record it needs
/// that the cache lacks; every manifest is checked against its digest.
fn fetch_commit(ws: &Workspace, store: &SharedStore, commit_id: &str) -> Result<()> {
    let commit_path = ws.commits_dir().join(format!("{commit_id}.json"));
    let commit: CommitManifest = if commit_path.is_file() {
        catalog::read_commit(ws, commit_id)?
    } else {
        let key = relative(ws, &commit_path)?;
        let remote = store.clone();
        let bytes = block_on(async move { remote.get_named(&key).await })?;
        let commit: CommitManifest = parse(&bytes, store, "a commit")?;
        let id = CommitManifest::compute_id(&commit.parent, &commit.generations, &commit.tables);
        if id != commit_id || commit.commit_id != commit_id {
            return Err(damaged(
                store,
                &format!("commit {commit_id} does not match its id"),
            ));
        }
        write_atomic(&commit_path, &bytes)?;
        commit
    };
    let missing: Vec<(String, String, PathBuf)> = commit
        .generations
        .iter()
        .map(|(id, sha)| {
            (
                id.clone(),
                sha.clone(),
                catalog::generation_manifest_path(ws, id),
            )
        })
        .filter(|(_, _, path)| !path.is_file())
        .collect();
    let fetched = fetch_all(
        ws,
        store,
        missing.iter().map(|(_, _, path)| path.clone()).collect(),
    )?;
    let mut needed_runs = BTreeSet::new();
    let mut needed_artifacts = BTreeSet::new();
    for ((id, sha, path), bytes) in missing.iter().zip(fetched) {
        if sha256_hex(&bytes) != *sha {
            return Err(damaged(
                store,
                &format!("generation {id} does not match its digest"),
            ));
        }
        let manifest: GenerationManifest = parse(&bytes, store, "a generation manifest")?;
        needed_runs.insert(manifest.inputs.run_id.clone());
        needed_artifacts.insert(manifest.inputs.artifact_id.clone());
        write_atomic(path, &bytes)?;
    }
    fetch_runs(ws, store, needed_runs)?;
    fetch_artifact_records(ws, store, needed_artifacts)
}

/// Runs the cache lacks, or holds at an older revision.
fn fetch_runs(ws: &Workspace, store: &SharedStore, ids: BTreeSet<String>) -> Result<()> {
    let paths: Vec<PathBuf> = ids
        .iter()
        .filter(|id| crate::runs::valid_run_id(id))
        .map(|id| ws.runs_dir().join(id).join("manifest.json"))
        .collect();
    let fetched = fetch_all(ws, store, paths.clone())?;
    for (path, bytes) in paths.iter().zip(fetched) {
        let run: RunManifest = parse(&bytes, store, "a run")?;
        let held = crate::fsutil::read_json::<RunManifest>(path, "a run").ok();
        if held.is_some_and(|h| h.revision >= run.revision) {
            continue;
        }
        write_atomic(path, &bytes)?;
    }
    Ok(())
}

/// Artifact records (not payloads) the cache lacks.
fn fetch_artifact_records(
    ws: &Workspace,
    store: &SharedStore,
    ids: BTreeSet<String>,
) -> Result<()> {
    let paths: Vec<PathBuf> = ids
        .iter()
        .filter_map(|id| store::artifact_record_path(ws, id))
        .filter(|path| !path.is_file())
        .collect();
    let fetched = fetch_all(ws, store, paths.clone())?;
    for (path, bytes) in paths.iter().zip(fetched) {
        let _: ArtifactRecord = parse(&bytes, store, "an artifact record")?;
        write_atomic(path, &bytes)?;
    }
    Ok(())
}

/// Reads the objects behind these workspace paths, a few at once.
fn fetch_all(ws: &Workspace, store: &SharedStore, paths: Vec<PathBuf>) -> Result<Vec<Vec<u8>>> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let keys = paths
        .iter()
        .map(|p| relative(ws, p))
        .collect::<Result<Vec<_>>>()?;
    let remote = store.clone();
    block_on(async move {
        futures::stream::iter(keys)
            .map(|key| {
                let remote = remote.clone();
                async move { remote.get_named(&key).await.map(|b| b.to_vec()) }
            })
            .buffered(CONCURRENT_FETCHES)
            .try_collect()
            .await
    })
}

fn parse<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    store: &SharedStore,
    what: &str,
) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| damaged(store, &format!("{what} is malformed: {e}")))
}

fn damaged(store: &SharedStore, problem: &str) -> FlameoxError {
    FlameoxError::new(
        ErrorCode::WorkspaceInvalid,
        format!("the shared store {}: {problem}", store.display()),
    )
    .remedy("restore the object, or point store.url at an intact copy")
}
