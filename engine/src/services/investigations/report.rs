//! `summarize_evidence`: a bounded report of investigations and findings —
//! the question, each hypothesis and its fate, each finding with the
//! numbers it states, what every reference holds (a comparison's estimate
//! and interval, a scaling fit's exponent, read from the record, not
//! retyped) and the command that reproduces each number. The same content
//! as JSON and as Markdown ([`super::report_markdown`]).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::finding::{self, Finding};
use super::hypothesis::{self, Hypothesis};
use super::investigation::Investigation;
use crate::error::{FlameoxError, Result};
use crate::fsutil::now_rfc3339;
use crate::operations::command_line::command_line;
use crate::records::{self, RecordKind};
use crate::revisions::{self, RevisionedKind};
use crate::workspace::Workspace;

/// Investigations and findings one report holds at most.
pub const REPORT_TARGETS: usize = 20;
/// Findings (and hypotheses per investigation) one report shows at most.
pub const REPORT_ITEMS: usize = 50;

/// How the report is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReportFormat {
    /// The content, and the same as Markdown for a PR description.
    #[default]
    Markdown,
    /// The content only.
    Json,
}

/// What to report.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SummarizeRequest {
    /// Investigations (inv_…) and findings (fnd_…), bare or typed (investigation:…, finding:…).
    #[schemars(length(min = 1, max = 20), inner(length(min = 1, max = 90)))]
    pub targets: Vec<String>,
    /// markdown (default: the content and its Markdown) or json (the content only).
    pub format: Option<ReportFormat>,
}

/// One way to reproduce a number: the catalogued call and its command line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reproduction {
    pub operation: String,
    pub arguments: Value,
    pub command: String,
}

/// A reference and what it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportedReference {
    pub reference: String,
    /// One line: what the reference is and its key result.
    pub holds: String,
    /// The record's own numbers (a comparison's relative change and
    /// interval, a fit's exponent), exactly as recorded.
    pub numbers: BTreeMap<String, f64>,
    pub reproduce: Option<Reproduction>,
}

/// A hypothesis and its fate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportedHypothesis {
    pub hypothesis_id: String,
    pub statement: String,
    pub prediction: String,
    pub refuted_if: String,
    pub status: String,
    /// The evidence and note of the latest status change.
    pub evidence: Vec<String>,
    pub note: Option<String>,
}

/// A finding with its references resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportedFinding {
    pub finding_id: String,
    pub investigation_id: String,
    pub revision: u64,
    pub claim: String,
    pub level: String,
    pub retracted: bool,
    pub numbers: BTreeMap<String, f64>,
    pub references: Vec<ReportedReference>,
    /// The run or artifact the claim is about (a flame graph's scope).
    pub scope: Option<String>,
}

/// An investigation in the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportedInvestigation {
    pub investigation_id: String,
    pub question: String,
    pub targets: Vec<String>,
    pub tags: Vec<String>,
    /// Newest first, at most [`REPORT_ITEMS`].
    pub hypotheses: Vec<ReportedHypothesis>,
    pub hypotheses_total: usize,
}

/// The report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceReport {
    pub generated_at: String,
    /// The workspace HEAD when the report was made.
    pub head_commit: Option<String>,
    pub investigations: Vec<ReportedInvestigation>,
    /// The findings asked for and those of the investigations asked for,
    /// oldest first, at most [`REPORT_ITEMS`].
    pub findings: Vec<ReportedFinding>,
    pub findings_total: usize,
    /// The same content as Markdown (format markdown).
    pub markdown: Option<String>,
}

/// A target as (kind, id): `inv_…`/`investigation:…` or `fnd_…`/`finding:…`.
fn target_kind(text: &str) -> Result<(RevisionedKind, &str)> {
    let text = text.trim();
    let (kind, id) = match text.split_once(':') {
        Some(("investigation", id)) => (RevisionedKind::Investigations, id),
        Some(("finding", id)) => (RevisionedKind::Findings, id),
        None if text.starts_with("inv_") => (RevisionedKind::Investigations, text),
        None if text.starts_with("fnd_") => (RevisionedKind::Findings, text),
        _ => {
            return Err(FlameoxError::invalid_argument(
                "targets",
                format!("{text:?} is not an investigation (inv_…) or a finding (fnd_…)"),
            )
            .remedy("list them with `flameox investigations list` or `flameox findings list`"));
        }
    };
    Ok((kind, id))
}

