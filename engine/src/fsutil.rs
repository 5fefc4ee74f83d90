//! Durable file operations: every manifest and pointer is written to a temporary
//! sibling, fsynced, renamed over the target, and the folder fsynced, so a crash
//! leaves either the old bytes or the new ones.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{ErrorCode, FlameoxError, Result, io_error};

/// Writes `bytes` to `path` atomically (temp file + fsync + rename + dir fsync).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| FlameoxError::internal("atomic write target has no parent folder"))?;
    fs::create_dir_all(dir).map_err(|e| io_error("creating a workspace folder", e))?;
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(
        ".{file_name}.{}.tmp",
        uuid::Uuid::now_v7().simple()
    ));
    let result = (|| -> std::io::Result<()> {
        let mut file = File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, path)?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(|e| io_error("writing a workspace file", e))
}

/// Serializes `value` as pretty JSON and writes it atomically.
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| FlameoxError::internal(format!("serializing a manifest: {e}")))?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// Reads a JSON manifest; a missing or malformed file is `WORKSPACE_INVALID`.
pub fn read_json<T: DeserializeOwned>(path: &Path, what: &str) -> Result<T> {
    let bytes = fs::read(path).map_err(|e| {
        FlameoxError::new(
            ErrorCode::WorkspaceInvalid,
            format!("cannot read {what}: {e}"),
        )
    })?;
    serde_json::from_slice(&bytes).map_err(|e| {
        FlameoxError::new(
            ErrorCode::WorkspaceInvalid,
            format!("{what} is malformed: {e}"),
        )
    })
}

/// Who wrote a versioned manifest, read leniently (any other keys ignored).
#[derive(serde::Deserialize)]
struct WrittenBy {
    schema_version: Option<u32>,
    flameox_version: Option<String>,
}

/// Reads a versioned JSON manifest like [`read_json`], but one written with
/// a newer schema than `supported` (whatever else it holds) is refused as
/// written by a newer flameox rather than as malformed.
pub fn read_versioned_json<T: DeserializeOwned>(
    path: &Path,
    what: &str,
    supported: u32,
    version_of: impl Fn(&T) -> u32,
) -> Result<T> {
    let bytes = fs::read(path).map_err(|e| {
        FlameoxError::new(
            ErrorCode::WorkspaceInvalid,
            format!("cannot read {what}: {e}"),
        )
    })?;
    let parsed = serde_json::from_slice::<T>(&bytes);
    let maybe_newer = parsed
        .as_ref()
        .map_or(true, |value| version_of(value) > supported);
    if maybe_newer
        && let Ok(written) = serde_json::from_slice::<WrittenBy>(&bytes)
        && let Some(found) = written.schema_version.filter(|v| *v > supported)
    {
        return Err(newer_schema_error(
            what,
            found,
            supported,
            written.flameox_version.as_deref(),
        ));
    }
    parsed.map_err(|e| {
        FlameoxError::new(
            ErrorCode::WorkspaceInvalid,
            format!("{what} is malformed: {e}"),
        )
    })
}

/// `WORKSPACE_INVALID` for something written by a newer flameox: who wrote
/// it, what this build supports, and the remedy (upgrade).
pub fn newer_schema_error(
    what: &str,
    found: u32,
    supported: u32,
    written_by: Option<&str>,
) -> FlameoxError {
    let this = env!("CARGO_PKG_VERSION");
    let by = written_by.map_or_else(String::new, |v| format!("flameox {v}, "));
    let upgrade = match written_by {
        Some(v) => format!("upgrade flameox to {v} or later to use it"),
        None => "upgrade flameox to the version that wrote it".to_owned(),
    };
    let mut err = FlameoxError::new(
        ErrorCode::WorkspaceInvalid,
        format!(
            "{what} was written by a newer flameox ({by}schema version {found}); \
             this build (flameox {this}) supports schema version {supported}"
        ),
    )
    .detail("schema_version", found)
    .detail("supported_schema_version", supported)
    .detail("flameox_version", this)
    .remedy(upgrade)
    .remedy("do not write to it with this build; nothing was changed");
    if let Some(v) = written_by {
        err = err.detail("written_by_flameox_version", v);
    }
    err
}

/// fsyncs a folder so a rename inside it is durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Current time as RFC 3339 UTC.
pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_owned())
}

/// Lowercase hex sha256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// Digest of the canonical JSON of a value (keys sorted at every level).
pub fn digest_json(value: &serde_json::Value) -> String {
    sha256_hex(canonical_json(value).as_bytes())
}

/// JSON text with object keys sorted at every level, whatever map order
/// serde_json was built with.
pub fn canonical_json(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let body: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical_json(&map[k])))
                .collect();
            format!("{{{}}}", body.join(","))
        }
        Value::Array(items) => {
            let body: Vec<String> = items.iter().map(canonical_json).collect();
            format!("[{}]", body.join(","))
        }
        other => other.to_string(),
    }
}

/// Fills a buffer with operating-system randomness.
pub fn random_bytes<const N: usize>() -> Result<[u8; N]> {
    let mut buf = [0u8; N];
    getrandom::fill(&mut buf)
        .map_err(|e| FlameoxError::internal(format!("no system randomness: {e}")))?;
    Ok(buf)
}
