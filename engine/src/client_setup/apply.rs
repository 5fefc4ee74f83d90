//! Applying a plan (lock, recovery of an unfinished setup, the preview's
//! bytes checked, journal, backups, atomic writes, verification, rollback)
//! and `--verify`, which checks what is configured without changing it.

use std::path::{Path, PathBuf};

use super::clients::{self, Host, Scope};
use super::history::{self, LauncherChange};
use super::journal::{self, SetupState};
use super::launcher::{self, Handshake, Launcher};
use super::plan::launcher_in;
use super::{
    ClientEdit, EditAction, SetupReport, SetupRequest, configured_launcher, plan, refused,
};
use crate::error::{ErrorCode, FlameoxError, Result};

/// The folder a launcher is verified in: the project for a project entry,
/// a fresh empty folder otherwise (so verification writes nowhere).
struct VerifyFolder {
    path: PathBuf,
    temporary: bool,
}

impl VerifyFolder {
    fn new(scope: Scope, project_root: &Path) -> Result<VerifyFolder> {
        if scope == Scope::Project {
            return Ok(VerifyFolder {
                path: project_root.to_path_buf(),
                temporary: false,
            });
        }
        let path = std::env::temp_dir().join(format!(
            "flameox-setup-verify-{}",
            uuid::Uuid::now_v7().simple()
        ));
        std::fs::create_dir_all(&path)
            .map_err(|e| FlameoxError::internal(format!("creating {}: {e}", path.display())))?;
        Ok(VerifyFolder {
            path,
            temporary: true,
        })
    }
}

