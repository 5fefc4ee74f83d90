//! Investigations: a question, what it is about (typed references checked
//! to exist), tags; listed newest first and read back with their
//! hypotheses, so an agent in a new conversation can resume one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::finding::{self, Finding};
use super::hypothesis::{self, Hypothesis};
use super::references::checked_references;
use crate::error::{FlameoxError, Result};
use crate::fsutil::now_rfc3339;
use crate::revisions::{self, RevisionedKind};
use crate::services::inventory::{ListPage, page};
use crate::workspace::Workspace;

/// Version of the investigation record written by this build.
pub const INVESTIGATION_SCHEMA_VERSION: u32 = 1;
const INVESTIGATION_PREFIX: &str = "inv_";
/// Hypotheses (and findings) `get_investigation` returns at most (the
/// counts say how many there are).
pub const HYPOTHESES_SHOWN: usize = 50;

/// One investigation, as its current revision holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Investigation {
    pub schema_version: u32,
    pub investigation_id: String,
    pub revision: u64,
    pub question: String,
    /// Typed references (`run:…`, `artifact:…`, `run_set:…`, …).
    pub targets: Vec<String>,
    pub tags: Vec<String>,
    pub created_at: String,
}

crate::revisions::revisioned!(Investigation);

/// What to investigate.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateInvestigationRequest {
    /// The question, in a sentence (e.g. "why is step time up?").
    #[schemars(length(min = 1, max = 2000))]
    pub question: String,
    /// What it is about: run ids (or a unique prefix, or latest), artifact
    /// ids (sha256:…) or typed references (run_set:…, analysis:…,
    /// comparison:…); each must exist.
    #[serde(default)]
    #[schemars(length(max = 100), inner(length(min = 1, max = 200)))]
    pub target: Vec<String>,
    /// Labels to find it by.
    #[serde(default)]
    #[schemars(length(max = 20), inner(length(min = 1, max = 64)))]
    pub tags: Vec<String>,
}

/// Which investigations to list.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListInvestigationsRequest {
    /// Only those with this tag.
    #[schemars(length(min = 1, max = 64))]
    pub tag: Option<String>,
    /// Only those about this reference (run:…, artifact:…, …) or run id.
    #[schemars(length(min = 1, max = 200))]
    pub target: Option<String>,
    /// Rows per page (default 20).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// next_cursor of the previous page.
    #[schemars(length(min = 1, max = 4096))]
    pub cursor: Option<String>,
}

/// One investigation.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InvestigationRequest {
    /// Investigation id (inv_…).
    #[schemars(length(min = 1, max = 80))]
    pub investigation_id: String,
}

/// A line of a listing: the investigation and how far it got.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InvestigationSummary {
    #[serde(flatten)]
    pub investigation: Investigation,
    pub hypotheses: usize,
    pub findings: usize,
    /// Hypotheses per status (`proposed`, `supported`, …), only those present.
    pub by_status: std::collections::BTreeMap<String, usize>,
}

/// An investigation with its hypotheses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvestigationDetail {
    pub investigation: Investigation,
    /// Newest first, at most [`HYPOTHESES_SHOWN`].
    pub hypotheses: Vec<Hypothesis>,
    pub hypotheses_total: usize,
    /// Newest first, at most [`HYPOTHESES_SHOWN`]; retracted ones included.
    pub findings: Vec<Finding>,
    pub findings_total: usize,
    /// The analyses, comparisons, run sets and experiments that the
    /// investigation, its hypotheses and its findings name (typed, each
    /// once, in the order first named; at most [`HYPOTHESES_SHOWN`]).
    #[serde(default)]
    pub records: Vec<String>,
}

/// The record kinds [`InvestigationDetail::records`] gathers.
const GATHERED: [&str; 4] = ["analysis:", "comparison:", "run_set:", "experiment:"];

fn gathered_records<'a>(references: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in references {
        if GATHERED.iter().any(|k| r.starts_with(k)) && !out.contains(r) {
            out.push(r.clone());
        }
    }
    out.truncate(HYPOTHESES_SHOWN);
    out
}

