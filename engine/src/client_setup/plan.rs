//! The plan of a setup: for each selected client, its configuration file
//! for the scope, whether the client is installed, and the exact edit
//! (before/after as one hunk). Reads files, writes nothing.

use std::path::Path;

use super::clients::{self, CLIENTS, Client, ConfigFormat, Host};
use super::history::{self, LauncherChange};
use super::launcher::{self, Launcher};
use super::{
    ClientEdit, EditAction, EntryState, SetupReport, SetupRequest, edit_diff, json_entry, refused,
    sha256, toml_entry,
};
use crate::error::Result;

/// The clients a request names (all of them when it names none).
fn selected(request: &SetupRequest) -> Result<Vec<&'static Client>> {
    if request.clients.is_empty() {
        return Ok(CLIENTS.iter().collect());
    }
    request
        .clients
        .iter()
        .map(|name| {
            clients::find(name).ok_or_else(|| {
                refused(
                    "client",
                    format!(
                        "unknown client {name:?}; one of {}",
                        clients::names().join(", ")
                    ),
                )
            })
        })
        .collect()
}

fn launcher_for(request: &SetupRequest) -> Result<Launcher> {
    let executable = launcher::resolve_executable(request.executable.as_deref())
        .map_err(|problem| refused("executable", problem))?;
    Ok(Launcher::for_executable(&executable))
}

/// A launcher whose executable may disappear (uv's cache, a temporary folder).
fn warnings(launcher: &Launcher) -> Vec<String> {
    let command = launcher.command.replace('\\', "/");
    let temp = std::env::temp_dir().to_string_lossy().replace('\\', "/");
    if command.contains("/uv/archive-v") || command.contains("/.cache/uv/") {
        vec![format!(
            "{} runs from uv's cache, which `uv cache clean` deletes: install flameox \
             (`uv tool install flameox` or `pipx install flameox`) and run `flameox setup` \
             from the installed one",
            launcher.command
        )]
    } else if !temp.is_empty() && command.starts_with(&temp) {
        vec![format!(
            "{} is in the temporary folder; clients will fail to start it once it is cleaned",
            launcher.command
        )]
    } else {
        Vec::new()
    }
}

/// What a request does to one client's flameox entry, given the entry the
/// file holds now.
fn target<'a>(
    client: &Client,
    request: &SetupRequest,
    path: &Path,
    existing: Option<&Launcher>,
    launcher: &'a Launcher,
    history: &'a [LauncherChange],
) -> std::result::Result<Option<&'a Launcher>, String> {
    if request.rollback {
        let Some(change) = history::latest(history, client.name, request.scope, path) else {
            return Err(
                "no earlier launcher is recorded for this file; nothing to roll back".into(),
            );
        };
        if change.current.as_ref() != existing {
            return Err(
                "its flameox entry changed since setup last wrote it; rollback leaves it".into(),
            );
        }
        return Ok(change.previous.as_ref());
    }
    if request.refresh && existing.is_none() {
        return Err(format!(
            "not connected; `flameox setup --client {}` connects it",
            client.name
        ));
    }
    Ok(Some(launcher))
}

/// Computes one client's edit from its configuration as it is now.
pub(crate) fn plan_client(
    client: &'static Client,
    host: &Host,
    request: &SetupRequest,
    launcher: &Launcher,
    history: &[LauncherChange],
) -> ClientEdit {
    let installed = client.detect(host);
    let path = client.config_path(host, request.scope, &request.project_root);
    let mut edit = ClientEdit {
        client: client.name,
        title: client.title,
        scope: request.scope,
        path: path.clone(),
        installed: installed.clone(),
        action: EditAction::Skip,
        reason: None,
        diff: Vec::new(),
        before_sha256: None,
        backup: None,
        verified: None,
        before: None,
        after: None,
    };
    let Some(path) = path else {
        edit.reason = Some(format!(
            "{} reads no project configuration; use --scope user",
            client.title
        ));
        return edit;
    };
    if installed.is_none() && request.clients.is_empty() {
        edit.reason = Some(format!(
            "not installed here; `--client {}` configures it anyway",
            client.name
        ));
        return edit;
    }
    let before = match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            edit.action = EditAction::Refuse;
            edit.reason = Some(format!("cannot read it: {e}"));
            return edit;
        }
    };
    edit.before_sha256 = before.as_deref().map(sha256);
    let text = match before.as_deref().map(std::str::from_utf8) {
        None => String::new(),
        Some(Ok(text)) => text.to_owned(),
        Some(Err(_)) => {
            edit.action = EditAction::Refuse;
            edit.reason = Some("not UTF-8: refused, not replaced".to_owned());
            return edit;
        }
    };
    edit.before = before;
    let existing = launcher_in(client.format, &text);
    let to = if request.remove {
        None
    } else {
        match target(client, request, &path, existing.as_ref(), launcher, history) {
            Ok(to) => to,
            Err(reason) => {
                edit.reason = Some(reason);
                return edit;
            }
        }
    };
    let outcome = match to {
        // Remove: the request's, or a rollback to a file that had no entry.
        None => remove_entry(client.format, &text).map(|after| match after {
            Some(after) => (after, EditAction::Remove),
            None => (text.clone(), EditAction::Absent),
        }),
        Some(to) => upsert_entry(client.format, &text, to).map(|(after, state)| {
            let action = match state {
                EntryState::Absent => EditAction::Add,
                EntryState::Different => EditAction::Update,
                EntryState::Same => EditAction::Unchanged,
            };
            (after, action)
        }),
    };
    settle(&mut edit, &text, outcome);
    edit
}

