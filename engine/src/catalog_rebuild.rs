//! `flameox catalog rebuild`: a HEAD made again from the generation
//! manifests on disk, for when `corpus/HEAD` or its commit is lost or
//! damaged. A generation is active when its manifest reads, every file it
//! lists is there with its recorded size and hash, and no other valid
//! generation supersedes it (its `superseded` list, then the newest of one
//! supersede key). The new commit's parent is the old HEAD when that
//! still reads; when the active set equals HEAD's nothing is written.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;

use serde::{Deserialize, Serialize};

use crate::catalog::{self, GenerationManifest};
use crate::error::Result;
use crate::lock::FileLock;
use crate::publish::hash_file;
use crate::workspace::Workspace;

/// A generation the rebuilt HEAD leaves out, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeftOut {
    pub generation_id: String,
    pub reason: String,
}

/// What `catalog rebuild` found and did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RebuildReport {
    pub dry_run: bool,
    pub previous_head: Option<String>,
    /// The HEAD after the rebuild (the previous one when nothing changed).
    pub head: Option<String>,
    pub changed: bool,
    pub active_generations: Vec<String>,
    pub left_out: Vec<LeftOut>,
}

/// Why a generation's files cannot be used, if they cannot.
fn files_problem(ws: &Workspace, manifest: &GenerationManifest) -> Option<String> {
    for file in &manifest.files {
        match hash_file(&ws.dir().join(&file.path)) {
            Ok((sha, bytes)) if sha == file.sha256 && bytes == file.bytes => {}
            Ok(_) => return Some(format!("{} does not match its hash", file.path)),
            Err(_) => return Some(format!("{} is missing or unreadable", file.path)),
        }
    }
    None
}

/// Rebuilds HEAD from the generation manifests (writes nothing when `dry_run`).
pub fn rebuild(ws: &Workspace, dry_run: bool) -> Result<RebuildReport> {
    let _lock = FileLock::acquire(
        &ws.locks_dir().join("write.lock"),
        std::time::Duration::from_millis(ws.config.locks.write_timeout_ms),
    )?;
    let previous_head = catalog::read_head(ws).ok().flatten();
    let previous = previous_head
        .as_deref()
        .and_then(|id| catalog::read_commit(ws, id).ok());
    let mut left_out = Vec::new();
    let mut valid: Vec<(GenerationManifest, String)> = Vec::new();
    let mut ids: Vec<String> = fs::read_dir(ws.generations_dir())
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    for id in ids {
        let manifest_sha = fs::read(catalog::generation_manifest_path(ws, &id))
            .map(|b| crate::fsutil::sha256_hex(&b));
        let manifest = match (catalog::read_generation(ws, &id), manifest_sha) {
            (Ok(m), Ok(sha)) => (m, sha),
            (Err(e), _) => {
                left_out.push(LeftOut {
                    generation_id: id,
                    reason: format!("manifest unreadable: {}", e.message),
                });
                continue;
            }
            (_, Err(e)) => {
                left_out.push(LeftOut {
                    generation_id: id,
                    reason: format!("manifest unreadable: {e}"),
                });
                continue;
            }
        };
        if let Some(problem) = files_problem(ws, &manifest.0) {
            left_out.push(LeftOut {
                generation_id: id,
                reason: problem,
            });
            continue;
        }
        valid.push(manifest);
    }
    let superseded: BTreeSet<String> = valid
        .iter()
        .flat_map(|(g, _)| g.superseded.iter().cloned())
        .collect();
    let mut newest: BTreeMap<String, (GenerationManifest, String)> = BTreeMap::new();
    for (g, sha) in valid {
        if superseded.contains(&g.generation_id) {
            left_out.push(LeftOut {
                reason: "superseded by a newer generation".into(),
                generation_id: g.generation_id,
            });
            continue;
        }
        let key = g.supersede_key.clone();
        let replace = newest.get(&key).is_none_or(|(kept, _)| {
            (&g.created_at, &g.generation_id) > (&kept.created_at, &kept.generation_id)
        });
        if replace {
            if let Some((older, _)) = newest.insert(key, (g, sha)) {
                left_out.push(LeftOut {
                    generation_id: older.generation_id,
                    reason: "an older generation of the same extraction".into(),
                });
            }
        } else {
            left_out.push(LeftOut {
                generation_id: g.generation_id,
                reason: "an older generation of the same extraction".into(),
            });
        }
    }
    let active: BTreeMap<String, String> = newest
        .into_values()
        .map(|(g, sha)| (g.generation_id, sha))
        .collect();
    left_out.sort_by(|a, b| a.generation_id.cmp(&b.generation_id));
    let unchanged = previous.as_ref().is_some_and(|c| c.generations == active)
        || (previous_head.is_none() && active.is_empty());
    let mut report = RebuildReport {
        dry_run,
        previous_head: previous_head.clone(),
        head: previous_head,
        changed: !unchanged,
        active_generations: active.keys().cloned().collect(),
        left_out,
    };
    if unchanged || dry_run {
        return Ok(report);
    }
    let parent = previous.map(|c| c.commit_id);
    let commit = catalog::write_commit(ws, parent, active)?;
    catalog::swap_head(ws, &commit.commit_id)?;
    report.head = Some(commit.commit_id);
    Ok(report)
}
