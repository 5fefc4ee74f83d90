//! Application services: the one API both transports (CLI and MCP) call.
//!
//! A service takes typed requests, resolves scope against a pinned commit,
//! runs recipes under budgets and returns typed, serializable results that
//! carry `total`, `returned`, `truncated`, `next_cursor` and an `evidence`
//! status. Transports only parse arguments and render.
//!
//! The files sit in one folder per concern (ingest, query, evidence,
//! workload capture, declared experiments, workspace); each service keeps
//! its path here.

pub mod capability_setup;
pub mod declared_experiments;
pub mod evidence;
pub mod ingest;
pub mod investigations;
pub mod pipelines;
pub mod query;
pub mod reductions;
pub mod workload_capture;
pub mod workspace;

pub use declared_experiments::{
    detached_experiment, experiment_plan, experiment_records, experiment_run, experiments,
};
pub use evidence::{
    analysis_records, analysis_requests, compare, compare_checks, run_set_samples, run_sets,
    scaling,
};
pub use ingest::{
    confine, import, import_deadline, import_plan, import_progress, import_totals, re_extract,
    stale_extractions,
};
pub(crate) use query::narrower;
pub(crate) use query::summary_headline;
pub use query::{
    analyze, frame_instances, gpu, gpu_breakdown, gpu_diagnosis, gpu_gaps, measurements, memory,
    phase_window, pytorch, summary, summary_gpu, threads, views, window_count,
};
pub use workload_capture::{
    adapters, capture, capture_outputs, capture_run, dependencies, detached_capture, plans,
    workloads,
};
pub use workspace::{artifact_detail, capabilities, inventory, quarantine, viewer};

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::{self, Snapshot};
use crate::error::{ErrorCode, FlameoxError, Result};
use crate::query::{PinnedSession, QueryBudget, SessionCache, open_session};
use crate::runs;
use crate::store;
use crate::workspace::Workspace;

/// A next call: the operation and its arguments (each transport renders it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NextCall {
    pub operation: String,
    pub arguments: Value,
    pub why: String,
}

/// Whether an answer is complete, and what to do when it is not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceStatus {
    /// `available`, `empty`, `unavailable`, `partial` or `unknown`.
    pub status: String,
    /// Stable reason code.
    pub reason: String,
    /// The call that recovers what is missing; absent when none can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_arguments: Option<Value>,
    /// What the import could not read in full (limitation codes, e.g.
    /// `improper_nesting`); `get_run` gives their counts and messages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limitations: Vec<String>,
}

impl EvidenceStatus {
    pub fn available() -> Self {
        EvidenceStatus::new("available", "complete")
    }
    pub fn new(status: &str, reason: &str) -> Self {
        EvidenceStatus {
            status: status.into(),
            reason: reason.into(),
            next_tool: None,
            next_arguments: None,
            limitations: Vec::new(),
        }
    }
    pub fn with_next(mut self, tool: &str, arguments: Value) -> Self {
        self.next_tool = Some(tool.into());
        self.next_arguments = Some(arguments);
        self
    }
}

/// What a run-or-artifact argument resolved to. Answers show the first
/// [`inventory::ARTIFACTS_LISTED`] artifact ids, with `artifacts_total` and
/// the call that pages the rest past that (a 1,024-rank run would
/// otherwise put 75 kB of ids in every answer); the services use them all.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ResolvedScope {
    pub requested: String,
    pub run_id: Option<String>,
    pub artifact_ids: Vec<String>,
    /// Limitation codes recorded by the extractions in scope.
    pub limitations: Vec<String>,
}

impl Serialize for ResolvedScope {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let total = self.artifact_ids.len();
        let listed = total.min(inventory::ARTIFACTS_LISTED);
        let more = self
            .run_id
            .as_deref()
            .and_then(|run| inventory::more_artifacts(run, total));
        let mut out = serializer.serialize_struct("ResolvedScope", 6)?;
        out.serialize_field("requested", &self.requested)?;
        out.serialize_field("run_id", &self.run_id)?;
        out.serialize_field("artifact_ids", &self.artifact_ids[..listed])?;
        out.serialize_field("limitations", &self.limitations)?;
        if listed < total {
            out.serialize_field("artifacts_total", &total)?;
        }
        if let Some(more) = more {
            out.serialize_field("more_artifacts", &more)?;
        }
        out.end()
    }
}

/// Per-call options every query service accepts.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Lowers the configured deadline for this call.
    pub timeout: Option<Duration>,
    /// Reads this retained commit instead of HEAD (when no cursor names
    /// one): a side of a comparison as the evidence was before a change.
    pub commit: Option<String>,
}