fn check_text(field: &str, text: &str, max: usize) -> Result<()> {
    if text.trim().is_empty() || text.chars().count() > max {
        return Err(FlameoxError::invalid_argument(
            field,
            format!("must be 1..={max} characters, not blank"),
        ));
    }
    Ok(())
}

/// `create_investigation`: revision 1 of a new investigation.
pub fn create(ws: &Workspace, req: &CreateInvestigationRequest) -> Result<Investigation> {
    check_text("question", &req.question, 2000)?;
    for tag in &req.tags {
        check_text("tags", tag, 64)?;
    }
    let targets = checked_references(ws, &req.target)?;
    let mut tags: Vec<String> = req.tags.iter().map(|t| t.trim().to_owned()).collect();
    tags.sort();
    tags.dedup();
    let id = format!("{INVESTIGATION_PREFIX}{}", uuid::Uuid::now_v7().simple());
    revisions::create(
        ws,
        RevisionedKind::Investigations,
        &id,
        Investigation {
            schema_version: INVESTIGATION_SCHEMA_VERSION,
            investigation_id: id.clone(),
            revision: 0,
            question: req.question.trim().to_owned(),
            targets,
            tags,
            created_at: now_rfc3339(),
        },
    )
}

/// `list_investigations`: newest first, filtered, paged.
pub fn list(
    ws: &Workspace,
    req: &ListInvestigationsRequest,
) -> Result<ListPage<InvestigationSummary>> {
    let target = match &req.target {
        Some(t) => Some(super::references::checked_reference(ws, t)?),
        None => None,
    };
    let hypotheses = hypothesis::all(ws)?;
    let findings = finding::all(ws)?;
    let mut rows = Vec::new();
    for id in revisions::list_ids(ws, RevisionedKind::Investigations)
        .into_iter()
        .rev()
    {
        let investigation: Investigation =
            revisions::read_current(ws, RevisionedKind::Investigations, &id)?;
        if req
            .tag
            .as_ref()
            .is_some_and(|t| !investigation.tags.contains(t))
            || target
                .as_ref()
                .is_some_and(|t| !investigation.targets.contains(t))
        {
            continue;
        }
        let mut by_status = std::collections::BTreeMap::new();
        let mut count = 0;
        for h in hypotheses.iter().filter(|h| h.investigation_id == id) {
            count += 1;
            *by_status.entry(h.status.name().to_owned()).or_insert(0) += 1;
        }
        rows.push((
            revisions::newest_first_key(&id),
            InvestigationSummary {
                findings: findings.iter().filter(|f| f.investigation_id == id).count(),
                investigation,
                hypotheses: count,
                by_status,
            },
        ));
    }
    page(ws, "investigations", rows, req.limit, req.cursor.as_deref())
}

/// `get_investigation`: the investigation and its newest hypotheses.
pub fn get(ws: &Workspace, investigation_id: &str) -> Result<InvestigationDetail> {
    let investigation: Investigation =
        revisions::read_current(ws, RevisionedKind::Investigations, investigation_id)?;
    let mut hypotheses: Vec<Hypothesis> = hypothesis::all(ws)?
        .into_iter()
        .filter(|h| h.investigation_id == investigation_id)
        .collect();
    hypotheses.reverse();
    let hypotheses_total = hypotheses.len();
    hypotheses.truncate(HYPOTHESES_SHOWN);
    let mut findings: Vec<Finding> = finding::all(ws)?
        .into_iter()
        .filter(|f| f.investigation_id == investigation_id)
        .collect();
    findings.reverse();
    let findings_total = findings.len();
    let records = gathered_records(
        investigation
            .targets
            .iter()
            .chain(hypotheses.iter().flat_map(|h| &h.evidence))
            .chain(findings.iter().flat_map(|f| &f.references)),
    );
    findings.truncate(HYPOTHESES_SHOWN);
    Ok(InvestigationDetail {
        records,
        investigation,
        hypotheses,
        hypotheses_total,
        findings,
        findings_total,
    })
}
