//! Dispatch: one function per command, each calling one engine service and
//! rendering its result.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use flameox_engine::error::Result;
use flameox_engine::services::import::{
    ImportProgress, ImportRequest, ImportResult, import_artifact,
};
use flameox_engine::services::import_deadline::{ImportDeadline, deadline_error};
use flameox_engine::services::{CallOptions, inventory};
use flameox_engine::{FlameoxError, Workspace, WorkspaceLocator, validate};
use serde::Serialize;

use crate::render::{self, thousands};
use crate::{CatalogAction, Cli, Command, ConfigAction, GlobalOptions, McpCommand};

fn locator(g: &GlobalOptions) -> WorkspaceLocator {
    WorkspaceLocator {
        workspace: g.workspace.clone(),
        project_root: g.project_root.clone(),
    }
}

pub(crate) fn open(g: &GlobalOptions) -> Result<Workspace> {
    Workspace::locate(&locator(g))
}

pub(crate) fn emit<T: Serialize>(
    g: &GlobalOptions,
    value: &T,
    text: impl FnOnce(&T) -> String,
) -> Result<()> {
    let out = if g.json {
        serde_json::to_string_pretty(value).map_err(|e| FlameoxError::internal(e.to_string()))?
            + "\n"
    } else if g.quiet {
        String::new()
    } else {
        text(value)
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.as_bytes());
    Ok(())
}

pub(crate) fn block_on<F: std::future::Future>(fut: F) -> Result<F::Output> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| FlameoxError::internal(format!("starting the runtime: {e}")))?;
    Ok(runtime.block_on(fut))
}

pub(crate) fn call_options(g: &GlobalOptions) -> Result<CallOptions> {
    let timeout = match g.timeout {
        Some(t) if t.is_finite() && t > 0.0 => Some(Duration::from_secs_f64(t)),
        Some(_) => {
            return Err(FlameoxError::invalid_argument(
                "timeout",
                "must be a positive number of seconds",
            ));
        }
        None => None,
    };
    Ok(CallOptions { timeout })
}

pub fn run(cli: Cli) -> Result<()> {
    let g = &cli.global;
    match cli.command {
        Command::Init => {
            let root = locator(g).init_root()?;
            let outcome = inventory::init(&root)?;
            emit(g, &outcome, |o| {
                if o.created {
                    format!("initialized flameox workspace {}\n", o.workspace_id)
                } else {
                    format!("workspace {} already initialized\n", o.workspace_id)
                }
            })
        }
        Command::Capabilities => crate::capture::capabilities_command(g),
        Command::Config {
            action: ConfigAction::Show,
        } => {
            let ws = open(g)?;
            let config = inventory::config_show(&ws);
            emit(g, &config, |c| format!("{c:#?}\n"))
        }
        Command::Catalog {
            action: CatalogAction::Validate { full },
        } => crate::operations::run_named(
            g,
            "validate_workspace",
            serde_json::json!({ "full": full }),
        ),
        Command::Recover => {
            let ws = open(g)?;
            let report = validate::recover(&ws)?;
            emit(g, &report, |r| {
                format!(
                    "removed {} staging entries, moved {} orphans to trash, marked {} runs interrupted\n",
                    r.staging_removed,
                    r.orphans_moved_to_trash.len(),
                    r.interrupted_runs.len()
                )
            })
        }
        Command::Import {
            paths,
            kind,
            producer,
            params,
            variant,
        } => {
            let parameters = crate::params::parse_params(&params)?;
            let ws = open(g)?;
            let progress = CliProgress::new(!g.json && !g.quiet && std::io::stderr().is_terminal());
            let mut paths = paths.into_iter();
            let request = ImportRequest {
                path: paths.next().unwrap_or_default(),
                more_paths: paths.collect(),
                kind,
                producer,
                variant,
                parameters,
                timeout: call_options(g)?.timeout,
            };
            arm_import_backstop(ImportDeadline::of(&ws, request.timeout), g.json);
            let result = import_artifact(&ws, &request, &progress);
            progress.finish();
            let result = result?;
            emit(g, &result, render_import)
        }
        Command::Open {
            artifact,
            launch,
            wait,
        } => crate::open::open_command(g, &artifact, launch, wait),
        Command::Mcp { action } => mcp_command(g, action),
        Command::Workload { action } => crate::workload::workload_command(g, action),
        Command::Capture { action } => crate::capture::capture_dispatch(g, action),
        Command::Experiment { action } => crate::experiment::experiment_command(g, action),
    }
}

/// How long past its deadline an import may take to stop by itself.
const IMPORT_STOP_GRACE: Duration = Duration::from_secs(30);

/// The last resort behind an import's deadline: the import stops itself
/// at its deadline (the extractors poll for it); should one miss its polls
/// for another [`IMPORT_STOP_GRACE`], the process reports the deadline and
/// exits 8 as a crash would end it — nothing half-published (publication
/// is atomic), the staging folder removed by the next writer.
fn arm_import_backstop(deadline: ImportDeadline, json: bool) {
    let _ = std::thread::Builder::new()
        .name("import-backstop".into())
        .spawn(move || {
            std::thread::sleep(deadline.limit + IMPORT_STOP_GRACE);
            let err = deadline_error(deadline).detail("still_stopping", true);
            crate::report_error(&err, json);
            std::process::exit(err.exit_code());
        });
}

