//! `configure_workload`: create or replace one `[workloads.<name>]` entry.
//!
//! The file is edited as a `toml_edit` document, so comments, formatting and
//! every unrelated workload or experiment survive byte for byte. The whole
//! resulting text is parsed and validated before anything is written; only a
//! valid result replaces the file, atomically (temp + fsync + rename) and
//! under the workspace write lock. A replace names the configuration id it
//! read (the sha256 of the file bytes); a stale id is `REVISION_CONFLICT`.
//! Configuration never runs the workload.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;
use toml_edit::{DocumentMut, Item, Table};

use super::schema::WorkloadDef;
use super::validate::{Diagnostic, workload_diagnostics};
use super::{
    CONFIG_FILE, config_path, configuration_id, definition_hash, invalid_file_error, parse,
};
use crate::error::{ErrorCode, FlameoxError, Result};
use crate::fsutil::{read_json, write_atomic, write_json_atomic};
use crate::lock::FileLock;
use crate::workspace::Workspace;

/// `create` adds (idempotent for an identical definition); `replace` swaps
/// an existing entry and needs the current configuration id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    Create,
    Replace,
}

/// What `configure_workload` asks.
#[derive(Debug, Clone)]
pub struct ConfigureRequest {
    pub operation: Operation,
    pub name: String,
    pub definition: WorkloadDef,
    /// Required for `replace`; when given to `create` it must be current too.
    pub configuration_id: Option<String>,
}

/// What `configure_workload` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigureOutcome {
    pub operation: Operation,
    pub name: String,
    /// False when the identical definition was already there.
    pub changed: bool,
    pub path: String,
    pub configuration_id: String,
    pub previous_configuration_id: Option<String>,
    pub definition_hash: String,
    /// Always `agent`: written by this tool, active immediately.
    pub configuration_source: String,
    pub next_tool: String,
}

/// `records/workload_sources.json`: definition hashes written by
/// `configure_workload`, so listings can say `configuration_source = agent`.
fn sources_path(ws: &Workspace) -> std::path::PathBuf {
    ws.dir().join("records").join("workload_sources.json")
}

/// Names whose current definition was written by `configure_workload`.
pub fn agent_sources(ws: &Workspace) -> BTreeMap<String, String> {
    let path = sources_path(ws);
    if !path.is_file() {
        return BTreeMap::new();
    }
    read_json(&path, "workload_sources.json").unwrap_or_default()
}

fn invalid_request(diagnostics: &[Diagnostic]) -> FlameoxError {
    let fields: Vec<serde_json::Value> = diagnostics
        .iter()
        .map(|d| json!({ "field": d.key_path, "problem": d.reason }))
        .collect();
    let summary: Vec<String> = diagnostics
        .iter()
        .map(|d| format!("{}: {}", d.key_path, d.reason))
        .collect();
    FlameoxError::new(ErrorCode::InvalidArguments, summary.join("; ")).detail("fields", fields)
}

fn stale(expected: Option<&str>, current: Option<&str>) -> FlameoxError {
    FlameoxError::new(
        ErrorCode::RevisionConflict,
        "flameox.toml changed since its configuration id was read",
    )
    .detail("expected_configuration_id", expected.unwrap_or_default())
    .detail("current_configuration_id", current.unwrap_or_default())
    .remedy("read the current configuration_id, check the change, and retry")
    .recover_with(
        "workload_configuration_status",
        json!({}),
        "flameox workload list",
    )
}

/// The definition as a `toml_edit` table, its sub-tables inline so the
/// entry stays one readable block.
fn definition_table(def: &WorkloadDef) -> Result<Table> {
    let doc = toml_edit::ser::to_document(def)
        .map_err(|e| FlameoxError::internal(format!("serializing a workload: {e}")))?;
    let mut table = doc.as_table().clone();
    let keys: Vec<String> = table.iter().map(|(k, _)| k.to_owned()).collect();
    for key in keys {
        if let Some(item) = table.get_mut(&key)
            && let Item::Table(sub) = item
        {
            let inline = std::mem::take(sub).into_inline_table();
            *item = Item::Value(toml_edit::Value::InlineTable(inline));
        }
    }
    table.set_implicit(false);
    Ok(table)
}

