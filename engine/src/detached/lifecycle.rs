//! Starting, reading, cancelling and recovering detached operations.
//!
//! Start: the idempotency key is looked up first (`detached/keys/<digest>`,
//! created with `create_new`, so two starts with one key cannot both win);
//! a known key with the same request reconnects to its operation and
//! starts nothing, with another request it is `IDEMPOTENCY_CONFLICT`. A new
//! key resolves the work (which may refuse: then nothing is recorded),
//! writes the record, claims the key, and only then spawns the worker.
//!
//! Liveness is the worker's lock (`worker.lock`), which the kernel releases
//! when the worker dies however it dies. An operation that is not terminal
//! and whose lock is free was left by a dead worker (or a worker that never
//! started within [`START_GRACE`]): recovery ends its workload's process
//! tree if it still runs, marks the operation failed (or cancelled, if a
//! cancel was asked) and offers a retry under a fresh key.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::record::{
    NewOperation, OperationRecord, OperationStatus, RetryNewOperation, cancel_marker, detached_dir,
    operation_dir, read_record, worker_lock, write_record,
};
use crate::error::{ErrorCode, FlameoxError, Result, io_error};
use crate::execution::tree::{same_process_alive, signal_group};
use crate::fsutil::{digest_json, now_rfc3339, random_bytes, sha256_hex};
use crate::lock::FileLock;
use crate::workspace::Workspace;

/// How long a recorded operation may wait for its worker to take its lock
/// before recovery calls it dead.
pub const START_GRACE: Duration = Duration::from_secs(30);
/// How long a cancel waits for the worker to end the work and write its
/// terminal record (the process tree gets SIGTERM, 2 s of grace, SIGKILL).
pub const CANCEL_WAIT: Duration = Duration::from_secs(15);

/// What starts a worker for an operation (the flameox binary in its own
/// process group; tests may run it in-process).
pub type SpawnWorker<'a> = &'a dyn Fn(&Workspace, &str) -> Result<()>;

/// What a start call asks.
pub struct StartRequest<'a> {
    pub kind: &'a str,
    pub idempotency_key: &'a str,
    /// The caller's arguments without the key: what the request digest covers.
    pub request: Value,
    /// The tool that starts this kind (named in retries).
    pub start_tool: &'a str,
}

/// A start's answer: the operation, and whether the key already named it.
pub struct Started {
    pub record: OperationRecord,
    pub reconnected: bool,
}

fn key_digest(ws: &Workspace, kind: &str, key: &str) -> String {
    sha256_hex(format!("{}\0{kind}\0{key}", ws.identity.workspace_id).as_bytes())
}

fn key_path(ws: &Workspace, digest: &str) -> std::path::PathBuf {
    detached_dir(ws).join("keys").join(digest)
}

/// Checks an idempotency key's shape (8–128 printable ASCII characters).
pub fn check_idempotency_key(key: &str) -> Result<()> {
    if (8..=128).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(())
    } else {
        Err(FlameoxError::invalid_argument(
            "idempotency_key",
            "8 to 128 printable ASCII characters, chosen by the caller and reused to reconnect",
        ))
    }
}

fn new_operation_id() -> Result<String> {
    let bytes: [u8; 16] = random_bytes()?;
    Ok(format!("op_{}", hex::encode(bytes)))
}