/// The context a query service runs in: a workspace and (optionally) a
/// long-lived session cache.
#[derive(Clone)]
pub struct QueryContext<'a> {
    pub ws: &'a Workspace,
    pub cache: Option<&'a SessionCache>,
    pub options: CallOptions,
}

impl<'a> QueryContext<'a> {
    pub fn new(ws: &'a Workspace) -> Self {
        QueryContext {
            ws,
            cache: None,
            options: CallOptions::default(),
        }
    }

    /// Pins a commit (HEAD unless a cursor named one) and opens its session.
    pub fn session(&self, commit: Option<&str>) -> Result<PinnedSession> {
        let snapshot = match (commit, self.options.commit.as_deref()) {
            (Some(id), _) => catalog::load_snapshot(self.ws, Some(id)).map_err(|_| {
                FlameoxError::new(
                    ErrorCode::StaleCursor,
                    "the cursor's commit is no longer retained",
                )
                .remedy("repeat the call without a cursor to start paging again")
            })?,
            (None, Some(id)) => catalog::load_snapshot(self.ws, Some(id)).map_err(|_| {
                FlameoxError::invalid_argument(
                    "commit",
                    format!("commit {id} is not retained (never made, or collected by gc)"),
                )
            })?,
            (None, None) => catalog::pin_head(self.ws)?,
        };
        let snapshot = Arc::new(snapshot);
        let budget = QueryBudget::from_config(self.ws, self.options.timeout);
        match self.cache {
            Some(cache) => cache.get_or_open(self.ws, snapshot, budget),
            None => open_session(self.ws, snapshot, budget),
        }
    }
}

/// Resolves a run id or artifact id against a snapshot.
pub fn resolve_scope(ws: &Workspace, snapshot: &Snapshot, target: &str) -> Result<ResolvedScope> {
    check_id("target", target)?;
    if !target.starts_with("sha256:") && !runs::is_run_reference(target) {
        return Err(runs::malformed_target("target"));
    }
    let (run_id, artifact_ids) = if target.starts_with("sha256:") {
        store::read_artifact(ws, target)?;
        (None, vec![target.to_owned()])
    } else {
        let run = runs::read_run(ws, target)?;
        (
            Some(run.run_id.clone()),
            run.artifacts
                .iter()
                .map(|a| a.artifact_id.clone())
                .collect(),
        )
    };
    let mut limitations = Vec::new();
    for id in &artifact_ids {
        for generation in snapshot.generations_for(id) {
            for l in &generation.summary.limitations {
                if !limitations.contains(&l.code) {
                    limitations.push(l.code.clone());
                }
            }
        }
    }
    Ok(ResolvedScope {
        requested: target.to_owned(),
        run_id,
        artifact_ids,
        limitations,
    })
}

/// Whether any artifact in scope has published evidence in the snapshot.
pub fn has_evidence(snapshot: &Snapshot, scope: &ResolvedScope) -> bool {
    scope
        .artifact_ids
        .iter()
        .any(|id| snapshot.generations_for(id).next().is_some())
}

/// The status of an answer given whether it found rows.
pub fn answer_status(
    snapshot: &Snapshot,
    scope: &ResolvedScope,
    found_rows: bool,
    filtered: bool,
) -> EvidenceStatus {
    if !has_evidence(snapshot, scope) {
        return EvidenceStatus::new("unavailable", "evidence_not_extracted").with_next(
            "get_run",
            serde_json::json!({ "target": scope.run_id.as_deref().unwrap_or(&scope.requested) }),
        );
    }
    if !found_rows {
        let reason = if filtered {
            "filters_matched_nothing"
        } else {
            "no_matching_evidence"
        };
        return EvidenceStatus::new("empty", reason);
    }
    if scope.limitations.iter().any(|l| l == "truncated_input") {
        return EvidenceStatus::new("partial", "input_truncated");
    }
    if !scope.limitations.is_empty() {
        // Not `complete`: the import skipped or repaired something. No
        // call recovers that, so no `next` (get_run has the details).
        let mut status = EvidenceStatus::new("available", "with_import_limitations");
        status.limitations = scope.limitations.clone();
        return status;
    }
    EvidenceStatus::available()
}

/// Ids and names are bounded (≤ 200 chars) and never empty.
pub fn check_id(field: &str, value: &str) -> Result<()> {
    if value.is_empty() || value.chars().count() > 200 {
        return Err(FlameoxError::invalid_argument(
            field,
            "must be 1..=200 characters",
        ));
    }
    Ok(())
}
