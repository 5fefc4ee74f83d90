//! Revisioned records: investigations, hypotheses and findings change over
//! an investigation's life, yet nothing written is ever rewritten. Each
//! revision is its own file, `.flameox/records/<folder>/<id>/<revision>.json`
//! (revision 1, 2, … zero-padded), written atomically under the workspace
//! write lock; the current record is the highest revision. A revision is
//! accepted only when the caller says which revision it read
//! (`expected_revision`): two writers that read the same revision cannot
//! both win — the second gets `REVISION_CONFLICT` with the current one.

use std::fs;
use std::path::PathBuf;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{ErrorCode, FlameoxError, Result, closest};
use crate::fsutil::{read_json, write_json_atomic};
use crate::lock::FileLock;
use crate::records::{check_id_as, valid_record_id};
use crate::workspace::Workspace;

/// Digits of a revision's file name (`000001.json`).
const REVISION_DIGITS: usize = 6;
/// Revisions one record may have.
pub const MAX_REVISIONS: u64 = 999_999;

/// A kind of revisioned record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RevisionedKind {
    Investigations,
    Hypotheses,
    Findings,
    /// Registered artifact pipelines (`services/pipelines/`): the id is the
    /// pipeline's name.
    Pipelines,
}

impl RevisionedKind {
    /// The folder under `records/`.
    pub fn folder(self) -> &'static str {
        match self {
            RevisionedKind::Investigations => "investigations",
            RevisionedKind::Hypotheses => "hypotheses",
            RevisionedKind::Findings => "findings",
            RevisionedKind::Pipelines => "pipelines",
        }
    }

    /// The kind in typed references (`investigation:<id>`).
    pub fn reference(self) -> &'static str {
        match self {
            RevisionedKind::Investigations => "investigation",
            RevisionedKind::Hypotheses => "hypothesis",
            RevisionedKind::Findings => "finding",
            RevisionedKind::Pipelines => "pipeline",
        }
    }

    /// The operation that lists them (for a not-found remedy).
    fn listing(self) -> &'static str {
        match self {
            RevisionedKind::Investigations => "`flameox investigations list`",
            RevisionedKind::Hypotheses | RevisionedKind::Findings => {
                "`flameox investigations show <investigation-id>`"
            }
            RevisionedKind::Pipelines => "`flameox pipelines register <name>`",
        }
    }
}

/// A record that carries its own revision number.
pub trait Revisioned: Serialize + DeserializeOwned {
    fn revision(&self) -> u64;
    fn set_revision(&mut self, revision: u64);
}

/// Implements [`Revisioned`] for record types with a `revision: u64` field.
macro_rules! revisioned {
    ($($record:ty),+ $(,)?) => {
        $(impl $crate::revisions::Revisioned for $record {
            fn revision(&self) -> u64 {
                self.revision
            }
            fn set_revision(&mut self, revision: u64) {
                self.revision = revision;
            }
        })+
    };
}
pub(crate) use revisioned;

fn record_dir(ws: &Workspace, kind: RevisionedKind, id: &str) -> PathBuf {
    ws.records_dir().join(kind.folder()).join(id)
}

fn revision_path(ws: &Workspace, kind: RevisionedKind, id: &str, revision: u64) -> PathBuf {
    record_dir(ws, kind, id).join(format!("{revision:0REVISION_DIGITS$}.json"))
}

fn check_id(kind: RevisionedKind, id: &str) -> Result<()> {
    check_id_as(kind.reference(), id)
}

/// The highest revision written for `id` (0 when there is none).
fn current_revision(ws: &Workspace, kind: RevisionedKind, id: &str) -> u64 {
    fs::read_dir(record_dir(ws, kind, id))
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name();
                    let stem = name.to_str()?.strip_suffix(".json")?;
                    (stem.len() == REVISION_DIGITS)
                        .then(|| stem.parse::<u64>().ok())
                        .flatten()
                })
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0)
}

/// A page key that ascends as ids (a prefix and a time-ordered uuid v7 in
/// hex) descend, so a newest-first cursor stays valid while newer records
/// are created.
pub fn newest_first_key(id: &str) -> String {
    id.chars()
        .map(|c| {
            c.to_digit(16)
                .and_then(|d| char::from_digit(15 - d, 16))
                .unwrap_or(c)
        })
        .collect()
}

