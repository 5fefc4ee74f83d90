//! Findings of an investigation: a claim at a stated evidence level, with
//! the numbers it states and typed references that are checked to exist
//! and to agree with the level — a measured regression or improvement
//! names a comparison record whose decision says so, a hotspot names the
//! commit it was read at and the run or artifact, a scaling claim names a
//! scaling analysis record. Revisions need the revision read; a retracted
//! finding stays on disk with its history.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::record_rules;
use super::references::checked_references;
use crate::error::{FlameoxError, Result};
use crate::fsutil::now_rfc3339;
use crate::records::{self, RecordKind};
use crate::revisions::{self, RevisionedKind};
use crate::workspace::Workspace;

/// Version of the finding record written by this build.
pub const FINDING_SCHEMA_VERSION: u32 = 1;
const FINDING_PREFIX: &str = "fnd_";

/// How strongly the references support the claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceLevel {
    /// Seen in the evidence (any reference).
    Observation,
    /// A frame's share of a run (a run or artifact, and the commit read).
    Hotspot,
    /// A comparison record decided `regression`.
    MeasuredRegression,
    /// A comparison record decided `improvement`.
    MeasuredImprovement,
    /// A scaling analysis record.
    Scaling,
}

impl EvidenceLevel {
    pub fn name(self) -> &'static str {
        match self {
            EvidenceLevel::Observation => "observation",
            EvidenceLevel::Hotspot => "hotspot",
            EvidenceLevel::MeasuredRegression => "measured_regression",
            EvidenceLevel::MeasuredImprovement => "measured_improvement",
            EvidenceLevel::Scaling => "scaling",
        }
    }
}

/// The numbers a claim states: name (with its unit as a suffix, e.g.
/// `step_time_ms`, `self_share_ratio`) → value.
pub type FindingNumbers = std::collections::BTreeMap<String, f64>;

/// One finding, as its current revision holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub schema_version: u32,
    pub finding_id: String,
    pub investigation_id: String,
    pub revision: u64,
    pub claim: String,
    pub level: EvidenceLevel,
    /// Typed references, checked when recorded.
    pub references: Vec<String>,
    pub numbers: FindingNumbers,
    pub retracted: bool,
    pub created_at: String,
    pub updated_at: String,
}

crate::revisions::revisioned!(Finding);

/// A new finding (with `investigation_id`), or a revision of one (with
/// `finding_id` and the `expected_revision` read).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordFindingRequest {
    /// The investigation a new finding belongs to (inv_…).
    #[schemars(length(min = 1, max = 80))]
    pub investigation_id: Option<String>,
    /// The finding to revise (fnd_…); absent for a new one.
    #[schemars(length(min = 1, max = 80))]
    pub finding_id: Option<String>,
    /// The revision read before revising.
    #[schemars(range(min = 1))]
    pub expected_revision: Option<u64>,
    /// The claim, in a sentence.
    #[schemars(length(min = 1, max = 2000))]
    pub claim: Option<String>,
    /// observation, hotspot (run + commit:), measured_regression / measured_improvement (comparison:), scaling (analysis:).
    pub level: Option<EvidenceLevel>,
    /// run:, artifact:, commit:, frame:<run>@<frame>, window:<run>@<start_ns>..<end_ns>, measurements:<run>@<name prefix>, run_set:, analysis:, comparison:, hypothesis: references (a revision replaces them).
    #[schemars(length(max = 100), inner(length(min = 1, max = 200)))]
    pub references: Option<Vec<String>>,
    /// The numbers the claim states, name (unit as suffix, e.g. step_time_ms) → value; a revision replaces them.
    #[schemars(extend("maxProperties" = 50))]
    pub numbers: Option<FindingNumbers>,
    /// Withdraw the finding (it stays, marked retracted).
    pub retracted: Option<bool>,
}

/// Which findings to list.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListFindingsRequest {
    /// Only this investigation's.
    #[schemars(length(min = 1, max = 80))]
    pub investigation_id: Option<String>,
    /// Only findings at this evidence level.
    pub level: Option<EvidenceLevel>,
    /// Rows per page (default 20).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// next_cursor of the previous page.
    #[schemars(length(min = 1, max = 4096))]
    pub cursor: Option<String>,
}

/// One finding.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindingRequest {
    /// Finding id (fnd_…).
    #[schemars(length(min = 1, max = 80))]
    pub finding_id: String,
}

