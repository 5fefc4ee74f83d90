//! The recoverable trash `gc --apply` moves into, and the two ways out of
//! it. One folder per collection, `trash/gc-<uuid v7>/`: a manifest
//! (every entry's original path, kind, reason and size; when it expires)
//! written before anything moves, and the entries under `files/` at their
//! original relative paths. `restore` moves a manifest's entries back
//! (refusing, before moving anything, when a path is occupied again);
//! `purge` deletes one expired manifest's folder and nothing else. Both
//! hold the write lock, as `apply` does, so no publish interleaves.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::collect::{CollectableEntry, CollectionPlan, collection_plan};
use crate::error::{ErrorCode, FlameoxError, Result, io_error};
use crate::fsutil::{now_rfc3339, read_json, write_json_atomic};
use crate::lock::FileLock;
use crate::workspace::Workspace;

pub const TRASH_SCHEMA_VERSION: u32 = 1;
/// How long a collection stays restorable before `purge` may delete it.
pub const TRASH_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// `trash/gc-<id>/manifest.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrashManifest {
    pub schema_version: u32,
    pub trash_id: String,
    pub created_at: String,
    /// Seconds since the Unix epoch after which `purge` may delete it.
    pub expires_unix_s: u64,
    pub head_commit: Option<String>,
    /// `moving` until every entry is in the trash, then `complete`.
    pub status: String,
    pub entries: Vec<CollectableEntry>,
    pub bytes: u64,
}

/// What `gc --apply` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Collection {
    pub plan: CollectionPlan,
    /// The manifest to restore or purge with (relative to `.flameox/`),
    /// absent when nothing was eligible.
    pub manifest: Option<String>,
    pub moved: usize,
}

/// What `restore` or `purge` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrashOutcome {
    pub trash_id: String,
    pub entries: usize,
    pub bytes: u64,
}

fn now_unix_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The write lock, then the retention lock: no publisher, no other gc.
fn locks(ws: &Workspace) -> Result<(FileLock, FileLock)> {
    let timeout = Duration::from_millis(ws.config.locks.write_timeout_ms);
    let write = FileLock::acquire(&ws.locks_dir().join("write.lock"), timeout)?;
    let retention = FileLock::acquire(&ws.locks_dir().join("retention.lock"), timeout)?;
    Ok((write, retention))
}

fn move_path(from: &Path, to: &Path) -> Result<()> {
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent).map_err(|e| io_error("creating a trash folder", e))?;
    }
    fs::rename(from, to).map_err(|e| io_error(&format!("moving {}", from.display()), e))
}

/// `gc --apply`: the plan made again under the locks, its entries moved
/// to a new trash folder whose manifest is written first.
pub fn apply(ws: &Workspace) -> Result<Collection> {
    let _locks = locks(ws)?;
    let plan = collection_plan(ws)?;
    if plan.entries.is_empty() {
        return Ok(Collection {
            plan,
            manifest: None,
            moved: 0,
        });
    }
    let trash_id = format!("gc-{}", uuid::Uuid::now_v7());
    let dir = ws.trash_dir().join(&trash_id);
    let manifest_path = dir.join("manifest.json");
    let mut manifest = TrashManifest {
        schema_version: TRASH_SCHEMA_VERSION,
        trash_id: trash_id.clone(),
        created_at: now_rfc3339(),
        expires_unix_s: now_unix_s() + TRASH_RETENTION.as_secs(),
        head_commit: plan.roots.head_commit.clone(),
        status: "moving".into(),
        entries: plan.entries.clone(),
        bytes: plan.bytes,
    };
    fs::create_dir_all(&dir).map_err(|e| io_error("creating the trash folder", e))?;
    write_json_atomic(&manifest_path, &manifest)?;
    let mut moved = 0;
    for entry in &plan.entries {
        move_path(
            &ws.dir().join(&entry.path),
            &dir.join("files").join(&entry.path),
        )
        .map_err(|e| {
            e.remedy(format!(
                "{moved} entries were moved; `flameox gc --restore {}` puts them back",
                manifest_path.display()
            ))
        })?;
        moved += 1;
    }
    manifest.status = "complete".into();
    write_json_atomic(&manifest_path, &manifest)?;
    Ok(Collection {
        plan,
        manifest: Some(format!("trash/{trash_id}/manifest.json")),
        moved,
    })
}

