//! The error codes of the contract and their mapping to exit codes, in one place.
//!
//! Every failure that leaves the engine is a [`FlameoxError`]: a stable code, a
//! message without host paths, details, remediation steps and (when a next
//! call would help) a recovery hint. The CLI maps the code to an exit code and
//! MCP wraps the same object in its envelope.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Stable error codes (the seed's list).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    WorkspaceNotFound,
    WorkspaceInvalid,
    CapabilityUnavailable,
    InvalidArguments,
    ArtifactTooLarge,
    ArtifactIntegrityFailed,
    ArtifactParseFailed,
    EvidenceSchemaMismatch,
    ComparisonInvalid,
    QueryBudgetExceeded,
    StorageQuotaExceeded,
    WriteLockTimeout,
    RevisionConflict,
    StaleCursor,
    RunNotFound,
    /// A frame named by key or function is not in the target's evidence.
    FrameNotFound,
    /// A metric the target's evidence does not have.
    MetricNotFound,
    OperationCancelled,
    /// A capture plan is unknown, expired, already used, or no longer
    /// matches the workload, parameters or adapter it was made for.
    InvalidCapturePlan,
    /// Execution was refused before any process started (e.g. the program's
    /// identity does not match its pinned sha256).
    ExecutionRefused,
    /// The workload could not start or exited unsuccessfully.
    ProcessFailed,
    /// The workload ran past its timeout; its process tree was killed.
    ProcessTimeout,
    /// The caller cancelled the workload; its process tree was killed.
    ProcessCancelled,
    /// `flameox setup --verify`: a client's flameox entry is absent, launches
    /// something else, or its launcher fails the MCP initialize.
    ClientNotConnected,
    /// An object store or URL could not be read: unreachable, refused the
    /// credentials, or failed mid-transfer (`retryable` when transient).
    RemoteSourceUnavailable,
    /// No detached operation has this id in the workspace.
    OperationNotFound,
    /// An idempotency key that already started an operation was sent with
    /// a different request: the key names that operation, not this request.
    IdempotencyConflict,
    /// A policy refusal: the artifact lies outside what this caller may read
    /// (outside the project or temp root, or a symlink leading out of it).
    SensitiveArtifactRefused,
    InternalError,
}

impl ErrorCode {
    /// The process exit code for this error (the contract's table).
    pub fn exit_code(self) -> i32 {
        use ErrorCode::*;
        match self {
            RunNotFound | FrameNotFound | MetricNotFound | OperationNotFound
            | ClientNotConnected | InternalError => 1,
            InvalidArguments | WorkspaceNotFound | InvalidCapturePlan => 2,
            CapabilityUnavailable => 3,
            ProcessFailed | RemoteSourceUnavailable => 4,
            WorkspaceInvalid
            | ArtifactTooLarge
            | ArtifactIntegrityFailed
            | ArtifactParseFailed
            | EvidenceSchemaMismatch
            | StorageQuotaExceeded
            | QueryBudgetExceeded => 5,
            ComparisonInvalid => 6,
            WriteLockTimeout | RevisionConflict | IdempotencyConflict | StaleCursor => 7,
            OperationCancelled | ProcessTimeout | ProcessCancelled => 8,
            SensitiveArtifactRefused | ExecutionRefused => 9,
        }
    }

    /// Whether the same call may succeed when retried unchanged.
    pub fn retryable(self) -> bool {
        matches!(
            self,
            ErrorCode::WriteLockTimeout | ErrorCode::RevisionConflict
        )
    }

    pub fn as_str(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }
}

/// The next call that recovers from an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recovery {
    pub next_tool: String,
    pub next_arguments: Value,
    /// The same step as a CLI command line.
    pub next_command: String,
}

/// The body of a domain error (boxed inside [`FlameoxError`] so results stay small).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: ErrorCode,
    pub message: String,
    pub retryable: bool,
    pub details: Map<String, Value>,
    pub remediation: Vec<String>,
    pub run_id: Option<String>,
    pub recovery: Option<Recovery>,
}

/// A domain error, safe to show to a person or an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[serde(transparent)]
#[error("{:?}: {}", .0.code, .0.message)]
pub struct FlameoxError(Box<ErrorBody>);

impl std::ops::Deref for FlameoxError {
    type Target = ErrorBody;
    fn deref(&self) -> &ErrorBody {
        &self.0
    }
}

