//! The rules every write of an investigation's hypotheses and findings
//! shares: a new record belongs to an existing investigation and has no
//! expected revision; a revision names the revision it read and stays in
//! its investigation.

use crate::error::{FlameoxError, Result};
use crate::revisions::{self, RevisionedKind};
use crate::workspace::Workspace;

/// The investigation a new `what` (hypothesis, finding) belongs to,
/// checked to exist; refused when the call also names a revision.
pub fn owning_investigation(
    ws: &Workspace,
    what: &str,
    investigation_id: &Option<String>,
    expected_revision: Option<u64>,
) -> Result<String> {
    if expected_revision.is_some() {
        return Err(FlameoxError::invalid_argument(
            "expected_revision",
            format!("only a revision (with {what}_id) has an expected revision"),
        ));
    }
    let id = investigation_id.clone().ok_or_else(|| {
        FlameoxError::invalid_argument(
            "investigation_id",
            format!("a new {what} belongs to an investigation"),
        )
        .remedy("create one with `flameox investigations create --question …`")
    })?;
    revisions::existing_revision(ws, RevisionedKind::Investigations, &id)?;
    Ok(id)
}

/// The revision a revision of a `what` was read at (required).
pub fn expected_revision(what: &str, expected: Option<u64>, read_with: &str) -> Result<u64> {
    expected.ok_or_else(|| {
        FlameoxError::invalid_argument("expected_revision", "a revision names the revision it read")
            .remedy(format!(
                "read the {what} ({read_with}) and pass its revision"
            ))
    })
}

/// Refuses moving record `id` (of `owner`) to another investigation.
pub fn same_investigation(given: &Option<String>, id: &str, owner: &str) -> Result<()> {
    match given {
        Some(other) if other != owner => Err(FlameoxError::invalid_argument(
            "investigation_id",
            format!("{id} belongs to {owner}"),
        )),
        _ => Ok(()),
    }
}
