//! Pushing: uploads what a commit names (immutable objects first), then
//! races for the next commit-log entry; a lost race rebases onto the
//! winner's commit and tries again, a bounded number of times.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

use object_store::{ObjectStoreExt, WriteMultipart};

use crate::catalog::{self, CommitManifest, GenerationManifest, Snapshot};
use crate::error::{ErrorCode, FlameoxError, Result, io_error};
use crate::fsutil::now_rfc3339;
use crate::runs::RunManifest;
use crate::store;
use crate::workspace::Workspace;

use super::commit_log::{self, LogEntry, StoreHead};
use super::pull::{adopt, relative};
use super::{SharedStore, block_on};

/// Log entries one publication may try before giving up (each lost race
/// means another commit landed, so this bounds work, not progress).
const MAX_ATTEMPTS: usize = 16;
/// Files up to this size go up in one request; larger ones in parts.
const SINGLE_PUT_BYTES: u64 = 16 * 1024 * 1024;
const PART_BYTES: usize = 8 * 1024 * 1024;

/// A commit to publish: built on `base`, with `active` generations, of
/// which `written` (each with its manifest digest) are new.
pub struct PublishAttempt<'a> {
    pub base: StoreHead,
    pub active: BTreeMap<String, String>,
    pub written: &'a [(GenerationManifest, String)],
}

/// Uploads the new generations and publishes their commit; returns it once
/// its log entry exists and the local HEAD names it.
pub fn publish_commit(
    ws: &Workspace,
    store: &SharedStore,
    attempt: PublishAttempt<'_>,
) -> Result<CommitManifest> {
    upload_generations(ws, store, attempt.written)?;
    let PublishAttempt {
        mut base,
        mut active,
        written,
    } = attempt;
    for _ in 0..MAX_ATTEMPTS {
        let commit = catalog::write_commit(ws, base.commit_id.clone(), active.clone())?;
        let commit_path = ws.commits_dir().join(format!("{}.json", commit.commit_id));
        upload_small(ws, store, commit_path, true)?;
        crate::publish::pause_point("store_commit_uploaded");
        let entry = LogEntry {
            seq: base.seq + 1,
            commit_id: commit.commit_id.clone(),
            parent: base.commit_id.clone(),
            workspace_id: ws.identity.workspace_id.clone(),
            created_at: now_rfc3339(),
        };
        let remote = store.clone();
        let claim = entry.clone();
        if block_on(async move { commit_log::append(&remote, &claim).await })? {
            adopt(ws, store, &entry)?;
            return Ok(commit);
        }
        // Another publisher took this number: build on its commit.
        let remote = store.clone();
        let after = base.seq;
        let newest = block_on(async move { commit_log::latest_after(&remote, after).await })?
            .ok_or_else(|| {
                FlameoxError::new(
                    ErrorCode::WorkspaceInvalid,
                    format!(
                        "the shared store {} refused log entry {} yet lists none after {after}",
                        store.display(),
                        after + 1
                    ),
                )
            })?;
        adopt(ws, store, &newest)?;
        let snapshot = catalog::load_snapshot(ws, Some(&newest.commit_id))?;
        active = rebase(&snapshot, written);
        base = StoreHead {
            seq: newest.seq,
            commit_id: Some(newest.commit_id),
        };
    }
    Err(FlameoxError::new(
        ErrorCode::WriteLockTimeout,
        format!(
            "other publishers took the shared store's next commit {MAX_ATTEMPTS} times in a row"
        ),
    )
    .remedy("retry the import: its generations are uploaded and will be reused"))
}

/// The winner's generations plus ours, ours superseding theirs with the
/// same operation or the ones ours replace by name (a re-extraction);
/// generations are independent, so this cannot conflict.
fn rebase(winner: &Snapshot, written: &[(GenerationManifest, String)]) -> BTreeMap<String, String> {
    let mut active = winner
        .commit
        .as_ref()
        .map(|c| c.generations.clone())
        .unwrap_or_default();
    for (manifest, sha) in written {
        for old in winner.generations.iter().filter(|g| {
            g.supersede_key == manifest.supersede_key
                || manifest.superseded.contains(&g.generation_id)
        }) {
            active.remove(&old.generation_id);
        }
        active.insert(manifest.generation_id.clone(), sha.clone());
    }
    active
}

/// Publishes what the local HEAD holds into the store (a workspace that
/// had evidence before `store.url` was set); a no-op when the store
/// already has that commit.
pub fn push_snapshot(ws: &Workspace, store: &SharedStore) -> Result<Option<CommitManifest>> {
    let snapshot = catalog::pin_local_head(ws)?;
    let Some(commit) = &snapshot.commit else {
        return Ok(None);
    };
    let base = super::pull::pull(ws, store)?;
    if base.commit_id.as_deref() == Some(commit.commit_id.as_str()) {
        return Ok(None);
    }
    let written: Vec<(GenerationManifest, String)> = snapshot
        .generations
        .iter()
        .filter_map(|g| {
            commit
                .generations
                .get(&g.generation_id)
                .map(|sha| (g.clone(), sha.clone()))
        })
        .collect();
    let merged = match &base.commit_id {
        Some(id) => rebase(&catalog::load_snapshot(ws, Some(id))?, &written),
        None => commit.generations.clone(),
    };
    publish_commit(
        ws,
        store,
        PublishAttempt {
            base,
            active: merged,
            written: &written,
        },
    )
    .map(Some)
}

