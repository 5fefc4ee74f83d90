//! Results of active capability probes (a program's version probe), kept in
//! the data folder (`probes.json`) so `list_capabilities(mode=active_cached)`
//! can answer without running anything. A result is valid only while the
//! program it probed is the same file (path, size and modification time).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::python_env::version_output;
use super::runtime::data_dir;
use crate::fsutil::{now_rfc3339, read_json, write_json_atomic};

/// One probe's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    pub adapter: String,
    pub program: PathBuf,
    pub size: u64,
    pub modified_ns: i128,
    /// The probe ran and exited 0.
    pub ok: bool,
    pub version: Option<String>,
    /// The probe's first output line, or its last when it failed (bounded).
    pub detail: String,
    pub probed_at: String,
}

fn cache_path() -> Option<PathBuf> {
    data_dir().ok().map(|d| d.join("probes.json"))
}

fn identity(path: &Path) -> Option<(u64, i128)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    Some((
        meta.len(),
        meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128,
    ))
}

fn read_all() -> BTreeMap<String, ProbeResult> {
    cache_path()
        .and_then(|p| read_json(&p, "the capability probe cache").ok())
        .unwrap_or_default()
}

/// The cached result for `adapter`, if it probed this very `program`.
pub fn cached(adapter: &str, program: &Path) -> Option<ProbeResult> {
    let result = read_all().remove(adapter)?;
    let (size, modified_ns) = identity(program)?;
    (result.program == program && result.size == size && result.modified_ns == modified_ns)
        .then_some(result)
}

/// The first version-looking token of a probe's output (`py-spy 0.4.3`,
/// `perf version 6.1.0`).
pub fn version_in(text: &str) -> Option<String> {
    text.lines().next().and_then(|line| {
        line.split_whitespace()
            .map(|t| t.trim_start_matches('v'))
            .find(|t| t.chars().next().is_some_and(|c| c.is_ascii_digit()) && t.contains('.'))
            .map(str::to_owned)
    })
}

/// Runs `argv` against `program` (bounded), records and returns the result.
pub fn probe(adapter: &str, program: &Path, argv: Vec<String>) -> ProbeResult {
    let (ok, text) = version_output(program, argv)
        .unwrap_or_else(|e| (false, format!("the probe could not run: {}", e.message)));
    // A failure says why on its last line (a Python traceback's exception).
    let line = if ok {
        text.lines().next()
    } else {
        text.lines().rev().find(|l| !l.trim().is_empty())
    };
    let first: String = line.unwrap_or("").trim().chars().take(200).collect();
    let (size, modified_ns) = identity(program).unwrap_or((0, 0));
    let result = ProbeResult {
        adapter: adapter.to_owned(),
        program: program.to_path_buf(),
        size,
        modified_ns,
        ok,
        version: if ok { version_in(&text) } else { None },
        detail: first,
        probed_at: now_rfc3339(),
    };
    record(&result);
    result
}

/// Keeps `result` (best effort: a cache that cannot be written is only a
/// slower next answer).
pub fn record(result: &ProbeResult) {
    let Some(path) = cache_path() else {
        return;
    };
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let mut all = read_all();
    all.insert(result.adapter.clone(), result.clone());
    let _ = write_json_atomic(&path, &all);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_the_first_line() {
        assert_eq!(version_in("py-spy 0.4.3\n").as_deref(), Some("0.4.3"));
        assert_eq!(
            version_in("perf version 6.1.0-18-amd64").as_deref(),
            Some("6.1.0-18-amd64")
        );
        assert_eq!(version_in("usage: foo"), None);
    }
}
