//! Detached operations: long work an agent starts, leaves and comes back
//! to. A start call records the operation under the workspace (request and
//! idempotency digests, phase, bounded progress, items, cancellation,
//! terminal receipt) and hands the work to a worker process that outlives
//! the MCP server and its client; the same idempotency key reconnects to the
//! same operation, after a restart too, and never starts its side effects
//! twice. See `docs/detached.md`.

pub mod lifecycle;
pub mod record;
pub mod worker;

pub use lifecycle::{StartRequest, Started, cancel, get, recover_all, start};
pub use record::{OperationRecord, OperationStatus};
pub use worker::{WORKER_COMMAND, WorkOutcome, run_worker, spawn_worker};