/// `summarize_evidence`: the report of `req.targets`.
pub fn summarize(ws: &Workspace, req: &SummarizeRequest) -> Result<EvidenceReport> {
    if req.targets.is_empty() || req.targets.len() > REPORT_TARGETS {
        return Err(FlameoxError::invalid_argument(
            "targets",
            format!("name 1..={REPORT_TARGETS} investigations or findings"),
        ));
    }
    let mut investigation_ids = Vec::new();
    let mut finding_ids = Vec::new();
    for text in &req.targets {
        let (kind, id) = target_kind(text)?;
        revisions::existing_revision(ws, kind, id)?;
        let list = match kind {
            RevisionedKind::Investigations => &mut investigation_ids,
            _ => &mut finding_ids,
        };
        if !list.iter().any(|known| known == id) {
            list.push(id.to_owned());
        }
    }
    let hypotheses = hypothesis::all(ws)?;
    let all_findings = finding::all(ws)?;
    let mut investigations = Vec::new();
    for id in &investigation_ids {
        let investigation: Investigation =
            revisions::read_current(ws, RevisionedKind::Investigations, id)?;
        investigations.push(reported_investigation(investigation, &hypotheses));
    }
    let chosen: Vec<&Finding> = all_findings
        .iter()
        .filter(|f| {
            finding_ids.contains(&f.finding_id) || investigation_ids.contains(&f.investigation_id)
        })
        .collect();
    let findings_total = chosen.len();
    let findings = chosen
        .into_iter()
        .take(REPORT_ITEMS)
        .map(|f| reported_finding(ws, f))
        .collect::<Result<Vec<_>>>()?;
    let mut report = EvidenceReport {
        generated_at: now_rfc3339(),
        head_commit: crate::catalog::read_head(ws)?,
        investigations,
        findings,
        findings_total,
        markdown: None,
    };
    if req.format.unwrap_or_default() == ReportFormat::Markdown {
        report.markdown = Some(super::report_markdown::render(&report));
    }
    Ok(report)
}

fn reported_investigation(
    investigation: Investigation,
    hypotheses: &[Hypothesis],
) -> ReportedInvestigation {
    let mut own: Vec<ReportedHypothesis> = hypotheses
        .iter()
        .filter(|h| h.investigation_id == investigation.investigation_id)
        .rev()
        .map(|h| {
            let last = h.history.last();
            ReportedHypothesis {
                hypothesis_id: h.hypothesis_id.clone(),
                statement: h.statement.clone(),
                prediction: h.prediction.clone(),
                refuted_if: h.refuted_if.clone(),
                status: h.status.name().to_owned(),
                evidence: last.map(|c| c.evidence.clone()).unwrap_or_default(),
                note: last.and_then(|c| c.note.clone()),
            }
        })
        .collect();
    let hypotheses_total = own.len();
    own.truncate(REPORT_ITEMS);
    ReportedInvestigation {
        investigation_id: investigation.investigation_id,
        question: investigation.question,
        targets: investigation.targets,
        tags: investigation.tags,
        hypotheses: own,
        hypotheses_total,
    }
}

fn reported_finding(ws: &Workspace, f: &Finding) -> Result<ReportedFinding> {
    let hotspot = f.level == finding::EvidenceLevel::Hotspot;
    let references = f
        .references
        .iter()
        .map(|r| reported_reference(ws, r, hotspot))
        .collect::<Result<Vec<_>>>()?;
    let scope = f.references.iter().find_map(|r| reference_scope(r));
    Ok(ReportedFinding {
        finding_id: f.finding_id.clone(),
        investigation_id: f.investigation_id.clone(),
        revision: f.revision,
        claim: f.claim.clone(),
        level: f.level.name().to_owned(),
        retracted: f.retracted,
        numbers: f.numbers.clone(),
        references,
        scope,
    })
}

/// The run or artifact a reference is about, if it names one.
fn reference_scope(reference: &str) -> Option<String> {
    match reference.split_once(':')? {
        ("run", id) => Some(id.to_owned()),
        ("artifact", id) => Some(id.to_owned()),
        ("frame" | "window" | "measurements", rest) => {
            rest.split_once('@').map(|(scope, _)| scope.to_owned())
        }
        _ => None,
    }
}

fn reproduction(operation: &str, arguments: Value) -> Option<Reproduction> {
    Some(Reproduction {
        command: command_line(operation, &arguments),
        operation: operation.to_owned(),
        arguments,
    })
}