/// Progress bar on a TTY, nothing on a pipe; Ctrl-C cancels.
pub(crate) struct CliProgress {
    bar: Option<indicatif::ProgressBar>,
    cancelled: Arc<AtomicBool>,
}

impl CliProgress {
    pub(crate) fn new(show: bool) -> CliProgress {
        let cancelled = Arc::new(AtomicBool::new(false));
        let flag = cancelled.clone();
        let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
        let bar = show.then(|| {
            let bar = indicatif::ProgressBar::new(0);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{msg:>20} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec})",
            ) {
                bar.set_style(style);
            }
            bar
        });
        CliProgress { bar, cancelled }
    }

    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The text of `flameox import`: one artifact as before, several as a list.
fn render_import(r: &ImportResult) -> String {
    let events = |rows: &std::collections::BTreeMap<String, u64>| {
        thousands(*rows.get("trace_events").unwrap_or(&0) as i64)
    };
    // A sampled profile has stacks, not timed events: say what it has.
    let stacks_only = |rows: &std::collections::BTreeMap<String, u64>| {
        let n = |k: &str| *rows.get(k).unwrap_or(&0) as i64;
        (n("trace_events") == 0 && n("frames") > 0).then(|| {
            format!(
                "  no timed events: {} distinct stacks over {} frames (samples per thread: flameox threads {})\n",
                thousands(n("stack_nodes")),
                thousands(n("frames")),
                r.run_id
            )
        })
    };
    let reused = |yes: bool| {
        if yes {
            " (evidence reused from an earlier import)"
        } else {
            ""
        }
    };
    let mut out = if r.artifacts.len() > 1 {
        let mut out = format!(
            "imported {} artifacts ({}) as run {}\n  {} events, {} tracks{}\n",
            r.artifacts.len(),
            render::bytes(r.bytes),
            r.run_id,
            events(&r.rows),
            r.tracks,
            reused(r.reused_generation)
        );
        for a in &r.artifacts {
            out += &format!(
                "  {} ({}, {}, {}): artifact {}, {} events{}\n",
                a.original_name,
                a.kind,
                a.producer,
                render::bytes(a.bytes),
                a.artifact_id,
                events(&a.rows),
                reused(a.reused_generation)
            );
        }
        out
    } else {
        let contents = match stacks_only(&r.rows) {
            Some(_) => String::new(),
            None => format!("  {} events, {} tracks\n", events(&r.rows), r.tracks),
        };
        format!(
            "imported {} ({}, {}) as run {}{}\n  artifact {}\n{contents}",
            r.kind,
            r.producer,
            render::bytes(r.bytes),
            r.run_id,
            reused(r.reused_generation),
            r.artifact_id,
        )
    };
    if let Some(line) = stacks_only(&r.rows) {
        out += &line;
    }
    for l in &r.limitations {
        out += &format!("  limitation {} ×{}: {}\n", l.code, l.count, l.message);
    }
    match r.rows.get("measurements").copied().filter(|n| *n > 0) {
        Some(n) => {
            out += &format!("  {} measurements\n", thousands(n as i64));
            out += &format!("next: flameox measurements query --run {}\n", r.run_id);
        }
        None => out += &format!("next: flameox analyze summary {}\n", r.run_id),
    }
    out
}

impl ImportProgress for CliProgress {
    fn phase(&self, phase: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(phase.to_owned());
        }
    }
    fn bytes(&self, done: u64, total: u64) {
        if let Some(bar) = &self.bar {
            bar.set_length(total);
            bar.set_position(done);
        }
    }
    fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }
}

fn mcp_command(g: &GlobalOptions, action: McpCommand) -> Result<()> {
    let project_root = g
        .project_root
        .clone()
        .unwrap_or_else(|| std::path::PathBuf::from("."));
    let options = flameox_mcp::ServerOptions {
        project_root: project_root.clone(),
        workspace: g.workspace.clone(),
    };
    match action {
        McpCommand::Serve { init } => {
            if init {
                inventory::init(&project_root)?;
            }
            block_on(flameox_mcp::serve_stdio(options, &g.log_level))?
                .map_err(FlameoxError::internal)
        }
        McpCommand::Inspect => {
            let surface = flameox_mcp::inspect(options);
            let text = if g.json {
                serde_json::to_string_pretty(&surface).unwrap_or_default()
            } else {
                let mut out = format!("{}\n\n", surface["instructions"].as_str().unwrap_or(""));
                for tool in surface["tools"].as_array().into_iter().flatten() {
                    out += &format!(
                        "{:<24} {}\n",
                        tool["name"].as_str().unwrap_or(""),
                        tool["description"].as_str().unwrap_or("")
                    );
                }
                out
            };
            // A reader that stops early (`| head -c 3000`) is not an error.
            let _ = writeln!(std::io::stdout().lock(), "{text}");
            Ok(())
        }
    }
}
