//! The record of one detached operation: what was asked (request and
//! idempotency digests), where the work stands (phase, bounded progress
//! history, item outcomes, cancellation and cleanup) and how it ended (the
//! terminal receipt, or the error, and a fresh-key retry). It lives at
//! `.flameox/detached/<operation_id>/record.json`, written atomically; the
//! worker is its only writer while it lives.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ErrorCode, FlameoxError, Result};
use crate::fsutil::{now_rfc3339, read_json, write_json_atomic};
use crate::workspace::Workspace;

/// Schema version of `record.json`.
pub const RECORD_SCHEMA_VERSION: u32 = 1;
/// Progress entries kept (the first and the latest ones).
pub const PROGRESS_KEPT: usize = 32;

/// Where an operation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationStatus {
    /// Recorded; its worker has not started yet.
    Queued,
    Running,
    /// The work ended and left its receipt.
    Completed,
    /// The work, or its worker, failed; the error says why.
    Failed,
    Cancelled,
}

impl OperationStatus {
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            OperationStatus::Completed | OperationStatus::Failed | OperationStatus::Cancelled
        )
    }
    pub fn word(self) -> &'static str {
        match self {
            OperationStatus::Queued => "queued",
            OperationStatus::Running => "running",
            OperationStatus::Completed => "completed",
            OperationStatus::Failed => "failed",
            OperationStatus::Cancelled => "cancelled",
        }
    }
}

/// One step of the progress history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgressEntry {
    pub at: String,
    pub phase: String,
    /// 0..100 where the work is measurable; absent while a phase of
    /// unknown length runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent: Option<f64>,
}

/// The outcome of one item of the work (a capture's run, a trial, a
/// package).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemOutcome {
    pub item: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A process known by its pid and its start time (clock ticks since boot),
/// which no later process that reuses the pid shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessIdentity {
    pub pid: i32,
    pub start_ticks: u64,
}

/// Cancellation and cleanup as they happened.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CancellationState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_at: Option<String>,
    /// What cleanup did: `process_tree_killed`, `worker_gone`, … (absent
    /// until something was cleaned up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<String>,
}

/// How to try again after a failure or a cancellation: the same request
/// under a fresh idempotency key (the old key keeps naming this operation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryNewOperation {
    pub tool: String,
    pub arguments: Value,
}

/// The durable record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperationRecord {
    pub schema_version: u32,
    pub operation_id: String,
    /// What kind of work: `capture`, `experiment`.
    pub kind: String,
    pub workspace_id: String,
    /// Digest of the caller's request as given (the idempotency key aside).
    pub request_digest: String,
    /// Digest of (workspace, kind, idempotency key); the key itself is not kept.
    pub idempotency_key_digest: String,
    /// The caller's request (the idempotency key aside).
    pub request: Value,
    /// What the worker runs, resolved when the operation started (a
    /// capture plan, bound to the workload it was made for).
    pub work: Value,
    pub status: OperationStatus,
    pub phase: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent: Option<f64>,
    pub progress: Vec<ProgressEntry>,
    pub items: Vec<ItemOutcome>,
    pub cancellation: CancellationState,
    /// The worker process while it runs (and after, for the record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<ProcessIdentity>,
    /// The workload's process tree (its leader; the group has its pid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<ProcessIdentity>,
    /// The work's own answer once it ended (a capture's result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<FlameoxError>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_new_operation: Option<RetryNewOperation>,
    pub created_at: String,
    /// The same instant in ms since the Unix epoch (for the start grace).
    pub created_unix_ms: u64,
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
}

/// What identifies a new operation's request.
pub struct NewOperation {
    pub operation_id: String,
    pub kind: String,
    pub workspace_id: String,
    pub request_digest: String,
    pub idempotency_key_digest: String,
    pub request: Value,
    pub work: Value,
}

impl OperationRecord {
    /// A new operation, queued for its worker.
    pub fn queued(new: NewOperation) -> OperationRecord {
        let now = now_rfc3339();
        let created_unix_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let mut record = OperationRecord {
            schema_version: RECORD_SCHEMA_VERSION,
            operation_id: new.operation_id,
            kind: new.kind,
            workspace_id: new.workspace_id,
            request_digest: new.request_digest,
            idempotency_key_digest: new.idempotency_key_digest,
            request: new.request,
            work: new.work,
            status: OperationStatus::Queued,
            phase: "queued".into(),
            percent: None,
            progress: Vec::new(),
            items: Vec::new(),
            cancellation: CancellationState::default(),
            worker: None,
            process: None,
            receipt: None,
            error: None,
            retry_new_operation: None,
            created_at: now.clone(),
            created_unix_ms,
            updated_at: now,
            finished_at: None,
        };
        record.enter("queued", Some(0.0));
        record
    }

