//! `flameox repair [PLAN.json]`: plan first, then apply. The plan is made
//! from a full validation and the workspace's leftovers, written to
//! `logs/repair-<id>.json` and printed; nothing changes. Applying a plan
//! checks that HEAD is still the one it was made at and re-plans, so only
//! actions that are both in the file (a person may delete some) and
//! still needed run. Actions: remove abandoned staging, mark runs whose
//! writer died interrupted, drop HEAD generations whose files fail
//! validation (a new commit without them, their files moved to
//! `quarantine/`; their runs say so), quarantine
//! artifacts whose bytes no longer match their id, and rebuild the catalog
//! when HEAD's commit cannot be read. Orphans are left to `gc`, which
//! keeps them recoverable.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, FlameoxError, Result, io_error};
use crate::fsutil::{now_rfc3339, read_json, write_json_atomic};
use crate::lock::FileLock;
use crate::validate::{ValidationIssue, validate};
use crate::workspace::Workspace;
use crate::{catalog, catalog_rebuild, runs, store};

pub const REPAIR_PLAN_SCHEMA_VERSION: u32 = 1;

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RepairAction {
    /// `remove_staging`, `mark_run_interrupted`, `drop_generation`,
    /// `quarantine_artifact` or `rebuild_catalog`.
    pub action: String,
    /// A staging path, run id, generation id, artifact id or HEAD commit.
    pub target: String,
    pub reason: String,
}

/// A plan, as written to `logs/repair-<id>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepairPlan {
    pub schema_version: u32,
    pub plan_id: String,
    pub created_at: String,
    pub head_commit: Option<String>,
    pub problems: Vec<ValidationIssue>,
    pub actions: Vec<RepairAction>,
    /// Orphaned files and folders, for `gc` (not repaired here).
    pub orphans: usize,
    /// Where the plan was written (relative to `.flameox/`; empty when
    /// there is nothing to do and nothing was written).
    pub path: String,
}

/// What applying a plan did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepairOutcome {
    pub applied: Vec<RepairAction>,
    /// In the file but no longer needed.
    pub skipped: Vec<RepairAction>,
    pub head_commit: Option<String>,
    /// Validation after the repair.
    pub valid: bool,
}

fn action(action: &str, target: String, reason: String) -> RepairAction {
    RepairAction {
        action: action.into(),
        target,
        reason,
    }
}

/// The actions the workspace needs now.
fn needed_actions(ws: &Workspace) -> Result<(Vec<RepairAction>, Vec<ValidationIssue>, usize)> {
    if let Err(e) = catalog::read_head(ws) {
        // Nothing else can be checked against a HEAD that does not read.
        let reason = e.message.clone();
        return Ok((
            vec![action("rebuild_catalog", "HEAD".into(), reason.clone())],
            vec![ValidationIssue {
                code: "head_unreadable".into(),
                message: reason,
                subject: Some("commit:HEAD".into()),
            }],
            0,
        ));
    }
    let report = validate(ws, true)?;
    let mut actions = BTreeSet::new();
    let head = catalog::read_head(ws).ok().flatten();
    for problem in &report.errors {
        let Some((kind, id)) = problem.subject.as_deref().and_then(|s| s.split_once(':')) else {
            continue;
        };
        match kind {
            "commit" if head.as_deref() == Some(id) => {
                actions.insert(action(
                    "rebuild_catalog",
                    id.to_owned(),
                    problem.message.clone(),
                ));
            }
            "generation" => {
                let in_head = head
                    .as_deref()
                    .and_then(|h| catalog::read_commit(ws, h).ok())
                    .is_some_and(|c| c.generations.contains_key(id));
                if in_head {
                    actions.insert(action(
                        "drop_generation",
                        id.to_owned(),
                        problem.message.clone(),
                    ));
                }
            }
            "artifact" => {
                actions.insert(action(
                    "quarantine_artifact",
                    id.to_owned(),
                    problem.message.clone(),
                ));
            }
            _ => {}
        }
    }
    for entry in crate::retention::collect::collection_plan(ws)
        .map(|p| p.entries)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.kind == "staging")
    {
        actions.insert(action("remove_staging", entry.path, entry.reason));
    }
    for run in runs::list_runs(ws)? {
        let live = runs::with_live_status(ws, run.clone());
        if run.status.extraction == "pending" && live.status.extraction == "pending" {
            continue; // a live writer holds it
        }
        if run.status.extraction == "pending" {
            actions.insert(action(
                "mark_run_interrupted",
                run.run_id,
                "its import or execution never finished and no writer holds it".into(),
            ));
        }
    }
    // One action per target, with every reason found for it.
    let mut merged: Vec<RepairAction> = Vec::new();
    for a in actions {
        match merged
            .iter_mut()
            .find(|m| m.action == a.action && m.target == a.target)
        {
            Some(m) => {
                m.reason.push_str("; ");
                m.reason.push_str(&a.reason);
            }
            None => merged.push(a),
        }
    }
    Ok((merged, report.errors, report.orphans.len()))
}

/// `flameox repair`: the plan, written to `logs/` (nothing else changes).
pub fn plan(ws: &Workspace) -> Result<RepairPlan> {
    let (actions, problems, orphans) = needed_actions(ws)?;
    let plan_id = uuid::Uuid::now_v7().to_string();
    let path = format!("logs/repair-{plan_id}.json");
    let plan = RepairPlan {
        schema_version: REPAIR_PLAN_SCHEMA_VERSION,
        plan_id,
        created_at: now_rfc3339(),
        head_commit: catalog::read_head(ws).ok().flatten(),
        problems,
        actions,
        orphans,
        path: path.clone(),
    };
    // A plan with nothing to do is not written.
    if plan.actions.is_empty() {
        return Ok(RepairPlan {
            path: String::new(),
            ..plan
        });
    }
    write_json_atomic(&ws.dir().join(&path), &plan)?;
    Ok(plan)
}

