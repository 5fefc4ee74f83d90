//! Workspace inventory: init, status, config, runs and artifacts.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::catalog;
use crate::config::Config;
use crate::cursor::CursorCodec;
use crate::error::Result;
use crate::runs::{self, RunManifest};
use crate::services::{NextCall, check_id};
use crate::store::{self, ArtifactRecord};
use crate::workspace::{InitOutcome, Workspace};

/// `flameox status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceStatus {
    pub workspace_id: String,
    pub flameox_version: String,
    pub head_commit: Option<String>,
    pub generations: usize,
    pub runs: usize,
    pub artifacts: usize,
    pub evidence_rows: std::collections::BTreeMap<String, u64>,
    pub evidence_bytes: u64,
    /// Detached operations still queued or running (newest first, at most
    /// [`ACTIVE_LISTED`]), each with the call that polls it.
    #[serde(default)]
    pub active_operations: Vec<ActiveOperation>,
    #[serde(default)]
    pub active_operations_total: usize,
}

/// Active operations a status lists.
pub const ACTIVE_LISTED: usize = 16;

/// One detached operation still at work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActiveOperation {
    pub operation_id: String,
    /// `capture`, `experiment` or `capability_setup`.
    pub kind: String,
    pub status: String,
    pub phase: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent: Option<f64>,
    pub created_at: String,
    pub next: NextCall,
}

/// Creates (or opens) the workspace; with `store`, puts its evidence on
/// that shared prefix (see [`crate::shared_store::attach`]).
pub fn init(project_root: &std::path::Path, store: Option<&str>) -> Result<InitOutcome> {
    let (ws, mut outcome) = Workspace::init(project_root)?;
    if let Some(url) = store {
        let (_, state) = crate::shared_store::attach(&ws, url)?;
        outcome.store = Some(state);
    }
    Ok(outcome)
}

pub fn status(ws: &Workspace) -> Result<WorkspaceStatus> {
    let snapshot = catalog::pin_head(ws)?;
    let (active, active_operations_total) = crate::detached::lifecycle::active(ws, ACTIVE_LISTED);
    let mut evidence_rows = std::collections::BTreeMap::new();
    let mut evidence_bytes = 0;
    for g in &snapshot.generations {
        for f in &g.files {
            *evidence_rows.entry(f.table.clone()).or_insert(0) += f.rows;
            evidence_bytes += f.bytes;
        }
    }
    Ok(WorkspaceStatus {
        workspace_id: ws.identity.workspace_id.clone(),
        flameox_version: env!("CARGO_PKG_VERSION").into(),
        head_commit: snapshot.commit.as_ref().map(|c| c.commit_id.clone()),
        generations: snapshot.generations.len(),
        runs: runs::list_run_ids(ws).len(),
        artifacts: store::list_artifacts(ws)?.len(),
        evidence_rows,
        evidence_bytes,
        active_operations: active
            .into_iter()
            .map(|r| ActiveOperation {
                next: NextCall {
                    operation: crate::detached::lifecycle::get_tool(&r.kind).to_owned(),
                    arguments: json!({ "operation_id": r.operation_id, "wait_seconds": 20 }),
                    why: "poll it; the same idempotency key also reconnects".to_owned(),
                },
                operation_id: r.operation_id,
                kind: r.kind,
                status: r.status.word().to_owned(),
                phase: r.phase,
                percent: r.percent,
                created_at: r.created_at,
            })
            .collect(),
        active_operations_total,
    })
}

pub fn config_show(ws: &Workspace) -> Config {
    ws.config.clone()
}

/// A run as listed (the manifest without bulky fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub run_id: String,
    pub run_type: String,
    pub created_at: String,
    pub extraction: String,
    pub validation: String,
    pub artifact_ids: Vec<String>,
    pub original_names: Vec<String>,
    pub reused_generation: bool,
    pub trace_events: u64,
    pub limitations: usize,
}