/// The trash folder a user names: the manifest file, its folder, or its id.
fn trash_folder(ws: &Workspace, named: &Path) -> Result<PathBuf> {
    let candidates = [
        named.to_path_buf(),
        ws.trash_dir().join(named),
        ws.dir().join(named),
    ];
    for candidate in candidates {
        let dir = if candidate.ends_with("manifest.json") {
            candidate
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default()
        } else {
            candidate
        };
        if dir.join("manifest.json").is_file() {
            return Ok(dir);
        }
    }
    let known: Vec<String> = fs::read_dir(ws.trash_dir())
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().join("manifest.json").is_file())
                .map(|e| format!("trash/{}/manifest.json", e.file_name().to_string_lossy()))
                .collect()
        })
        .unwrap_or_default();
    Err(FlameoxError::invalid_argument(
        "manifest",
        format!(
            "{} is not a trash manifest of this workspace",
            named.display()
        ),
    )
    .detail("manifests", known))
}

fn read_manifest(dir: &Path) -> Result<TrashManifest> {
    read_json(&dir.join("manifest.json"), "trash manifest")
}

/// `gc --restore MANIFEST`: every entry back where it was.
pub fn restore(ws: &Workspace, named: &Path) -> Result<TrashOutcome> {
    let _locks = locks(ws)?;
    let dir = trash_folder(ws, named)?;
    let manifest = read_manifest(&dir)?;
    let mut pending = Vec::new();
    let mut occupied = Vec::new();
    for entry in &manifest.entries {
        let from = dir.join("files").join(&entry.path);
        let to = ws.dir().join(&entry.path);
        if !from.exists() {
            continue; // never moved (an interrupted apply) or already back
        }
        if to.exists() {
            occupied.push(entry.path.clone());
        }
        pending.push((from, to));
    }
    if !occupied.is_empty() {
        return Err(FlameoxError::new(
            ErrorCode::RevisionConflict,
            format!(
                "{} path(s) of {} are occupied again; nothing was restored",
                occupied.len(),
                manifest.trash_id
            ),
        )
        .detail("occupied", occupied));
    }
    for (from, to) in &pending {
        move_path(from, to)?;
    }
    fs::remove_dir_all(&dir).map_err(|e| io_error("removing the emptied trash folder", e))?;
    Ok(TrashOutcome {
        trash_id: manifest.trash_id,
        entries: pending.len(),
        bytes: manifest.bytes,
    })
}

/// `gc --purge MANIFEST`: deletes one expired collection (or, with
/// `force`, one that has not expired).
pub fn purge(ws: &Workspace, named: &Path, force: bool) -> Result<TrashOutcome> {
    let _locks = locks(ws)?;
    let dir = trash_folder(ws, named)?;
    let manifest = read_manifest(&dir)?;
    let now = now_unix_s();
    if now < manifest.expires_unix_s && !force {
        let days = (manifest.expires_unix_s - now).div_ceil(86_400);
        return Err(FlameoxError::invalid_argument(
            "purge",
            format!(
                "{} is restorable for {days} more day(s); purge deletes only expired collections",
                manifest.trash_id
            ),
        )
        .detail("expires_unix_s", manifest.expires_unix_s)
        .remedy("restore it with `flameox gc --restore`, wait, or add --force to delete it now"));
    }
    fs::remove_dir_all(&dir).map_err(|e| io_error("purging a trash folder", e))?;
    Ok(TrashOutcome {
        trash_id: manifest.trash_id,
        entries: manifest.entries.len(),
        bytes: manifest.bytes,
    })
}
