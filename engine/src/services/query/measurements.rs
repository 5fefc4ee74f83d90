//! `measurements query` / `query_measurements`: benchmark samples and run
//! resources from the `measurements` table, filtered by run, name prefix
//! and warmups, keyset-paged by a signed cursor pinned to its commit.
//!
//! A run scope reads exactly the run's extractions (its generations in
//! the pinned commit), not every extraction of its artifacts: the same
//! file imported with another `--variant` or `--param` is another
//! generation of the same artifact, and must not leak into this run.

use flameox_recipes::measurements::{
    self, MeasurementKey, MeasurementQuery, MeasurementRow, MeasurementScope,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::catalog::Snapshot;
use crate::error::Result;
use crate::query::run_budgeted;
use crate::runs;
use crate::services::analyze::{pin_for_cursor, stale_key};
use crate::services::{
    EvidenceStatus, QueryContext, ResolvedScope, answer_status, check_id, resolve_scope,
};

/// Cursor family of this query.
const FAMILY: &str = "measurements";

/// What `query_measurements` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MeasurementsRequest {
    /// Run or artifact id; default every run.
    #[schemars(length(min = 1, max = 200))]
    pub target: Option<String>,
    /// Only names starting with this, e.g. pyperf. or hyperfine.
    #[schemars(length(min = 1, max = 200))]
    pub name_prefix: Option<String>,
    /// Include warmup samples (left out by default).
    #[serde(default)]
    pub include_warmups: bool,
    /// Rows per page (default 20).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// next_cursor of the previous page.
    #[schemars(length(min = 1, max = 4096))]
    pub cursor: Option<String>,
}

/// A page of measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasurementsResult {
    /// The resolved run or artifact (`None` for every measurement).
    pub scope: Option<ResolvedScope>,
    pub commit_id: String,
    pub rows: Vec<MeasurementRow>,
    pub total: u64,
    pub returned: usize,
    pub truncated: bool,
    pub next_cursor: Option<String>,
    pub evidence: EvidenceStatus,
}

/// The extractions a resolved scope reads in `snapshot`.
fn scope_of(
    resolved: &ResolvedScope,
    run_generations: &[String],
    snapshot: &Snapshot,
) -> MeasurementScope {
    if resolved.run_id.is_none() {
        return MeasurementScope::Artifacts(resolved.artifact_ids.clone());
    }
    let pairs = snapshot
        .generations_listed(run_generations)
        .map(|g| (g.inputs.run_id.clone(), g.inputs.artifact_id.clone()))
        .collect();
    MeasurementScope::Extractions(pairs)
}

/// One page of measurements.
pub async fn query_measurements(
    qc: &QueryContext<'_>,
    req: &MeasurementsRequest,
) -> Result<MeasurementsResult> {
    let limit = qc.ws.config.row_limit(req.limit)?;
    if let Some(prefix) = &req.name_prefix {
        check_id("name_prefix", prefix)?;
    }
    let params = json!({
        "target": req.target, "name_prefix": req.name_prefix, "include_warmups": req.include_warmups,
    });
    let (session, codec, key) = pin_for_cursor(qc, FAMILY, &params, req.cursor.as_deref())?;
    let (after, known_total) = match key {
        Some(k) => {
            let (key, total) =
                serde_json::from_value::<(MeasurementKey, u64)>(k).map_err(|_| stale_key())?;
            (Some(key), Some(total))
        }
        None => (None, None),
    };
    let resolved = match &req.target {
        Some(target) => Some(resolve_scope(qc.ws, &session.snapshot, target)?),
        None => None,
    };
    let scope = match &resolved {
        Some(r) => {
            let generations = match &r.run_id {
                Some(run_id) => runs::read_run(qc.ws, run_id)?.generation_ids,
                None => Vec::new(),
            };
            scope_of(r, &generations, &session.snapshot)
        }
        None => MeasurementScope::All,
    };
    let query = MeasurementQuery {
        scope,
        name_prefix: req.name_prefix.clone(),
        include_warmups: req.include_warmups,
        limit,
        after,
        known_total,
    };
    let answer = run_budgeted(
        &session,
        measurements::query_measurements(&session.ctx, &query),
    )
    .await?;
    let next_cursor = match (answer.has_more, answer.rows.last()) {
        (true, Some(last)) => {
            let key = MeasurementKey {
                name: last.name.clone(),
                artifact_id: last.artifact_id.clone(),
                sample_index: last.sample_index,
                measurement_id: last.measurement_id.clone(),
            };
            Some(codec.encode(
                FAMILY,
                session.snapshot.commit_id(),
                &params,
                json!([key, answer.total]),
            )?)
        }
        _ => None,
    };
    let filtered = req.name_prefix.is_some();
    let found = answer.total > 0;
    let evidence = match &resolved {
        Some(r) => answer_status(&session.snapshot, r, found, filtered),
        None if found => EvidenceStatus::available(),
        None => EvidenceStatus::new("empty", "no_measurements").with_next("list_runs", json!({})),
    };
    Ok(MeasurementsResult {
        scope: resolved,
        commit_id: session.snapshot.commit_id().to_owned(),
        returned: answer.rows.len(),
        rows: answer.rows,
        total: answer.total,
        truncated: answer.has_more,
        next_cursor,
        evidence,
    })
}