impl From<&RunManifest> for RunSummary {
    fn from(run: &RunManifest) -> Self {
        RunSummary {
            run_id: run.run_id.clone(),
            run_type: run.run_type.clone(),
            created_at: run.created_at.clone(),
            extraction: run.status.extraction.clone(),
            validation: run.status.validation.clone(),
            artifact_ids: run
                .artifacts
                .iter()
                .map(|a| a.artifact_id.clone())
                .collect(),
            original_names: run
                .artifacts
                .iter()
                .map(|a| a.original_name.clone())
                .collect(),
            reused_generation: run.reused_generation,
            trace_events: run.rows.get("trace_events").copied().unwrap_or(0),
            limitations: run.limitation_details.len(),
        }
    }
}

/// A page of any listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListPage<T> {
    pub items: Vec<T>,
    pub total: u64,
    pub returned: usize,
    pub truncated: bool,
    pub next_cursor: Option<String>,
}

pub(crate) fn page<T: Clone>(
    ws: &Workspace,
    family: &str,
    all: Vec<(String, T)>,
    limit: Option<usize>,
    cursor: Option<&str>,
) -> Result<ListPage<T>> {
    let limit = ws.config.row_limit(limit)?;
    let codec = CursorCodec::new(ws.cursor_key()?);
    let params = json!({ "family": family });
    let after = match cursor {
        Some(c) => codec
            .decode(c, family, &params)?
            .key
            .as_str()
            .map(str::to_owned),
        None => None,
    };
    let total = all.len() as u64;
    let rest: Vec<(String, T)> = all
        .into_iter()
        .filter(|(k, _)| after.as_ref().is_none_or(|a| k > a))
        .collect();
    let truncated = rest.len() > limit;
    let items: Vec<(String, T)> = rest.into_iter().take(limit).collect();
    let next_cursor = match (truncated, items.last()) {
        (true, Some((k, _))) => Some(codec.encode(family, "listing", &params, json!(k))?),
        _ => None,
    };
    let items: Vec<T> = items.into_iter().map(|(_, v)| v).collect();
    Ok(ListPage {
        returned: items.len(),
        items,
        total,
        truncated,
        next_cursor,
    })
}

/// Which runs `list_runs` keeps, and in which order (the seed: "filtered,
/// sorted, and paginated").
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFilter {
    /// `import` or `execution`.
    pub run_type: Option<String>,
    /// A status any of the run's execution, extraction or validation has
    /// (`failed`, `interrupted`, `completed`, …).
    pub status: Option<String>,
    /// The declared workload a capture ran.
    pub workload: Option<String>,
    /// Oldest first instead of newest first.
    pub oldest_first: bool,
}

impl RunFilter {
    fn keeps(&self, run: &RunManifest) -> bool {
        let status = &run.status;
        self.run_type.as_ref().is_none_or(|t| *t == run.run_type)
            && self.status.as_ref().is_none_or(|s| {
                [&status.execution, &status.extraction, &status.validation]
                    .iter()
                    .any(|have| have.eq_ignore_ascii_case(s))
            })
            && self.workload.as_ref().is_none_or(|w| {
                run.metadata.get("workload").and_then(|v| v.as_str()) == Some(w.as_str())
            })
    }

    /// The cursor family: a cursor of one filter and order never pages
    /// another (`STALE_CURSOR`). The unfiltered newest-first listing keeps
    /// the family `runs` its cursors always had.
    fn family(&self) -> String {
        if *self == RunFilter::default() {
            return "runs".to_owned();
        }
        let digest = crate::fsutil::digest_json(&json!([
            self.run_type,
            self.status,
            self.workload,
            self.oldest_first
        ]));
        format!("runs-{}", &digest[..16.min(digest.len())])
    }
}

