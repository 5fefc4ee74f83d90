//! The operation catalog: each operation declared once — its name (the MCP
//! tool), its CLI path, title, one-line description, annotation group,
//! positional arguments, input schema (generated from the request type
//! serde decodes), handler (an engine service) and how a person reads its
//! result. The CLI's subcommands, the MCP tool list and dispatch, and the
//! generated operations table in `docs/operations.md` are rendered from it
//! (ripgrep's `flags/` is the model: one declaration, many renderings).
//!
//! Operations move here from the transports' older hand-kept tables one by
//! one; `docs/operations.md` lists the ones that have.

mod analyses;
pub mod arguments;
pub mod budget;
mod capability_setup;
pub mod command_line;
mod declare;
mod detached;
mod drilldown;
mod execution;
mod experiments;
mod failures;
mod findings;
mod gpu;
mod inventory;
mod investigations;
mod pipelines;
mod reductions;
mod reports;
mod run_sets;
pub mod schema;
pub mod session;
mod summary;
mod workloads;
mod workspace_setup;

use std::future::Future;
use std::pin::Pin;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{FlameoxError, Result};
use crate::services::QueryContext;
use crate::services::inventory::ARTIFACTS_LISTED;

pub use session::Session;

pub use declare::docs_table;
pub use detached::run_detached_worker;

/// Annotation groups (`interfaces.md`): what a call may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    /// Reads evidence; idempotent; closed world.
    ReadOnly,
    /// Adds runs or records; not idempotent.
    Additive,
    /// Edits configuration or creates the workspace; idempotent (the same
    /// call twice changes nothing the second time).
    Configure,
    /// Runs programs; open world.
    Execute,
}

/// Command words the terminal also accepts, as (command, alias): the
/// seed's spelling is the name (`investigations show`), and the word an
/// earlier build used stays an alias, so scripts keep working.
pub const CLI_ALIASES: &[(&[&str], &str)] = &[
    (&["investigations", "show"], "get"),
    (&["findings", "show"], "get"),
];

/// Flag spellings the terminal also accepts, as (operation, argument,
/// alias): the seed's `trace window <artifact> --start NS --end NS` beside
/// the argument's own `--start-ns`/`--end-ns`.
pub const CLI_FLAG_ALIASES: &[(&str, &str, &str)] = &[
    ("get_trace_window", "start_ns", "start"),
    ("get_trace_window", "end_ns", "end"),
];

/// Arguments a global command-line option already sets, as (operation,
/// argument, global flag): the command does not repeat them (one flag for
/// one idea); MCP keeps them.
pub const SET_BY_GLOBAL_OPTION: &[(&str, &str, &str)] =
    &[("import_artifact", "timeout_seconds", "timeout")];

/// Arguments only an agent's session can fill, as (operation, argument):
/// a plan id lives in one server's memory, so a command (one process)
/// never holds one. The command leaves them out; MCP keeps them.
pub const SESSION_ONLY_ARGUMENTS: &[(&str, &str)] = &[("start_detached_capture", "plan_id")];

/// How a person reads one column of an answer's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    /// Words: shortened in the middle when the table is wider than the
    /// terminal.
    Text,
    /// An identifier (a run or artifact id, a tid): whole, so it can be
    /// pasted into the next command, and numbers without separators.
    Id,
    /// A frame key, shown by its first 8 characters: every frame argument
    /// takes that prefix.
    Frame,
    /// The function of a frame's name (`fib` of `fib (/tmp/w.py:3)`).
    Function,
    /// Where a frame lives: `file:line` from its columns or its name, else
    /// its module (the `field` is not read).
    Location,
    Integer,
    /// Nanoseconds, shown as a duration.
    Duration,
    /// A percentage.
    Percent,
    /// A value of the answer's metric: a duration when the metric is in
    /// nanoseconds (`…_ns`), else a count.
    Measured,
    /// A size in bytes.
    Bytes,
}

/// One column of the human table.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub header: &'static str,
    /// The row field it shows.
    pub field: &'static str,
    pub cell: Cell,
}

/// A column (shorthand for the declarations).
pub const fn col(header: &'static str, field: &'static str, cell: Cell) -> Column {
    Column {
        header,
        field,
        cell,
    }
}

/// An option only a terminal offers: a file the command writes beside its
/// answer (an agent reads the answer; a person may want the picture).
#[derive(Debug, Clone, Copy)]
pub struct TerminalFlag {
    /// The long flag, e.g. `flamegraph`.
    pub name: &'static str,
    pub value_name: &'static str,
    pub help: &'static str,
    pub value: FlagValue,
}

