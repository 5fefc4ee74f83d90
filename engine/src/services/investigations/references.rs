//! Typed evidence references of investigation records (`run:<uuid>`,
//! `artifact:sha256:<hex>`, `run_set:…`, `analysis:…`, `comparison:…`,
//! `investigation:…`, `hypothesis:…`, `finding:…`, `commit:…`), checked to
//! exist when recorded. A
//! bare run id (or a unique prefix of one, or `latest`) and a bare
//! `sha256:` artifact id are accepted and stored typed.

use crate::error::{FlameoxError, Result, closest};
use crate::records::{self, RecordKind};
use crate::revisions::{self, RevisionedKind};
use crate::workspace::Workspace;
use crate::{runs, store};

/// The kinds a reference may name.
pub const REFERENCE_KINDS: [&str; 9] = [
    "run",
    "artifact",
    "commit",
    "finding",
    "run_set",
    "analysis",
    "comparison",
    "investigation",
    "hypothesis",
];

/// The reference `text` names, typed and checked to exist; an unknown id is
/// `RUN_NOT_FOUND` with the closest existing ids.
pub fn checked_reference(ws: &Workspace, text: &str) -> Result<String> {
    let text = text.trim();
    if text.starts_with("sha256:") {
        store::read_artifact(ws, text)?;
        return Ok(format!("artifact:{text}"));
    }
    let record = |kind: RecordKind, id: &str| -> Result<()> {
        records::read_record::<serde_json::Value>(ws, kind, id).map(drop)
    };
    match text.split_once(':') {
        Some(("investigation", id)) => {
            revisions::existing_revision(ws, RevisionedKind::Investigations, id)?;
        }
        Some(("hypothesis", id)) => {
            revisions::existing_revision(ws, RevisionedKind::Hypotheses, id)?;
        }
        Some(("finding", id)) => {
            revisions::existing_revision(ws, RevisionedKind::Findings, id)?;
        }
        Some(("commit", id)) => check_commit(ws, id)?,
        Some(("run", id)) => return run_reference(ws, id),
        Some(("artifact", id)) => {
            store::read_artifact(ws, id)?;
        }
        Some(("run_set", id)) => record(RecordKind::RunSets, id)?,
        Some(("analysis", id)) => record(RecordKind::Analyses, id)?,
        Some(("comparison", id)) => record(RecordKind::Comparisons, id)?,
        Some((other, _)) => {
            return Err(FlameoxError::invalid_argument(
                "evidence",
                format!("unknown reference kind {other}"),
            )
            .detail("closest", closest(other, REFERENCE_KINDS, 1))
            .detail("valid_kinds", REFERENCE_KINDS.to_vec()));
        }
        None => return run_reference(ws, text),
    }
    Ok(text.to_owned())
}

/// A commit id that names a commit of this workspace (answers carry the
/// `commit_id` they were read at).
fn check_commit(ws: &Workspace, id: &str) -> Result<()> {
    if id.len() != 64 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(FlameoxError::invalid_argument(
            "references",
            "a commit id is 64 hex digits (the commit_id of an answer)",
        ));
    }
    if !ws.commits_dir().join(format!("{id}.json")).is_file() {
        return Err(FlameoxError::new(
            crate::error::ErrorCode::RunNotFound,
            format!("no commit {id} in this workspace"),
        )
        .remedy("use the commit_id of the answer the claim was read from"));
    }
    Ok(())
}

/// `run:<full id>` of a run id, unique prefix or `latest` that exists.
fn run_reference(ws: &Workspace, text: &str) -> Result<String> {
    let run_id = runs::resolve_run_id(ws, text)?;
    runs::read_run(ws, &run_id)?;
    Ok(format!("run:{run_id}"))
}

/// Every reference of `texts`, checked, typed and without repeats (in the
/// order given).
pub fn checked_references(ws: &Workspace, texts: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::with_capacity(texts.len());
    for text in texts {
        let reference = checked_reference(ws, text)?;
        if !out.contains(&reference) {
            out.push(reference);
        }
    }
    Ok(out)
}
