//! The deadline of an import: `--timeout` (or MCP `timeout_seconds`)
//! lowers `import.timeout_seconds` from `config.toml`, never raises it.
//!
//! The deadline rides on the extractors' cancellation polls: past it,
//! [`DeadlineProgress::cancelled`] answers true, the extractor stops with
//! `Cancelled`, the staging folder is removed and nothing is published,
//! exactly as for Ctrl-C or an MCP cancel. [`deadline_error`] then tells
//! the two apart: the error says which limit fired and how to raise it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::{ErrorCode, FlameoxError};
use crate::services::import_progress::ImportProgress;
use crate::workspace::Workspace;

/// Where an import's time limit came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadlineSource {
    /// `import.timeout_seconds` in `config.toml`.
    Config,
    /// The caller's `--timeout` / `timeout_seconds`.
    Call,
}

/// An import's time limit.
#[derive(Debug, Clone, Copy)]
pub struct ImportDeadline {
    pub limit: Duration,
    pub source: DeadlineSource,
}

impl ImportDeadline {
    /// The configured limit, lowered by the call's when that is smaller.
    pub fn of(ws: &Workspace, requested: Option<Duration>) -> ImportDeadline {
        let configured = Duration::from_secs(ws.config.import.timeout_seconds);
        match requested {
            Some(asked) if asked < configured => ImportDeadline {
                limit: asked,
                source: DeadlineSource::Call,
            },
            _ => ImportDeadline {
                limit: configured,
                source: DeadlineSource::Config,
            },
        }
    }
}

/// Progress that also cancels once the deadline passes.
pub struct DeadlineProgress<'a> {
    inner: &'a dyn ImportProgress,
    ends_at: Instant,
    deadline: ImportDeadline,
    expired: AtomicBool,
}

impl<'a> DeadlineProgress<'a> {
    pub fn new(inner: &'a dyn ImportProgress, deadline: ImportDeadline) -> DeadlineProgress<'a> {
        DeadlineProgress {
            inner,
            ends_at: Instant::now() + deadline.limit,
            deadline,
            expired: AtomicBool::new(false),
        }
    }

    /// Whether the deadline (not the caller) stopped the import.
    pub fn expired(&self) -> bool {
        self.expired.load(Ordering::SeqCst)
    }

    /// Turns the `OPERATION_CANCELLED` of an import the deadline stopped
    /// into one that says so; other errors pass unchanged.
    pub fn explain(&self, err: FlameoxError) -> FlameoxError {
        if err.code == ErrorCode::OperationCancelled && self.expired() {
            let explained = deadline_error(self.deadline);
            match err.run_id.clone() {
                Some(run) => explained.with_run(run),
                None => explained,
            }
        } else {
            err
        }
    }
}

impl ImportProgress for DeadlineProgress<'_> {
    fn phase(&self, phase: &str) {
        self.inner.phase(phase);
    }
    fn bytes(&self, done: u64, total: u64) {
        self.inner.bytes(done, total);
    }
    fn steps(&self, done: u64, total: u64) {
        self.inner.steps(done, total);
    }
    fn process_started(&self, pid: i32) {
        self.inner.process_started(pid);
    }
    fn cancelled(&self) -> bool {
        if self.inner.cancelled() {
            return true;
        }
        if Instant::now() >= self.ends_at {
            self.expired.store(true, Ordering::SeqCst);
            return true;
        }
        false
    }
}

/// The error of an import stopped by its deadline (exit 8).
pub fn deadline_error(deadline: ImportDeadline) -> FlameoxError {
    let seconds = deadline.limit.as_secs_f64();
    let (what, remedy) = match deadline.source {
        DeadlineSource::Config => (
            "import.timeout_seconds in .flameox/config.toml",
            "raise import.timeout_seconds in .flameox/config.toml if the input is genuine and large",
        ),
        DeadlineSource::Call => (
            "the call's timeout",
            "call again with a larger --timeout / timeout_seconds (up to import.timeout_seconds)",
        ),
    };
    FlameoxError::new(
        ErrorCode::OperationCancelled,
        format!("the import ran past its deadline of {seconds} s ({what}) and was stopped; nothing was published"),
    )
    .detail("cause", "deadline")
    .detail("timeout_seconds", seconds)
    .remedy(remedy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::import_progress::Quiet;

    #[test]
    fn the_deadline_cancels_and_explains_itself() {
        let deadline = ImportDeadline {
            limit: Duration::from_millis(20),
            source: DeadlineSource::Call,
        };
        let progress = DeadlineProgress::new(&Quiet, deadline);
        assert!(!progress.cancelled());
        std::thread::sleep(Duration::from_millis(30));
        assert!(progress.cancelled());
        assert!(progress.expired());
        let err = progress.explain(FlameoxError::new(ErrorCode::OperationCancelled, "x"));
        assert_eq!(err.code, ErrorCode::OperationCancelled);
        assert_eq!(err.details["cause"], "deadline");
        assert!(err.message.contains("deadline"), "{}", err.message);
        let other = progress.explain(FlameoxError::internal("boom"));
        assert_eq!(other.code, ErrorCode::InternalError);
    }
}
