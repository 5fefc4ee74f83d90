//! Declarations of the workspace inventory: its status and validation, the
//! runs and artifacts it holds, and any record by typed reference.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::schema::input_schema;
use super::{Answer, AnswerFuture, Body, Cell, Group, Operation, col, decode, to_value};
use crate::error::{ErrorCode, FlameoxError};
use crate::services::inventory::RunFilter;
use crate::services::stale_extractions::{WorkspaceValidation, stale_extractions};
use crate::services::{QueryContext, artifact_detail, inventory};

/// No arguments.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArguments {}

/// What `validate_workspace` asks.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidateRequest {
    /// Also verify hashes.
    pub full: Option<bool>,
}

/// A filtered, sorted page of runs.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunsRequest {
    /// Rows per page (default 20).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// next_cursor of the previous page (of the same filters and sort).
    #[schemars(length(min = 1, max = 4096))]
    pub cursor: Option<String>,
    /// Only imports or only executions (captures, trials).
    pub run_type: Option<RunType>,
    /// A status of the run's execution, extraction or validation: completed, failed, interrupted, timed_out, cancelled.
    #[schemars(length(min = 1, max = 40))]
    pub status: Option<String>,
    /// Only captures of this declared workload.
    #[schemars(length(min = 1, max = 200))]
    pub workload: Option<String>,
    /// newest (default) or oldest first.
    pub sort: Option<RunOrder>,
}

/// The kinds of run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunType {
    Import,
    Execution,
}

impl RunType {
    fn as_str(self) -> &'static str {
        match self {
            RunType::Import => "import",
            RunType::Execution => "execution",
        }
    }
}

/// The order of a run listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunOrder {
    Newest,
    Oldest,
}

/// A page of stored artifacts, or of one run's.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactsRequest {
    /// Only this run's artifacts (run id, prefix or latest), in run order.
    #[schemars(length(min = 1, max = 200))]
    pub run: Option<String>,
    /// Rows per page (default 20).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// next_cursor of the previous page.
    #[schemars(length(min = 1, max = 4096))]
    pub cursor: Option<String>,
}

/// One run.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// Run id, a unique prefix of one, or latest.
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
}

/// One artifact.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactRequest {
    /// Artifact id (sha256:…), or a run of one artifact (latest, a run id or prefix).
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// One run's registration of it (run id, prefix or latest).
    #[schemars(length(min = 1, max = 200))]
    pub run_id: Option<String>,
    /// Registrations per page (default 20).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// next_cursor of the previous page.
    #[schemars(length(min = 1, max = 4096))]
    pub cursor: Option<String>,
}

/// One record by typed reference.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvidenceRequest {
    /// run:<uuid>, artifact:sha256:<hex>, generation:<uuid>, run_set:rs_…, analysis:an_…, comparison:cmp_…, investigation:inv_…, hypothesis:hyp_…, finding:fnd_….
    #[schemars(length(min = 1, max = 200))]
    pub reference: String,
}

pub(super) static OPERATIONS: &[Operation] = &[
    Operation {
        name: "workspace_status",
        cli: &["status"],
        title: "Workspace status",
        description: "Workspace id, HEAD commit, counts of runs, artifacts and evidence rows, and detached operations still running with the call that polls each.",
        group: Group::ReadOnly,
        positional: &[],
        schema: input_schema::<NoArguments>,
        run: Body::Query(run_status),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "validate_workspace",
        cli: &["validate"],
        title: "Validate workspace",
        description: "Check manifests, row counts and schemas (full=true: hashes too); list evidence an older extractor made. Never repairs.",
        group: Group::ReadOnly,
        positional: &[],
        schema: input_schema::<ValidateRequest>,
        run: Body::Query(run_validate),
        rows: "errors",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "list_runs",
        cli: &["runs", "list"],
        title: "List runs",
        description: "Runs, newest first (sort oldest), filtered by run_type, status or workload, paged.",
        group: Group::ReadOnly,
        positional: &[],
        schema: input_schema::<RunsRequest>,
        run: Body::Query(run_list_runs),
        rows: "items",
        columns: &[
            col("run", "run_id", Cell::Id),
            col("created", "created_at", Cell::Text),
            col("extraction", "extraction", Cell::Text),
            col("events", "trace_events", Cell::Integer),
            col("input", "original_names", Cell::Text),
        ],
        terminal: &[],
    },
    Operation {
        name: "get_run",
        cli: &["runs", "show"],
        title: "Get run",
        description: "One run's manifest: status, artifacts, evidence rows, limitations.",
        group: Group::ReadOnly,
        positional: &["target"],
        schema: input_schema::<RunRequest>,
        run: Body::Query(run_get_run),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "list_artifacts",
        cli: &["artifacts", "list"],
        title: "List artifacts",
        description: "Stored artifacts (id, kind, size, name), or one run's in order with ranks; paged. No bytes.",
        group: Group::ReadOnly,
        positional: &[],
        schema: input_schema::<ArtifactsRequest>,
        run: Body::Query(run_list_artifacts),
        rows: "items",
        columns: &[
            col("artifact", "artifact_id", Cell::Id),
            col("kind", "kind", Cell::Text),
            col("size", "bytes", Cell::Bytes),
            col("name", "original_name", Cell::Text),
            col("rank", "rank", Cell::Integer),
        ],
        terminal: &[],
    },
    Operation {
        name: "get_artifact",
        cli: &["artifacts", "show"],
        title: "Get artifact",
        description: "One artifact's identity, kind, size, sensitivity, integrity, supported analyses and the runs that registered it (paged; run_id picks one). No bytes, no paths.",
        group: Group::ReadOnly,
        positional: &["target"],
        schema: input_schema::<ArtifactRequest>,
        run: Body::Query(run_get_artifact),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "get_evidence",
        cli: &["evidence", "get"],
        title: "Get evidence",
        description: "One run, artifact, generation, run set, analysis or comparison by typed reference.",
        group: Group::ReadOnly,
        positional: &["reference"],
        schema: input_schema::<EvidenceRequest>,
        run: Body::Query(run_evidence),
        rows: "",
        columns: &[],
        terminal: &[],
    },
];

