//! `plan_reduction`: what a reduction will read and make, without reading
//! any evidence — inputs, rows and bytes come from the generation
//! manifests of the pinned HEAD, the time from a stated read rate.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::Result;
use crate::services::query::analyze::default_metric;
use crate::services::{QueryContext, resolve_scope};
use flameox_recipes::ArtifactScope;

/// Tables a `merged_stacks` reduction reads.
const STACK_TABLES: [&str; 3] = ["frames", "stack_nodes", "samples"];
/// Inputs listed in a plan (all are counted).
const INPUTS_LISTED: usize = 8;
/// Evidence rows a reduction reads (and publishes) per second: 128,000
/// measured end to end on a generated 64-rank job of 2.57 M events
/// (422,686 rows of `frames`, `stack_nodes` and `samples`: 3.3 s, debug
/// build, 2 cores), rounded down; the estimate says so.
pub const READ_ROWS_PER_SECOND: f64 = 100_000.0;

/// What a reduction derives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReductionKind {
    /// One stack profile of the whole target: every artifact's (rank's)
    /// and thread's weights of one metric summed per stack, by frame
    /// identity.
    #[default]
    MergedStacks,
}

impl ReductionKind {
    pub fn name(self) -> &'static str {
        match self {
            ReductionKind::MergedStacks => "merged_stacks",
        }
    }
}

/// What `plan_reduction` (and `execute_reduction`) ask.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReductionRequest {
    /// Run id (or a unique prefix, or latest) or artifact id to reduce.
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// What to derive (default merged_stacks).
    #[serde(default)]
    pub kind: Option<ReductionKind>,
    /// Metric; default the target's primary one.
    #[schemars(length(max = 64))]
    pub metric: Option<String>,
}

/// One input generation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedInput {
    pub artifact_id: String,
    pub generation_id: String,
    /// Rows of the tables the reduction reads.
    pub rows: u64,
    pub bytes: u64,
}

/// The plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReductionPlan {
    pub kind: ReductionKind,
    pub target: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    pub metric: String,
    /// The commit the plan was made against.
    pub commit_id: String,
    pub inputs_total: usize,
    /// The first 8 inputs.
    pub inputs: Vec<PlannedInput>,
    /// Rows and bytes of `frames`, `stack_nodes` and `samples` over every input.
    pub rows_to_read: u64,
    pub bytes_to_read: u64,
    pub estimated_seconds: f64,
    pub estimate_basis: String,
    /// What the reduction publishes.
    pub output: String,
    /// Digest of the kind, metric and input generations: `execute_reduction`
    /// refuses to run when the inputs changed since.
    pub plan_digest: String,
    pub next: Value,
}

/// Plans a reduction of `req.target` at HEAD.
pub async fn plan_reduction(
    qc: &QueryContext<'_>,
    req: &ReductionRequest,
) -> Result<ReductionPlan> {
    let kind = req.kind.unwrap_or_default();
    let session = qc.session(None)?;
    let scope = resolve_scope(qc.ws, &session.snapshot, &req.target)?;
    let artifacts = ArtifactScope {
        artifact_ids: scope.artifact_ids.clone(),
    };
    let metric = default_metric(&session, &artifacts, req.metric.as_deref()).await?;
    let mut inputs = Vec::new();
    for artifact in &scope.artifact_ids {
        for g in session.snapshot.generations_for(artifact) {
            let files = g
                .files
                .iter()
                .filter(|f| STACK_TABLES.contains(&f.table.as_str()));
            let (rows, bytes) = files.fold((0, 0), |(r, b), f| (r + f.rows, b + f.bytes));
            inputs.push(PlannedInput {
                artifact_id: artifact.clone(),
                generation_id: g.generation_id.clone(),
                rows,
                bytes,
            });
        }
    }
    let rows_to_read: u64 = inputs.iter().map(|i| i.rows).sum();
    let bytes_to_read: u64 = inputs.iter().map(|i| i.bytes).sum();
    let generations: Vec<&str> = inputs.iter().map(|i| i.generation_id.as_str()).collect();
    let plan_digest = crate::fsutil::sha256_hex(
        json!({ "kind": kind.name(), "metric": metric, "generations": generations })
            .to_string()
            .as_bytes(),
    );
    let inputs_total = inputs.len();
    inputs.truncate(INPUTS_LISTED);
    Ok(ReductionPlan {
        kind,
        target: scope.requested.clone(),
        run_id: scope.run_id.clone(),
        commit_id: session.snapshot.commit_id().to_owned(),
        inputs_total,
        inputs,
        rows_to_read,
        bytes_to_read,
        estimated_seconds: rows_to_read as f64 / READ_ROWS_PER_SECOND,
        estimate_basis: format!(
            "rows to read ÷ {READ_ROWS_PER_SECOND} rows/s (measured end to end on a generated 64-rank job, debug build, 2 cores)"
        ),
        output: format!(
            "a new run with one `reduced_stacks` artifact: frames, stack_nodes, samples, frame_totals and call_edges of `{metric}`, every artifact and thread summed per stack"
        ),
        next: json!({
            "tool": "execute_reduction",
            "arguments": {
                "target": scope.run_id.as_deref().unwrap_or(&scope.requested),
                "kind": kind.name(),
                "metric": metric,
                "plan_digest": plan_digest,
                "idempotency_key": "choose a key of 8-128 characters",
            }
        }),
        metric,
        plan_digest,
    })
}
