//! The terminal's view of `import_artifact`: what was imported, what it
//! holds (events and tracks, or stacks and frames for a sampled profile),
//! the limitations met, and the next command.

use std::collections::BTreeMap;

use flameox_engine::operations::command_line::command_line;
use flameox_engine::services::import::ImportResult;
use flameox_engine::services::inventory::ARTIFACTS_LISTED;

use crate::render::{self, thousands};

/// The text of `flameox import`: one artifact as before, several as a list.
pub(crate) fn render_import(r: &ImportResult) -> String {
    let events =
        |rows: &BTreeMap<String, u64>| thousands(*rows.get("trace_events").unwrap_or(&0) as i64);
    // A sampled profile has stacks, not timed events: say what it has.
    let stacks_only = |rows: &BTreeMap<String, u64>| {
        let n = |k: &str| *rows.get(k).unwrap_or(&0) as i64;
        (n("trace_events") == 0 && n("frames") > 0).then(|| {
            format!(
                "  no timed events: {} distinct stacks over {} frames (samples per thread: flameox threads {})\n",
                thousands(n("stack_nodes")),
                thousands(n("frames")),
                r.run_id
            )
        })
    };
    let reused = |yes: bool| {
        if yes {
            " (evidence reused from an earlier import)"
        } else {
            ""
        }
    };
    let several = r.artifacts_total.max(r.artifacts.len());
    let mut out = if several > 1 {
        let mut out = format!(
            "imported {} artifacts ({}) as run {}\n  {} events, {} tracks{}\n",
            several,
            render::bytes(r.bytes),
            r.run_id,
            events(&r.rows),
            r.tracks,
            reused(r.reused_generation)
        );
        for a in r.artifacts.iter().take(ARTIFACTS_LISTED) {
            out += &format!(
                "  {} ({}, {}, {}): artifact {}, {} events{}\n",
                a.original_name,
                a.kind,
                a.producer,
                render::bytes(a.bytes),
                a.artifact_id,
                events(&a.rows),
                reused(a.reused_generation)
            );
        }
        if let Some(more) = &r.more_artifacts {
            out += &format!(
                "  … {} more: {}\n",
                r.artifacts_total.saturating_sub(ARTIFACTS_LISTED),
                command_line(&more.operation, &more.arguments)
            );
        }
        out
    } else {
        let contents = match stacks_only(&r.rows) {
            Some(_) => String::new(),
            None => format!("  {} events, {} tracks\n", events(&r.rows), r.tracks),
        };
        format!(
            "imported {} ({}, {}) as run {}{}\n  artifact {}\n{contents}",
            r.kind,
            r.producer,
            render::bytes(r.bytes),
            r.run_id,
            reused(r.reused_generation),
            r.artifact_id,
        )
    };
    if let Some(line) = stacks_only(&r.rows) {
        out += &line;
    }
    for l in &r.limitations {
        out += &format!("  limitation {} ×{}: {}\n", l.code, l.count, l.message);
    }
    match r.rows.get("measurements").copied().filter(|n| *n > 0) {
        Some(n) => {
            out += &format!("  {} measurements\n", thousands(n as i64));
            out += &format!("next: flameox measurements query --run {}\n", r.run_id);
        }
        None => out += &format!("next: flameox analyze summary {}\n", r.run_id),
    }
    out
}
