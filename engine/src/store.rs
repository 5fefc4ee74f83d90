//! The content-addressed artifact store: original bytes, kept unchanged.
//!
//! An artifact's id is `sha256:<hex>` of its bytes. Storing the same bytes
//! twice is a no-op. Only regular files are accepted: a symlink or a device is
//! refused before any byte is read. A folder artifact (an nsys export
//! folder) is stored as one deterministic ustar archive of its files.

use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use flameox_extractors::ustar;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{ErrorCode, FlameoxError, Result, io_error};
use crate::fsutil::{now_rfc3339, read_json, sync_dir, write_json_atomic};
use crate::staging::StagingArea;
use crate::workspace::Workspace;

/// `artifact.json`: the identity and metadata of one stored artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtifactRecord {
    pub schema_version: u32,
    pub artifact_id: String,
    pub bytes: u64,
    /// Detected (or forced) format kind, e.g. `chrome_json`.
    pub kind: String,
    /// The file name it was imported as (never a host path).
    pub original_name: String,
    pub stored_at: String,
    /// File name of the payload inside the artifact folder.
    pub payload_name: String,
}

/// Parses `sha256:<hex>` and returns the hex part.
pub fn artifact_hex(artifact_id: &str) -> Option<&str> {
    let hex = artifact_id.strip_prefix("sha256:")?;
    (hex.len() == 64
        && hex
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()))
    .then_some(hex)
}

fn artifact_dir(ws: &Workspace, hex: &str) -> PathBuf {
    ws.artifacts_dir().join(&hex[..2]).join(hex)
}

/// Refuses anything but a regular file, before reading it.
pub fn check_regular_file(path: &Path) -> Result<()> {
    let meta = fs::symlink_metadata(path).map_err(|e| {
        FlameoxError::invalid_argument("path", format!("cannot read the input file: {}", e.kind()))
    })?;
    if meta.file_type().is_symlink() {
        return Err(
            FlameoxError::invalid_argument("path", "is a symbolic link; pass its target")
                .remedy("import the file the link points to"),
        );
    }
    if !meta.is_file() {
        return Err(FlameoxError::invalid_argument(
            "path",
            "is not a regular file",
        ));
    }
    Ok(())
}

/// Copies a regular file into the store, hashing as it goes.
pub fn store_file(ws: &Workspace, source: &Path, kind: &str) -> Result<ArtifactRecord> {
    check_regular_file(source)?;
    let mut input = File::open(source).map_err(|e| {
        let name = source.file_name().and_then(|n| n.to_str());
        crate::error::input_io_error("path", name, "opening the input file", e)
    })?;
    let meta = input
        .metadata()
        .map_err(|e| io_error("reading the input file", e))?;
    if !meta.is_file() {
        return Err(FlameoxError::invalid_argument(
            "path",
            "is not a regular file",
        ));
    }
    let original_name = original_name(source);
    let payload_name = format!("payload{}", payload_extension(&original_name));
    let staging = StagingArea::create(ws, &format!("artifact-{}", uuid::Uuid::now_v7()))?;
    let tmp = staging.dir().join("payload.part");
    let mut out = HashingWriter::create(&tmp)
        .map_err(|e| io_error("copying the input into the artifact store", e))?;
    copy_in_large_blocks(&mut input, &mut out)
        .map_err(|e| io_error("copying the input into the artifact store", e))?;
    let (hex, bytes) = out
        .finish()
        .map_err(|e| io_error("copying the input into the artifact store", e))?;
    let new = NewArtifact {
        hex,
        bytes,
        kind,
        original_name,
        payload_name,
    };
    place_artifact(ws, &tmp, new)
}

