//! Setup's own state, outside any workspace (`~/.local/state/flameox/setup`):
//! a user-wide lock that serializes setups, the recovery journal written
//! before the first configuration changes (so a crash is undone on the next
//! run), backups of every file it replaced, and the write that keeps a
//! file's permissions and follows a symlinked configuration to its target.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, FlameoxError, Result};
use crate::lock::FileLock;

/// The state folder and what lives in it.
pub struct SetupState {
    dir: PathBuf,
}

/// One file as it was before setup touched it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct JournalFile {
    path: PathBuf,
    /// The original bytes, base64 (`None`: the file did not exist).
    original: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Journal {
    files: Vec<JournalFile>,
}

fn io(what: &str, path: &Path, e: std::io::Error) -> FlameoxError {
    FlameoxError::new(
        ErrorCode::InternalError,
        format!("{what} {}: {e}", path.display()),
    )
}

impl SetupState {
    pub fn new(dir: PathBuf) -> SetupState {
        SetupState { dir }
    }

    fn journal_path(&self) -> PathBuf {
        self.dir.join("journal.json")
    }

    /// Takes the user-wide setup lock (10 s, then `WRITE_LOCK_TIMEOUT`).
    pub fn lock(&self) -> Result<FileLock> {
        fs::create_dir_all(&self.dir).map_err(|e| io("creating", &self.dir, e))?;
        FileLock::acquire(&self.dir.join("lock"), Duration::from_secs(10)).map_err(|e| {
            FlameoxError::new(
                e.code,
                "another flameox setup is changing client configurations",
            )
            .remedy("retry when it finishes")
        })
    }

    /// Puts back every file a setup that did not finish had changed, then
    /// forgets it. Returns the files restored.
    pub fn recover(&self) -> Result<Vec<PathBuf>> {
        let path = self.journal_path();
        let Ok(bytes) = fs::read(&path) else {
            return Ok(Vec::new());
        };
        let journal: Journal = serde_json::from_slice(&bytes).map_err(|e| {
            FlameoxError::new(
                ErrorCode::WorkspaceInvalid,
                format!(
                    "the setup recovery journal {} is unreadable: {e}",
                    path.display()
                ),
            )
        })?;
        let mut restored = Vec::new();
        for file in &journal.files {
            let original = match &file.original {
                Some(text) => Some(
                    base64::engine::general_purpose::STANDARD
                        .decode(text)
                        .map_err(|e| FlameoxError::internal(format!("journal entry: {e}")))?,
                ),
                None => None,
            };
            restore(&file.path, original.as_deref())?;
            restored.push(file.path.clone());
        }
        fs::remove_file(&path).map_err(|e| io("removing", &path, e))?;
        Ok(restored)
    }

    /// Records the originals of `files` before any of them changes.
    pub fn begin(&self, files: &[(PathBuf, Option<Vec<u8>>)]) -> Result<()> {
        let journal = Journal {
            files: files
                .iter()
                .map(|(path, bytes)| JournalFile {
                    path: path.clone(),
                    original: bytes
                        .as_ref()
                        .map(|b| base64::engine::general_purpose::STANDARD.encode(b)),
                })
                .collect(),
        };
        let bytes = serde_json::to_vec_pretty(&journal)
            .map_err(|e| FlameoxError::internal(format!("journal: {e}")))?;
        write_preserving(&self.journal_path(), &bytes)
    }

    /// Forgets the journal once every change is in place and verified.
    pub fn finish(&self) -> Result<()> {
        let path = self.journal_path();
        match fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io("removing", &path, e)),
            _ => Ok(()),
        }
    }

    /// Keeps a copy of a file setup is about to replace.
    pub fn backup(&self, stamp: &str, label: &str, bytes: &[u8]) -> Result<PathBuf> {
        let dir = self.dir.join("backups").join(stamp);
        fs::create_dir_all(&dir).map_err(|e| io("creating", &dir, e))?;
        let path = dir.join(label);
        fs::write(&path, bytes).map_err(|e| io("writing", &path, e))?;
        Ok(path)
    }
}

/// Puts `original` back at `path` (`None`: the file did not exist, so it
/// is removed).
pub fn restore(path: &Path, original: Option<&[u8]>) -> Result<()> {
    match original {
        Some(bytes) => write_preserving(path, bytes),
        None => match fs::remove_file(target_of(path)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io("removing", path, e)),
            _ => Ok(()),
        },
    }
}

/// The file a write lands in: a symlinked configuration (a dotfiles
/// repository) is written through to its target, never replaced.
fn target_of(path: &Path) -> PathBuf {
    fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Writes `bytes` atomically (a temporary sibling with the original's
/// permissions, fsync, rename, folder fsync).
pub fn write_preserving(path: &Path, bytes: &[u8]) -> Result<()> {
    let target = target_of(path);
    let dir = target
        .parent()
        .ok_or_else(|| FlameoxError::internal("a configuration path has no folder"))?
        .to_path_buf();
    fs::create_dir_all(&dir).map_err(|e| io("creating", &dir, e))?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(
        ".{name}.flameox-{}.tmp",
        uuid::Uuid::now_v7().simple()
    ));
    let permissions = fs::metadata(&target).ok().map(|m| m.permissions());
    let result = (|| -> std::io::Result<()> {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        if let Some(permissions) = permissions {
            file.set_permissions(permissions)?;
        }
        file.sync_all()?;
        fs::rename(&tmp, &target)?;
        if let Ok(folder) = fs::File::open(&dir) {
            let _ = folder.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(|e| io("writing", &target, e))
}
