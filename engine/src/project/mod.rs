//! `flameox.toml`, the project-owned declaration of workloads and
//! experiments at the project root (outside `.flameox/`, so a team can commit
//! it). This module reads it strictly (unknown keys are errors), validates it
//! whole, names it by the sha256 of its bytes (the configuration id) and each
//! workload by the digest of its canonical definition. Edits go through
//! [`edit`], which preserves comments and unrelated entries. See
//! `docs/workloads.md`.

pub mod edit;
mod locate;
pub mod schema;
pub mod validate;

use std::path::{Path, PathBuf};

use serde_json::json;

pub use schema::{AdapterDef, ExperimentDef, ProjectConfig, Scalar, WorkloadDef};
pub use validate::Diagnostic;

use crate::error::{ErrorCode, FlameoxError, Result, closest, io_error};
use crate::fsutil::{digest_json, sha256_hex};

/// The file name, relative to the project root.
pub const CONFIG_FILE: &str = crate::error::PROJECT_CONFIG_FILE;

/// At most this many diagnostics are returned.
pub const MAX_DIAGNOSTICS: usize = 20;

/// Where the configuration of `project_root` lives.
pub fn config_path(project_root: &Path) -> PathBuf {
    project_root.join(CONFIG_FILE)
}

/// `sha256:<hex>` of the file bytes: the configuration id a replace names.
pub fn configuration_id(bytes: &[u8]) -> String {
    format!("sha256:{}", sha256_hex(bytes))
}

/// `sha256:<hex>` of the canonical JSON of one workload definition.
pub fn definition_hash(def: &WorkloadDef) -> String {
    let value = serde_json::to_value(def).unwrap_or_default();
    format!("sha256:{}", digest_json(&value))
}

/// The file as read: missing, or its bytes with the parse outcome.
#[derive(Debug, Clone)]
pub enum ConfigFile {
    Missing,
    Present {
        bytes: Vec<u8>,
        configuration_id: String,
        parsed: std::result::Result<ProjectConfig, Vec<Diagnostic>>,
    },
}

/// Parses and validates a whole configuration text.
pub fn parse(text: &str) -> std::result::Result<ProjectConfig, Vec<Diagnostic>> {
    let config: ProjectConfig =
        toml::from_str(text).map_err(|e| vec![syntax_diagnostic(text, &e)])?;
    let mut problems = validate::config_diagnostics(&config);
    if problems.is_empty() {
        return Ok(config);
    }
    problems.truncate(MAX_DIAGNOSTICS);
    Err(problems)
}

/// A parse error with its line, column and key path (see [`locate`]; for a
/// syntax error, best effort: the table header above it plus the key).
fn syntax_diagnostic(text: &str, err: &toml::de::Error) -> Diagnostic {
    let mut diagnostic = Diagnostic::new("", err.message().trim());
    let Some(span) = err.span() else {
        return diagnostic;
    };
    let before = &text[..span.start.min(text.len())];
    let line = before.matches('\n').count() + 1;
    diagnostic.line = Some(line);
    diagnostic.column = Some(before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1);
    // A well-formed document: match the span against the parsed keys.
    if let Some(path) = locate::key_path_at(text, &span, err.message()) {
        diagnostic.key_path = path;
        return diagnostic;
    }
    // A syntax error: the table header above it plus the key it points at.
    let header = before
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('[') && !l.starts_with("[["))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_owned());
    let key = text[span.start.min(text.len())..span.end.min(text.len())]
        .split('=')
        .next()
        .unwrap_or("")
        .trim()
        .to_owned();
    diagnostic.key_path = match (header, key.is_empty() || key.contains('\n')) {
        (Some(h), false) => format!("{h}.{key}"),
        (Some(h), true) => h,
        (None, false) => key,
        (None, true) => String::new(),
    };
    diagnostic
}

/// Reads `flameox.toml` (a missing file is not an error).
pub fn read(project_root: &Path) -> Result<ConfigFile> {
    let path = config_path(project_root);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ConfigFile::Missing),
        Err(e) => return Err(io_error("reading flameox.toml", e)),
    };
    let parsed = match std::str::from_utf8(&bytes) {
        Ok(text) => parse(text),
        Err(_) => Err(vec![Diagnostic::new("", "the file is not UTF-8 text")]),
    };
    Ok(ConfigFile::Present {
        configuration_id: configuration_id(&bytes),
        bytes,
        parsed,
    })
}