/// Stores a folder of regular files as ONE artifact: a deterministic ustar
/// archive of `files` (already checked regular, in this order: callers
/// sort them by name), streamed into the store while hashing — the folder
/// is never held in memory. Same content → same bytes → same artifact id.
pub fn store_directory(
    ws: &Workspace,
    dir: &Path,
    files: &[String],
    kind: &str,
) -> Result<ArtifactRecord> {
    let staging = StagingArea::create(ws, &format!("artifact-{}", uuid::Uuid::now_v7()))?;
    let tmp = staging.dir().join("payload.part");
    let archiving = |e| io_error("archiving the folder into the artifact store", e);
    let mut out = HashingWriter::create(&tmp).map_err(archiving)?;
    for name in files {
        let path = dir.join(name);
        check_regular_file(&path)?;
        let mut input =
            File::open(&path).map_err(|e| io_error("opening a file of the folder", e))?;
        let len = input
            .metadata()
            .map_err(|e| io_error("reading a file of the folder", e))?
            .len();
        ustar::write_member(&mut out, name, len, &mut input).map_err(archiving)?;
    }
    ustar::finish(&mut out).map_err(archiving)?;
    let (hex, bytes) = out.finish().map_err(archiving)?;
    let new = NewArtifact {
        hex,
        bytes,
        kind,
        original_name: original_name(dir),
        payload_name: "payload.tar".to_owned(),
    };
    place_artifact(ws, &tmp, new)
}

/// The name an input is recorded under (never a host path).
pub(crate) fn original_name(source: &Path) -> String {
    source
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "artifact".to_owned())
}

/// A payload written to staging, about to enter the store.
pub(crate) struct NewArtifact<'a> {
    pub hex: String,
    pub bytes: u64,
    pub kind: &'a str,
    pub original_name: String,
    pub payload_name: String,
}

/// Moves a staged payload into its content-addressed folder (or keeps the
/// copy already there) and writes `artifact.json`.
pub(crate) fn place_artifact(
    ws: &Workspace,
    tmp: &Path,
    new: NewArtifact<'_>,
) -> Result<ArtifactRecord> {
    let dir = artifact_dir(ws, &new.hex);
    let artifact_id = format!("sha256:{}", new.hex);
    if dir.join("artifact.json").is_file() {
        return read_artifact(ws, &artifact_id);
    }
    fs::create_dir_all(&dir).map_err(|e| io_error("creating an artifact folder", e))?;
    let payload = dir.join(&new.payload_name);
    fs::rename(tmp, &payload).map_err(|e| io_error("moving an artifact into the store", e))?;
    let mut perms = fs::metadata(&payload)
        .map_err(|e| io_error("reading an artifact", e))?
        .permissions();
    perms.set_readonly(true);
    let _ = fs::set_permissions(&payload, perms);
    let _ = sync_dir(&dir);
    let record = ArtifactRecord {
        schema_version: 1,
        artifact_id,
        bytes: new.bytes,
        kind: new.kind.to_owned(),
        original_name: new.original_name,
        stored_at: now_rfc3339(),
        payload_name: new.payload_name,
    };
    write_json_atomic(&dir.join("artifact.json"), &record)?;
    Ok(record)
}

/// Copies with 1 MiB reads and writes: `std::io::copy`'s 8 KiB blocks
/// cost ~50,000 syscalls per 200 MB input.
fn copy_in_large_blocks(input: &mut impl Read, out: &mut impl Write) -> std::io::Result<u64> {
    let mut buf = vec![0u8; COPY_BLOCK_BYTES];
    let mut total = 0u64;
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        out.write_all(&buf[..n])?;
        total += n as u64;
    }
}

pub(crate) const COPY_BLOCK_BYTES: usize = 1 << 20;

/// A file writer that hashes (sha256) and counts what passes through.
pub(crate) struct HashingWriter {
    out: File,
    hasher: Sha256,
    bytes: u64,
}

impl HashingWriter {
    pub(crate) fn create(path: &Path) -> std::io::Result<HashingWriter> {
        Ok(HashingWriter {
            out: File::create(path)?,
            hasher: Sha256::new(),
            bytes: 0,
        })
    }

    /// The hex digest and byte count of what was written so far.
    pub(crate) fn digest(&self) -> (String, u64) {
        (hex::encode(self.hasher.clone().finalize()), self.bytes)
    }

    /// Syncs the file; returns the hex digest and the byte count.
    pub(crate) fn finish(self) -> std::io::Result<(String, u64)> {
        self.out.sync_all()?;
        Ok((hex::encode(self.hasher.finalize()), self.bytes))
    }
}

