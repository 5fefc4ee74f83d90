//! Retention roots: what `gc` must never collect, and why. HEAD's
//! generations; every artifact a run stored; every artifact, run and
//! commit a record names (run sets, analyses, comparisons, experiments,
//! trials, investigations, hypotheses, findings — any string in any
//! record file that is an artifact id or names a commit of this
//! workspace); and the generations of every such pinned commit, so that a
//! record's numbers can be read again at the commit they were read at.
//!
//! A run's own `commit_id` and `generation_ids` are provenance, not
//! roots: re-extraction supersedes a run's generation with one over the
//! same artifact, which HEAD then holds.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::catalog;
use crate::error::Result;
use crate::runs;
use crate::workspace::Workspace;

/// Everything retained, and who retains what is not obvious.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RetentionRoots {
    pub head_commit: Option<String>,
    /// Generations HEAD lists.
    pub head_generations: BTreeSet<String>,
    /// Generations of HEAD and of every pinned commit.
    pub generations: BTreeSet<String>,
    /// Commits a record names → the records that name it.
    pub pinned_commits: BTreeMap<String, Vec<String>>,
    /// Artifacts → who keeps them (`run:<id>` or a record path).
    pub artifacts: BTreeMap<String, Vec<String>>,
    pub runs: usize,
    pub record_files: usize,
    /// Pinned commits whose manifest is gone (their generations cannot be
    /// named, so nothing unreadable is collected on their account).
    pub unreadable_pins: Vec<String>,
}

impl RetentionRoots {
    /// Who keeps an artifact, if anyone.
    pub fn artifact_keepers(&self, artifact_id: &str) -> Option<&Vec<String>> {
        self.artifacts.get(artifact_id)
    }
}

fn is_hex64(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Every `sha256:<64 hex>` inside `text`.
fn artifact_ids_in(text: &str) -> impl Iterator<Item = &str> {
    text.match_indices("sha256:").filter_map(move |(at, _)| {
        let id = text.get(at..at + 71)?;
        crate::store::artifact_hex(id).map(|_| id)
    })
}

/// Collects the strings of a JSON value.
fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// Every `.json` file under `dir`, recursively.
fn json_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            json_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

/// The roots of `ws` now.
pub fn retention_roots(ws: &Workspace) -> Result<RetentionRoots> {
    let mut roots = RetentionRoots {
        head_commit: catalog::read_head(ws)?,
        ..RetentionRoots::default()
    };
    for run in runs::list_runs(ws)? {
        roots.runs += 1;
        for artifact in &run.artifacts {
            roots
                .artifacts
                .entry(artifact.artifact_id.clone())
                .or_default()
                .push(format!("run:{}", run.run_id));
        }
    }
    let mut files = Vec::new();
    json_files(&ws.records_dir(), &mut files);
    files.sort();
    for path in &files {
        let Ok(bytes) = fs::read(path) else { continue };
        let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
            continue;
        };
        roots.record_files += 1;
        let who = path
            .strip_prefix(ws.dir())
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned();
        let mut texts = Vec::new();
        strings(&value, &mut texts);
        for text in texts {
            for id in artifact_ids_in(text) {
                let keepers = roots.artifacts.entry(id.to_owned()).or_default();
                if !keepers.contains(&who) {
                    keepers.push(who.clone());
                }
            }
            let commit = text.strip_prefix("commit:").unwrap_or(text);
            if is_hex64(commit) && ws.commits_dir().join(format!("{commit}.json")).is_file() {
                let keepers = roots.pinned_commits.entry(commit.to_owned()).or_default();
                if !keepers.contains(&who) {
                    keepers.push(who.clone());
                }
            }
        }
    }
    let commits = roots
        .head_commit
        .iter()
        .cloned()
        .chain(roots.pinned_commits.keys().cloned())
        .collect::<Vec<_>>();
    for commit in commits {
        match catalog::read_commit(ws, &commit) {
            Ok(manifest) => {
                if Some(&commit) == roots.head_commit.as_ref() {
                    roots.head_generations = manifest.generations.keys().cloned().collect();
                }
                roots.generations.extend(manifest.generations.into_keys());
            }
            Err(_) => roots.unreadable_pins.push(commit),
        }
    }
    // A retained generation's input artifact stays with it.
    for generation in roots.generations.clone() {
        if let Ok(manifest) = catalog::read_generation(ws, &generation) {
            roots
                .artifacts
                .entry(manifest.inputs.artifact_id)
                .or_default()
                .push(format!("generation:{generation}"));
        }
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifact_ids_are_found_inside_references() {
        let hex = "ab".repeat(32);
        let text = format!("frame:sha256:{hex}@main;work");
        let found: Vec<&str> = artifact_ids_in(&text).collect();
        assert_eq!(found, [format!("sha256:{hex}")]);
        assert_eq!(artifact_ids_in("sha256:short").count(), 0);
        assert!(is_hex64(&hex) && !is_hex64("ab"));
    }
}