fn run_status<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let _: NoArguments = decode(args)?;
        let s = inventory::status(qc.ws)?;
        let summary = format!(
            "workspace {}: {} runs, {} artifacts, {} generations",
            s.workspace_id, s.runs, s.artifacts, s.generations
        );
        Ok(Answer::new(summary, to_value(&s)?))
    })
}

fn run_validate<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: ValidateRequest = decode(args)?;
        let report = crate::validate::validate(qc.ws, req.full.unwrap_or(false))?;
        // A HEAD that does not read (a newer schema, damage) is the
        // report's to explain; nothing can be listed as stale then.
        let stale = crate::catalog::pin_head(qc.ws)
            .map(|head| stale_extractions(&head))
            .unwrap_or_default();
        let mut summary = if report.ok { "valid" } else { "INVALID" }.to_owned();
        if stale.total > 0 {
            summary += &format!(
                "; {} artifacts extracted by an older extractor (extract_artifact refreshes each)",
                stale.total
            );
        }
        let ok = report.ok;
        let errors = report.errors.len();
        let mut answer = Answer::new(
            summary,
            to_value(&WorkspaceValidation {
                report,
                stale_extractions: stale,
            })?,
        );
        if !ok {
            answer.verdict = Some(
                FlameoxError::new(ErrorCode::WorkspaceInvalid, "validation failed")
                    .detail("errors", errors),
            );
        }
        Ok(answer)
    })
}

fn run_list_runs<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: RunsRequest = decode(args)?;
        let filter = RunFilter {
            run_type: req.run_type.map(|t| t.as_str().to_owned()),
            status: req.status,
            workload: req.workload,
            oldest_first: req.sort == Some(RunOrder::Oldest),
        };
        let page = inventory::list_runs(qc.ws, &filter, req.limit, req.cursor.as_deref())?;
        let filtered =
            filter.run_type.is_some() || filter.status.is_some() || filter.workload.is_some();
        let mut answer = Answer::new(
            format!(
                "{} of {} {}runs, {} first",
                page.returned,
                page.total,
                if filtered { "matching " } else { "" },
                if filter.oldest_first {
                    "oldest"
                } else {
                    "newest"
                }
            ),
            to_value(&page)?,
        );
        for run in &page.items {
            answer.links.push(format!("flameox://runs/{}", run.run_id));
        }
        Ok(answer)
    })
}

fn run_get_run<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: RunRequest = decode(args)?;
        let run = inventory::show_run(qc.ws, &req.target)?;
        let artifacts = run.run.artifacts.iter().map(|a| &a.artifact_id);
        Ok(
            Answer::new(format!("run {}", run.run.run_id), to_value(&run)?)
                .link_run(&run.run.run_id, artifacts),
        )
    })
}

fn run_list_artifacts<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: ArtifactsRequest = decode(args)?;
        let page =
            inventory::list_artifacts(qc.ws, req.run.as_deref(), req.limit, req.cursor.as_deref())?;
        Ok(Answer::new(
            format!("{} of {} artifacts", page.returned, page.total),
            to_value(&page)?,
        ))
    })
}

fn run_get_artifact<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: ArtifactRequest = decode(args)?;
        let detail = artifact_detail::show_artifact(
            qc.ws,
            &req.target,
            req.run_id.as_deref(),
            req.limit,
            req.cursor.as_deref(),
        )?;
        let id = detail.record.artifact_id.clone();
        let mut summary = format!(
            "artifact {} ({}, {}, used by {} runs; integrity {})",
            &id[..id.len().min(15)],
            detail.record.kind,
            detail.sensitivity.replace('_', " "),
            detail.registrations.total,
            detail.integrity.status.replace('_', " ")
        );
        if let Some(s) = &detail.stale_extraction {
            summary += &format!(
                "; extracted by {} {} (this build: {}): extract_artifact refreshes it",
                s.extractor, s.extractor_version, s.current_version
            );
        }
        let mut answer = Answer::new(summary, to_value(&detail)?);
        answer.links.push(format!("flameox://artifacts/{id}"));
        Ok(answer)
    })
}

fn run_evidence<'a>(qc: &'a QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let req: EvidenceRequest = decode(args)?;
        let value = inventory::evidence_get(qc.ws, &req.reference)?;
        let short: String = req.reference.chars().take(24).collect();
        Ok(Answer::new(format!("evidence {short}"), value))
    })
}