/// Writes a run's new revision to the store (the revision file once, the
/// current manifest over the previous one).
pub fn push_run(ws: &Workspace, run: &RunManifest) -> Result<()> {
    let Some(store) = SharedStore::of(ws)? else {
        return Ok(());
    };
    let dir = ws.runs_dir().join(&run.run_id);
    let revision = dir
        .join("revisions")
        .join(format!("{:08}.json", run.revision));
    upload_small(ws, &store, revision, true)?;
    upload_small(ws, &store, dir.join("manifest.json"), false)
}

/// Uploads every object the new generations name: Parquet files, the
/// artifact (payload before record, so a record implies its bytes), each
/// run once (a 1,024-rank run has 1,024 generations) and the manifests last.
fn upload_generations(
    ws: &Workspace,
    store: &SharedStore,
    written: &[(GenerationManifest, String)],
) -> Result<()> {
    let mut runs_uploaded = std::collections::BTreeSet::new();
    for (manifest, _) in written {
        for file in &manifest.files {
            upload_file(ws, store, ws.dir().join(&file.path))?;
        }
        upload_artifact(ws, store, &manifest.inputs.artifact_id)?;
        let run_id = &manifest.inputs.run_id;
        let run = ws.runs_dir().join(run_id).join("manifest.json");
        if run.is_file() && runs_uploaded.insert(run_id.clone()) {
            upload_small(ws, store, run, false)?;
        }
        upload_small(
            ws,
            store,
            catalog::generation_manifest_path(ws, &manifest.generation_id),
            true,
        )?;
    }
    Ok(())
}

fn upload_artifact(ws: &Workspace, store: &SharedStore, artifact_id: &str) -> Result<()> {
    let Some(record_path) = store::artifact_record_path(ws, artifact_id) else {
        return Ok(());
    };
    let key = relative(ws, &record_path)?;
    let remote = store.clone();
    let probe = key.clone();
    if block_on(async move { remote.exists(&probe).await })? {
        return Ok(());
    }
    let record = store::read_artifact(ws, artifact_id)?;
    upload_file(ws, store, store::payload_path(ws, &record))?;
    upload_small(ws, store, record_path, false)
}

/// Uploads a small workspace file under its relative key.
fn upload_small(
    ws: &Workspace,
    store: &SharedStore,
    path: PathBuf,
    create_only: bool,
) -> Result<()> {
    let key = relative(ws, &path)?;
    let bytes = std::fs::read(&path).map_err(|e| io_error("reading a workspace file", e))?;
    let remote = store.clone();
    block_on(async move { remote.put(&key, bytes, create_only).await }).map(|_| ())
}

/// Uploads a file of any size (in parts past 16 MiB, read as it goes).
fn upload_file(ws: &Workspace, store: &SharedStore, path: PathBuf) -> Result<()> {
    let len = std::fs::metadata(&path)
        .map_err(|e| io_error("reading a workspace file", e))?
        .len();
    if len <= SINGLE_PUT_BYTES {
        return upload_small(ws, store, path, false);
    }
    let key = store.key(&relative(ws, &path)?);
    let remote = store.clone();
    block_on(async move {
        let upload = remote
            .location
            .store
            .put_multipart(&key)
            .await
            .map_err(|e| remote.error(e, "writing"))?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_BYTES);
        let sent = send_parts(&remote, &mut writer, &path).await;
        match sent {
            Ok(()) => writer
                .finish()
                .await
                .map_err(|e| remote.error(e, "writing"))
                .map(|_| ()),
            Err(e) => {
                // Not left as an incomplete upload the store bills for.
                let _ = writer.abort().await;
                Err(e)
            }
        }
    })
}

/// Feeds a file to a multipart upload, at most 4 parts in flight.
async fn send_parts(
    remote: &SharedStore,
    writer: &mut WriteMultipart,
    path: &std::path::Path,
) -> Result<()> {
    let mut file =
        std::fs::File::open(path).map_err(|e| io_error("reading a workspace file", e))?;
    let mut buf = vec![0u8; PART_BYTES];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| io_error("reading a workspace file", e))?;
        if n == 0 {
            return Ok(());
        }
        writer
            .wait_for_capacity(4)
            .await
            .map_err(|e| remote.error(e, "writing"))?;
        writer.write(&buf[..n]);
    }
}
