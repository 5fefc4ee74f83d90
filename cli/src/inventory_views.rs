//! How a person reads the workspace inventory: its status, a validation
//! report, and single records (printed as the JSON they are).

use flameox_engine::operations::command_line::command_line;
use flameox_engine::services::inventory::WorkspaceStatus;
use flameox_engine::services::stale_extractions::WorkspaceValidation;

use crate::render::{self, thousands};

pub(crate) fn status(s: &WorkspaceStatus) -> String {
    let mut out = format!(
        "workspace {}\nhead        {}\nruns        {}\nartifacts   {}\ngenerations {}\nevidence    {}\n",
        s.workspace_id,
        s.head_commit.as_deref().unwrap_or("(nothing published)"),
        s.runs,
        s.artifacts,
        s.generations,
        render::bytes(s.evidence_bytes)
    );
    for (table, rows) in &s.evidence_rows {
        out += &format!("  {table:<14} {:>12} rows\n", thousands(*rows as i64));
    }
    if s.active_operations_total > 0 {
        out += &format!(
            "active      {} detached operations\n",
            s.active_operations_total
        );
    }
    for op in &s.active_operations {
        let percent = op
            .percent
            .map(|p| format!(" ({p:.0} %)"))
            .unwrap_or_default();
        out += &format!(
            "  {} {} {}: {}{percent}; poll: {}\n",
            op.kind.replace('_', " "),
            op.operation_id,
            op.status,
            op.phase,
            command_line(&op.next.operation, &op.next.arguments)
        );
    }
    out
}

pub(crate) fn validation(v: &WorkspaceValidation) -> String {
    let r = &v.report;
    let mut out = format!(
        "{}: {} commits, {} generations, {} files, {} artifacts checked{}\n",
        if r.ok { "valid" } else { "INVALID" },
        r.commits_checked,
        r.generations_checked,
        r.files_checked,
        r.artifacts_checked,
        if r.full { " (hashes verified)" } else { "" }
    );
    for e in &r.errors {
        out += &format!("  error {}: {}\n", e.code, e.message);
    }
    if !r.orphans.is_empty() {
        out += &format!(
            "  {} orphaned entries (run `flameox recover`)\n",
            r.orphans.len()
        );
    }
    let stale = &v.stale_extractions;
    if stale.total > 0 {
        out += &format!(
            "  {} artifacts were extracted by an older extractor; `flameox extract <artifact>` refreshes each:\n",
            stale.total
        );
        for s in &stale.items {
            out += &format!(
                "    {} ({} {} → {}; {})\n",
                s.artifact_id,
                s.extractor,
                s.extractor_version,
                s.current_version,
                s.reasons.join(", ")
            );
        }
        if stale.total > stale.items.len() {
            out += &format!("    … and {} more\n", stale.total - stale.items.len());
        }
    }
    out
}

/// A record as indented JSON (its fields are its documentation).
pub(crate) fn record(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
}

/// `flameox init`.
pub(crate) fn initialized(o: &flameox_engine::workspace::InitOutcome) -> String {
    let mut text = if o.created {
        format!("initialized flameox workspace {}\n", o.workspace_id)
    } else {
        format!("workspace {} already initialized\n", o.workspace_id)
    };
    if let Some(store) = &o.store {
        text.push_str(&format!(
            "evidence store: {} ({} commits{})\n",
            store.url,
            store.commits,
            if store.pushed_local_evidence {
                ", this workspace's evidence published into it"
            } else {
                ""
            }
        ));
    }
    if o.created {
        text.push_str("next: flameox import <trace>\n");
    }
    text
}