/// Creates or replaces one workload; see the module comment.
pub fn configure_workload(ws: &Workspace, request: &ConfigureRequest) -> Result<ConfigureOutcome> {
    let problems = workload_diagnostics(&request.name, &request.definition);
    if !problems.is_empty() {
        return Err(invalid_request(&problems));
    }
    let _lock = FileLock::acquire(
        &ws.locks_dir().join("write.lock"),
        Duration::from_millis(ws.config.locks.write_timeout_ms),
    )?;
    let path = config_path(ws.project_root());
    let current = match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(crate::error::io_error("reading flameox.toml", e)),
    };
    let current_id = current.as_deref().map(configuration_id);
    let wanted = request.configuration_id.as_deref();
    match (request.operation, wanted) {
        (Operation::Replace, None) => {
            return Err(FlameoxError::invalid_argument(
                "configuration_id",
                "replace needs the current configuration_id from workload_configuration_status",
            ));
        }
        (_, Some(id)) if Some(id) != current_id.as_deref() => {
            return Err(stale(Some(id), current_id.as_deref()));
        }
        _ => {}
    }
    let text = match &current {
        None => String::new(),
        Some(bytes) => String::from_utf8(bytes.clone()).map_err(|_| {
            invalid_file_error(
                "flameox.toml is not UTF-8 text; it was left unchanged",
                &[Diagnostic::new("", "the file is not UTF-8 text")],
            )
        })?,
    };
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        invalid_file_error(
            "flameox.toml is not valid TOML and cannot be edited; it was left unchanged",
            &[Diagnostic::new("", e.message().trim())],
        )
    })?;
    let existing_valid = parse(&text).ok();
    let present = doc
        .get("workloads")
        .and_then(Item::as_table)
        .is_some_and(|t| t.contains_key(&request.name));
    match request.operation {
        Operation::Create if present => match &existing_valid {
            Some(config) if config.workloads.get(&request.name) == Some(&request.definition) => {
                return Ok(outcome(request, false, current_id.clone(), current_id));
            }
            Some(_) => {
                return Err(FlameoxError::invalid_argument(
                    "name",
                    format!(
                        "workload `{}` already exists with another definition",
                        request.name
                    ),
                )
                .remedy("use operation=replace with the current configuration_id"));
            }
            // An invalid file: create may repair the entry if the result validates.
            None => {}
        },
        Operation::Replace if !present => {
            return Err(FlameoxError::invalid_argument(
                "name",
                format!(
                    "no workload named `{}` to replace; use operation=create",
                    request.name
                ),
            ));
        }
        _ => {}
    }
    let mut table = definition_table(&request.definition)?;
    let last_position = max_position(doc.as_table());
    let workloads = doc
        .entry("workloads")
        .or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_mut()
        .ok_or_else(|| {
            invalid_file_error(
                "`workloads` in flameox.toml is not a table; it was left unchanged",
                &[Diagnostic::new("workloads", "must be a table")],
            )
        })?;
    match workloads.get(&request.name).and_then(Item::as_table) {
        // Same place, same comment above the header.
        Some(old) => {
            table.set_position(old.position().unwrap_or(0));
            *table.decor_mut() = old.decor().clone();
        }
        // Appended after everything, so the existing bytes stay a prefix.
        None => {
            table.set_position(last_position + 1);
            table.decor_mut().set_prefix("\n");
        }
    }
    workloads.insert(&request.name, Item::Table(table));
    let new_text = doc.to_string();
    if let Err(diagnostics) = parse(&new_text) {
        return Err(invalid_file_error(
            "the resulting flameox.toml would be invalid; the file was left unchanged",
            &diagnostics,
        ));
    }
    write_atomic(&path, new_text.as_bytes())?;
    let mut sources = agent_sources(ws);
    sources.insert(request.name.clone(), definition_hash(&request.definition));
    write_json_atomic(&sources_path(ws), &sources)?;
    let new_id = configuration_id(new_text.as_bytes());
    Ok(outcome(request, true, Some(new_id), current_id))
}

/// The largest table position in the document (tables render in position order).
fn max_position(table: &Table) -> usize {
    table
        .iter()
        .filter_map(|(_, item)| item.as_table())
        .map(|t| t.position().unwrap_or(0).max(max_position(t)))
        .max()
        .unwrap_or(0)
}

fn outcome(
    request: &ConfigureRequest,
    changed: bool,
    id: Option<String>,
    previous: Option<String>,
) -> ConfigureOutcome {
    ConfigureOutcome {
        operation: request.operation,
        name: request.name.clone(),
        changed,
        path: CONFIG_FILE.to_owned(),
        configuration_id: id.unwrap_or_default(),
        previous_configuration_id: previous,
        definition_hash: definition_hash(&request.definition),
        configuration_source: "agent".to_owned(),
        next_tool: "list_declared_workflows".to_owned(),
    }
}