impl std::ops::DerefMut for FlameoxError {
    fn deref_mut(&mut self) -> &mut ErrorBody {
        &mut self.0
    }
}

pub type Result<T, E = FlameoxError> = std::result::Result<T, E>;

impl FlameoxError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        FlameoxError(Box::new(ErrorBody {
            code,
            message: message.into(),
            retryable: code.retryable(),
            details: Map::new(),
            remediation: Vec::new(),
            run_id: None,
            recovery: None,
        }))
    }

    pub fn detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_owned(), value.into());
        self
    }

    pub fn remedy(mut self, step: impl Into<String>) -> Self {
        self.remediation.push(step.into());
        self
    }

    pub fn with_run(mut self, run_id: impl Into<String>) -> Self {
        self.run_id = Some(run_id.into());
        self
    }

    /// A recovery that is a catalogued operation: each transport renders
    /// it (a tool call; a command line built from the catalog).
    pub fn recover(mut self, operation: &str, arguments: Value) -> Self {
        self.recovery = Some(Recovery {
            next_tool: operation.to_owned(),
            next_arguments: arguments,
            next_command: String::new(),
        });
        self
    }

    pub fn recover_with(
        mut self,
        tool: &str,
        arguments: Value,
        command: impl Into<String>,
    ) -> Self {
        self.recovery = Some(Recovery {
            next_tool: tool.to_owned(),
            next_arguments: arguments,
            next_command: command.into(),
        });
        self
    }

    pub fn invalid_argument(field: &str, problem: impl Into<String>) -> Self {
        let problem = problem.into();
        FlameoxError::new(ErrorCode::InvalidArguments, format!("{field}: {problem}")).detail(
            "fields",
            serde_json::json!([{ "field": field, "problem": problem }]),
        )
    }

    pub fn internal(message: impl Into<String>) -> Self {
        FlameoxError::new(ErrorCode::InternalError, message)
    }

    pub fn workspace_not_found() -> Self {
        FlameoxError::new(
            ErrorCode::WorkspaceNotFound,
            "no flameox workspace here or in any parent folder",
        )
        .remedy("run `flameox init` at the project root")
        .recover_with(
            "initialize_workspace",
            serde_json::json!({}),
            "flameox init",
        )
    }

    /// The process exit code: the code's row of the contract's table, with
    /// two refinements by what the error says. A query stopped by its
    /// deadline timed out (8: "cancelled or timed out"); its memory budget
    /// stays 5. A missing or invalid `flameox.toml` (details `file`) is
    /// invalid configuration (2), not a damaged workspace.
    pub fn exit_code(&self) -> i32 {
        let detail = |key: &str| self.details.get(key).and_then(Value::as_str);
        match self.code {
            ErrorCode::QueryBudgetExceeded if detail("budget") == Some("deadline") => 8,
            ErrorCode::WorkspaceInvalid if detail("file") == Some(PROJECT_CONFIG_FILE) => 2,
            code => code.exit_code(),
        }
    }
}

/// The project's workload declarations (`project::CONFIG_FILE`; named here
/// so the exit-code table needs no import of the project module).
pub const PROJECT_CONFIG_FILE: &str = "flameox.toml";

/// The exit code of an operation that completed with a negative result,
/// such as a capture whose validation failed (the contract's row 1); the
/// answer is printed as usual.
pub const NEGATIVE_RESULT_EXIT_CODE: i32 = 1;

/// Wraps an I/O failure on the workspace, naming the operation, not the path.
///
/// What the environment refuses gets a typed code with its remedy: a full
/// disk or quota is `STORAGE_QUOTA_EXCEEDED`; a read-only file system or a
/// workspace this user may not access is `CAPABILITY_UNAVAILABLE`. Anything
/// else is an internal error.
pub fn io_error(what: &str, err: std::io::Error) -> FlameoxError {
    io_failure(what, err.kind(), &err.to_string())
}

/// A failure of a layer that wraps I/O (a Parquet writer, an evidence
/// sink): typed like [`io_error`] when an I/O error is in its source chain
/// (or, once flattened to text, its OS error number is), else internal.
pub fn wrapped_io_error(what: &str, err: &(dyn std::error::Error + 'static)) -> FlameoxError {
    use std::io::ErrorKind;
    let mut current = Some(err);
    while let Some(e) = current {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return io_failure(what, io.kind(), &err.to_string());
        }
        current = e.source();
    }
    let text = err.to_string();
    let flattened = [
        (28, ErrorKind::StorageFull),
        (122, ErrorKind::QuotaExceeded),
        (30, ErrorKind::ReadOnlyFilesystem),
        (13, ErrorKind::PermissionDenied),
    ]
    .into_iter()
    .find(|(errno, _)| text.contains(&format!("(os error {errno})")));
    match flattened {
        Some((_, kind)) => io_failure(what, kind, &text),
        None => FlameoxError::internal(format!("{what}: {text}")),
    }
}

