//! The terminal's views of the workspace's upkeep: `gc` (the plan, what
//! it moved, restore and purge), `repair` (the plan and what it did) and
//! `catalog rebuild` — each ending with the command to run next.

use flameox_engine::catalog_rebuild::RebuildReport;
use flameox_engine::repair::{RepairOutcome, RepairPlan};
use flameox_engine::retention::collect::CollectionPlan;
use flameox_engine::retention::trash::{Collection, TrashOutcome};
use flameox_engine::services::quarantine::{Recovered, Salvaged};

use crate::render::bytes;

/// The dry-run: roots, every eligible path, what is kept and why.
pub(crate) fn plan(p: &CollectionPlan) -> String {
    let r = &p.roots;
    let mut out = format!(
        "retention roots: HEAD {}, {} runs, {} record files, {} pinned commit(s) → {} generations and {} artifacts retained\n",
        r.head_commit
            .as_deref()
            .map_or("(none)", |h| &h[..h.len().min(12)]),
        r.runs,
        r.record_files,
        r.pinned_commits.len(),
        r.retained_generations,
        r.retained_artifacts
    );
    for note in &p.notes {
        out += &format!("note: {note}\n");
    }
    if p.entries.is_empty() {
        out += "nothing to collect\n";
    } else {
        out += &format!(
            "\n{} eligible entries, {}:\n",
            p.entries.len(),
            bytes(p.bytes)
        );
        for e in &p.entries {
            out += &format!(
                "  {:<22} {:>10}  {}\n    {}\n",
                e.kind,
                bytes(e.bytes),
                e.path,
                e.reason
            );
        }
    }
    if !p.kept.is_empty() {
        out += "\nkept:\n";
        for k in &p.kept {
            out += &format!(
                "  {:<22} {}  (kept by {})\n",
                k.kind,
                k.path,
                k.kept_by.join(", ")
            );
        }
    }
    if !p.in_use.is_empty() {
        out += &format!("\nin use (never collected): {}\n", p.in_use.join(", "));
    }
    if !p.entries.is_empty() {
        out += "\nnothing was changed. `flameox gc --apply` moves these entries to a trash folder \
                (restorable with `flameox gc --restore <manifest>` for 7 days).\n";
    }
    out
}

pub(crate) fn applied(c: &Collection) -> String {
    match &c.manifest {
        None => "nothing to collect\n".to_owned(),
        Some(manifest) => format!(
            "moved {} entries ({}) to the trash\n  manifest: .flameox/{manifest}\nnext: `flameox validate --full`; undo with `flameox gc --restore .flameox/{manifest}`\n",
            c.moved,
            bytes(c.plan.bytes)
        ),
    }
}

pub(crate) fn trash_outcome(verb: &str, o: &TrashOutcome) -> String {
    format!(
        "{verb} {} entries ({}) of {}\n",
        o.entries,
        bytes(o.bytes),
        o.trash_id
    )
}

pub(crate) fn repair_plan(p: &RepairPlan) -> String {
    let mut out = String::new();
    for problem in &p.problems {
        out += &format!("problem [{}] {}\n", problem.code, problem.message);
    }
    if p.actions.is_empty() {
        out += "nothing to repair\n";
    } else {
        out += &format!("\n{} action(s):\n", p.actions.len());
        for a in &p.actions {
            out += &format!("  {:<22} {}\n    {}\n", a.action, a.target, a.reason);
        }
        out += &format!(
            "\nnothing was changed. Review or edit the plan, then apply it: `flameox repair .flameox/{}`\n",
            p.path
        );
    }
    if p.orphans > 0 {
        out += &format!("{} orphaned entries: `flameox gc` lists them\n", p.orphans);
    }
    out
}

pub(crate) fn repaired(o: &RepairOutcome) -> String {
    let mut out = format!("applied {} action(s)\n", o.applied.len());
    for a in &o.applied {
        out += &format!("  {:<22} {}\n", a.action, a.target);
    }
    if !o.skipped.is_empty() {
        out += &format!("skipped {} no longer needed\n", o.skipped.len());
    }
    out += if o.valid {
        "the workspace validates\n"
    } else {
        "the workspace still has problems: `flameox validate --full`\n"
    };
    out
}

pub(crate) fn rebuilt(r: &RebuildReport) -> String {
    let mut out = format!(
        "{} active generation(s); {} left out\n",
        r.active_generations.len(),
        r.left_out.len()
    );
    for l in &r.left_out {
        out += &format!("  {}  {}\n", l.generation_id, l.reason);
    }
    out += &match (r.changed, r.dry_run) {
        (false, _) => "HEAD already lists exactly these: nothing written\n".to_owned(),
        (true, true) => {
            "dry run: HEAD would change; run without --dry-run to write it\n".to_owned()
        }
        (true, false) => format!("HEAD is now {}\n", r.head.as_deref().unwrap_or("(none)")),
    };
    out
}

/// `flameox recover`: the clean-up, then what the quarantine holds.
pub(crate) fn recovered(r: &Recovered) -> String {
    let mut out = format!(
        "removed {} staging entries, moved {} orphans to trash, marked {} runs interrupted\n",
        r.report.staging_removed,
        r.report.orphans_moved_to_trash.len(),
        r.report.interrupted_runs.len()
    );
    for e in &r.quarantine {
        out += &format!(
            "quarantine {}: {} ({}, {})",
            e.quarantine_id,
            e.kind.replace('_', " "),
            e.files.join(", "),
            bytes(e.bytes)
        );
        if e.salvageable {
            out += &format!(
                "; salvage: flameox recover --quarantine {}\n",
                e.quarantine_id
            );
        } else {
            out += "; kept for inspection\n";
        }
    }
    out
}

/// `flameox recover --quarantine ID`.
pub(crate) fn salvaged(s: &Salvaged) -> String {
    let mut out = format!(
        "salvaged {} into run {}: {} artifact(s), commit {}\n",
        s.quarantine_id,
        s.run_id,
        s.artifact_ids.len(),
        s.commit_id
    );
    for l in &s.limitations {
        out += &format!("  {}: {}\n", l.code, l.message);
    }
    out + &format!("the entry moved to {} (move it back to undo)\n", s.moved_to)
}
