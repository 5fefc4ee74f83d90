//! Records: `.flameox/records/<kind>/<id>.json`, the authority for run
//! sets, analyses, comparisons, experiments (protocol and outcome) and
//! trials. A record is written once — atomically, under the workspace write
//! lock — and never rewritten: writing an id that exists returns the stored
//! record untouched, so a frozen run set cannot change and a digest-named
//! record is idempotent.

use std::fs;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{ErrorCode, FlameoxError, Result, closest};
use crate::fsutil::{read_json, write_json_atomic};
use crate::lock::FileLock;
use crate::workspace::Workspace;

/// Version of every record written by this build.
pub const RECORD_SCHEMA_VERSION: u32 = 1;

/// The kinds of record, each a folder under `records/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    RunSets,
    Analyses,
    Comparisons,
    Experiments,
    /// How an experiment ended (written once, after its trials).
    ExperimentOutcomes,
    Trials,
}

impl RecordKind {
    /// The folder name under `records/`.
    pub fn folder(self) -> &'static str {
        match self {
            RecordKind::RunSets => "run_sets",
            RecordKind::Analyses => "analyses",
            RecordKind::Comparisons => "comparisons",
            RecordKind::Experiments => "experiments",
            RecordKind::ExperimentOutcomes => "experiment_outcomes",
            RecordKind::Trials => "trials",
        }
    }

    /// The kind in typed references (`run_set:<id>`).
    pub fn reference(self) -> &'static str {
        match self {
            RecordKind::RunSets => "run_set",
            RecordKind::Analyses => "analysis",
            RecordKind::Comparisons => "comparison",
            RecordKind::Experiments => "experiment",
            RecordKind::ExperimentOutcomes => "experiment_outcome",
            RecordKind::Trials => "trial",
        }
    }
}

/// Record ids are short and path-safe: `[a-z0-9_-]`, 1..=80 characters.
pub fn valid_record_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 80
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

fn check_record_id(kind: RecordKind, id: &str) -> Result<()> {
    check_id_as(kind.reference(), id)
}

/// A record id, or `INVALID_ARGUMENTS` naming `field`.
pub(crate) fn check_id_as(field: &str, id: &str) -> Result<()> {
    if valid_record_id(id) {
        Ok(())
    } else {
        Err(FlameoxError::invalid_argument(
            field,
            "expected a record id ([a-z0-9_-], at most 80 characters)",
        ))
    }
}

/// Every id of `kind`, sorted.
pub fn list_record_ids(ws: &Workspace, kind: RecordKind) -> Vec<String> {
    let mut ids: Vec<String> = fs::read_dir(ws.records_dir().join(kind.folder()))
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    e.file_name()
                        .to_str()
                        .and_then(|n| n.strip_suffix(".json"))
                        .map(str::to_owned)
                })
                .filter(|id| valid_record_id(id))
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

/// Whether a record exists.
pub fn record_exists(ws: &Workspace, kind: RecordKind, id: &str) -> bool {
    valid_record_id(id)
        && ws
            .records_dir()
            .join(kind.folder())
            .join(format!("{id}.json"))
            .is_file()
}

/// Reads a record; an unknown id is `RUN_NOT_FOUND` with the closest ids.
pub fn read_record<T: DeserializeOwned>(ws: &Workspace, kind: RecordKind, id: &str) -> Result<T> {
    check_record_id(kind, id)?;
    let path = ws
        .records_dir()
        .join(kind.folder())
        .join(format!("{id}.json"));
    if !path.is_file() {
        let ids = list_record_ids(ws, kind);
        let near = closest(id, ids.iter().map(String::as_str), 3);
        return Err(FlameoxError::new(
            ErrorCode::RunNotFound,
            format!("no {} named {id}", kind.reference()),
        )
        .detail("closest", near)
        .remedy("list runs with `flameox runs list`; run sets are made by `flameox runs freeze`"));
    }
    read_json(&path, "a record")
}

/// Writes a new record under the write lock; when the id already exists
/// the stored record is returned unchanged (`false`), never overwritten.
pub fn write_record_once<T: Serialize + DeserializeOwned>(
    ws: &Workspace,
    kind: RecordKind,
    id: &str,
    value: &T,
) -> Result<(T, bool)> {
    check_record_id(kind, id)?;
    let _lock = FileLock::acquire(
        &ws.locks_dir().join("write.lock"),
        std::time::Duration::from_millis(ws.config.locks.write_timeout_ms),
    )?;
    let path = ws
        .records_dir()
        .join(kind.folder())
        .join(format!("{id}.json"));
    if path.is_file() {
        return Ok((read_json(&path, "a record")?, false));
    }
    write_json_atomic(&path, value)?;
    ws.log_operation(&serde_json::json!({
        "operation": "record",
        "kind": kind.folder(),
        "id": id,
    }));
    Ok((read_json(&path, "a record")?, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_ids_are_path_safe() {
        assert!(valid_record_id("rs_0123abcd"));
        assert!(valid_record_id("0193a7c2-1d2e-7abc-8def-0123456789ab"));
        assert!(!valid_record_id(""));
        assert!(!valid_record_id("../runs"));
        assert!(!valid_record_id("RS_1"));
        assert!(!valid_record_id(&"a".repeat(81)));
    }
}