/// Fills `edit` from the computed file text and action (or the reason the
/// file was refused).
fn settle(
    edit: &mut ClientEdit,
    text: &str,
    outcome: std::result::Result<(String, EditAction), String>,
) {
    match outcome {
        Ok((after, action)) => {
            edit.action = action;
            edit.diff = edit_diff::hunk(text, &after);
            edit.after = Some(after);
            if edit.installed.is_none() {
                edit.reason = Some("not detected here; configured because it was named".into());
            }
        }
        Err(problem) => {
            edit.action = EditAction::Refuse;
            edit.reason = Some(format!("malformed: {problem}; refused, not replaced"));
        }
    }
}

fn upsert_entry(
    format: ConfigFormat,
    text: &str,
    launcher: &Launcher,
) -> std::result::Result<(String, EntryState), String> {
    match format {
        ConfigFormat::Json { servers_key, typed } => {
            json_entry::upsert(text, servers_key, typed, launcher)
        }
        ConfigFormat::CodexToml => toml_entry::upsert(text, launcher),
    }
}

fn remove_entry(format: ConfigFormat, text: &str) -> std::result::Result<Option<String>, String> {
    match format {
        ConfigFormat::Json { servers_key, .. } => json_entry::remove(text, servers_key),
        ConfigFormat::CodexToml => toml_entry::remove(text),
    }
}

/// The launcher a configuration file holds for flameox, if any.
pub fn configured_launcher(format: ConfigFormat, path: &Path) -> Option<Launcher> {
    launcher_in(format, &std::fs::read_to_string(path).ok()?)
}

/// The launcher a configuration's text holds for flameox, if any.
pub(crate) fn launcher_in(format: ConfigFormat, text: &str) -> Option<Launcher> {
    match format {
        ConfigFormat::Json { servers_key, .. } => json_entry::read(text, servers_key).ok()?,
        ConfigFormat::CodexToml => toml_entry::read(text).ok()?,
    }
}

fn next_steps(operation: &str) -> Vec<String> {
    match operation {
        "remove" => vec!["restart the clients (or reload their MCP servers)".to_owned()],
        _ => vec![
            "restart each client (or reload its MCP servers); it starts `flameox mcp serve --project-root .` in the folder it opens".to_owned(),
            "in each project, once: `flameox init` (or let the agent call initialize_workspace); until then the server answers WORKSPACE_NOT_FOUND".to_owned(),
            "check later with `flameox setup --verify`".to_owned(),
        ],
    }
}

/// The plan: what each selected client's configuration would become.
/// Reads files, writes nothing.
pub fn plan(host: &Host, request: &SetupRequest) -> Result<SetupReport> {
    let launcher = launcher_for(request)?;
    let history = if request.rollback {
        history::read(&host.state_dir)
    } else {
        Vec::new()
    };
    let edits = selected(request)?
        .into_iter()
        .map(|client| plan_client(client, host, request, &launcher, &history))
        .collect();
    let operation = if request.remove {
        "remove"
    } else if request.rollback {
        "rollback"
    } else if request.refresh {
        "refresh"
    } else {
        "connect"
    };
    Ok(SetupReport {
        operation,
        scope: request.scope,
        applied: false,
        warnings: warnings(&launcher),
        launcher,
        edits,
        recovered: Vec::new(),
        next: next_steps(operation),
    })
}