/// The operation a key already started, if any.
fn existing(ws: &Workspace, digest: &str) -> Result<Option<OperationRecord>> {
    match fs::read_to_string(key_path(ws, digest)) {
        Ok(id) => Ok(Some(read_record(ws, id.trim())?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error("reading an idempotency key", e)),
    }
}

fn reconnect(record: OperationRecord, request_digest: &str) -> Result<Started> {
    if record.request_digest != request_digest {
        return Err(FlameoxError::new(
            ErrorCode::IdempotencyConflict,
            format!(
                "this idempotency key already started operation {} with another request",
                record.operation_id
            ),
        )
        .detail("operation_id", record.operation_id.clone())
        .remedy("poll that operation with its get tool, or choose a new key for a new request"));
    }
    Ok(Started {
        record,
        reconnected: true,
    })
}

/// Starts an operation, or reconnects to the one its key started.
/// `resolve_work` runs only for a new key; its error records nothing.
pub fn start(
    ws: &Workspace,
    req: StartRequest<'_>,
    resolve_work: impl FnOnce() -> Result<Value>,
    spawn: SpawnWorker<'_>,
) -> Result<Started> {
    check_idempotency_key(req.idempotency_key)?;
    recover_all(ws);
    let digest = key_digest(ws, req.kind, req.idempotency_key);
    let request_digest = digest_json(&json!({ "kind": req.kind, "request": req.request }));
    if let Some(record) = existing(ws, &digest)? {
        let record = recover_one(ws, record)?;
        return reconnect(record, &request_digest);
    }
    let work = resolve_work()?;
    let mut record = OperationRecord::queued(NewOperation {
        operation_id: new_operation_id()?,
        kind: req.kind.to_owned(),
        workspace_id: ws.identity.workspace_id.clone(),
        request_digest: request_digest.clone(),
        idempotency_key_digest: digest.clone(),
        request: req.request,
        work,
    });
    write_record(ws, &mut record)?;
    // The key is claimed after the record exists, so a key always names a
    // readable operation; a racing start with the same key loses here.
    let keys = detached_dir(ws).join("keys");
    fs::create_dir_all(&keys).map_err(|e| io_error("creating detached/keys", e))?;
    let claimed = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(key_path(ws, &digest));
    match claimed {
        Ok(mut file) => {
            file.write_all(record.operation_id.as_bytes())
                .and_then(|_| file.sync_all())
                .map_err(|e| io_error("writing an idempotency key", e))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let _ = fs::remove_dir_all(operation_dir(ws, &record.operation_id));
            let winner = existing(ws, &digest)?.ok_or_else(|| {
                FlameoxError::internal("an idempotency key vanished while it was read")
            })?;
            return reconnect(winner, &request_digest);
        }
        Err(e) => return Err(io_error("claiming an idempotency key", e)),
    }
    if let Err(err) = spawn(ws, &record.operation_id) {
        record.error = Some(err.clone());
        record.retry_new_operation = Some(retry(req.start_tool, &record));
        record.finish(OperationStatus::Failed);
        write_record(ws, &mut record)?;
        return Err(err.detail("operation_id", record.operation_id.clone()));
    }
    Ok(Started {
        record,
        reconnected: false,
    })
}

/// The same request under a fresh key.
fn retry(tool: &str, record: &OperationRecord) -> RetryNewOperation {
    let mut arguments = record.request.clone();
    let fresh = random_bytes::<8>()
        .map(hex::encode)
        .unwrap_or_else(|_| record.operation_id.clone());
    if let Value::Object(map) = &mut arguments {
        map.insert(
            "idempotency_key".into(),
            Value::String(format!("retry-{fresh}")),
        );
    }
    RetryNewOperation {
        tool: tool.to_owned(),
        arguments,
    }
}

/// The retry of a failed or cancelled operation, by its kind's start tool.
pub(crate) fn retry_for(record: &OperationRecord) -> RetryNewOperation {
    retry(start_tool(&record.kind), record)
}

/// The start tool of each kind, for retries written by recovery.
fn start_tool(kind: &str) -> &'static str {
    match kind {
        "experiment" => "start_detached_experiment",
        "capability_setup" => "start_capability_setup",
        "reduction" => "execute_reduction",
        _ => "start_detached_capture",
    }
}

/// The get tool of each kind (what a caller polls).
pub fn get_tool(kind: &str) -> &'static str {
    match kind {
        "experiment" => "get_detached_experiment",
        "capability_setup" => "get_capability_setup",
        "reduction" => "get_reduction",
        _ => "get_detached_capture",
    }
}

/// The operations still queued or running (a dead worker's are recovered
/// first), newest first, at most `limit`; and how many there are.
pub fn active(ws: &Workspace, limit: usize) -> (Vec<OperationRecord>, usize) {
    recover_all(ws);
    let Ok(entries) = fs::read_dir(detached_dir(ws)) else {
        return (Vec::new(), 0);
    };
    let mut running: Vec<OperationRecord> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("op_").then_some(name)
        })
        .filter_map(|id| read_record(ws, &id).ok())
        .filter(|r| !r.status.is_terminal())
        .collect();
    running.sort_by_key(|r| std::cmp::Reverse(r.created_unix_ms));
    let total = running.len();
    running.truncate(limit);
    (running, total)
}

/// Whether a live worker holds the operation's lock.
fn worker_alive(dir: &Path) -> bool {
    let path = worker_lock(dir);
    // No lock file yet: no worker has started.
    path.exists() && matches!(FileLock::try_acquire_existing(&path), Ok(None))
}