impl Drop for VerifyFolder {
    fn drop(&mut self) {
        if self.temporary {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Starts the launcher each connecting edit's file now holds (read back
/// from the file, as the client will read it). Fills `verified`; returns
/// the failures as (client, reason).
fn verify_edits(
    edits: &mut [ClientEdit],
    request: &SetupRequest,
) -> Result<Vec<(&'static str, String)>> {
    let folder = VerifyFolder::new(request.scope, &request.project_root)?;
    let mut answers: Vec<(Launcher, std::result::Result<Handshake, String>)> = Vec::new();
    let mut failures = Vec::new();
    for edit in edits.iter_mut().filter(|e| e.connects()) {
        let (Some(path), Some(client)) = (&edit.path, clients::find(edit.client)) else {
            continue;
        };
        let Some(launcher) = configured_launcher(client.format, path) else {
            failures.push((edit.client, "the entry is not in the file".to_owned()));
            continue;
        };
        let answer = match answers.iter().find(|(l, _)| *l == launcher) {
            Some((_, answer)) => answer.clone(),
            None => {
                let answer =
                    launcher::handshake(&launcher, &folder.path, launcher::HANDSHAKE_TIMEOUT);
                answers.push((launcher, answer.clone()));
                answer
            }
        };
        match answer {
            Ok(handshake) => edit.verified = Some(handshake),
            Err(reason) => failures.push((edit.client, reason)),
        }
    }
    Ok(failures)
}

/// Applies `previewed` (a plan of the same request): under the setup lock,
/// after putting back what an unfinished setup left, refusing any file
/// that changed since the preview; journal, backups, atomic writes; then
/// verification of every connected launcher, and a rollback of every file
/// if one fails.
pub fn apply(host: &Host, request: &SetupRequest, previewed: &SetupReport) -> Result<SetupReport> {
    let state = SetupState::new(host.state_dir.clone());
    let _lock = state.lock()?;
    let recovered = state.recover()?;
    let mut report = plan(host, request)?;
    report.recovered = recovered;
    if let Some(edit) = report.edits.iter().find(|e| e.action == EditAction::Refuse) {
        return Err(refused(
            "client",
            format!(
                "{} ({}): {}",
                edit.title,
                edit.path
                    .as_deref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                edit.reason.clone().unwrap_or_default()
            ),
        )
        .remedy("fix the file, or leave the client out (--client NAME for the others)"));
    }
    for edit in report.pending() {
        let seen = previewed
            .edits
            .iter()
            .find(|p| p.client == edit.client)
            .map(|p| (&p.before_sha256, p.action));
        if seen != Some((&edit.before_sha256, edit.action)) {
            return Err(FlameoxError::new(
                ErrorCode::RevisionConflict,
                format!(
                    "{} changed since the preview; nothing was written",
                    edit.path
                        .as_deref()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default()
                ),
            )
            .remedy("run flameox setup again to see the edit against the file as it is now"));
        }
    }
    let originals: Vec<(PathBuf, Option<Vec<u8>>)> = report
        .pending()
        .filter_map(|e| Some((e.path.clone()?, e.before.clone())))
        .collect();
    if !originals.is_empty() {
        state.begin(&originals)?;
    }
    let now = time::OffsetDateTime::now_utc();
    let stamp = format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z-{}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        &uuid::Uuid::now_v7().simple().to_string()[24..]
    );
    let written = write_edits(&mut report, &state, &stamp);
    let failures = match written {
        Ok(()) if report.operation != "remove" => verify_edits(&mut report.edits, request)?,
        Ok(()) => Vec::new(),
        Err(e) => vec![("", e.message.clone())],
    };
    if !failures.is_empty() {
        for (path, original) in &originals {
            journal::restore(path, original.as_deref())?;
        }
        state.finish()?;
        let details: Vec<serde_json::Value> = failures
            .iter()
            .map(|(client, reason)| serde_json::json!({ "client": client, "reason": reason }))
            .collect();
        let first = failures
            .first()
            .map(|(c, r)| format!("{c}: {r}"))
            .unwrap_or_default();
        return Err(FlameoxError::new(
            ErrorCode::ProcessFailed,
            format!(
                "the launcher did not complete an MCP initialize ({first}); every configuration was put back as it was"
            ),
        )
        .detail("failures", details)
        .detail("launcher", serde_json::to_value(&report.launcher).unwrap_or_default())
        .remedy(format!(
            "run the launcher by hand and read its stderr: {} {}",
            report.launcher.command,
            report.launcher.args.join(" ")
        ))
        .remedy("or name a working executable with --executable PATH"));
    }
    state.finish()?;
    history::record(&host.state_dir, changes(&report, &stamp))?;
    report.applied = true;
    Ok(report)
}

/// The launcher changes an applied report wrote, for the history.
fn changes(report: &SetupReport, stamp: &str) -> Vec<LauncherChange> {
    report
        .pending()
        .filter_map(|edit| {
            let format = clients::find(edit.client)?.format;
            let text = |bytes: Option<&[u8]>| {
                bytes
                    .and_then(|b| std::str::from_utf8(b).ok())
                    .map(|t| launcher_in(format, t))
                    .unwrap_or(None)
            };
            Some(LauncherChange {
                at: stamp.to_owned(),
                client: edit.client.to_owned(),
                scope: edit.scope.as_str().to_owned(),
                path: edit.path.clone()?,
                previous: text(edit.before.as_deref()),
                current: text(edit.after.as_deref().map(str::as_bytes)),
            })
        })
        .collect()
}

fn write_edits(report: &mut SetupReport, state: &SetupState, stamp: &str) -> Result<()> {
    for edit in report.edits.iter_mut().filter(|e| e.writes()) {
        let (Some(path), Some(after)) = (edit.path.clone(), edit.after.clone()) else {
            continue;
        };
        if let Some(before) = &edit.before {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let label = format!("{}-{}-{name}", edit.client, edit.scope.as_str());
            edit.backup = Some(state.backup(stamp, &label, before)?);
        }
        journal::write_preserving(&path, after.as_bytes())?;
    }
    Ok(())
}

/// `--verify`: read-only. Every connected client's entry (and every client
/// named with `--client`) must be this launcher and complete an
/// initialize; at least one must. Drift is reported, never repaired.
/// Returns the report and whether everything held.
pub fn verify(host: &Host, request: &SetupRequest) -> Result<(SetupReport, bool)> {
    let mut report = plan(host, request)?;
    report.operation = "verify";
    for edit in &mut report.edits {
        match edit.action {
            EditAction::Add => {
                edit.action = EditAction::Absent;
                edit.reason = Some("no flameox entry".into());
            }
            EditAction::Update => {
                edit.reason = Some("drift: the entry launches something else (diff)".into());
            }
            _ => {}
        }
    }
    let failures = verify_edits(&mut report.edits, request)?;
    report.next.clear();
    for (client, reason) in &failures {
        if let Some(edit) = report.edits.iter_mut().find(|e| e.client == *client) {
            edit.reason = Some(format!("launcher failed: {reason}"));
        }
    }
    // Without --client, a client left unconnected is the user's choice,
    // not a failure: only the entries that exist must hold. A client named
    // with --client must be connected.
    let named = !request.clients.is_empty();
    let ok = failures.is_empty()
        && report.edits.iter().all(|e| match e.action {
            EditAction::Unchanged | EditAction::Skip => true,
            EditAction::Absent => !named,
            _ => false,
        })
        && report.edits.iter().any(|e| e.verified.is_some());
    if !ok {
        report.next = vec![
            "`flameox setup` connects the clients reported absent or drifted; a failing launcher is reported with its stderr".into(),
        ];
    }
    Ok((report, ok))
}
