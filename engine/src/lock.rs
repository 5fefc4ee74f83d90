//! Advisory file locks with a bounded wait.
//!
//! Publishers take `locks/write.lock`; each staging folder holds its own lock
//! while its writer lives, so a cleaner can tell a dead writer's leftovers
//! (lock free) from a live writer's work (lock held). The operating system
//! releases a lock when its process dies, even on SIGKILL.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{ErrorCode, FlameoxError, Result, io_error};

/// An exclusive lock, released on drop.
#[derive(Debug)]
pub struct FileLock {
    file: File,
}

impl FileLock {
    /// Waits up to `timeout` for the lock at `path`; `WRITE_LOCK_TIMEOUT`
    /// (retryable) after that.
    pub fn acquire(path: &Path, timeout: Duration) -> Result<FileLock> {
        let file = open_lock_file(path)?;
        let started = Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(FileLock { file }),
                Err(TryLockError::WouldBlock) if started.elapsed() < timeout => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(FlameoxError::new(
                        ErrorCode::WriteLockTimeout,
                        format!(
                            "another writer held the workspace lock for {} ms",
                            timeout.as_millis()
                        ),
                    )
                    .detail("waited_ms", timeout.as_millis() as u64)
                    .remedy(
                        "retry when the other import finishes, or raise locks.write_timeout_ms",
                    ));
                }
                Err(TryLockError::Error(e)) => return Err(io_error("taking a workspace lock", e)),
            }
        }
    }

    /// Takes the lock only if it is free right now.
    pub fn try_acquire(path: &Path) -> Result<Option<FileLock>> {
        let file = open_lock_file(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(FileLock { file })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(io_error("taking a workspace lock", e)),
        }
    }
}

impl FileLock {
    /// [`Self::try_acquire`] of a lock file that must already exist: never
    /// creates it, so a cleaner cannot put a lock file back into a folder
    /// its owner is removing. `Ok(None)` when the lock is held or the file
    /// is gone.
    pub fn try_acquire_existing(path: &Path) -> Result<Option<FileLock>> {
        let file = match OpenOptions::new().write(true).open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error("opening a workspace lock", e)),
        };
        match file.try_lock() {
            Ok(()) => Ok(Some(FileLock { file })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(io_error("taking a workspace lock", e)),
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

fn open_lock_file(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| io_error("opening a workspace lock", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_holder_times_out_then_succeeds_after_release() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("write.lock");
        let first = FileLock::acquire(&path, Duration::from_millis(100)).unwrap();
        let err = FileLock::acquire(&path, Duration::from_millis(50)).unwrap_err();
        assert_eq!(err.code, ErrorCode::WriteLockTimeout);
        assert!(err.retryable);
        assert!(FileLock::try_acquire(&path).unwrap().is_none());
        drop(first);
        assert!(FileLock::try_acquire(&path).unwrap().is_some());
    }
}