/// Runs that pass `filter`, newest first unless it says oldest.
pub fn list_runs(
    ws: &Workspace,
    filter: &RunFilter,
    limit: Option<usize>,
    cursor: Option<&str>,
) -> Result<ListPage<RunSummary>> {
    let mut all: Vec<(String, RunSummary)> = runs::list_runs(ws)?
        .into_iter()
        .map(|r| runs::with_live_status(ws, r))
        .filter(|r| filter.keeps(r))
        .map(|r| (r.run_id.clone(), RunSummary::from(&r)))
        .collect();
    if !filter.oldest_first {
        all.reverse();
        // Newest first: page keys descend, so invert them for the keyset
        // filter.
        all = all.into_iter().map(|(k, v)| (invert(&k), v)).collect();
    }
    page(ws, &filter.family(), all, limit, cursor)
}

fn invert(run_id: &str) -> String {
    run_id
        .chars()
        .map(|c| {
            c.to_digit(16)
                .map(|d| char::from_digit(15 - d, 16).unwrap_or(c))
                .unwrap_or(c)
        })
        .collect()
}

pub fn show_run(ws: &Workspace, run_id: &str) -> Result<RunView> {
    check_id("run_id", run_id)?;
    runs::read_run(ws, run_id).map(|run| RunView::of(runs::with_live_status(ws, run)))
}

/// Artifacts (and generation ids) an answer about one run or import lists
/// in full; `list_artifacts` with the run pages the rest, so the answer
/// about a 1,024-rank run stays a few kilobytes.
pub const ARTIFACTS_LISTED: usize = 20;

/// The call that pages a run's artifacts, when an answer listed only the
/// first [`ARTIFACTS_LISTED`] of `total`.
pub fn more_artifacts(run_id: &str, total: usize) -> Option<NextCall> {
    (total > ARTIFACTS_LISTED).then(|| NextCall {
        operation: "list_artifacts".into(),
        arguments: json!({ "run": run_id, "limit": 100 }),
        why: format!(
            "all {total} artifacts of the run in run order (with each one's rank), paged; \
             this answer lists the first {ARTIFACTS_LISTED}"
        ),
    })
}

/// A run as answers show it: the manifest with its first
/// [`ARTIFACTS_LISTED`] artifacts and generation ids, their totals, and
/// the call that pages the rest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunView {
    #[serde(flatten)]
    pub run: RunManifest,
    pub artifacts_total: usize,
    pub generations_total: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub more_artifacts: Option<NextCall>,
}

impl RunView {
    pub fn of(mut run: RunManifest) -> RunView {
        let artifacts_total = run.artifacts.len();
        let generations_total = run.generation_ids.len();
        run.artifacts.truncate(ARTIFACTS_LISTED);
        run.generation_ids.truncate(ARTIFACTS_LISTED);
        RunView {
            more_artifacts: more_artifacts(&run.run_id, artifacts_total),
            run,
            artifacts_total,
            generations_total,
        }
    }
}

/// One row of `list_artifacts`: the stored record and, when the listing
/// is one run's, the artifact's rank in a multi-process job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtifactRow {
    #[serde(flatten)]
    pub record: ArtifactRecord,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<i64>,
}

