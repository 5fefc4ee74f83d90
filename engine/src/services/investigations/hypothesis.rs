//! Hypotheses of an investigation: a statement, the prediction it makes
//! and the result that would refute it, with a status (proposed →
//! supported / refuted / inconclusive) whose every change names the
//! evidence it rests on. Revisions need the revision the caller read; the
//! statement, prediction and refutation condition are frozen once the
//! hypothesis has left `proposed`, so a test cannot be rewritten after its
//! result is known.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::record_rules;
use super::references::checked_references;
use crate::error::{FlameoxError, Result};
use crate::fsutil::now_rfc3339;
use crate::revisions::{self, RevisionedKind};
use crate::workspace::Workspace;

/// Version of the hypothesis record written by this build.
pub const HYPOTHESIS_SCHEMA_VERSION: u32 = 1;
const HYPOTHESIS_PREFIX: &str = "hyp_";

/// Where a hypothesis stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HypothesisStatus {
    #[default]
    Proposed,
    Supported,
    Refuted,
    Inconclusive,
}

impl HypothesisStatus {
    pub fn name(self) -> &'static str {
        match self {
            HypothesisStatus::Proposed => "proposed",
            HypothesisStatus::Supported => "supported",
            HypothesisStatus::Refuted => "refuted",
            HypothesisStatus::Inconclusive => "inconclusive",
        }
    }
}

/// One change of status and what it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusChange {
    /// The revision that made the change.
    pub revision: u64,
    pub status: HypothesisStatus,
    pub evidence: Vec<String>,
    pub note: Option<String>,
    pub at: String,
}

/// One hypothesis, as its current revision holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hypothesis {
    pub schema_version: u32,
    pub hypothesis_id: String,
    pub investigation_id: String,
    pub revision: u64,
    pub statement: String,
    /// What should be observed if it holds.
    pub prediction: String,
    /// The result that would refute it.
    pub refuted_if: String,
    pub status: HypothesisStatus,
    /// Every reference recorded with it, oldest first.
    pub evidence: Vec<String>,
    /// Status changes, oldest first (the first is `proposed` or the status
    /// it was recorded with).
    pub history: Vec<StatusChange>,
    pub created_at: String,
    pub updated_at: String,
}

crate::revisions::revisioned!(Hypothesis);

/// A new hypothesis (with `investigation_id`), or a revision of one (with
/// `hypothesis_id` and the `expected_revision` read).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordHypothesisRequest {
    /// The investigation a new hypothesis belongs to (inv_…).
    #[schemars(length(min = 1, max = 80))]
    pub investigation_id: Option<String>,
    /// The hypothesis to revise (hyp_…); absent for a new one.
    #[schemars(length(min = 1, max = 80))]
    pub hypothesis_id: Option<String>,
    /// The revision read before revising; a stale one is REVISION_CONFLICT.
    #[schemars(range(min = 1))]
    pub expected_revision: Option<u64>,
    /// The claim (new hypotheses; editable while proposed).
    #[schemars(length(min = 1, max = 2000))]
    pub statement: Option<String>,
    /// What should be observed if it holds.
    #[schemars(length(min = 1, max = 2000))]
    pub prediction: Option<String>,
    /// The result that would refute it.
    #[schemars(length(min = 1, max = 2000))]
    pub refuted_if: Option<String>,
    /// New status; anything but proposed needs evidence in the same call.
    pub status: Option<HypothesisStatus>,
    /// Typed references this revision rests on (run:…, artifact:…,
    /// run_set:…, analysis:…, comparison:…, or a run id); each must exist.
    #[serde(default)]
    #[schemars(length(max = 100), inner(length(min = 1, max = 200)))]
    pub evidence: Vec<String>,
    /// Why the status changed, in a sentence.
    #[schemars(length(min = 1, max = 2000))]
    pub note: Option<String>,
}

fn text(field: &str, value: &Option<String>) -> Result<Option<String>> {
    match value {
        Some(v) if v.trim().is_empty() || v.chars().count() > 2000 => Err(
            FlameoxError::invalid_argument(field, "must be 1..=2000 characters, not blank"),
        ),
        Some(v) => Ok(Some(v.trim().to_owned())),
        None => Ok(None),
    }
}

fn required(field: &str, value: Option<String>) -> Result<String> {
    value.ok_or_else(|| {
        FlameoxError::invalid_argument(field, "a new hypothesis needs it")
            .remedy("give statement, prediction and refuted_if (the result that would refute it)")
    })
}

