//! `phase` as a scope: a phase name (a `ProfilerStep#3`) becomes the time
//! window of its host span, so an analysis scoped by phase reads the same
//! events a window over that span would. A phase that is not there is a
//! bad argument naming the closest phases the target has.

use flameox_recipes::ArtifactScope;
use flameox_recipes::phase_span::{phase_names, phase_span};
use serde::{Deserialize, Serialize};

use crate::error::{FlameoxError, Result, closest};
use crate::query::{PinnedSession, run_budgeted};
use crate::services::ResolvedScope;

/// The phase an answer was scoped to, and the window it stood for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseScope {
    pub name: String,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// Phase labels read for a "did you mean".
const NAMES_READ: usize = 100_000;

/// The window of `phase` in `scope`.
pub(crate) async fn phase_window(
    session: &PinnedSession,
    scope: &ResolvedScope,
    phase: &str,
) -> Result<PhaseScope> {
    let artifacts = ArtifactScope {
        artifact_ids: scope.artifact_ids.clone(),
    };
    if let Some((start_ns, end_ns)) =
        run_budgeted(session, phase_span(&session.ctx, &artifacts, phase)).await?
    {
        return Ok(PhaseScope {
            name: phase.to_owned(),
            start_ns,
            end_ns,
        });
    }
    let names = run_budgeted(session, phase_names(&session.ctx, &artifacts, NAMES_READ)).await?;
    let near = closest(phase, names.iter().map(String::as_str), 3);
    let message = match (names.is_empty(), near.is_empty()) {
        (true, _) => format!("'{phase}' not found: this target has no phases"),
        (false, true) => format!("'{phase}' not found in this target"),
        (false, false) => format!(
            "'{phase}' not found in this target; did you mean {}?",
            near.iter()
                .map(|n| format!("'{n}'"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Err(FlameoxError::invalid_argument("phase", message).detail("closest", near))
}

/// A phase or a window, not both.
pub(crate) fn phase_or_window(phase: Option<&str>, window: Option<(i64, i64)>) -> Result<()> {
    match (phase, window) {
        (Some(_), Some(_)) => Err(FlameoxError::invalid_argument(
            "phase",
            "give a phase or a window (start_ns/end_ns), not both",
        )),
        _ => Ok(()),
    }
}