/// Stored artifacts by id, or one run's artifacts in run order (`run`).
pub fn list_artifacts(
    ws: &Workspace,
    run: Option<&str>,
    limit: Option<usize>,
    cursor: Option<&str>,
) -> Result<ListPage<ArtifactRow>> {
    let Some(run_id) = run else {
        let all = store::list_artifacts(ws)?
            .into_iter()
            .map(|record| {
                let key = record.artifact_id.clone();
                (key, ArtifactRow { record, rank: None })
            })
            .collect();
        return page(ws, "artifacts", all, limit, cursor);
    };
    check_id("run", run_id)?;
    let manifest = runs::read_run(ws, run_id)?;
    let mut all = Vec::with_capacity(manifest.artifacts.len());
    for (index, artifact) in manifest.artifacts.iter().enumerate() {
        let rank = artifact
            .metadata
            .get("distributedInfo")
            .and_then(|d| d.get("rank"))
            .and_then(serde_json::Value::as_i64);
        // Zero-padded positions sort as the run lists them.
        all.push((format!("{index:010}"), (artifact.artifact_id.clone(), rank)));
    }
    let family = format!("artifacts of run {}", manifest.run_id);
    let listed = page(ws, &family, all, limit, cursor)?;
    // Only the page's records are read (a 1,024-rank run pages 20 at a time).
    let items = listed
        .items
        .iter()
        .map(|(id, rank)| {
            Ok(ArtifactRow {
                record: store::read_artifact(ws, id)?,
                rank: *rank,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(ListPage {
        returned: items.len(),
        items,
        total: listed.total,
        truncated: listed.truncated,
        next_cursor: listed.next_cursor,
    })
}

/// The kinds `evidence get` accepts.
pub const EVIDENCE_KINDS: [&str; 9] = [
    "run",
    "artifact",
    "generation",
    "run_set",
    "analysis",
    "comparison",
    "investigation",
    "hypothesis",
    "finding",
];

/// `get_evidence` / `evidence get`: one record by typed reference
/// (`run:<uuid>`, `artifact:sha256:<hex>`, `generation:<uuid>`,
/// `run_set:rs_…`, `analysis:an_…`, `comparison:cmp_…`, `investigation:inv_…`,
/// `hypothesis:hyp_…`).
pub fn evidence_get(ws: &Workspace, reference: &str) -> Result<serde_json::Value> {
    use crate::error::{ErrorCode, FlameoxError};
    let to_value = |v: serde_json::Result<serde_json::Value>| {
        v.map_err(|e| FlameoxError::internal(format!("serializing a record: {e}")))
    };
    let (kind, id) = reference.split_once(':').ok_or_else(|| {
        FlameoxError::invalid_argument("reference", "expected <kind>:<id>, e.g. run:<uuid>")
            .detail("valid_kinds", EVIDENCE_KINDS.to_vec())
    })?;
    check_id("reference", id)?;
    let value = match kind {
        "run" => to_value(serde_json::to_value(show_run(ws, id)?))?,
        "artifact" => to_value(serde_json::to_value(super::artifact_detail::show_artifact(
            ws, id, None, None, None,
        )?))?,
        "generation" => {
            let snapshot = catalog::pin_head(ws)?;
            let generation = snapshot
                .generations
                .iter()
                .find(|g| g.generation_id == id)
                .cloned()
                .ok_or_else(|| {
                    FlameoxError::new(ErrorCode::RunNotFound, format!("no active generation {id}"))
                })?;
            to_value(serde_json::to_value(generation))?
        }
        "run_set" | "analysis" | "comparison" => {
            let kind = match kind {
                "run_set" => crate::records::RecordKind::RunSets,
                "analysis" => crate::records::RecordKind::Analyses,
                _ => crate::records::RecordKind::Comparisons,
            };
            crate::records::read_record::<serde_json::Value>(ws, kind, id)?
        }
        "investigation" => to_value(serde_json::to_value(crate::revisions::read_current::<
            crate::services::investigations::investigation::Investigation,
        >(
            ws,
            crate::revisions::RevisionedKind::Investigations,
            id,
        )?))?,
        "hypothesis" => to_value(serde_json::to_value(crate::revisions::read_current::<
            crate::services::investigations::hypothesis::Hypothesis,
        >(
            ws,
            crate::revisions::RevisionedKind::Hypotheses,
            id,
        )?))?,
        "finding" => to_value(serde_json::to_value(
            crate::services::investigations::finding::get(ws, id)?,
        ))?,
        other => {
            let near = crate::error::closest(other, EVIDENCE_KINDS, 1);
            return Err(FlameoxError::invalid_argument(
                "reference",
                format!("unknown kind {other}"),
            )
            .detail("closest", near)
            .detail("valid_kinds", EVIDENCE_KINDS.to_vec()));
        }
    };
    Ok(serde_json::json!({ "reference": reference, "kind": kind, "record": value }))
}