/// The error for a missing or invalid file, pointing at the status tool.
pub fn invalid_file_error(message: &str, diagnostics: &[Diagnostic]) -> FlameoxError {
    FlameoxError::new(ErrorCode::WorkspaceInvalid, message)
        .detail("file", CONFIG_FILE)
        .detail(
            "diagnostics",
            serde_json::to_value(diagnostics).unwrap_or_default(),
        )
        .remedy("fix the named keys in flameox.toml, or repair it with configure_workload")
        .recover_with(
            "workload_configuration_status",
            json!({}),
            "flameox workload list",
        )
}

/// The valid configuration and its id, or a typed error.
pub fn load_valid(project_root: &Path) -> Result<(ProjectConfig, String)> {
    match read(project_root)? {
        ConfigFile::Missing => Err(FlameoxError::new(
            ErrorCode::WorkspaceInvalid,
            "flameox.toml is missing: no workloads are declared",
        )
        .detail("file", CONFIG_FILE)
        .remedy("declare a workload with configure_workload or write [workloads.<name>] in flameox.toml")
        .recover_with("configure_workload", json!({}), "edit flameox.toml")),
        ConfigFile::Present {
            parsed: Err(diagnostics),
            ..
        } => Err(invalid_file_error("flameox.toml is invalid", &diagnostics)),
        ConfigFile::Present {
            parsed: Ok(config),
            configuration_id,
            ..
        } => Ok((config, configuration_id)),
    }
}

/// One declared workload by name; an unknown name lists the closest.
pub fn find_workload<'a>(config: &'a ProjectConfig, name: &str) -> Result<&'a WorkloadDef> {
    config.workloads.get(name).ok_or_else(|| {
        let near = closest(name, config.workloads.keys().map(String::as_str), 3);
        FlameoxError::invalid_argument(
            "workload",
            format!("no workload named `{name}` is declared"),
        )
        .detail("closest", near)
        .recover_with(
            "list_declared_workflows",
            json!({ "kind": "workload" }),
            "flameox workload list",
        )
    })
}

/// One declared experiment by name; an unknown name lists the closest.
pub fn find_experiment<'a>(config: &'a ProjectConfig, name: &str) -> Result<&'a ExperimentDef> {
    config.experiments.get(name).ok_or_else(|| {
        let near = closest(name, config.experiments.keys().map(String::as_str), 3);
        FlameoxError::invalid_argument("name", format!("no experiment named `{name}` is declared"))
            .detail("closest", near)
            .recover_with(
                "list_declared_workflows",
                json!({ "kind": "experiment" }),
                "flameox workload list",
            )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_located_by_line_and_key_path() {
        let text = "# c\n[workloads.a]\nargv = [\"true\"]\ntimeout_seconds = 1\nargz = 1\n";
        let problems = parse(text).unwrap_err();
        assert_eq!(problems[0].line, Some(5));
        assert_eq!(problems[0].key_path, "workloads.a.argz");
        assert!(problems[0].reason.contains("argz"), "{:?}", problems[0]);
    }

    #[test]
    fn definition_hash_ignores_key_order_but_not_values() {
        let a: ProjectConfig = toml::from_str(
            "[workloads.a]\nargv = [\"x\"]\ntimeout_seconds = 1\nenvironment = { A = \"1\", B = \"2\" }\n",
        )
        .unwrap();
        let b: ProjectConfig = toml::from_str(
            "[workloads.a]\ntimeout_seconds = 1\nenvironment = { B = \"2\", A = \"1\" }\nargv = [\"x\"]\n",
        )
        .unwrap();
        let wa = &a.workloads["a"];
        assert_eq!(definition_hash(wa), definition_hash(&b.workloads["a"]));
        let mut changed = wa.clone();
        changed.timeout_seconds = 2.0;
        assert_ne!(definition_hash(wa), definition_hash(&changed));
    }
}
