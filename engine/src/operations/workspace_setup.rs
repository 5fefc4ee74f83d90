//! Declarations of the first calls of a session: creating the workspace,
//! what this build reads and runs, importing a trace (and extracting a
//! stored one again), and how a person opens an artifact in its native
//! viewer.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::schema::input_schema;
use super::session::{IMPORT_PHASES, REMOTE_IMPORT_PHASES, Session};
use super::{
    Answer, AnswerFuture, Body, Cell, FlagValue, Group, Operation, TerminalFlag, col, decode,
    to_value,
};
use crate::error::{FlameoxError, Result};
use crate::object_location::looks_like_url;
use crate::services::adapters::ProbeMode;
use crate::services::confine::confine_import_path;
use crate::services::import::{ImportRequest, import_artifact};
use crate::services::import_deadline::{ImportDeadline, deadline_error};
use crate::services::re_extract::{ExtractRequest, extract_artifact};
use crate::services::{capabilities, inventory};

/// One path, or several imported as one run.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Paths {
    One(#[schemars(length(min = 1, max = 4096))] String),
    Many(#[schemars(length(min = 1, max = 64))] Vec<String>),
}

/// Where an agent's import path must resolve.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceRoot {
    /// The project root.
    Project,
    /// The system temp folder.
    Temp,
}

/// What `initialize_workspace` asks.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InitArguments {
    /// Keep published evidence under this s3://, gs:// or az:// prefix, shared with every workspace initialized on it.
    #[schemars(length(min = 6, max = 1024))]
    pub store: Option<String>,
}

/// What `import_artifact` asks.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportArguments {
    /// File or folder (several: one run), relative to source_root; or an s3://, gs://, az://, https:// URL (a prefix ending in / is a folder).
    pub path: Paths,
    /// Root the path must resolve inside (default project).
    pub source_root: Option<SourceRoot>,
    /// Force a format, e.g. execution_trace (Chrome/Kineto JSON).
    #[schemars(length(max = 64))]
    pub kind: Option<String>,
    /// Force the producer, e.g. kineto, chromium.
    #[schemars(length(max = 64))]
    pub producer: Option<String>,
    /// Variant label, e.g. base.
    #[schemars(length(min = 1, max = 64))]
    pub variant: Option<String>,
    /// Workload parameters, kept on the run and its measurements.
    #[schemars(extend("maxProperties" = 32, "additionalProperties" = { "type": "string", "maxLength": 200 }))]
    pub parameters: Option<BTreeMap<String, String>>,
    /// Stop after this many seconds (default import.timeout_seconds, 3600); nothing is published.
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub timeout_seconds: Option<f64>,
}

/// What `extract_artifact` asks.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtractArguments {
    /// Artifact id (sha256:…), or a run of one artifact (latest, a run id or its prefix).
    #[schemars(length(min = 1, max = 200))]
    pub artifact: String,
    /// Read it as this format (an import kind); default: its stored kind.
    #[schemars(length(max = 64))]
    pub kind: Option<String>,
    /// Force the producer; default: as it was extracted.
    #[schemars(length(max = 64))]
    pub producer: Option<String>,
    /// Stop after this many seconds; nothing is replaced.
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub timeout_seconds: Option<f64>,
}

/// How much list_capabilities may run.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CapabilityMode {
    Passive,
    ActiveCached,
    ActiveRefresh,
}

/// What `list_capabilities` asks.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CapabilitiesRequest {
    /// passive (default: nothing runs), active_cached (last version probes), active_refresh (run them, bounded).
    pub mode: Option<CapabilityMode>,
}

