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
            RunNotFound | InternalError => 1,
            InvalidArguments | WorkspaceNotFound | InvalidCapturePlan => 2,
            CapabilityUnavailable => 3,
            ProcessFailed => 4,
            WorkspaceInvalid
            | ArtifactTooLarge
            | ArtifactIntegrityFailed
            | ArtifactParseFailed
            | EvidenceSchemaMismatch
            | StorageQuotaExceeded
            | QueryBudgetExceeded => 5,
            ComparisonInvalid => 6,
            WriteLockTimeout | RevisionConflict | StaleCursor => 7,
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

    pub fn exit_code(&self) -> i32 {
        self.code.exit_code()
    }
}

/// Wraps an I/O failure as an internal error naming the operation, not the path.
pub fn io_error(what: &str, err: std::io::Error) -> FlameoxError {
    FlameoxError::internal(format!("{what}: {err}")).detail("io_kind", format!("{:?}", err.kind()))
}

/// Candidates closest to `wanted` by edit distance (for "did you mean").
pub fn closest<'a>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    n: usize,
) -> Vec<String> {
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .map(|c| (edit_distance(&wanted.to_lowercase(), &c.to_lowercase()), c))
        .collect();
    scored.sort();
    scored.dedup();
    scored
        .into_iter()
        .take(n)
        .map(|(_, c)| c.to_owned())
        .collect()
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

    #[test]
    fn closest_names_rank_by_edit_distance() {
        let found = closest("hotspot", ["hotspots", "window", "callers"], 1);
        assert_eq!(found, vec!["hotspots".to_owned()]);
    }
}
