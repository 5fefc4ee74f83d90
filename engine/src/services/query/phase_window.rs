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
    /// The first event of the scoped artifacts (trace ns), so a reader can
    /// say where in the trace the phase lies; absent when no import
    /// recorded a time span.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_start_ns: Option<i64>,
}

/// The time a drill-down covered, said in its answer (all absent for the
/// whole target).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeScope {
    /// `[start_ns, end_ns)` given as a window (a phase names its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_ns: Option<(i64, i64)>,
    /// The phase, with the host span that was its window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<PhaseScope>,
    /// What counted inside the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_rule: Option<String>,
}

impl TimeScope {
    pub(crate) fn new(window: Option<(i64, i64)>, phase: Option<PhaseScope>, rule: &str) -> Self {
        TimeScope {
            window_ns: if phase.is_some() { None } else { window },
            window_rule: window.map(|_| rule.to_owned()),
            phase,
        }
    }

    /// ` in ProfilerStep#3`, ` in a 2.1 ms window`, or nothing.
    pub fn words(&self) -> String {
        match (&self.phase, self.window_ns) {
            (Some(p), _) => format!(" in {}", p.name),
            (None, Some((a, b))) => {
                format!(
                    " in a {} window",
                    crate::units::duration_ns(b.saturating_sub(a))
                )
            }
            (None, None) => String::new(),
        }
    }
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
        let trace_start_ns = scope
            .artifact_ids
            .iter()
            .flat_map(|a| session.snapshot.generations_for(a))
            .filter_map(|g| g.summary.time_span_ns.map(|(first, _)| first))
            .min();
        return Ok(PhaseScope {
            name: phase.to_owned(),
            start_ns,
            end_ns,
            trace_start_ns,
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

/// The window `start_ns`/`end_ns` give: both or neither, start first.
pub(crate) fn time_window(start: Option<i64>, end: Option<i64>) -> Result<Option<(i64, i64)>> {
    match (start, end) {
        (Some(a), Some(b)) if a < b => Ok(Some((a, b))),
        (Some(_), Some(_)) => Err(FlameoxError::invalid_argument(
            "start_ns",
            "the window's start must be before its end",
        )),
        (None, None) => Ok(None),
        _ => Err(FlameoxError::invalid_argument(
            "end_ns",
            "give both start_ns and end_ns",
        )),
    }
}

/// The time a call is scoped to: its window, or its phase's host span
/// (with the phase, for the answer), or neither. Both is refused.
pub(crate) async fn time_scope(
    session: &PinnedSession,
    scope: &ResolvedScope,
    phase: Option<&str>,
    window: Option<(i64, i64)>,
) -> Result<(Option<(i64, i64)>, Option<PhaseScope>)> {
    phase_or_window(phase, window)?;
    match phase {
        Some(name) => {
            let p = phase_window(session, scope, name).await?;
            Ok((Some((p.start_ns, p.end_ns)), Some(p)))
        }
        None => Ok((window, None)),
    }
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
