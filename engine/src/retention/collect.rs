//! What `gc` may collect, computed fresh each time from the workspace and
//! its [retention roots](super::roots): abandoned staging, generations no
//! retained commit lists (superseded ones and crash leftovers, with their
//! evidence files), evidence folders of no generation, and artifacts
//! nothing keeps. Each entry is an exact path under `.flameox/` with its
//! size and the reason it is eligible; what is kept for a reason a reader
//! might not guess (an artifact only a record names, a superseded
//! generation a record pins) is listed too.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::time::Duration;

use flameox_extractors::EvidenceTable;
use serde::{Deserialize, Serialize};

use super::roots::{RetentionRoots, retention_roots};
use crate::catalog;
use crate::error::{ErrorCode, FlameoxError, Result};
use crate::lock::FileLock;
use crate::store;
use crate::workspace::Workspace;

/// An artifact stored more recently than this may belong to an import
/// that has not written its run yet; it is never collected.
pub const ARTIFACT_GRACE: Duration = Duration::from_secs(600);

/// One path `gc --apply` would move to the trash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectableEntry {
    /// Relative to `.flameox/`.
    pub path: String,
    /// `staging`, `superseded_generation`, `orphan_generation`,
    /// `orphan_evidence` or `unreferenced_artifact`.
    pub kind: String,
    pub reason: String,
    pub bytes: u64,
}

/// Something kept that a reader might have expected to go.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptEntry {
    pub path: String,
    pub kind: String,
    pub kept_by: Vec<String>,
}

/// The counts of the retention roots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RootsSummary {
    pub head_commit: Option<String>,
    pub runs: usize,
    pub record_files: usize,
    pub retained_generations: usize,
    pub retained_artifacts: usize,
    pub pinned_commits: Vec<String>,
    pub unreadable_pins: Vec<String>,
}

/// What is eligible now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectionPlan {
    pub roots: RootsSummary,
    pub entries: Vec<CollectableEntry>,
    pub bytes: u64,
    pub kept: Vec<KeptEntry>,
    /// Staging folders a live writer holds and artifacts younger than
    /// [`ARTIFACT_GRACE`] (never collected).
    pub in_use: Vec<String>,
    /// What limited the plan (e.g. a pinned commit that cannot be read).
    pub notes: Vec<String>,
}

/// Bytes of a file or a folder's files.
pub fn size_of(path: &Path) -> u64 {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    fs::read_dir(path)
        .map(|entries| entries.flatten().map(|e| size_of(&e.path())).sum())
        .unwrap_or(0)
}