/// `flameox repair PLAN.json`: the plan's actions that are still needed.
pub fn apply(ws: &Workspace, plan_path: &Path) -> Result<RepairOutcome> {
    let resolved = if plan_path.is_file() {
        plan_path.to_path_buf()
    } else {
        ws.dir().join(plan_path)
    };
    let plan: RepairPlan = read_json(&resolved, "repair plan")?;
    let head = catalog::read_head(ws).ok().flatten();
    if plan.head_commit != head {
        return Err(FlameoxError::new(
            ErrorCode::RevisionConflict,
            "the workspace changed since this plan was made (HEAD moved)",
        )
        .detail("plan_head", plan.head_commit.clone())
        .detail("current_head", head)
        .remedy("make a new plan with `flameox repair`"));
    }
    let (needed, _, _) = needed_actions(ws)?;
    let (applied, skipped): (Vec<RepairAction>, Vec<RepairAction>) =
        plan.actions.into_iter().partition(|a| {
            needed
                .iter()
                .any(|n| n.action == a.action && n.target == a.target)
        });
    {
        let _lock = FileLock::acquire(
            &ws.locks_dir().join("write.lock"),
            std::time::Duration::from_millis(ws.config.locks.write_timeout_ms),
        )?;
        apply_locked(ws, &applied)?;
    }
    if applied.iter().any(|a| a.action == "rebuild_catalog") {
        catalog_rebuild::rebuild(ws, false)?;
    }
    Ok(RepairOutcome {
        applied,
        skipped,
        head_commit: catalog::read_head(ws).ok().flatten(),
        valid: validate(ws, false)?.ok,
    })
}

fn apply_locked(ws: &Workspace, actions: &[RepairAction]) -> Result<()> {
    let mut dropped = Vec::new();
    for a in actions {
        match a.action.as_str() {
            "remove_staging" => {
                let path = ws.dir().join(&a.target);
                if path.starts_with(ws.staging_dir()) {
                    let _ = fs::remove_dir_all(&path).or_else(|_| fs::remove_file(&path));
                }
            }
            "mark_run_interrupted" => {
                let mut run = runs::read_run(ws, &a.target)?;
                run.mark_interrupted();
                runs::save_run(ws, &mut run)?;
            }
            "quarantine_artifact" => {
                let record = store::read_artifact(ws, &a.target)?;
                let Some(hex) = store::artifact_hex(&record.artifact_id) else {
                    continue;
                };
                let from = ws.artifacts_dir().join(&hex[..2]).join(hex);
                let to = ws.dir().join("quarantine").join(format!("artifact-{hex}"));
                fs::create_dir_all(ws.dir().join("quarantine"))
                    .map_err(|e| io_error("creating quarantine", e))?;
                fs::rename(&from, &to).map_err(|e| io_error("quarantining an artifact", e))?;
                note_on_runs(
                    ws,
                    |r| r.artifacts.iter().any(|x| x.artifact_id == a.target),
                    &format!(
                        "artifact {} was quarantined by repair: its bytes no longer match its id ({})",
                        a.target, a.reason
                    ),
                )?;
            }
            "drop_generation" => dropped.push(a),
            _ => {}
        }
    }
    if !dropped.is_empty() {
        let head = catalog::read_head(ws)?;
        let commit = match &head {
            Some(h) => catalog::read_commit(ws, h)?,
            None => return Ok(()),
        };
        let mut generations = commit.generations.clone();
        for a in &dropped {
            generations.remove(&a.target);
        }
        let next = catalog::write_commit(ws, head, generations)?;
        catalog::swap_head(ws, &next.commit_id)?;
        for a in &dropped {
            quarantine_generation(ws, &a.target)?;
        }
        for a in dropped {
            note_on_runs(
                ws,
                |r| r.generation_ids.contains(&a.target),
                &format!(
                    "evidence generation {} was dropped by repair ({}); re-import the artifact",
                    a.target, a.reason
                ),
            )?;
        }
    }
    Ok(())
}

/// Moves a dropped generation's manifest and evidence folders under
/// `quarantine/generation-<id>/` (kept for inspection, read by nothing).
fn quarantine_generation(ws: &Workspace, generation_id: &str) -> Result<()> {
    let target = ws
        .dir()
        .join("quarantine")
        .join(format!("generation-{generation_id}"));
    let mut moves = vec![(
        ws.generations_dir().join(generation_id),
        target.join("manifest"),
    )];
    for table in flameox_extractors::EvidenceTable::ALL {
        moves.push((
            ws.evidence_dir()
                .join(table.name())
                .join(format!("generation={generation_id}")),
            target.join(table.name()),
        ));
    }
    fs::create_dir_all(&target).map_err(|e| io_error("creating quarantine", e))?;
    for (from, to) in moves {
        if from.exists() {
            fs::rename(&from, &to).map_err(|e| io_error("quarantining a generation", e))?;
        }
    }
    Ok(())
}

/// Marks the runs `affected` picks as failed validation with `note`.
fn note_on_runs(
    ws: &Workspace,
    affected: impl Fn(&runs::RunManifest) -> bool,
    note: &str,
) -> Result<()> {
    for mut run in runs::list_runs(ws)? {
        if affected(&run) {
            run.status.validation = "failed".into();
            run.limitations.push(note.to_owned());
            runs::save_run(ws, &mut run)?;
        }
    }
    Ok(())
}