impl Write for HashingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// `.json`, `.json.gz`, `.pb` … from the original name (at most two parts).
pub(crate) fn payload_extension(name: &str) -> String {
    let parts: Vec<&str> = name.split('.').skip(1).collect();
    let keep: Vec<&str> = parts
        .iter()
        .rev()
        .take(2)
        .rev()
        .copied()
        .filter(|p| {
            !p.is_empty()
                && p.len() <= 12
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
        .collect();
    if keep.is_empty() {
        String::new()
    } else {
        format!(".{}", keep.join("."))
    }
}

/// Reads one artifact's record; unknown or malformed ids are typed errors.
pub fn read_artifact(ws: &Workspace, artifact_id: &str) -> Result<ArtifactRecord> {
    let hex = artifact_hex(artifact_id).ok_or_else(|| {
        FlameoxError::invalid_argument("artifact_id", "must be sha256:<64 lowercase hex digits>")
    })?;
    let path = artifact_dir(ws, hex).join("artifact.json");
    if !path.is_file() {
        return Err(FlameoxError::new(
            ErrorCode::RunNotFound,
            format!("artifact {artifact_id} is not in this workspace"),
        )
        .remedy("list artifacts with `flameox artifacts list`"));
    }
    read_json(&path, "artifact.json")
}

/// Where an artifact's record is (`None` for a malformed id).
pub fn artifact_record_path(ws: &Workspace, artifact_id: &str) -> Option<PathBuf> {
    artifact_hex(artifact_id).map(|hex| artifact_dir(ws, hex).join("artifact.json"))
}

/// Records that the artifact is read as `kind` from now on (an extraction
/// with another kind succeeded: `flameox extract --kind`).
pub fn set_kind(ws: &Workspace, record: &ArtifactRecord, kind: &str) -> Result<()> {
    let Some(path) = artifact_record_path(ws, &record.artifact_id) else {
        return Err(FlameoxError::internal("an artifact id without its hex"));
    };
    let mut updated = record.clone();
    updated.kind = kind.to_owned();
    write_json_atomic(&path, &updated)
}

/// Where an artifact's bytes are (never shown to MCP clients).
pub fn payload_path(ws: &Workspace, record: &ArtifactRecord) -> PathBuf {
    match artifact_hex(&record.artifact_id) {
        Some(hex) => artifact_dir(ws, hex).join(&record.payload_name),
        None => ws.artifacts_dir().join("invalid"),
    }
}

/// Every stored artifact, sorted by id.
pub fn list_artifacts(ws: &Workspace) -> Result<Vec<ArtifactRecord>> {
    let mut out = Vec::new();
    let Ok(prefixes) = fs::read_dir(ws.artifacts_dir()) else {
        return Ok(out);
    };
    for prefix in prefixes.flatten() {
        let Ok(entries) = fs::read_dir(prefix.path()) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path().join("artifact.json");
            if path.is_file() {
                out.push(read_json::<ArtifactRecord>(&path, "artifact.json")?);
            }
        }
    }
    out.sort_by(|a, b| a.artifact_id.cmp(&b.artifact_id));
    Ok(out)
}

/// Recomputes the sha256 of a stored payload.
pub fn verify_payload(ws: &Workspace, record: &ArtifactRecord) -> Result<bool> {
    let (hex, _) =
        sha256_file(&payload_path(ws, record)).map_err(|e| io_error("reading an artifact", e))?;
    Ok(format!("sha256:{hex}") == record.artifact_id)
}

/// The sha256 (hex) and length of a file, read in large blocks.
pub(crate) fn sha256_file(path: &Path) -> std::io::Result<(String, u64)> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; COPY_BLOCK_BYTES];
    let mut bytes = 0u64;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        bytes += n as u64;
    }
    Ok((hex::encode(hasher.finalize()), bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bytes_store_once_and_symlinks_are_refused() {
        let project = tempfile::tempdir().unwrap();
        let (ws, _) = Workspace::init(project.path()).unwrap();
        let input = project.path().join("t.json.gz");
        fs::write(&input, b"[]").unwrap();
        let a = store_file(&ws, &input, "chrome_json").unwrap();
        let b = store_file(&ws, &input, "chrome_json").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.payload_name, "payload.json.gz");
        assert!(verify_payload(&ws, &a).unwrap());
        assert_eq!(list_artifacts(&ws).unwrap().len(), 1);
        let link = project.path().join("link.json");
        std::os::unix::fs::symlink(&input, &link).unwrap();
        let err = store_file(&ws, &link, "chrome_json").unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArguments);
        let err = store_file(&ws, project.path(), "chrome_json").unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArguments);
    }
}
