//! Where an untrusted caller (an MCP client) may import from: only files
//! that resolve inside the project root or the system temp folder, checked
//! lexically first (a `..` that climbs out is refused even if nothing is
//! there) and again after following symlinks. The CLI is trusted and does
//! not use this.

use std::path::{Component, Path, PathBuf};

use serde_json::json;

use crate::error::{ErrorCode, FlameoxError, Result};
use crate::services::import::is_inside;

/// Resolves `path` against the named root (`project` or `temp`) and refuses
/// anything that ends up outside it with `SENSITIVE_ARTIFACT_REFUSED`.
pub fn confine_import_path(project_root: &Path, path: &str, source_root: &str) -> Result<PathBuf> {
    let root = match source_root {
        "project" => project_root.to_path_buf(),
        "temp" => std::env::temp_dir(),
        other => {
            return Err(FlameoxError::invalid_argument(
                "source_root",
                format!("{other} is not project or temp"),
            ));
        }
    };
    let candidate = Path::new(path);
    let joined = if candidate.is_absolute() {
        candidate.to_path_buf()
    } else {
        root.join(candidate)
    };
    let refused = || {
        FlameoxError::new(
            ErrorCode::SensitiveArtifactRefused,
            format!(
                "the path does not resolve inside the {source_root} root, so it will not be read"
            ),
        )
        .detail(
            "fields",
            json!([{ "field": "path", "problem": format!("outside the {source_root} root after following symlinks") }]),
        )
        .remedy("copy the file into the project and pass its project-relative path")
        .remedy("or place it under the system temp folder and pass source_root='temp'")
    };
    let lexical = normalize(&joined);
    let canonical_root = root.canonicalize().unwrap_or_else(|_| root.clone());
    if !lexical.starts_with(&canonical_root) && !lexical.starts_with(&root) {
        return Err(refused());
    }
    let resolved = joined.canonicalize().map_err(|_| {
        FlameoxError::invalid_argument(
            "path",
            format!("no readable file at this path inside the {source_root} root"),
        )
        .remedy("pass a path relative to the project root, e.g. traces/run.json")
    })?;
    if !is_inside(&resolved, &root) {
        return Err(refused());
    }
    Ok(resolved)
}

/// Removes `.` and resolves `..` lexically (no file-system access).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn climbing_out_is_refused_even_when_missing() {
        let root = std::env::temp_dir().join("flameox-confine-test-root");
        let err = confine_import_path(&root, "../../../nope/x.json", "project").unwrap_err();
        assert_eq!(err.code, ErrorCode::SensitiveArtifactRefused);
        let err = confine_import_path(&root, "missing.json", "project").unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArguments);
        let err = confine_import_path(&root, "x", "home").unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArguments);
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
    }
}