fn io_failure(what: &str, kind: std::io::ErrorKind, err: &str) -> FlameoxError {
    use std::io::ErrorKind;
    let typed = match kind {
        ErrorKind::StorageFull | ErrorKind::QuotaExceeded => FlameoxError::new(
            ErrorCode::StorageQuotaExceeded,
            format!("{what}: no space left on the disk that holds the workspace ({err})"),
        )
        .detail("resource", "disk_space")
        .remedy(
            "free disk space (or raise the quota) on the file system that holds .flameox, \
             then run the command again",
        )
        .remedy("`flameox recover` removes what an interrupted writer left behind"),
        ErrorKind::ReadOnlyFilesystem => FlameoxError::new(
            ErrorCode::CapabilityUnavailable,
            format!("{what}: the workspace is on a read-only file system ({err})"),
        )
        .detail("capability", "write_workspace")
        .remedy(
            "remount the file system read-write, or point --workspace at a writable copy; \
             reads still work",
        ),
        ErrorKind::PermissionDenied => FlameoxError::new(
            ErrorCode::CapabilityUnavailable,
            format!("{what}: permission denied for the user running flameox ({err})"),
        )
        .detail("capability", "workspace_access")
        .remedy("run flameox as the user that owns .flameox, or give this user access to it"),
        _ => FlameoxError::internal(format!("{what}: {err}")),
    };
    typed.detail("io_kind", format!("{kind:?}"))
}

/// Wraps an I/O failure on an input file the caller named (`field`, e.g.
/// `path`): one it may not read, or one that vanished, is
/// `INVALID_ARGUMENTS` naming the file (its name only, never its folder);
/// anything else is [`io_error`].
pub fn input_io_error(
    field: &str,
    name: Option<&str>,
    what: &str,
    err: std::io::Error,
) -> FlameoxError {
    use std::io::ErrorKind;
    let named = name.map(|n| format!(" `{n}`")).unwrap_or_default();
    let (problem, remedy) = match err.kind() {
        ErrorKind::PermissionDenied => (
            format!("cannot read the input file{named}: permission denied"),
            "make the file readable by the user running flameox (e.g. chmod a+r), or import a copy it can read",
        ),
        ErrorKind::NotFound => (
            format!("the input file{named} does not exist (it was removed during the import?)"),
            "check the path and import the file again",
        ),
        _ => return io_error(what, err),
    };
    let mut error = FlameoxError::invalid_argument(field, problem)
        .detail("io_kind", format!("{:?}", err.kind()))
        .remedy(remedy);
    if let Some(name) = name {
        error = error.detail("input", name);
    }
    error
}

/// Candidates closest to `wanted` by edit distance (for "did you mean").
pub fn closest<'a>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    n: usize,
) -> Vec<String> {
    // A candidate that contains what was typed (a kernel name without its
    // signature, a prefix of a run id) comes before any misspelling.
    let lower = wanted.to_lowercase();
    let mut scored: Vec<(bool, usize, &str)> = candidates
        .into_iter()
        .map(|c| {
            let candidate = c.to_lowercase();
            let contains = !lower.is_empty() && candidate.contains(&lower);
            let distance = if contains {
                candidate.len() - lower.len()
            } else {
                edit_distance(&lower, &candidate)
            };
            (!contains, distance, c)
        })
        .collect();
    scored.sort();
    scored.dedup();
    scored
        .into_iter()
        .take(n)
        .map(|(_, _, c)| c.to_owned())
        .collect()
}