fn age(record: &OperationRecord) -> Duration {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    Duration::from_millis(now.saturating_sub(record.created_unix_ms))
}

/// Ends what a dead worker left: its workload's process tree, its
/// record (failed, or cancelled when a cancel was asked), with a retry.
pub fn recover_one(ws: &Workspace, mut record: OperationRecord) -> Result<OperationRecord> {
    if record.status.is_terminal() {
        return Ok(record);
    }
    let dir = operation_dir(ws, &record.operation_id);
    if worker_alive(&dir) {
        return Ok(record);
    }
    if record.status == OperationStatus::Queued
        && record.worker.is_none()
        && age(&record) < START_GRACE
    {
        return Ok(record);
    }
    // A recovering caller holds the worker's lock while it writes, so a
    // late-starting worker finds the operation ended and runs nothing.
    let Some(_held) = FileLock::try_acquire(&worker_lock(&dir))? else {
        return Ok(record);
    };
    let record_now = read_record(ws, &record.operation_id)?;
    if record_now.status.is_terminal() {
        return Ok(record_now);
    }
    record = record_now;
    let mut cleanup = "worker_gone".to_owned();
    if let Some(p) = record.process
        && same_process_alive(p.pid, p.start_ticks)
    {
        signal_group(p.pid, libc::SIGKILL);
        cleanup = "worker_gone; process_tree_killed".to_owned();
    }
    record.cancellation.cleanup = Some(cleanup);
    let cancelled = cancel_marker(&dir).exists();
    if cancelled && record.cancellation.requested_at.is_none() {
        record.cancellation.requested_at = fs::read_to_string(cancel_marker(&dir)).ok();
    }
    record.error = Some(if cancelled {
        FlameoxError::new(
            ErrorCode::OperationCancelled,
            "cancelled; its worker had already ended",
        )
    } else {
        FlameoxError::new(
            ErrorCode::ProcessFailed,
            format!(
                "its worker process ended without a receipt while the operation was {} ({})",
                record.status.word(),
                record.phase
            ),
        )
        .remedy("start it again under a fresh idempotency key (retry_new_operation)")
    });
    record.retry_new_operation = Some(retry_for(&record));
    for item in &mut record.items {
        if item.status == "running" {
            item.status = "interrupted".into();
        }
    }
    record.finish(if cancelled {
        OperationStatus::Cancelled
    } else {
        OperationStatus::Failed
    });
    write_record(ws, &mut record)?;
    Ok(record)
}

/// Recovers every operation a dead worker left (best effort: a record
/// that cannot be read is left for `get` to report).
pub fn recover_all(ws: &Workspace) -> Vec<String> {
    let Ok(entries) = fs::read_dir(detached_dir(ws)) else {
        return Vec::new();
    };
    let mut recovered = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with("op_") {
            continue;
        }
        let Ok(record) = read_record(ws, &name) else {
            continue;
        };
        if record.status.is_terminal() {
            continue;
        }
        if let Ok(after) = recover_one(ws, record)
            && after.status.is_terminal()
        {
            recovered.push(name);
        }
    }
    recovered
}

/// One operation's current record (recovered first if its worker died).
pub fn get(ws: &Workspace, operation_id: &str, kind: &str) -> Result<OperationRecord> {
    let record = read_record(ws, operation_id)?;
    if record.kind != kind {
        return Err(FlameoxError::invalid_argument(
            "operation_id",
            format!("{operation_id} is a detached {}, not a {kind}", record.kind),
        ));
    }
    recover_one(ws, record)
}

/// Asks the worker to stop and waits (bounded) for its terminal record:
/// the process tree gets SIGTERM, then SIGKILL after its grace; complete
/// outputs are kept and incomplete ones quarantined by the work itself.
pub fn cancel(ws: &Workspace, operation_id: &str, kind: &str) -> Result<OperationRecord> {
    let record = get(ws, operation_id, kind)?;
    if record.status.is_terminal() {
        return Ok(record);
    }
    let dir = operation_dir(ws, operation_id);
    crate::fsutil::write_atomic(&cancel_marker(&dir), now_rfc3339().as_bytes())?;
    let deadline = Instant::now() + CANCEL_WAIT;
    loop {
        let record = get(ws, operation_id, kind)?;
        if record.status.is_terminal() || Instant::now() >= deadline {
            return Ok(record);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