/// What a terminal flag takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagValue {
    /// A file to write.
    Path,
    /// Nothing: on or off.
    Switch,
    /// A whole number of seconds.
    Seconds,
    /// A switch that sets the operation's `argument` to `value` (the
    /// contract's spellings, e.g. `capabilities --active --refresh`); a
    /// later flag of the list wins over an earlier one.
    Sets {
        argument: &'static str,
        value: &'static str,
    },
}

/// A finished call: one line that says what it found, and the result.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub summary: String,
    pub result: Value,
    /// Lines a person reads under the table (the terminal prints them; an
    /// agent reads the same facts in `result`).
    pub details: Vec<String>,
    /// The runs and artifacts the answer read, as `flameox://` resources.
    pub links: Vec<String>,
    /// A complete answer that is nonetheless negative (an invalid
    /// workspace): the terminal exits with this error's code after
    /// printing the answer; an agent reads the answer.
    pub verdict: Option<FlameoxError>,
}

impl Answer {
    pub fn new(summary: impl Into<String>, result: Value) -> Answer {
        Answer {
            summary: summary.into(),
            result,
            ..Answer::default()
        }
    }

    /// Links a run and its artifacts.
    pub fn link_run<'a>(
        mut self,
        run_id: &str,
        artifact_ids: impl IntoIterator<Item = &'a String>,
    ) -> Answer {
        self.links.push(format!("flameox://runs/{run_id}"));
        let listed = artifact_ids.into_iter().take(ARTIFACTS_LISTED);
        self.links
            .extend(listed.map(|artifact| format!("flameox://artifacts/{artifact}")));
        self
    }

    /// Links the run and artifacts a scope resolved to.
    pub fn scoped(mut self, scope: &crate::services::ResolvedScope) -> Answer {
        if let Some(run) = &scope.run_id {
            self.links.push(format!("flameox://runs/{run}"));
        }
        let listed = scope.artifact_ids.iter().take(ARTIFACTS_LISTED);
        self.links
            .extend(listed.map(|artifact| format!("flameox://artifacts/{artifact}")));
        self
    }
}

/// The words a command line groups operations under, with what each holds.
pub static CLI_GROUPS: &[(&str, &str)] = &[
    (
        "analyze",
        "Analyses. Example: `flameox analyze hotspots <run-id> --limit 20`",
    ),
    (
        "stacks",
        "A frame's callers, callees, stacks and slices. Example: `flameox stacks callers <run-id> aten::mm`",
    ),
    (
        "trace",
        "Events in a time window. Example: `flameox trace window <artifact> --start-ns 0 --end-ns 1000000`",
    ),
    ("runs", "Import runs. Example: `flameox runs list`"),
    (
        "artifacts",
        "Stored artifacts. Example: `flameox artifacts list`",
    ),
    (
        "evidence",
        "One record by typed reference (run:, artifact:, generation:, run_set:, analysis:, comparison:, investigation:, hypothesis:, finding:). Example: `flameox evidence get run_set:rs_…`",
    ),
    (
        "investigations",
        "Investigations an agent can resume: a question, its targets and hypotheses. Example: `flameox investigations create --question \"why is step time up?\" --target latest`",
    ),
    (
        "hypotheses",
        "Hypotheses of an investigation, each with a prediction and what would refute it. Example: `flameox hypotheses record --investigation-id inv_… --statement … --prediction … --refuted-if …`",
    ),
    (
        "findings",
        "Claims of an investigation at a stated evidence level, with checked references. Example: `flameox findings record --investigation-id inv_… --claim … --level measured_regression --references comparison:cmp_…`",
    ),
    (
        "measurements",
        "Benchmark samples and run resources. Example: `flameox measurements query <run-id> --name-prefix pyperf.`",
    ),
];

/// The future a handler returns.
pub type AnswerFuture<'a> = Pin<Box<dyn Future<Output = Result<Answer>> + Send + 'a>>;

/// An operation's body: decodes its request from the arguments and calls
/// one engine service.
pub type Handler = for<'a> fn(&'a QueryContext<'a>, Value) -> AnswerFuture<'a>;

/// The body of an operation that needs more than an open workspace.
pub type SessionHandler = for<'a> fn(&'a Session<'a>, Value) -> AnswerFuture<'a>;

/// What runs an operation.
#[derive(Clone, Copy)]
pub enum Body {
    /// Reads or records in an existing workspace.
    Query(Handler),
    /// Needs the project root, progress and cancellation, or held plans.
    Session(SessionHandler),
}