fn names(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Generations some commit of the chain from HEAD lists.
fn chain_generations(ws: &Workspace, head: Option<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut seen = BTreeSet::new();
    let mut cursor = head;
    while let Some(id) = cursor {
        if !seen.insert(id.clone()) {
            break;
        }
        let Ok(commit) = catalog::read_commit(ws, &id) else {
            break;
        };
        out.extend(commit.generations.keys().cloned());
        cursor = commit.parent;
    }
    out
}

fn staging_entries(ws: &Workspace, plan: &mut CollectionPlan) -> Result<()> {
    for name in names(&ws.staging_dir()) {
        let path = ws.staging_dir().join(&name);
        let lock = path.join(".lock");
        let held = path.is_dir() && lock.exists() && FileLock::try_acquire(&lock)?.is_none();
        let young = name.starts_with(".new-")
            && fs::metadata(&path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_none_or(|age| age < Duration::from_secs(600));
        if held || young {
            plan.in_use.push(format!("staging/{name}"));
            continue;
        }
        plan.entries.push(CollectableEntry {
            path: format!("staging/{name}"),
            kind: "staging".into(),
            reason: "left by a writer that is gone".into(),
            bytes: size_of(&path),
        });
    }
    Ok(())
}

fn generation_entries(ws: &Workspace, roots: &RetentionRoots, plan: &mut CollectionPlan) {
    if !roots.unreadable_pins.is_empty() {
        // Their generations cannot be named: collect none.
        plan.notes.push(format!(
            "no generation is collected: {} pinned commit(s) cannot be read ({})",
            roots.unreadable_pins.len(),
            roots.unreadable_pins.join(", ")
        ));
        return;
    }
    let listed = chain_generations(ws, roots.head_commit.clone());
    let mut ids: BTreeSet<String> = names(&ws.generations_dir()).into_iter().collect();
    let mut evidence_dirs: Vec<(String, String)> = Vec::new();
    for table in EvidenceTable::ALL {
        for dir in names(&ws.evidence_dir().join(table.name())) {
            if let Some(id) = dir.strip_prefix("generation=") {
                ids.insert(id.to_owned());
            }
            evidence_dirs.push((table.name().to_owned(), dir));
        }
    }
    for id in &ids {
        if roots.generations.contains(id) {
            continue;
        }
        let (kind, reason) = if listed.contains(id) {
            (
                "superseded_generation",
                "an earlier commit listed it; HEAD and every pinned commit do not",
            )
        } else {
            (
                "orphan_generation",
                "no commit lists it (a publish that did not finish)",
            )
        };
        let mut push = |path: String| {
            let bytes = size_of(&ws.dir().join(&path));
            plan.entries.push(CollectableEntry {
                path,
                kind: kind.into(),
                reason: format!("generation {id}: {reason}"),
                bytes,
            });
        };
        if ws.generations_dir().join(id).exists() {
            push(format!("generations/{id}"));
        }
        for (table, dir) in &evidence_dirs {
            if dir.strip_prefix("generation=") == Some(id.as_str()) {
                push(format!("evidence/{table}/{dir}"));
            }
        }
    }
    for (table, dir) in &evidence_dirs {
        if !dir.starts_with("generation=") {
            let path = format!("evidence/{table}/{dir}");
            plan.entries.push(CollectableEntry {
                bytes: size_of(&ws.dir().join(&path)),
                path,
                kind: "orphan_evidence".into(),
                reason: "not a generation's folder".into(),
            });
        }
    }
    // Superseded generations a record pins: kept, and said so.
    for (commit, keepers) in &roots.pinned_commits {
        if Some(commit) == roots.head_commit.as_ref() {
            continue;
        }
        if let Ok(manifest) = catalog::read_commit(ws, commit) {
            for id in manifest.generations.keys() {
                if !roots.head_generations.contains(id) && ws.generations_dir().join(id).exists() {
                    plan.kept.push(KeptEntry {
                        path: format!("generations/{id}"),
                        kind: "superseded_generation".into(),
                        kept_by: keepers
                            .iter()
                            .map(|k| format!("{k} (commit {})", &commit[..12]))
                            .collect(),
                    });
                }
            }
        }
    }
}

fn artifact_entries(
    ws: &Workspace,
    roots: &RetentionRoots,
    plan: &mut CollectionPlan,
) -> Result<()> {
    for artifact in store::list_artifacts(ws)? {
        let Some(hex) = store::artifact_hex(&artifact.artifact_id) else {
            continue;
        };
        let path = format!("artifacts/sha256/{}/{hex}", &hex[..2]);
        if let Some(keepers) = roots.artifact_keepers(&artifact.artifact_id) {
            if !keepers.iter().any(|k| k.starts_with("run:")) {
                plan.kept.push(KeptEntry {
                    path,
                    kind: "artifact".into(),
                    kept_by: keepers.clone(),
                });
            }
            continue;
        }
        let young = fs::metadata(ws.dir().join(&path).join("artifact.json"))
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_none_or(|age| age < ARTIFACT_GRACE);
        if young {
            plan.in_use.push(path);
            continue;
        }
        plan.entries.push(CollectableEntry {
            bytes: size_of(&ws.dir().join(&path)),
            path,
            kind: "unreferenced_artifact".into(),
            reason: format!(
                "{} ({}): no run, record or retained generation names it",
                artifact.artifact_id, artifact.original_name
            ),
        });
    }
    Ok(())
}

/// What `gc` may collect now (changes nothing).
pub fn collection_plan(ws: &Workspace) -> Result<CollectionPlan> {
    let roots = retention_roots(ws)?;
    if let Some(head) = &roots.head_commit
        && roots.unreadable_pins.contains(head)
    {
        return Err(FlameoxError::new(
            ErrorCode::WorkspaceInvalid,
            format!("HEAD names commit {head}, which cannot be read: nothing is collected"),
        )
        .remedy("run `flameox repair` (or `flameox catalog rebuild`) first"));
    }
    let mut plan = CollectionPlan {
        roots: RootsSummary {
            head_commit: roots.head_commit.clone(),
            runs: roots.runs,
            record_files: roots.record_files,
            retained_generations: roots.generations.len(),
            retained_artifacts: roots.artifacts.len(),
            pinned_commits: roots.pinned_commits.keys().cloned().collect(),
            unreadable_pins: roots.unreadable_pins.clone(),
        },
        entries: Vec::new(),
        bytes: 0,
        kept: Vec::new(),
        in_use: Vec::new(),
        notes: Vec::new(),
    };
    staging_entries(ws, &mut plan)?;
    generation_entries(ws, &roots, &mut plan);
    artifact_entries(ws, &roots, &mut plan)?;
    plan.bytes = plan.entries.iter().map(|e| e.bytes).sum();
    Ok(plan)
}