fn needs_evidence(status: HypothesisStatus, evidence: &[String]) -> Result<()> {
    if status != HypothesisStatus::Proposed && evidence.is_empty() {
        return Err(FlameoxError::invalid_argument(
            "evidence",
            format!("a hypothesis becomes {} only with evidence", status.name()),
        )
        .remedy("name the runs, comparisons or analyses the decision rests on"));
    }
    Ok(())
}

/// `record_hypothesis`: a new hypothesis, or the next revision of one.
pub fn record(ws: &Workspace, req: &RecordHypothesisRequest) -> Result<Hypothesis> {
    let statement = text("statement", &req.statement)?;
    let prediction = text("prediction", &req.prediction)?;
    let refuted_if = text("refuted_if", &req.refuted_if)?;
    let note = text("note", &req.note)?;
    let evidence = checked_references(ws, &req.evidence)?;
    let now = now_rfc3339();
    let Some(hypothesis_id) = &req.hypothesis_id else {
        let investigation_id = record_rules::owning_investigation(
            ws,
            "hypothesis",
            &req.investigation_id,
            req.expected_revision,
        )?;
        let status = req.status.unwrap_or_default();
        needs_evidence(status, &evidence)?;
        let id = format!("{HYPOTHESIS_PREFIX}{}", uuid::Uuid::now_v7().simple());
        return revisions::create(
            ws,
            RevisionedKind::Hypotheses,
            &id,
            Hypothesis {
                schema_version: HYPOTHESIS_SCHEMA_VERSION,
                hypothesis_id: id.clone(),
                investigation_id,
                revision: 0,
                statement: required("statement", statement)?,
                prediction: required("prediction", prediction)?,
                refuted_if: required("refuted_if", refuted_if)?,
                status,
                evidence: evidence.clone(),
                history: vec![StatusChange {
                    revision: 1,
                    status,
                    evidence,
                    note,
                    at: now.clone(),
                }],
                created_at: now.clone(),
                updated_at: now,
            },
        );
    };
    let expected =
        record_rules::expected_revision("hypothesis", req.expected_revision, "get_investigation")?;
    revisions::revise(
        ws,
        RevisionedKind::Hypotheses,
        hypothesis_id,
        expected,
        |mut h: Hypothesis| {
            record_rules::same_investigation(
                &req.investigation_id,
                hypothesis_id,
                &h.investigation_id,
            )?;
            let edits = statement.is_some() || prediction.is_some() || refuted_if.is_some();
            if edits && h.status != HypothesisStatus::Proposed {
                return Err(FlameoxError::invalid_argument(
                    "prediction",
                    format!(
                        "{hypothesis_id} is {}: its statement, prediction and refutation condition are frozen",
                        h.status.name()
                    ),
                )
                .remedy("record a new hypothesis instead"));
            }
            let status_change = req.status.filter(|s| *s != h.status);
            let new_evidence = evidence.iter().any(|r| !h.evidence.contains(r));
            if !edits && status_change.is_none() && !new_evidence {
                return Err(FlameoxError::invalid_argument(
                    "arguments",
                    "a revision changes something: the status, new evidence, or (while proposed) the texts",
                ));
            }
            if note.is_some() && status_change.is_none() {
                return Err(FlameoxError::invalid_argument(
                    "note",
                    "a note explains a status change; give the new status with it",
                ));
            }
            h.statement = statement.unwrap_or(h.statement);
            h.prediction = prediction.unwrap_or(h.prediction);
            h.refuted_if = refuted_if.unwrap_or(h.refuted_if);
            let next = h.revision + 1;
            if let Some(status) = status_change {
                needs_evidence(status, &evidence)?;
                h.status = status;
                h.history.push(StatusChange {
                    revision: next,
                    status,
                    evidence: evidence.clone(),
                    note,
                    at: now.clone(),
                });
            }
            for reference in evidence {
                if !h.evidence.contains(&reference) {
                    h.evidence.push(reference);
                }
            }
            h.updated_at = now;
            Ok(h)
        },
    )
}

/// One hypothesis.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HypothesisRequest {
    /// Hypothesis id (hyp_…).
    #[schemars(length(min = 1, max = 80))]
    pub hypothesis_id: String,
}

/// `get_hypothesis`: the current revision (statement, prediction, what
/// refutes it, status with its history, evidence).
pub fn get(ws: &Workspace, hypothesis_id: &str) -> Result<Hypothesis> {
    revisions::read_current(ws, RevisionedKind::Hypotheses, hypothesis_id)
}

/// Every hypothesis's current revision, oldest first.
pub fn all(ws: &Workspace) -> Result<Vec<Hypothesis>> {
    revisions::list_ids(ws, RevisionedKind::Hypotheses)
        .iter()
        .map(|id| revisions::read_current(ws, RevisionedKind::Hypotheses, id))
        .collect()
}