/// The recorded request without unset fields (a shorter command line).
fn set_fields(inputs: &Value) -> Value {
    match inputs {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn reported_reference(ws: &Workspace, reference: &str, hotspot: bool) -> Result<ReportedReference> {
    let (kind, id) = reference.split_once(':').unwrap_or(("run", reference));
    let mut numbers = BTreeMap::new();
    let get_evidence = || reproduction("get_evidence", json!({ "reference": reference }));
    let (holds, reproduce) = match kind {
        "comparison" | "analysis" => {
            let record_kind = if kind == "comparison" {
                RecordKind::Comparisons
            } else {
                RecordKind::Analyses
            };
            let record: Value = records::read_record(ws, record_kind, id)?;
            let (holds, operation) = if kind == "comparison" {
                (comparison_holds(&record, &mut numbers), "compare_run_sets")
            } else {
                (scaling_holds(&record, &mut numbers), "analyze_scaling")
            };
            (
                holds,
                reproduction(operation, set_fields(&record["inputs"])),
            )
        }
        "run" | "artifact" if hotspot => (
            format!("the {kind} whose hotspots the claim reads"),
            reproduction("analyze_hotspots", json!({ "target": id })),
        ),
        "run" => (
            "the run".to_owned(),
            reproduction("get_run", json!({ "target": id })),
        ),
        "frame" => {
            let (scope, frame) = id.split_once('@').unwrap_or((id, ""));
            // A hotspot's share is read from the hotspots; other claims
            // about a frame from its callers.
            let reproduce = if hotspot {
                reproduction("analyze_hotspots", json!({ "target": scope }))
            } else {
                reproduction(
                    "get_frame_callers",
                    json!({ "target": scope, "frame": frame }),
                )
            };
            (format!("frame {frame} in {scope}"), reproduce)
        }
        "window" => {
            let (scope, range) = id.split_once('@').unwrap_or((id, ""));
            let (start, end) = range.split_once("..").unwrap_or(("0", "0"));
            let start: i64 = start.parse().unwrap_or(0);
            let end: i64 = end.parse().unwrap_or(0);
            (
                format!("trace window {start}..{end} ns of {scope}"),
                reproduction(
                    "get_trace_window",
                    json!({ "target": scope, "start_ns": start, "end_ns": end }),
                ),
            )
        }
        "measurements" => {
            let (scope, prefix) = id.split_once('@').unwrap_or((id, ""));
            (
                format!("measurements {prefix}… of {scope}"),
                reproduction(
                    "query_measurements",
                    json!({ "target": scope, "name_prefix": prefix }),
                ),
            )
        }
        "commit" => (
            if crate::catalog::read_head(ws)?.as_deref() == Some(id) {
                "read at the current evidence (HEAD)".to_owned()
            } else {
                "read at an earlier commit: the evidence has changed since".to_owned()
            },
            None,
        ),
        _ => (format!("the {kind} record"), get_evidence()),
    };
    Ok(ReportedReference {
        reference: reference.to_owned(),
        holds,
        numbers,
        reproduce,
    })
}

/// A percentage with its sign, `+12.3 %`.
pub(super) fn signed_percent(fraction: f64) -> String {
    format!("{:+.1} %", fraction * 100.0)
}

fn comparison_holds(record: &Value, numbers: &mut BTreeMap<String, f64>) -> String {
    let result = &record["result"];
    let estimate = &result["estimate"];
    let metric = result["metric"].as_str().unwrap_or("the metric");
    let mut put = |name: &str, value: &Value| {
        if let Some(v) = value.as_f64() {
            numbers.insert(name.to_owned(), v);
        }
    };
    put("relative_change", &estimate["relative_change"]);
    put(
        "relative_interval_lower",
        &estimate["relative_interval"]["lower"],
    );
    put(
        "relative_interval_upper",
        &estimate["relative_interval"]["upper"],
    );
    put("pairs", &estimate["pairs"]);
    put("confidence_level", &estimate["confidence_level"]);
    let change = estimate["relative_change"].as_f64().map(signed_percent);
    let interval = match (
        estimate["relative_interval"]["lower"].as_f64(),
        estimate["relative_interval"]["upper"].as_f64(),
    ) {
        (Some(lo), Some(hi)) => format!(" [{}, {}]", signed_percent(lo), signed_percent(hi)),
        _ => String::new(),
    };
    format!(
        "{metric}: {}{interval} over {} pairs, decided {} ({})",
        change.unwrap_or_else(|| "no estimate".to_owned()),
        estimate["pairs"].as_u64().unwrap_or(0),
        result["decision"].as_str().unwrap_or("nothing"),
        result["validity"].as_str().unwrap_or("unknown validity"),
    )
}

fn scaling_holds(record: &Value, numbers: &mut BTreeMap<String, f64>) -> String {
    let result = &record["result"];
    let metric = result["metric"].as_str().unwrap_or("the metric");
    let parameter = result["parameter"].as_str().unwrap_or("the parameter");
    let mut parts = Vec::new();
    for variant in result["variants"].as_array().into_iter().flatten() {
        let name = variant["variant"].as_str().unwrap_or("all");
        let fit = &variant["fit"];
        let conclusion = &fit["conclusion"];
        let model = conclusion["model"]
            .as_str()
            .or(conclusion["best"].as_str())
            .unwrap_or("no fit");
        // The stated exponent (the offset power law's when fitted); records
        // written before it existed have only the plain power law's.
        let k = match &fit["growth_exponent"] {
            serde_json::Value::Null => &fit["power_law_exponent"],
            growth => growth,
        };
        if let (Some(est), Some(lo), Some(hi)) = (
            k["estimate"].as_f64(),
            k["lower"].as_f64(),
            k["upper"].as_f64(),
        ) {
            numbers.insert(format!("{name}.exponent"), est);
            numbers.insert(format!("{name}.exponent_lower"), lo);
            numbers.insert(format!("{name}.exponent_upper"), hi);
            parts.push(format!(
                "{name}: {} {model}, k = {est:.2} [{lo:.2}, {hi:.2}]",
                conclusion["status"].as_str().unwrap_or("")
            ));
        } else {
            parts.push(format!("{name}: {model}"));
        }
    }
    format!("{metric} against {parameter}: {}", parts.join("; "))
}