/// Every id of `kind` with at least one revision, sorted.
pub fn list_ids(ws: &Workspace, kind: RevisionedKind) -> Vec<String> {
    let mut ids: Vec<String> = fs::read_dir(ws.records_dir().join(kind.folder()))
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                .filter(|id| valid_record_id(id) && current_revision(ws, kind, id) > 0)
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

/// The current revision of a record; an unknown id is `RUN_NOT_FOUND`
/// with the closest ids.
pub fn read_current<T: Revisioned>(ws: &Workspace, kind: RevisionedKind, id: &str) -> Result<T> {
    let revision = existing_revision(ws, kind, id)?;
    read_json(&revision_path(ws, kind, id, revision), "a record revision")
}

/// The current revision number of an existing record; an unknown id is
/// `RUN_NOT_FOUND` with the closest ids.
pub fn existing_revision(ws: &Workspace, kind: RevisionedKind, id: &str) -> Result<u64> {
    check_id(kind, id)?;
    let revision = current_revision(ws, kind, id);
    if revision == 0 {
        let ids = list_ids(ws, kind);
        let near = closest(id, ids.iter().map(String::as_str), 3);
        return Err(FlameoxError::new(
            ErrorCode::RunNotFound,
            format!("no {} named {id}", kind.reference()),
        )
        .detail("closest", near)
        .remedy(format!("list them with {}", kind.listing())));
    }
    Ok(revision)
}

fn write_lock(ws: &Workspace) -> Result<FileLock> {
    FileLock::acquire(
        &ws.locks_dir().join("write.lock"),
        std::time::Duration::from_millis(ws.config.locks.write_timeout_ms),
    )
}

/// Writes revision 1 of a new record (its revision field set to 1).
pub fn create<T: Revisioned>(
    ws: &Workspace,
    kind: RevisionedKind,
    id: &str,
    mut value: T,
) -> Result<T> {
    check_id(kind, id)?;
    let _lock = write_lock(ws)?;
    if current_revision(ws, kind, id) > 0 {
        return Err(FlameoxError::invalid_argument(
            kind.reference(),
            format!("{} {id} exists already", kind.reference()),
        ));
    }
    value.set_revision(1);
    write_json_atomic(&revision_path(ws, kind, id, 1), &value)?;
    ws.log_operation(&serde_json::json!({
        "operation": "record",
        "kind": kind.folder(),
        "id": id,
        "revision": 1,
    }));
    Ok(value)
}

/// Writes the next revision of `id`: `change` gets the current record and
/// returns the new one. Refused with `REVISION_CONFLICT` (details: the
/// current revision) unless `expected_revision` is the current revision.
pub fn revise<T: Revisioned>(
    ws: &Workspace,
    kind: RevisionedKind,
    id: &str,
    expected_revision: u64,
    change: impl FnOnce(T) -> Result<T>,
) -> Result<T> {
    check_id(kind, id)?;
    let _lock = write_lock(ws)?;
    let current: T = read_current(ws, kind, id)?;
    let revision = current.revision();
    if revision != expected_revision {
        return Err(FlameoxError::new(
            ErrorCode::RevisionConflict,
            format!(
                "{} {id} is at revision {revision}, not {expected_revision}",
                kind.reference()
            ),
        )
        .detail("current_revision", revision)
        .detail("expected_revision", expected_revision)
        .remedy(format!(
            "read {} {id} again, then revise with expected_revision {revision}",
            kind.reference()
        )));
    }
    if revision >= MAX_REVISIONS {
        return Err(FlameoxError::invalid_argument(
            "expected_revision",
            format!("{} {id} has {MAX_REVISIONS} revisions", kind.reference()),
        ));
    }
    let mut next = change(current)?;
    next.set_revision(revision + 1);
    write_json_atomic(&revision_path(ws, kind, id, revision + 1), &next)?;
    ws.log_operation(&serde_json::json!({
        "operation": "record",
        "kind": kind.folder(),
        "id": id,
        "revision": revision + 1,
    }));
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Note {
        revision: u64,
        text: String,
    }

    revisioned!(Note);

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().expect("temp dir");
        let (ws, _) = Workspace::init(dir.path()).expect("init");
        (dir, ws)
    }

    #[test]
    fn revisions_are_new_files_and_a_stale_writer_gets_a_conflict() {
        let (_dir, ws) = workspace();
        let kind = RevisionedKind::Hypotheses;
        let first = create(
            &ws,
            kind,
            "hyp_a",
            Note {
                revision: 0,
                text: "one".into(),
            },
        )
        .expect("create");
        assert_eq!(first.revision, 1);
        let second = revise(&ws, kind, "hyp_a", 1, |mut n: Note| {
            n.text = "two".into();
            Ok(n)
        })
        .expect("revise");
        assert_eq!(second.revision, 2);
        // A writer that read revision 1 loses, and learns the current one.
        let stale = revise(&ws, kind, "hyp_a", 1, |n: Note| Ok(n)).expect_err("stale");
        assert_eq!(stale.code, ErrorCode::RevisionConflict);
        assert_eq!(stale.details["current_revision"], 2);
        // Both revisions stay on disk; the current one is the second.
        let dir = record_dir(&ws, kind, "hyp_a");
        assert!(dir.join("000001.json").is_file() && dir.join("000002.json").is_file());
        let now: Note = read_current(&ws, kind, "hyp_a").expect("read");
        assert_eq!(now, second);
        // Creating an existing id is refused; an unknown id names the closest.
        assert!(create(&ws, kind, "hyp_a", now.clone()).is_err());
        let missing = read_current::<Note>(&ws, kind, "hyp_b").expect_err("missing");
        assert_eq!(missing.code, ErrorCode::RunNotFound);
        assert_eq!(missing.details["closest"][0], "hyp_a");
        assert_eq!(list_ids(&ws, kind), vec!["hyp_a".to_owned()]);
    }
}
