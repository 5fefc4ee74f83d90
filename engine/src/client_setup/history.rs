//! The launcher history (`launchers.json` in setup's state folder): for
//! every configuration setup wrote, which flameox launcher it held before
//! and after. `--rollback` puts each client's previous launcher back, but
//! only where the entry is still the one setup wrote (someone else's later
//! edit is never undone); a rollback is itself recorded, so a second one
//! goes forward again. Bounded to the last [`KEPT`] changes.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::clients::Scope;
use super::launcher::Launcher;
use crate::error::Result;

/// Changes kept.
pub const KEPT: usize = 256;

/// One configuration's flameox entry, before and after one setup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LauncherChange {
    pub at: String,
    pub client: String,
    pub scope: String,
    pub path: PathBuf,
    /// `None`: the file had no flameox entry.
    pub previous: Option<Launcher>,
    /// `None`: setup removed the entry.
    pub current: Option<Launcher>,
}

fn history_path(state_dir: &Path) -> PathBuf {
    state_dir.join("launchers.json")
}

/// Every recorded change, oldest first (none when unreadable).
pub fn read(state_dir: &Path) -> Vec<LauncherChange> {
    std::fs::read(history_path(state_dir))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Appends `changes` (under the setup lock).
pub fn record(state_dir: &Path, changes: Vec<LauncherChange>) -> Result<()> {
    if changes.is_empty() {
        return Ok(());
    }
    let mut all = read(state_dir);
    all.extend(changes);
    let excess = all.len().saturating_sub(KEPT);
    all.drain(..excess);
    crate::fsutil::write_json_atomic(&history_path(state_dir), &all)
}

/// The latest change setup made to `client`'s file at `path` in `scope`.
pub fn latest<'a>(
    changes: &'a [LauncherChange],
    client: &str,
    scope: Scope,
    path: &Path,
) -> Option<&'a LauncherChange> {
    changes
        .iter()
        .rev()
        .find(|c| c.client == client && c.scope == scope.as_str() && c.path == path)
}
