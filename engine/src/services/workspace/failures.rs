//! `analyze failures`: every import, capture and experiment trial that did
//! not end well, with its typed reason, newest first — so an agent asks
//! once "what went wrong here?" instead of paging runs and trials and
//! reading each. Runs are read with their live status (a run whose writer
//! died reads `interrupted` before `recover` writes it).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::inventory::{ListPage, page};
use crate::error::{FlameoxError, Result};
use crate::records::{self, RecordKind};
use crate::revisions::newest_first_key;
use crate::runs;
use crate::services::EvidenceStatus;
use crate::services::declared_experiments::experiment_records::TrialRecord;
use crate::workspace::Workspace;

/// Where a failure happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// An import of a file the extractor could not read to the end.
    Import,
    /// A capture or run of a declared workload.
    Capture,
    /// An experiment trial.
    Trial,
}

/// Which failures to list.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FailuresRequest {
    /// Only imports, captures or trials.
    pub kind: Option<FailureKind>,
    /// Only this error code or status (e.g. ARTIFACT_PARSE_FAILED, interrupted).
    #[schemars(length(min = 1, max = 64))]
    pub code: Option<String>,
    /// Only this experiment's trials (ex_…).
    #[schemars(length(min = 1, max = 80))]
    pub experiment_id: Option<String>,
    /// Rows per page (default 20).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// next_cursor of the previous page.
    #[schemars(length(min = 1, max = 4096))]
    pub cursor: Option<String>,
}

/// One failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub kind: FailureKind,
    /// The run (imports, captures) or trial id.
    pub id: String,
    pub run_id: Option<String>,
    pub experiment_id: Option<String>,
    /// When it ended (or started, if it never ended).
    pub at: String,
    /// The status it ended in (`failed`, `interrupted`, `timed_out`, …).
    pub status: String,
    /// The typed error code, or the status when there is none.
    pub code: String,
    pub reason: String,
    /// The input's file name(s) (imports) or the workload (captures).
    pub input: String,
    /// The error's remedy, when it has one.
    pub remedy: Option<String>,
}

/// A page of failures and the counts per reason over all of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailuresPage {
    #[serde(flatten)]
    pub page: ListPage<Failure>,
    /// `code` → how many (over every matching failure, not only this page).
    pub by_code: std::collections::BTreeMap<String, usize>,
    /// Every run and trial record was read: `available` with failures,
    /// `empty` (reason `no_failures`) when none matches — a complete
    /// negative answer — and `partial` (reason `unreadable_trial_records`)
    /// when a trial record could not be read.
    pub evidence: EvidenceStatus,
}

const GOOD: [&str; 5] = ["completed", "not_applicable", "pending", "running", ""];

fn run_failure(run: runs::RunManifest) -> Option<Failure> {
    let bad = |s: &str| !GOOD.contains(&s);
    let status = [&run.status.execution, &run.status.extraction]
        .into_iter()
        .find(|s| bad(s))?
        .clone();
    let kind = if run.run_type == "import" {
        FailureKind::Import
    } else {
        FailureKind::Capture
    };
    let (code, reason, remedy) = match &run.error {
        Some(e) => (
            e.code.as_str().to_owned(),
            e.message.clone(),
            e.remediation.first().cloned(),
        ),
        None if status == "interrupted" => (
            status.clone(),
            "its flameox process ended before the run finished (killed, crashed or timed out)"
                .to_owned(),
            Some("run it again; `flameox recover` cleans what it left".to_owned()),
        ),
        None => (status.clone(), format!("ended {status}"), None),
    };
    let input = match kind {
        FailureKind::Import => run
            .artifacts
            .iter()
            .map(|a| a.original_name.clone())
            .collect::<Vec<_>>()
            .join(", "),
        _ => run
            .metadata
            .get("workload")
            .and_then(|w| w.as_str())
            .unwrap_or(&run.run_type)
            .to_owned(),
    };
    Some(Failure {
        kind,
        id: run.run_id.clone(),
        run_id: Some(run.run_id),
        experiment_id: None,
        at: run.updated_at,
        status,
        code,
        reason,
        input,
        remedy,
    })
}

fn trial_failure(trial: TrialRecord) -> Option<Failure> {
    if trial.status == "completed" {
        return None;
    }
    Some(Failure {
        kind: FailureKind::Trial,
        id: trial.trial_id.clone(),
        run_id: trial.run_id,
        experiment_id: Some(trial.experiment_id),
        at: trial.finished_at,
        code: trial.status.clone(),
        reason: trial
            .failure
            .unwrap_or_else(|| format!("ended {}", trial.status)),
        status: trial.status,
        input: format!("{} {:?}", trial.variant, trial.parameters),
        remedy: None,
    })
}

/// `analyze_failures`: newest first, filtered, paged.
pub fn failures(ws: &Workspace, req: &FailuresRequest) -> Result<FailuresPage> {
    if let Some(id) = &req.experiment_id {
        if req.kind.is_some_and(|k| k != FailureKind::Trial) {
            return Err(FlameoxError::invalid_argument(
                "experiment_id",
                "only trials belong to an experiment: drop kind or use kind trial",
            ));
        }
        records::read_record::<serde_json::Value>(ws, RecordKind::Experiments, id)?;
    }
    let mut all = Vec::new();
    if req.kind.is_none_or(|k| k != FailureKind::Trial) && req.experiment_id.is_none() {
        for run in runs::list_runs(ws)? {
            all.extend(run_failure(runs::with_live_status(ws, run)));
        }
    }
    let mut unreadable = 0usize;
    if req.kind.is_none_or(|k| k == FailureKind::Trial) {
        for id in records::list_record_ids(ws, RecordKind::Trials) {
            match records::read_record::<TrialRecord>(ws, RecordKind::Trials, &id) {
                Ok(trial)
                    if req
                        .experiment_id
                        .as_ref()
                        .is_none_or(|e| *e == trial.experiment_id) =>
                {
                    all.extend(trial_failure(trial));
                }
                Ok(_) => {}
                Err(_) => unreadable += 1,
            }
        }
    }
    all.retain(|f| {
        req.kind.is_none_or(|k| k == f.kind)
            && req
                .code
                .as_ref()
                .is_none_or(|c| c.eq_ignore_ascii_case(&f.code))
    });
    let mut by_code = std::collections::BTreeMap::new();
    for f in &all {
        *by_code.entry(f.code.clone()).or_insert(0) += 1;
    }
    let mut rows: Vec<(String, Failure)> = all
        .into_iter()
        .map(|f| (newest_first_key(&format!("{}|{}", f.at, f.id)), f))
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let evidence = if unreadable > 0 {
        EvidenceStatus::new("partial", "unreadable_trial_records")
    } else if rows.is_empty() {
        EvidenceStatus::new("empty", "no_failures")
    } else {
        EvidenceStatus::available()
    };
    Ok(FailuresPage {
        page: page(ws, "failures", rows, req.limit, req.cursor.as_deref())?,
        by_code,
        evidence,
    })
}