pub(super) static OPERATIONS: &[Operation] = &[
    Operation {
        name: "initialize_workspace",
        cli: &["init"],
        title: "Initialize workspace",
        description: "Create the project's .flameox workspace (idempotent). Run once, before anything else.",
        // The seed: additive and idempotent (a second call changes nothing),
        // the annotations of the configure group.
        group: Group::Configure,
        positional: &[],
        schema: input_schema::<InitArguments>,
        run: Body::Session(run_init),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "list_capabilities",
        cli: &["capabilities"],
        title: "List capabilities",
        description: "Input formats, analyses, and capture adapters with versions, permissions and setup_adapters (what start_capability_setup can install).",
        group: Group::ReadOnly,
        positional: &[],
        schema: input_schema::<CapabilitiesRequest>,
        run: Body::Session(run_capabilities),
        rows: "",
        columns: &[],
        terminal: &[
            TerminalFlag {
                name: "active",
                value_name: "",
                help: "Reuse each adapter's last version probe (--mode active_cached).",
                value: FlagValue::Sets {
                    argument: "mode",
                    value: "active_cached",
                },
            },
            TerminalFlag {
                name: "refresh",
                value_name: "",
                help: "Run each adapter's version probe now, bounded (--mode active_refresh).",
                value: FlagValue::Sets {
                    argument: "mode",
                    value: "active_refresh",
                },
            },
        ],
    },
    Operation {
        name: "import_artifact",
        cli: &["import"],
        title: "Import artifact",
        description: "Import a trace, profile or benchmark result (pyperf, hyperfine, criterion, Google Benchmark) as a new run; content decides the format.",
        group: Group::Additive,
        positional: &["path"],
        schema: input_schema::<ImportArguments>,
        run: Body::Session(run_import),
        rows: "",
        columns: &[],
        terminal: &[],
    },
    Operation {
        name: "extract_artifact",
        cli: &["extract"],
        title: "Extract artifact again",
        description: "Read a stored artifact again with this build's extractor (or another kind or producer); the new evidence replaces the old for every run that reads it.",
        group: Group::Additive,
        positional: &["artifact"],
        schema: input_schema::<ExtractArguments>,
        run: Body::Session(run_extract),
        rows: "extractions",
        columns: &[
            col("run", "run_id", Cell::Id),
            col("generation", "generation_id", Cell::Id),
            col("producer", "producer", Cell::Text),
            col("rows", "rows_total", Cell::Integer),
            col("rows before", "rows_before_total", Cell::Integer),
        ],
        terminal: &[],
    },
    Operation {
        name: "get_native_viewer_plan",
        cli: &["open"],
        title: "Native viewer plan",
        description: "How a person opens an artifact (or a run's one artifact) in its native viewer (Perfetto UI, speedscope).",
        group: Group::ReadOnly,
        positional: &["target"],
        schema: input_schema::<ViewerRequest>,
        run: Body::Query(run_viewer_plan),
        rows: "",
        columns: &[],
        terminal: &[
            TerminalFlag {
                name: "launch",
                value_name: "",
                help: "Serve the original bytes on 127.0.0.1 and open the viewer's deep link.",
                value: FlagValue::Switch,
            },
            TerminalFlag {
                name: "wait",
                value_name: "SECONDS",
                help: "With --launch: seconds to wait for the viewer to fetch the trace (default 300).",
                value: FlagValue::Seconds,
            },
        ],
    },
];

fn run_init<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let args: InitArguments = decode(args)?;
        let outcome = inventory::init(s.project_root, args.store.as_deref())?;
        let mut summary = if outcome.created {
            format!("initialized flameox workspace {}", outcome.workspace_id)
        } else {
            format!("workspace {} already initialized", outcome.workspace_id)
        };
        if let Some(store) = &outcome.store {
            summary.push_str(&format!(
                "; evidence in {} ({} commits{})",
                store.url,
                store.commits,
                if store.commits > 0 {
                    "; list_runs shows what it holds"
                } else {
                    ""
                }
            ));
        }
        Ok(Answer::new(summary, to_value(&outcome)?))
    })
}

fn run_capabilities<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let r: CapabilitiesRequest = decode(args)?;
        let mode = match r.mode.unwrap_or(CapabilityMode::Passive) {
            CapabilityMode::Passive => ProbeMode::Passive,
            CapabilityMode::ActiveCached => ProbeMode::ActiveCached,
            CapabilityMode::ActiveRefresh => ProbeMode::ActiveRefresh,
        };
        let ws = s.workspace().ok();
        let caps =
            tokio::task::spawn_blocking(move || capabilities::capabilities(mode, ws.as_ref()))
                .await
                .map_err(|e| FlameoxError::internal(format!("capability probe failed: {e}")))?;
        let available = caps.adapters.iter().filter(|a| a.available).count();
        let mut summary = format!(
            "{} formats, {available} of {} capture adapters available",
            caps.formats.len(),
            caps.adapters.len()
        );
        if !caps.setup_third_party_adapters.is_empty() {
            let names: Vec<&str> = caps
                .setup_third_party_adapters
                .iter()
                .map(|a| a.adapter.as_str())
                .collect();
            summary += &format!("; prepare_adapter approves {}", names.join(", "));
        }
        if !caps.setup_adapters.is_empty() {
            let names: Vec<&str> = caps
                .setup_adapters
                .iter()
                .map(|a| a.adapter.as_str())
                .collect();
            summary += &format!("; start_capability_setup can install {}", names.join(", "));
        }
        Ok(Answer::new(summary, to_value(&caps)?))
    })
}

/// The artifact a viewer opens.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ViewerRequest {
    /// Artifact id (sha256:…), or a run of one artifact (latest, a run id or its prefix).
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
}

fn run_viewer_plan<'a>(qc: &'a crate::services::QueryContext<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let r: ViewerRequest = decode(args)?;
        let plan = capabilities::viewer_plan(qc.ws, &r.target)?;
        let mut answer = Answer::new(
            format!("{} opens in {}", plan.artifact_id, plan.viewer),
            to_value(&plan)?,
        );
        answer
            .links
            .push(format!("flameox://artifacts/{}", plan.artifact_id));
        Ok(answer)
    })
}

/// How long past its deadline an import may take to stop before the call
/// is answered without it (an extractor that missed its cancellation polls).
const IMPORT_STOP_GRACE: Duration = Duration::from_secs(30);