fn refused(level: EvidenceLevel, why: String) -> FlameoxError {
    FlameoxError::invalid_argument("references", why)
        .detail("level", level.name())
        .remedy(match level {
            EvidenceLevel::MeasuredRegression | EvidenceLevel::MeasuredImprovement => {
                "record the comparison first (record_comparison) and reference comparison:<id>"
            }
            EvidenceLevel::Hotspot => {
                "reference the frame (frame:<run>@<frame>) or run (run:<id>) and the commit_id the hotspot answer was read at (commit:<id>)"
            }
            EvidenceLevel::Scaling => {
                "record the scaling analysis first (record_analysis) and reference analysis:<id>"
            }
            EvidenceLevel::Observation => "reference the run, artifact or record it was seen in",
        })
}

/// Checks that `references` (already typed and checked to exist) support
/// a claim at `level`.
fn check_level(ws: &Workspace, level: EvidenceLevel, references: &[String]) -> Result<()> {
    let of = |kind: &str| -> Vec<&str> {
        references
            .iter()
            .filter_map(|r| r.strip_prefix(kind).and_then(|r| r.strip_prefix(':')))
            .collect()
    };
    match level {
        EvidenceLevel::Observation if references.is_empty() => Err(refused(
            level,
            "an observation names what it was seen in".to_owned(),
        )),
        EvidenceLevel::Observation => Ok(()),
        EvidenceLevel::Hotspot => {
            let scoped = ["run", "artifact", "frame"]
                .iter()
                .any(|k| !of(k).is_empty());
            if of("commit").is_empty() || !scoped {
                return Err(refused(
                    level,
                    "a hotspot claim names the run, artifact or frame (frame:<run>@<frame>) and the commit it was read at"
                        .to_owned(),
                ));
            }
            Ok(())
        }
        EvidenceLevel::MeasuredRegression | EvidenceLevel::MeasuredImprovement => {
            let wanted = if level == EvidenceLevel::MeasuredRegression {
                "regression"
            } else {
                "improvement"
            };
            let mut decisions = Vec::new();
            for id in of("comparison") {
                let record: serde_json::Value =
                    records::read_record(ws, RecordKind::Comparisons, id)?;
                let decision = record["result"]["decision"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned();
                if decision == wanted {
                    return Ok(());
                }
                decisions.push(format!("comparison:{id} decided {decision}"));
            }
            Err(refused(
                level,
                if decisions.is_empty() {
                    format!("a {} claim needs a comparison record", level.name())
                } else {
                    format!(
                        "no referenced comparison decided {wanted}: {}",
                        decisions.join("; ")
                    )
                },
            ))
        }
        EvidenceLevel::Scaling => {
            for id in of("analysis") {
                let record: serde_json::Value = records::read_record(ws, RecordKind::Analyses, id)?;
                if record["recipe"] == "scaling" {
                    return Ok(());
                }
            }
            Err(refused(
                level,
                "a scaling claim needs a scaling analysis record".to_owned(),
            ))
        }
    }
}

fn check_numbers(numbers: &FindingNumbers) -> Result<()> {
    if numbers.len() > 50 {
        return Err(FlameoxError::invalid_argument("numbers", "at most 50"));
    }
    for (name, value) in numbers {
        let valid_name = !name.is_empty()
            && name.len() <= 80
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
        if !valid_name || !value.is_finite() {
            return Err(FlameoxError::invalid_argument(
                "numbers",
                format!("{name}: a name of [A-Za-z0-9_.] (unit as suffix) and a finite value"),
            ));
        }
    }
    Ok(())
}

fn claim_text(claim: &Option<String>) -> Result<Option<String>> {
    match claim {
        Some(c) if c.trim().is_empty() || c.chars().count() > 2000 => Err(
            FlameoxError::invalid_argument("claim", "must be 1..=2000 characters, not blank"),
        ),
        Some(c) => Ok(Some(c.trim().to_owned())),
        None => Ok(None),
    }
}

/// `record_finding`: a new finding, or the next revision of one.
pub fn record(ws: &Workspace, req: &RecordFindingRequest) -> Result<Finding> {
    let claim = claim_text(&req.claim)?;
    let references = match &req.references {
        Some(r) => Some(checked_references(ws, r)?),
        None => None,
    };
    if let Some(numbers) = &req.numbers {
        check_numbers(numbers)?;
    }
    let now = now_rfc3339();
    let Some(finding_id) = &req.finding_id else {
        let investigation_id = record_rules::owning_investigation(
            ws,
            "finding",
            &req.investigation_id,
            req.expected_revision,
        )?;
        let claim = claim.ok_or_else(|| {
            FlameoxError::invalid_argument("claim", "a new finding states its claim")
        })?;
        let level = req.level.ok_or_else(|| {
            FlameoxError::invalid_argument("level", "a new finding states its evidence level")
        })?;
        let references = references.unwrap_or_default();
        check_level(ws, level, &references)?;
        let id = format!("{FINDING_PREFIX}{}", uuid::Uuid::now_v7().simple());
        return revisions::create(
            ws,
            RevisionedKind::Findings,
            &id,
            Finding {
                schema_version: FINDING_SCHEMA_VERSION,
                finding_id: id.clone(),
                investigation_id,
                revision: 0,
                claim,
                level,
                references,
                numbers: req.numbers.clone().unwrap_or_default(),
                retracted: req.retracted.unwrap_or(false),
                created_at: now.clone(),
                updated_at: now,
            },
        );
    };
    let expected =
        record_rules::expected_revision("finding", req.expected_revision, "get_finding")?;
    revisions::revise(
        ws,
        RevisionedKind::Findings,
        finding_id,
        expected,
        |mut f: Finding| {
            record_rules::same_investigation(
                &req.investigation_id,
                finding_id,
                &f.investigation_id,
            )?;
            let before = (
                f.claim.clone(),
                f.level,
                f.references.clone(),
                f.numbers.clone(),
                f.retracted,
            );
            f.claim = claim.unwrap_or(f.claim);
            f.level = req.level.unwrap_or(f.level);
            f.references = references.unwrap_or(f.references);
            f.numbers = req.numbers.clone().unwrap_or(f.numbers);
            f.retracted = req.retracted.unwrap_or(f.retracted);
            if before
                == (
                    f.claim.clone(),
                    f.level,
                    f.references.clone(),
                    f.numbers.clone(),
                    f.retracted,
                )
            {
                return Err(FlameoxError::invalid_argument(
                    "arguments",
                    "a revision changes something: claim, level, references, numbers or retracted",
                ));
            }
            check_level(ws, f.level, &f.references)?;
            f.updated_at = now;
            Ok(f)
        },
    )
}

/// Every finding's current revision, oldest first.
pub fn all(ws: &Workspace) -> Result<Vec<Finding>> {
    revisions::list_ids(ws, RevisionedKind::Findings)
        .iter()
        .map(|id| revisions::read_current(ws, RevisionedKind::Findings, id))
        .collect()
}

/// `list_findings`: newest first, filtered, paged.
pub fn list(
    ws: &Workspace,
    req: &ListFindingsRequest,
) -> Result<crate::services::inventory::ListPage<Finding>> {
    if let Some(inv) = &req.investigation_id {
        revisions::existing_revision(ws, RevisionedKind::Investigations, inv)?;
    }
    let rows = all(ws)?
        .into_iter()
        .rev()
        .filter(|f| {
            req.investigation_id
                .as_ref()
                .is_none_or(|i| *i == f.investigation_id)
                && req.level.is_none_or(|l| l == f.level)
        })
        .map(|f| (revisions::newest_first_key(&f.finding_id), f))
        .collect();
    crate::services::inventory::page(ws, "findings", rows, req.limit, req.cursor.as_deref())
}

/// `get_finding`: the current revision.
pub fn get(ws: &Workspace, finding_id: &str) -> Result<Finding> {
    revisions::read_current(ws, RevisionedKind::Findings, finding_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use crate::services::investigations::investigation::{self, CreateInvestigationRequest};

    #[test]
    fn a_measured_claim_needs_a_comparison_that_decided_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (ws, _) = Workspace::init(dir.path()).expect("init");
        let inv = investigation::create(
            &ws,
            &CreateInvestigationRequest {
                question: "did the fix help?".into(),
                ..Default::default()
            },
        )
        .expect("investigation");
        let comparison =
            serde_json::json!({ "kind": "comparison", "result": { "decision": "improvement" } });
        records::write_record_once(&ws, RecordKind::Comparisons, "cmp_a", &comparison)
            .expect("comparison record");
        let claim = |level, references: &[&str]| RecordFindingRequest {
            investigation_id: Some(inv.investigation_id.clone()),
            claim: Some("step time fell".into()),
            level: Some(level),
            references: Some(references.iter().map(|r| r.to_string()).collect()),
            ..Default::default()
        };
        // The comparison decided improvement: a regression claim is refused
        // and says what the comparison decided.
        let wrong = record(
            &ws,
            &claim(EvidenceLevel::MeasuredRegression, &["comparison:cmp_a"]),
        )
        .expect_err("disagrees");
        assert_eq!(wrong.code, ErrorCode::InvalidArguments);
        assert!(
            wrong.message.contains("decided improvement"),
            "{}",
            wrong.message
        );
        let none = record(&ws, &claim(EvidenceLevel::MeasuredImprovement, &[])).expect_err("none");
        assert!(none.message.contains("needs a comparison record"));
        let missing = record(
            &ws,
            &claim(EvidenceLevel::MeasuredImprovement, &["comparison:cmp_b"]),
        )
        .expect_err("missing");
        assert_eq!(missing.code, ErrorCode::RunNotFound);
        let f = record(
            &ws,
            &claim(EvidenceLevel::MeasuredImprovement, &["comparison:cmp_a"]),
        )
        .expect("agrees");
        assert_eq!(
            (f.revision, f.level),
            (1, EvidenceLevel::MeasuredImprovement)
        );
        // A revision that would make the references disagree is refused and
        // writes nothing; a stale one conflicts.
        let revise = |level, expected| RecordFindingRequest {
            finding_id: Some(f.finding_id.clone()),
            expected_revision: Some(expected),
            level: Some(level),
            ..Default::default()
        };
        assert!(record(&ws, &revise(EvidenceLevel::Scaling, 1)).is_err());
        assert_eq!(get(&ws, &f.finding_id).expect("read").revision, 1);
        let retracted = record(
            &ws,
            &RecordFindingRequest {
                finding_id: Some(f.finding_id.clone()),
                expected_revision: Some(1),
                retracted: Some(true),
                ..Default::default()
            },
        )
        .expect("retract");
        assert!(retracted.retracted && retracted.revision == 2);
        let stale = record(&ws, &revise(EvidenceLevel::Observation, 1)).expect_err("stale");
        assert_eq!(stale.code, ErrorCode::RevisionConflict);
    }

    #[test]
    fn two_writers_revising_one_finding_at_once_one_wins_the_other_conflicts() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (ws, _) = Workspace::init(dir.path()).expect("init");
        let inv = investigation::create(
            &ws,
            &CreateInvestigationRequest {
                question: "which writer wins?".into(),
                ..Default::default()
            },
        )
        .expect("investigation");
        let comparison =
            serde_json::json!({ "kind": "comparison", "result": { "decision": "regression" } });
        records::write_record_once(&ws, RecordKind::Comparisons, "cmp_r", &comparison)
            .expect("comparison record");
        let f = record(
            &ws,
            &RecordFindingRequest {
                investigation_id: Some(inv.investigation_id.clone()),
                claim: Some("slower".into()),
                level: Some(EvidenceLevel::MeasuredRegression),
                references: Some(vec!["comparison:cmp_r".into()]),
                ..Default::default()
            },
        )
        .expect("finding");
        // Both read revision 1, then revise at the same moment.
        let barrier = std::sync::Barrier::new(2);
        let results: Vec<Result<Finding>> = std::thread::scope(|scope| {
            let writers: Vec<_> = ["first writer's claim", "second writer's claim"]
                .into_iter()
                .map(|claim| {
                    let (ws, barrier, id) = (&ws, &barrier, f.finding_id.clone());
                    scope.spawn(move || {
                        barrier.wait();
                        record(
                            ws,
                            &RecordFindingRequest {
                                finding_id: Some(id),
                                expected_revision: Some(1),
                                claim: Some(claim.into()),
                                ..Default::default()
                            },
                        )
                    })
                })
                .collect();
            writers
                .into_iter()
                .map(|w| w.join().expect("writer thread"))
                .collect()
        });
        let won: Vec<&Finding> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(won.len(), 1, "exactly one writer wins");
        assert_eq!(won[0].revision, 2);
        let lost = results
            .iter()
            .find_map(|r| r.as_ref().err())
            .expect("one writer loses");
        assert_eq!(lost.code, ErrorCode::RevisionConflict);
        assert_eq!(lost.details["current_revision"], 2);
        assert_eq!(get(&ws, &f.finding_id).expect("read").claim, won[0].claim);
    }
}