/// One operation.
#[derive(Clone, Copy)]
pub struct Operation {
    /// The MCP tool name (snake_case, verb first).
    pub name: &'static str,
    /// The CLI path, e.g. `["stacks", "instances"]`.
    pub cli: &'static [&'static str],
    pub title: &'static str,
    /// One line; both transports show it.
    pub description: &'static str,
    pub group: Group,
    /// Arguments given by position on the command line, in order.
    pub positional: &'static [&'static str],
    /// The strict input schema (from the request type).
    pub schema: fn() -> Value,
    pub run: Body,
    /// The field that holds the answer's ranked list (what a page counts).
    pub rows: &'static str,
    /// How a person reads the rows; none when the terminal draws the
    /// answer with its own view (several tables, stacks, sections).
    pub columns: &'static [Column],
    /// Options only the terminal offers.
    pub terminal: &'static [TerminalFlag],
}

impl Operation {
    /// Runs the operation in a transport's session.
    /// The arguments are checked against the input schema first, so both
    /// transports refuse the same calls with the same fields.
    pub async fn call(&self, session: &Session<'_>, args: Value) -> Result<Answer> {
        let schema = (self.schema)();
        match &args {
            Value::Object(map) => arguments::check(self.name, &schema, map)?,
            _ => {
                return Err(FlameoxError::invalid_argument(
                    "arguments",
                    "must be an object",
                ));
            }
        }
        let answer = self.run_once(session, args.clone()).await?;
        // A default page over the byte budget: ask again for the rows that
        // fit, so its cursor continues where the cut page stops.
        let budgeted = session.budgeted
            && self.group == Group::ReadOnly
            && !self.rows.is_empty()
            && args.get("limit").is_none()
            && schema["properties"].get("limit").is_some();
        if !budgeted {
            return Ok(answer);
        }
        let Some(fit) = budget::rows_that_fit(&answer.result, self.rows) else {
            return Ok(answer);
        };
        let mut args = args;
        args["limit"] = Value::from(fit);
        let mut cut = self.run_once(session, args).await?;
        let pages = schema["properties"].get("cursor").is_some();
        budget::mark_cut(&mut cut.result, self.rows, fit, pages);
        Ok(cut)
    }

    async fn run_once(&self, session: &Session<'_>, args: Value) -> Result<Answer> {
        match self.run {
            Body::Query(handler) => {
                let ws = session.workspace()?;
                let qc = session.query(&ws);
                handler(&qc, args).await
            }
            Body::Session(handler) => handler(session, args).await,
        }
    }

    /// Whether a command line offers it (an operation only an agent's
    /// session can complete has no command).
    pub fn has_command(&self) -> bool {
        !self.cli.is_empty()
    }
}

impl std::fmt::Debug for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operation")
            .field("name", &self.name)
            .finish()
    }
}

/// Every catalogued operation, in the order clients see them.
pub fn catalog() -> &'static [Operation] {
    static ALL: std::sync::LazyLock<Vec<Operation>> = std::sync::LazyLock::new(|| {
        workspace_setup::OPERATIONS
            .iter()
            .chain(inventory::OPERATIONS)
            .chain(summary::OPERATIONS)
            .chain(drilldown::OPERATIONS)
            .chain(analyses::OPERATIONS)
            .chain(gpu::OPERATIONS)
            .chain(run_sets::OPERATIONS)
            .chain(failures::OPERATIONS)
            .chain(execution::OPERATIONS)
            .chain(workloads::OPERATIONS)
            .chain(capability_setup::OPERATIONS)
            .chain(detached::OPERATIONS)
            .chain(experiments::OPERATIONS)
            .chain(investigations::OPERATIONS)
            .chain(findings::OPERATIONS)
            .chain(reports::OPERATIONS)
            .chain(reductions::OPERATIONS)
            .chain(pipelines::OPERATIONS)
            .copied()
            .collect()
    });
    &ALL
}

/// The operation with this MCP name.
pub fn by_name(name: &str) -> Option<&'static Operation> {
    catalog().iter().find(|op| op.name == name)
}

/// Decodes a request; a field error names the field.
pub(crate) fn decode<T: DeserializeOwned>(args: Value) -> Result<T> {
    serde_json::from_value(args).map_err(|e| {
        let text = e.to_string();
        let field = text
            .split('`')
            .nth(1)
            .filter(|f| f.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or("arguments")
            .to_owned();
        FlameoxError::invalid_argument(&field, &text)
    })
}

/// A result as JSON (nulls left out: an absent field says the same).
pub fn to_value<T: Serialize>(value: &T) -> Result<Value> {
    let mut v = serde_json::to_value(value).map_err(|e| {
        FlameoxError::new(
            crate::error::ErrorCode::InternalError,
            format!("encoding: {e}"),
        )
    })?;
    strip_nulls(&mut v);
    Ok(v)
}

fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|_, x| !x.is_null());
            map.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// A long name (a C++ kernel's, say) cut for a one-line summary; the
/// result carries it in full.
pub(crate) fn summary_name(name: &str) -> String {
    crate::services::summary::shorten(name)
}