    /// Moves to `phase`, keeping the progress history bounded: the first
    /// entry and the latest ones.
    pub fn enter(&mut self, phase: &str, percent: Option<f64>) {
        // Monotonic: a percentage never goes back.
        let percent = match (percent, self.percent) {
            (Some(p), Some(before)) => Some(p.max(before)),
            (p, _) => p,
        };
        self.phase = phase.to_owned();
        self.percent = percent.or(self.percent);
        self.progress.push(ProgressEntry {
            at: now_rfc3339(),
            phase: phase.to_owned(),
            percent,
        });
        if self.progress.len() > PROGRESS_KEPT {
            self.progress.remove(1);
        }
    }

    /// Ends the operation with `status`.
    pub fn finish(&mut self, status: OperationStatus) {
        self.status = status;
        let now = now_rfc3339();
        self.finished_at = Some(now.clone());
        // The work may have reported `completed` itself: one entry, not two.
        if status == OperationStatus::Completed && self.phase != "completed" {
            self.enter("completed", Some(100.0));
        }
        self.updated_at = now;
    }
}

/// `.flameox/detached/`.
pub fn detached_dir(ws: &Workspace) -> PathBuf {
    ws.dir().join("detached")
}

/// One operation's folder.
pub fn operation_dir(ws: &Workspace, operation_id: &str) -> PathBuf {
    detached_dir(ws).join(operation_id)
}

pub(crate) fn record_path(dir: &Path) -> PathBuf {
    dir.join("record.json")
}

/// The marker a cancel request leaves for the worker.
pub(crate) fn cancel_marker(dir: &Path) -> PathBuf {
    dir.join("cancel")
}

/// The lock the worker holds while it lives (released by the kernel when
/// it dies, even on SIGKILL).
pub(crate) fn worker_lock(dir: &Path) -> PathBuf {
    dir.join("worker.lock")
}

/// `op_` and 32 hex digits: the only shape an operation id has, so an id
/// can never name a path outside `detached/`.
pub fn check_operation_id(id: &str) -> Result<()> {
    let hex = id.strip_prefix("op_").unwrap_or("");
    if hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(FlameoxError::invalid_argument(
            "operation_id",
            "must be op_ and 32 hex digits, as a start call returned it",
        ))
    }
}

/// Reads one operation's record.
pub fn read_record(ws: &Workspace, operation_id: &str) -> Result<OperationRecord> {
    check_operation_id(operation_id)?;
    let path = record_path(&operation_dir(ws, operation_id));
    if !path.is_file() {
        return Err(FlameoxError::new(
            ErrorCode::OperationNotFound,
            format!("no detached operation {operation_id} in this workspace"),
        )
        .remedy("use the operation_id a start call returned, or start again with the same idempotency key"));
    }
    let record: OperationRecord = read_json(&path, "a detached operation's record")?;
    if record.schema_version > RECORD_SCHEMA_VERSION {
        return Err(FlameoxError::new(
            ErrorCode::WorkspaceInvalid,
            format!(
                "detached operation {operation_id} was written by a newer flameox (record schema {})",
                record.schema_version
            ),
        ));
    }
    Ok(record)
}

/// Writes one operation's record atomically.
pub fn write_record(ws: &Workspace, record: &mut OperationRecord) -> Result<()> {
    record.updated_at = now_rfc3339();
    write_json_atomic(
        &record_path(&operation_dir(ws, &record.operation_id)),
        record,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> OperationRecord {
        OperationRecord::queued(NewOperation {
            operation_id: "op_0123456789abcdef0123456789abcdef".into(),
            kind: "capture".into(),
            workspace_id: "w".into(),
            request_digest: "r".into(),
            idempotency_key_digest: "k".into(),
            request: Value::Null,
            work: Value::Null,
        })
    }

    #[test]
    fn progress_is_bounded_monotonic_and_keeps_its_first_entry() {
        let mut r = record();
        assert_eq!(r.progress[0].phase, "queued");
        r.enter("planning", Some(1.0));
        for i in 0..100 {
            r.enter("capturing", Some(5.0 + i as f64 * 0.5));
        }
        r.enter("validating_artifact", Some(3.0));
        assert_eq!(r.progress.len(), PROGRESS_KEPT);
        assert_eq!(r.progress[0].phase, "queued");
        assert_eq!(r.percent, Some(54.5), "a percentage never goes back");
        r.enter("capturing", None);
        assert_eq!(r.percent, Some(54.5));
        r.finish(OperationStatus::Completed);
        assert_eq!(r.percent, Some(100.0));
        let entries = r.progress.len();
        r.finish(OperationStatus::Completed);
        assert_eq!(r.progress.len(), entries, "completed is entered once");
        assert!(r.status.is_terminal() && r.finished_at.is_some());
    }

    #[test]
    fn operation_ids_cannot_name_other_paths() {
        assert!(check_operation_id("op_0123456789abcdef0123456789abcdef").is_ok());
        for bad in [
            "op_../../etc",
            "0123456789abcdef0123456789abcdef",
            "op_",
            "op_0123456789abcdef0123456789abcdeg",
        ] {
            assert!(check_operation_id(bad).is_err(), "{bad}");
        }
    }
}