/// Whether `a` looks like a misspelling of `b`: at most two edits, or a
/// third of the longer name's length.
pub fn near_spelling(a: &str, b: &str) -> bool {
    let limit = 2.max(a.chars().count().max(b.chars().count()) / 3);
    edit_distance(&a.to_lowercase(), &b.to_lowercase()) <= limit
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_contract_table() {
        assert_eq!(ErrorCode::WorkspaceNotFound.exit_code(), 2);
        assert_eq!(ErrorCode::InvalidArguments.exit_code(), 2);
        assert_eq!(ErrorCode::ArtifactParseFailed.exit_code(), 5);
        assert_eq!(ErrorCode::StaleCursor.exit_code(), 7);
        assert_eq!(ErrorCode::WriteLockTimeout.exit_code(), 7);
        assert_eq!(ErrorCode::RunNotFound.exit_code(), 1);
        assert_eq!(ErrorCode::CapabilityUnavailable.exit_code(), 3);
        assert_eq!(ErrorCode::OperationCancelled.exit_code(), 8);
        assert_eq!(ErrorCode::StaleCursor.as_str(), "STALE_CURSOR");
        assert_eq!(ErrorCode::ProcessFailed.exit_code(), 4);
        assert_eq!(ErrorCode::ProcessTimeout.exit_code(), 8);
        assert_eq!(ErrorCode::ExecutionRefused.exit_code(), 9);
        assert_eq!(
            ErrorCode::InvalidCapturePlan.as_str(),
            "INVALID_CAPTURE_PLAN"
        );
    }

    /// Seed, "Exit codes": "8: operation cancelled or timed out" and
    /// "2: invalid arguments or configuration".
    #[test]
    fn a_query_past_its_deadline_timed_out_and_a_bad_flameox_toml_is_configuration() {
        let deadline =
            FlameoxError::new(ErrorCode::QueryBudgetExceeded, "late").detail("budget", "deadline");
        assert_eq!(deadline.exit_code(), 8);
        let memory =
            FlameoxError::new(ErrorCode::QueryBudgetExceeded, "big").detail("budget", "memory");
        assert_eq!(memory.exit_code(), 5);
        let config = FlameoxError::new(ErrorCode::WorkspaceInvalid, "bad")
            .detail("file", PROJECT_CONFIG_FILE);
        assert_eq!(config.exit_code(), 2);
        let damaged = FlameoxError::new(ErrorCode::WorkspaceInvalid, "torn commit");
        assert_eq!(damaged.exit_code(), 5);
    }

    #[test]
    fn refusals_of_the_environment_get_typed_codes() {
        use std::io::{Error, ErrorKind};
        let full = io_error("writing", Error::from_raw_os_error(28));
        assert_eq!(full.code, ErrorCode::StorageQuotaExceeded);
        assert_eq!(full.exit_code(), 5);
        assert!(full.remediation[0].contains("free disk space"));
        let ro = io_error("writing", Error::from_raw_os_error(30));
        assert_eq!(ro.code, ErrorCode::CapabilityUnavailable);
        assert_eq!(ro.exit_code(), 3);
        let other = io_error("writing", Error::other("boom"));
        assert_eq!(other.code, ErrorCode::InternalError);
        // Behind a wrapping error, or flattened to its text.
        let boxed: Box<dyn std::error::Error + Send + Sync> =
            Box::new(Error::new(ErrorKind::StorageFull, "full"));
        let wrapped = wrapped_io_error("writing Parquet", &*boxed);
        assert_eq!(wrapped.code, ErrorCode::StorageQuotaExceeded);
        let flat: Box<dyn std::error::Error + Send + Sync> =
            "External: No space left on device (os error 28)".into();
        let flattened = wrapped_io_error("writing Parquet", &*flat);
        assert_eq!(flattened.code, ErrorCode::StorageQuotaExceeded);
        let input = input_io_error(
            "path",
            Some("t.json"),
            "opening",
            Error::from_raw_os_error(13),
        );
        assert_eq!(input.code, ErrorCode::InvalidArguments);
        assert!(input.message.contains("`t.json`") && input.message.contains("permission denied"));
    }

    #[test]
    fn closest_names_rank_by_edit_distance() {
        let found = closest("hotspot", ["hotspots", "window", "callers"], 1);
        assert_eq!(found, vec!["hotspots".to_owned()]);
    }

    #[test]
    fn a_name_that_contains_what_was_typed_comes_first() {
        let kernel =
            "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)";
        let found = closest(
            "ncclKernel_AllReduce_RING_LL_Sum_float",
            ["nccl:all_reduce", kernel, "aten::flatten_dense_tensors"],
            2,
        );
        assert_eq!(found, vec![kernel.to_owned(), "nccl:all_reduce".to_owned()]);
    }
}
