//! The worker: the process that owns one operation's work, outliving the
//! MCP server and the client that started it. It takes the operation's
//! lock for its whole life, runs the work once (a record no longer queued
//! is never run again), writes every phase to the record, watches for the
//! cancel marker, and writes the terminal record before it exits.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::record::{
    ItemOutcome, OperationRecord, OperationStatus, ProcessIdentity, cancel_marker, operation_dir,
    read_record, worker_lock, write_record,
};
use crate::error::{ErrorCode, FlameoxError, Result, io_error};
use crate::execution::tree::start_ticks;
use crate::fsutil::now_rfc3339;
use crate::lock::FileLock;
use crate::services::import::ImportProgress;
use crate::workspace::Workspace;

/// The hidden command line the flameox binary runs a worker with.
pub const WORKER_COMMAND: &str = "detached-worker";

/// How a finished work item is told back: its status for the operation,
/// the receipt (the work's own answer) and its items.
pub struct WorkOutcome {
    pub status: OperationStatus,
    pub receipt: Value,
    pub items: Vec<ItemOutcome>,
    /// Why the work did not complete, when it did not.
    pub error: Option<FlameoxError>,
}

/// Runs one kind of work; `progress` records phases and reports a cancel.
pub type RunWork<'a> =
    &'a dyn Fn(&Workspace, &OperationRecord, &dyn ImportProgress) -> Result<WorkOutcome>;

/// Starts the worker for `operation_id`: this executable, in its own
/// process group, with no terminal, its stderr in the operation's folder.
/// A thread reaps it, so a long-lived server leaves no zombie.
pub fn spawn_worker(ws: &Workspace, operation_id: &str) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe().map_err(|e| io_error("finding the flameox executable", e))?;
    let dir = operation_dir(ws, operation_id);
    let log = std::fs::File::create(dir.join("worker.log"))
        .map_err(|e| io_error("creating the worker's log", e))?;
    let mut child = Command::new(exe)
        .arg("--workspace")
        .arg(ws.dir())
        .arg(WORKER_COMMAND)
        .arg(operation_id)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .process_group(0)
        .spawn()
        .map_err(|e| {
            FlameoxError::new(
                ErrorCode::ProcessFailed,
                format!("the operation's worker could not start: {e}"),
            )
        })?;
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}

/// Records progress into the operation's record; a cancel is the marker.
struct Recorder<'a> {
    ws: &'a Workspace,
    dir: &'a Path,
    record: &'a Mutex<OperationRecord>,
    phases: &'a [(&'a str, f64)],
    last_write: Mutex<Instant>,
}

impl Recorder<'_> {
    fn update(&self, force: bool, change: impl FnOnce(&mut OperationRecord)) {
        let Ok(mut record) = self.record.lock() else {
            return;
        };
        change(&mut record);
        let Ok(mut last) = self.last_write.lock() else {
            return;
        };
        if force || last.elapsed() >= Duration::from_millis(500) {
            *last = Instant::now();
            let _ = write_record(self.ws, &mut record);
        }
    }
}

impl ImportProgress for Recorder<'_> {
    fn phase(&self, phase: &str) {
        let percent = self
            .phases
            .iter()
            .find(|(p, _)| *p == phase)
            .map(|(_, at)| *at);
        self.update(true, |r| r.enter(phase, percent));
    }
    fn steps(&self, done: u64, total: u64) {
        if total == 0 {
            return;
        }
        self.update(false, |r| {
            let phase = r.phase.clone();
            let start = self
                .phases
                .iter()
                .find(|(p, _)| *p == phase)
                .map(|(_, at)| *at);
            let end = self
                .phases
                .iter()
                .skip_while(|(p, _)| *p != phase)
                .nth(1)
                .map(|(_, at)| *at);
            if let (Some(a), Some(b)) = (start, end) {
                r.percent = Some(a + (b - a) * done as f64 / total as f64);
            }
        });
    }
    fn cancelled(&self) -> bool {
        let asked = cancel_marker(self.dir).exists();
        if asked {
            let unrecorded = self
                .record
                .lock()
                .map(|r| r.cancellation.requested_at.is_none())
                .unwrap_or(false);
            if unrecorded {
                let at = std::fs::read_to_string(cancel_marker(self.dir))
                    .unwrap_or_else(|_| now_rfc3339());
                self.update(true, |r| r.cancellation.requested_at = Some(at));
            }
        }
        asked
    }
    fn process_started(&self, pid: i32) {
        let identity = start_ticks(pid).map(|start_ticks| ProcessIdentity { pid, start_ticks });
        self.update(true, |r| r.process = identity);
    }
}

/// The worker's body: runs `operation_id` once with `run`, whose phases
/// start at `phases` (percent of the whole).
pub fn run_worker(
    ws: &Workspace,
    operation_id: &str,
    phases: &[(&str, f64)],
    run: RunWork<'_>,
) -> Result<OperationStatus> {
    let dir = operation_dir(ws, operation_id);
    let Some(_lock) = FileLock::try_acquire(&worker_lock(&dir))? else {
        return Err(FlameoxError::internal(format!(
            "another worker holds {operation_id}"
        )));
    };
    let mut record = read_record(ws, operation_id)?;
    if record.status != OperationStatus::Queued {
        // Already run, recovered or finished: its side effects never repeat.
        return Ok(record.status);
    }
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    record.worker = start_ticks(pid).map(|start_ticks| ProcessIdentity { pid, start_ticks });
    record.status = OperationStatus::Running;
    write_record(ws, &mut record)?;
    let shared = Mutex::new(record);
    let recorder = Recorder {
        ws,
        dir: &dir,
        record: &shared,
        phases,
        last_write: Mutex::new(Instant::now()),
    };
    let snapshot = shared
        .lock()
        .map(|r| r.clone())
        .map_err(|_| FlameoxError::internal("operation record poisoned"))?;
    let outcome = run(ws, &snapshot, &recorder);
    let mut record = shared
        .into_inner()
        .map_err(|_| FlameoxError::internal("operation record poisoned"))?;
    match outcome {
        Ok(done) => {
            record.receipt = Some(done.receipt);
            record.items = done.items;
            record.error = done.error;
            if done.status == OperationStatus::Cancelled {
                record.cancellation.cleanup = Some("process_tree_killed".into());
            }
            record.finish(done.status);
        }
        Err(err) => {
            let status = if err.code == ErrorCode::OperationCancelled {
                OperationStatus::Cancelled
            } else {
                OperationStatus::Failed
            };
            record.error = Some(err);
            record.finish(status);
        }
    }
    if record.status != OperationStatus::Completed {
        record.retry_new_operation = Some(super::lifecycle::retry_for(&record));
    }
    write_record(ws, &mut record)?;
    Ok(record.status)
}
