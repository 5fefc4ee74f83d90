//! The managed Python runtime: a virtualenv flameox owns in the user's data
//! folder (`$FLAMEOX_DATA_DIR`, else `$XDG_DATA_HOME/flameox`, else
//! `~/.local/share/flameox`), under `runtime/venv`. Capability setup
//! creates it with the `python3` (or `uv`) found on the machine and
//! installs pinned adapters into it; adapters found nowhere else resolve
//! from its `bin/`. Its path is never shown to agents: answers say
//! "managed runtime". One setup at a time holds `runtime.lock`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, FlameoxError, Result};

/// The environment variable that moves flameox's data folder.
pub const DATA_DIR_VARIABLE: &str = "FLAMEOX_DATA_DIR";

/// flameox's data folder for this user.
pub fn data_dir() -> Result<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = var(DATA_DIR_VARIABLE) {
        return Ok(dir);
    }
    if let Some(dir) = var("XDG_DATA_HOME") {
        return Ok(dir.join("flameox"));
    }
    var("HOME")
        .map(|home| home.join(".local/share/flameox"))
        .ok_or_else(|| {
            FlameoxError::new(
                ErrorCode::CapabilityUnavailable,
                "no data folder for the managed runtime: HOME is not set",
            )
            .remedy(format!(
                "set {DATA_DIR_VARIABLE} to a folder flameox may own"
            ))
        })
}

/// Where the managed runtime lives.
#[derive(Debug, Clone)]
pub struct ManagedRuntime {
    root: PathBuf,
}

/// What the runtime records about itself (`runtime/state.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeState {
    pub created_at: String,
    /// `venv` (python3 -m venv) or `uv` (uv venv).
    pub created_with: String,
    pub python_version: String,
}

impl ManagedRuntime {
    /// The runtime of this user's data folder.
    pub fn locate() -> Result<ManagedRuntime> {
        Ok(ManagedRuntime {
            root: data_dir()?.join("runtime"),
        })
    }
    pub fn at(root: &Path) -> ManagedRuntime {
        ManagedRuntime {
            root: root.to_path_buf(),
        }
    }
    pub fn root(&self) -> &Path {
        &self.root
    }
    pub fn venv(&self) -> PathBuf {
        self.root.join("venv")
    }
    pub fn python(&self) -> PathBuf {
        self.venv().join("bin").join("python")
    }
    /// A program the runtime installed (`bin/<name>`), if it is there.
    pub fn program(&self, name: &str) -> Option<PathBuf> {
        let path = self.venv().join("bin").join(name);
        crate::execution::env::resolve_program(&path.to_string_lossy())
    }
    pub fn exists(&self) -> bool {
        self.python().exists()
    }
    pub fn lock_path(&self) -> PathBuf {
        self.root.join("runtime.lock")
    }
    pub fn state_path(&self) -> PathBuf {
        self.root.join("state.json")
    }
    pub fn state(&self) -> Option<RuntimeState> {
        crate::fsutil::read_json(&self.state_path(), "the managed runtime's state").ok()
    }
}

/// A program by name: on PATH first (`host`), else from the managed
/// runtime (`managed_runtime`).
pub fn find_program(name: &str) -> Option<(PathBuf, &'static str)> {
    if let Some(path) = crate::execution::env::resolve_program(name) {
        return Some((path, "host"));
    }
    let runtime = ManagedRuntime::locate().ok()?;
    runtime.program(name).map(|p| (p, "managed_runtime"))
}