/// The import's files: confined to the project (or temp) root for an
/// agent, or when a root is named; as given otherwise.
fn import_paths(s: &Session<'_>, a: &ImportArguments) -> Result<Vec<PathBuf>> {
    let paths = match &a.path {
        Paths::One(p) => vec![p.clone()],
        Paths::Many(ps) => ps.clone(),
    };
    if paths.is_empty() {
        return Err(FlameoxError::invalid_argument(
            "path",
            "name at least one path",
        ));
    }
    let root = match a.source_root {
        Some(SourceRoot::Temp) => Some("temp"),
        Some(SourceRoot::Project) => Some("project"),
        None => s.confine_paths.then_some("project"),
    };
    // A URL reads no local file, so it is not confined; its credentials
    // are the user's environment's (docs/scale-out.md).
    paths
        .iter()
        .map(|p| match root {
            Some(root) if !looks_like_url(p) => confine_import_path(s.project_root, p, root),
            _ => Ok(PathBuf::from(p)),
        })
        .collect()
}

/// The answer of an import-like task. The task stops itself at its
/// deadline; this only answers the call if an extractor missed its polls
/// for much longer.
async fn within_deadline<T>(
    deadline: ImportDeadline,
    task: tokio::task::JoinHandle<Result<T>>,
    what: &str,
) -> Result<T> {
    match tokio::time::timeout(deadline.limit + IMPORT_STOP_GRACE, task).await {
        Ok(joined) => {
            joined.map_err(|e| FlameoxError::internal(format!("{what} task failed: {e}")))?
        }
        Err(_) => Err(deadline_error(deadline)
            .detail("still_stopping", true)
            .remedy(format!("the {what} did not stop in time; its staging folder is removed by the next import or `flameox recover`"))),
    }
}

/// The call's time limit: `timeout_seconds`, lowered by the session's.
fn call_timeout(s: &Session<'_>, seconds: Option<f64>) -> Result<Option<Duration>> {
    let asked = match seconds {
        Some(t) if t.is_finite() && t > 0.0 => Some(Duration::from_secs_f64(t.min(1e9))),
        Some(_) => {
            return Err(FlameoxError::invalid_argument(
                "timeout_seconds",
                "must be a positive number of seconds",
            ));
        }
        None => None,
    };
    Ok(match (asked, s.options.timeout) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    })
}

fn run_extract<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let a: ExtractArguments = decode(args)?;
        let request = ExtractRequest {
            artifact: a.artifact,
            kind: a.kind,
            producer: a.producer,
            timeout: call_timeout(s, a.timeout_seconds)?,
        };
        let ws = s.workspace()?;
        let deadline = ImportDeadline::of(&ws, request.timeout);
        let reporter = s.progress.reporter(&IMPORT_PHASES);
        let task = tokio::task::spawn_blocking(move || extract_artifact(&ws, &request, &*reporter));
        let result = within_deadline(deadline, task, "extraction").await?;
        let replaced: usize = result.extractions.iter().map(|e| e.replaced.len()).sum();
        let summary = if result.reused_generation {
            format!(
                "{} is already extracted by {} {}: nothing changed",
                result.artifact_id, result.extractor.name, result.extractor.version
            )
        } else {
            format!(
                "extracted {} again with {} {}: {} generation(s) replaced, {} run(s) now read the new evidence",
                result.artifact_id,
                result.extractor.name,
                result.extractor.version,
                replaced,
                result.runs_updated.len()
            )
        };
        let mut answer = Answer::new(summary, to_value(&result)?);
        answer
            .links
            .push(format!("flameox://artifacts/{}", result.artifact_id));
        for e in &result.extractions {
            answer.links.push(format!("flameox://runs/{}", e.run_id));
        }
        Ok(answer)
    })
}

fn run_import<'a>(s: &'a Session<'a>, args: Value) -> AnswerFuture<'a> {
    Box::pin(async move {
        let a: ImportArguments = decode(args)?;
        let timeout = call_timeout(s, a.timeout_seconds)?;
        let mut paths = import_paths(s, &a)?.into_iter();
        let request = ImportRequest {
            path: paths.next().unwrap_or_default(),
            more_paths: paths.collect(),
            kind: a.kind,
            producer: a.producer,
            variant: a.variant,
            parameters: a.parameters.unwrap_or_default(),
            timeout,
        };
        let ws = s.workspace()?;
        let deadline = ImportDeadline::of(&ws, timeout);
        let remote = std::iter::once(&request.path)
            .chain(&request.more_paths)
            .any(|p| p.to_str().is_some_and(looks_like_url));
        let phases: &'static [(&str, f64)] = if remote {
            &REMOTE_IMPORT_PHASES
        } else {
            &IMPORT_PHASES
        };
        let reporter = s.progress.reporter(phases);
        let task = tokio::task::spawn_blocking(move || import_artifact(&ws, &request, &*reporter));
        let result = within_deadline(deadline, task, "import").await?;
        let artifacts = result.artifacts.iter().map(|a| &a.artifact_id);
        let what = match result.artifacts_total {
            0 | 1 => result.kind.clone(),
            n => format!("{n} artifacts ({})", result.kind),
        };
        Ok(Answer::new(
            format!("imported {what} as run {}", result.run_id),
            to_value(&result)?,
        )
        .link_run(&result.run_id, artifacts))
    })
}
