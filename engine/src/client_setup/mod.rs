//! `flameox setup`: connects local MCP clients (Claude Code, Claude Desktop,
//! Cursor, VS Code, Windsurf, Codex, Gemini CLI) to this flameox. It finds
//! which are installed, plans the exact edit of each configuration (path
//! and before/after), and applies it under a user-wide lock with a recovery
//! journal, atomic writes and backups; then it starts each launcher as the
//! client would and completes an MCP initialize, and puts every original
//! byte back if that fails. The entry is always the absolute executable with
//! `mcp serve --project-root .`: never `--init`, never a workspace.
//! `--refresh` re-points the clients already connected at this executable;
//! `--rollback` puts back each client's previous launcher from the launcher
//! history, verified by the same handshake. Terminal only; docs/install.md.

mod apply;
pub mod clients;
mod edit_diff;
pub mod history;
mod journal;
mod json_entry;
pub mod launcher;
mod plan;
mod toml_entry;

use std::path::PathBuf;

use serde::Serialize;
use sha2::{Digest, Sha256};

pub use clients::{CLIENTS, Client, ConfigFormat, Host, Scope};
pub use launcher::{Handshake, Launcher};

pub use apply::{apply, verify};
pub use plan::{configured_launcher, plan};

use crate::error::FlameoxError;

/// The server name flameox's entry has in every client.
pub const ENTRY_NAME: &str = "flameox";

/// What a configuration held where flameox's entry goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryState {
    Absent,
    Same,
    Different,
}

/// What setup does (or found) for one client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EditAction {
    /// The entry is new.
    Add,
    /// The entry exists with another launcher; its command and args change.
    Update,
    /// The entry is already this launcher (nothing to write).
    Unchanged,
    /// `--remove`: the entry goes, nothing else does.
    Remove,
    /// `--remove` or `--verify`: there is no entry.
    Absent,
    /// Not installed, or no configuration for this scope.
    Skip,
    /// The configuration is malformed or not UTF-8: refused, not replaced.
    Refuse,
}

/// One client's part of a plan or report.
#[derive(Debug, Clone, Serialize)]
pub struct ClientEdit {
    pub client: &'static str,
    pub title: &'static str,
    pub scope: Scope,
    pub path: Option<PathBuf>,
    /// How the client was found (`None`: not installed here).
    pub installed: Option<String>,
    pub action: EditAction,
    pub reason: Option<String>,
    /// The edit as one unified-diff hunk.
    pub diff: Vec<String>,
    /// The configuration's sha256 when planned (`None`: no file yet);
    /// applying refuses when it changed since.
    pub before_sha256: Option<String>,
    /// Where the replaced file was copied (applied edits).
    pub backup: Option<PathBuf>,
    /// The launcher's answer to initialize (applied or verified edits).
    pub verified: Option<Handshake>,
    #[serde(skip)]
    pub(crate) before: Option<Vec<u8>>,
    #[serde(skip)]
    pub(crate) after: Option<String>,
}

impl ClientEdit {
    /// Whether applying writes this configuration.
    pub fn writes(&self) -> bool {
        matches!(
            self.action,
            EditAction::Add | EditAction::Update | EditAction::Remove
        )
    }

    /// Whether this client ends up launching flameox.
    pub(crate) fn connects(&self) -> bool {
        matches!(
            self.action,
            EditAction::Add | EditAction::Update | EditAction::Unchanged
        )
    }
}

/// What `flameox setup` was asked.
#[derive(Debug, Clone, Default)]
pub struct SetupRequest {
    /// Client names; empty: every installed client.
    pub clients: Vec<String>,
    pub scope: Scope,
    pub remove: bool,
    /// `--refresh`: only clients that already have a flameox entry, pointed
    /// at this executable.
    pub refresh: bool,
    /// `--rollback`: each client's previous launcher from the history.
    pub rollback: bool,
    /// The project whose files `--scope project` edits.
    pub project_root: PathBuf,
    /// The executable launchers name; default the running one.
    pub executable: Option<PathBuf>,
}

/// A plan (dry-run), or the report of an applied or verified one.
#[derive(Debug, Clone, Serialize)]
pub struct SetupReport {
    /// `connect`, `refresh`, `rollback`, `remove` or `verify`.
    pub operation: &'static str,
    pub scope: Scope,
    /// Whether the edits were written (false for a dry-run or verify).
    pub applied: bool,
    pub launcher: Launcher,
    pub edits: Vec<ClientEdit>,
    pub warnings: Vec<String>,
    /// Files an earlier setup that did not finish had changed, put back
    /// before this one started.
    pub recovered: Vec<PathBuf>,
    pub next: Vec<String>,
}

impl SetupReport {
    /// The edits applying would write.
    pub fn pending(&self) -> impl Iterator<Item = &ClientEdit> {
        self.edits.iter().filter(|e| e.writes())
    }
}
pub(crate) fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

pub(crate) fn refused(field: &str, problem: String) -> FlameoxError {
    FlameoxError::invalid_argument(field, problem)
}

#[cfg(test)]
mod tests;
