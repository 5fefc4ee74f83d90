//! `flameox setup`: the terminal side of the engine's client setup — the
//! confirmation (an explicit target and `--yes`, or a terminal prompt whose
//! default is no) and the rendering of plans and reports.

use std::io::{BufRead, IsTerminal, Write};

use flameox_engine::FlameoxError;
use flameox_engine::client_setup::{
    self, ClientEdit, EditAction, Scope, SetupReport, SetupRequest,
};
use flameox_engine::error::{ErrorCode, Result};

use crate::args::{GlobalOptions, SetupArgs};
use crate::terminal::emit;

pub fn setup_command(g: &GlobalOptions, args: SetupArgs) -> Result<()> {
    let request = SetupRequest {
        clients: args.clients.clone(),
        scope: Scope::parse(&args.scope).unwrap_or_default(),
        remove: args.remove,
        refresh: args.refresh,
        rollback: args.rollback,
        project_root: g
            .project_root
            .clone()
            .unwrap_or_else(|| std::path::PathBuf::from(".")),
        executable: args.executable.clone(),
    };
    let host = client_setup::Host::from_env()?;
    if args.verify {
        let (report, ok) = client_setup::verify(&host, &request)?;
        if ok {
            return emit(g, &report, render);
        }
        let err = FlameoxError::new(
            ErrorCode::ClientNotConnected,
            "a client is not connected to this flameox (see the report)",
        )
        .remedy(apply_command(&report));
        // JSON is one document: the error, carrying the report.
        if g.json {
            return Err(err.detail("report", serde_json::to_value(&report).unwrap_or_default()));
        }
        emit(g, &report, render)?;
        return Err(err);
    }
    let plan = client_setup::plan(&host, &request)?;
    let pending = plan.pending().count();
    let connects = plan
        .edits
        .iter()
        .any(|e| e.action == EditAction::Unchanged && !request.remove);
    let refused = plan.edits.iter().any(|e| e.action == EditAction::Refuse);
    if args.dry_run || (pending == 0 && !connects && !refused) {
        return emit(g, &plan, render);
    }
    if pending > 0 && !args.yes {
        let interactive =
            !g.json && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        if !interactive {
            // The terminal sees the plan above the refusal; JSON is one
            // document (the error), the plan is `--dry-run --json`.
            if !g.json {
                emit(g, &plan, render)?;
            }
            return Err(FlameoxError::invalid_argument(
                "yes",
                "setup writes client configurations only when confirmed",
            )
            .remedy(apply_command(&plan)));
        }
        emit(g, &plan, render)?;
        if !confirm(pending)? {
            eprintln!("nothing written");
            return Ok(());
        }
    } else if pending > 0 && args.clients.is_empty() && !args.all && !args.refresh && !args.rollback
    {
        return Err(FlameoxError::invalid_argument(
            "yes",
            "--yes needs an explicit target: --client NAME (repeatable), --all, --refresh or --rollback",
        )
        .remedy(apply_command(&plan)));
    }
    let report = client_setup::apply(&host, &request, &plan)?;
    emit(g, &report, render)
}

/// Asks on the terminal; anything but y/yes is no.
fn confirm(pending: usize) -> Result<bool> {
    let mut stderr = std::io::stderr().lock();
    let _ = write!(stderr, "Apply {pending} edit(s)? [y/N] ");
    let _ = stderr.flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| FlameoxError::internal(format!("reading the answer: {e}")))?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

/// The command that applies `report`'s pending edits non-interactively.
fn apply_command(report: &SetupReport) -> String {
    let mut line = String::from("flameox setup");
    for edit in report.edits.iter().filter(|e| {
        e.writes()
            || matches!(e.action, EditAction::Unchanged)
            || e.reason.as_deref() == Some("no flameox entry")
    }) {
        line += &format!(" --client {}", edit.client);
    }
    if report.scope == Scope::Project {
        line += " --scope project";
    }
    match report.operation {
        "remove" => line += " --remove",
        "refresh" => line += " --refresh",
        "rollback" => line += " --rollback",
        _ => {}
    }
    line + " --yes"
}

fn verb(edit: &ClientEdit, applied: bool) -> &'static str {
    match (edit.action, applied) {
        (EditAction::Add, false) => "add the flameox entry",
        (EditAction::Add, true) => "added the flameox entry",
        (EditAction::Update, false) => "update the flameox entry",
        (EditAction::Update, true) => "updated the flameox entry",
        (EditAction::Unchanged, _) => "already connected",
        (EditAction::Remove, false) => "remove the flameox entry",
        (EditAction::Remove, true) => "removed the flameox entry",
        (EditAction::Absent, _) => "no flameox entry",
        (EditAction::Skip, _) => "skipped",
        (EditAction::Refuse, _) => "refused",
    }
}

/// A plan or report as a person reads it.
pub fn render(report: &SetupReport) -> String {
    let mode = match (report.operation, report.applied) {
        ("verify", _) => "verify (read-only)",
        (_, true) => "applied",
        (_, false) => "dry run: nothing written",
    };
    let mut out = format!("flameox setup — {} ({mode})\n", report.operation);
    if report.operation == "rollback" {
        out += "launcher: each client's previous one, from the launcher history (diffs below)\n";
    } else {
        out += &format!(
            "launcher: {} {}\n",
            report.launcher.command,
            report.launcher.args.join(" ")
        );
    }
    for path in &report.recovered {
        out += &format!(
            "recovered: {} put back (an earlier setup did not finish)\n",
            path.display()
        );
    }
    let mut not_installed = Vec::new();
    for edit in &report.edits {
        if edit.action == EditAction::Skip && edit.installed.is_none() && edit.path.is_some() {
            not_installed.push(edit.client);
            continue;
        }
        out += &format!(
            "\n{} ({}, {} scope): {}\n",
            edit.title,
            edit.client,
            edit.scope.as_str(),
            verb(edit, report.applied)
        );
        if let Some(path) = &edit.path {
            out += &format!("  {}\n", path.display());
        }
        if let Some(reason) = &edit.reason {
            out += &format!("  {reason}\n");
        }
        for line in &edit.diff {
            out += &format!("    {line}\n");
        }
        if let Some(backup) = &edit.backup {
            out += &format!("  backup: {}\n", backup.display());
        }
        if let Some(h) = &edit.verified {
            out += &format!(
                "  verified: {} {} answered initialize (protocol {}) in {} ms\n",
                h.server_name, h.server_version, h.protocol_version, h.elapsed_ms
            );
        }
    }
    if !not_installed.is_empty() {
        out += &format!(
            "\nnot installed here: {} (name one with --client to configure it anyway)\n",
            not_installed.join(", ")
        );
    }
    for warning in &report.warnings {
        out += &format!("\nwarning: {warning}\n");
    }
    out += "\nnext:\n";
    if !report.applied && report.operation != "verify" && report.pending().count() > 0 {
        out += &format!("  {}\n", apply_command(report));
    }
    if report.applied || report.operation == "verify" {
        for step in &report.next {
            out += &format!("  {step}\n");
        }
    } else if report.pending().count() == 0 {
        out += "  nothing to change\n";
    }
    out
}
