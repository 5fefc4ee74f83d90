//! `flameox`: the command-line transport. Parses arguments, calls the engine's
//! services, renders tables or `--json`, and maps errors to exit codes. No
//! domain logic lives here.

mod analysis_views;
mod analyze;
mod capture;
mod commands;
mod experiment;
mod gaps_memory_view;
mod gpu_breakdown;
mod import_view;
mod inventory_views;
mod open;
mod operations;
mod params;
mod render;
mod run_set_views;
mod stack_views;
mod views;
mod workload;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use flameox_engine::FlameoxError;

/// A local evidence engine for performance investigations.
#[derive(Parser, Debug)]
#[command(name = "flameox", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalOptions,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command accepts.
#[derive(Args, Debug, Clone)]
pub struct GlobalOptions {
    /// Use this `.flameox` workspace folder.
    #[arg(long, global = true, value_name = "PATH")]
    pub workspace: Option<PathBuf>,
    /// Project root whose `.flameox` to use.
    #[arg(long, global = true, value_name = "PATH")]
    pub project_root: Option<PathBuf>,
    /// Print the result model as one JSON document.
    #[arg(long, global = true)]
    pub json: bool,
    /// Print nothing but errors.
    #[arg(long, global = true)]
    pub quiet: bool,
    /// Diagnostics level on stderr (error, warn, info, debug).
    #[arg(long, global = true, default_value = "warn")]
    pub log_level: String,
    /// Lower the deadline of this call (seconds): a query's
    /// (query.timeout_ms) or an import's (import.timeout_seconds; past it
    /// the import stops, nothing is published, exit 8).
    #[arg(long, global = true, value_name = "SECONDS")]
    pub timeout: Option<f64>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Show configuration. Example: `flameox config show`
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Catalog maintenance. Example: `flameox catalog validate`
    Catalog {
        #[command(subcommand)]
        action: CatalogAction,
    },
    /// Clean up after a crashed writer. Example: `flameox recover`
    Recover,
    /// Declared workloads of flameox.toml. Example: `flameox workload show sort`
    #[command(subcommand_required = true)]
    Workload {
        #[command(subcommand)]
        action: WorkloadCommand,
    },
    /// Plan or run a capture of a declared workload. Example: `flameox capture run sort --adapter py-spy --parameters size=1000`
    #[command(subcommand_required = true)]
    Capture {
        #[command(subcommand)]
        action: CaptureCommand,
    },
    /// Declared experiments: plan, run (randomized complete blocks), show, trials. Example: `flameox experiment run sort_scaling`
    #[command(subcommand_required = true)]
    Experiment {
        #[command(subcommand)]
        action: experiment::ExperimentCommand,
    },
    /// The MCP server over stdio. Example: `flameox mcp serve --project-root .`
    Mcp {
        #[command(subcommand)]
        action: McpCommand,
    },
}

#[derive(Subcommand, Debug)]
pub enum CaptureCommand {
    /// Plan, then run it and record the run (an agent plans with plan_capture and runs the plan_id with execute_capture_plan). Example: `flameox capture run sort --adapter py-spy --parameters size=1000`
    Run {
        /// Declared workload (flameox.toml).
        workload_name: String,
        /// process (default), py-spy, viztracer, perf or nsys.
        #[arg(long, default_value = "process")]
        adapter: String,
        /// A parameter choice NAME=VALUE (repeatable), or one JSON object.
        #[arg(long, visible_alias = "param", value_name = "NAME=VALUE")]
        parameters: Vec<String>,
        /// Variant label recorded on the run and its measurements.
        #[arg(long)]
        variant: Option<String>,
        /// Trial id recorded on the run and its measurements.
        #[arg(long)]
        trial_id: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum WorkloadCommand {
    /// Run a declared workload (process adapter) and record its run. Example: `flameox workload run sort --param size=1000`
    Run {
        name: String,
        /// name=value of a declared parameter (repeatable).
        #[arg(long = "param", value_name = "NAME=VALUE")]
        params: Vec<String>,
        /// Adapter to run it under (default process).
        #[arg(long, default_value = "process")]
        adapter: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum McpCommand {
    /// Serve MCP on stdin/stdout (protocol only on stdout). Example: `flameox mcp serve --init`
    Serve {
        /// Initialize the workspace before serving.
        #[arg(long)]
        init: bool,
    },
    /// Print the tools, schemas, annotations and instructions a client sees. Example: `flameox mcp inspect --json`
    Inspect,
}

#[derive(Subcommand, Debug)]
pub enum ConfigAction {
    /// Print the effective configuration. Example: `flameox config show`
    Show,
}

#[derive(Subcommand, Debug)]
pub enum CatalogAction {
    /// Same as `flameox validate`. Example: `flameox catalog validate --full`
    Validate {
        #[arg(long)]
        full: bool,
    },
}

/// Paging options shared by drill-down commands.
#[derive(Args, Debug, Clone)]
pub struct PageOptions {
    /// Rows per page (1..=1000).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Continue from a previous page's cursor.
    #[arg(long)]
    pub cursor: Option<String>,
}

fn main() -> ExitCode {
    flameox_engine::allocator::tune_malloc();
    let usage_error = |err: clap::Error| {
        let code = if err.use_stderr() { 2 } else { 0 };
        let _ = err.print();
        ExitCode::from(code)
    };
    // The derived commands plus the engine's catalogued operations.
    let matches = match operations::augment(Cli::command()).try_get_matches() {
        Ok(m) => m,
        Err(err) => return usage_error(err),
    };
    if let Some((op, sub)) = operations::chosen(&matches) {
        let global = match GlobalOptions::from_arg_matches(&matches) {
            Ok(g) => g,
            Err(err) => return usage_error(err),
        };
        return match operations::run(&global, op, sub) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => report_error(&err, global.json),
        };
    }
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(err) => return usage_error(err),
    };
    let json = cli.global.json;
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => report_error(&err, json),
    }
}

pub(crate) fn report_error(err: &FlameoxError, json: bool) -> ExitCode {
    if json {
        let mut err = err.clone();
        if let Some(r) = err.recovery.as_mut() {
            r.next_command = recovery_command(r);
        }
        let _ = writeln!(
            std::io::stdout().lock(),
            "{}",
            serde_json::to_string_pretty(&err).unwrap_or_else(|_| err.message.clone())
        );
    } else {
        eprintln!("error [{}]: {}", err.code.as_str(), err.message);
        for (key, value) in &err.details {
            match (key.as_str(), value) {
                // Each refused argument on its own line, in words (the
                // JSON keeps the structure).
                ("fields", serde_json::Value::Array(fields)) => {
                    for f in fields {
                        let line = match (f["field"].as_str(), f["problem"].as_str()) {
                            (Some(field), Some(problem)) => format!("{field}: {problem}"),
                            _ => f.as_str().map_or_else(|| f.to_string(), str::to_owned),
                        };
                        if !err.message.contains(&line) {
                            eprintln!("  {line}");
                        }
                    }
                }
                // The message already names the closest.
                ("closest", _) if err.message.contains("did you mean") => {}
                // A list of names reads as words (the first ten).
                (_, serde_json::Value::Array(items)) if items.iter().all(|v| v.is_string()) => {
                    let words: Vec<&str> = items.iter().filter_map(|v| v.as_str()).collect();
                    let more = words.len().saturating_sub(10);
                    let shown = words[..words.len().min(10)].join(", ");
                    if more > 0 {
                        eprintln!("  {key}: {shown}, … ({more} more)");
                    } else {
                        eprintln!("  {key}: {shown}");
                    }
                }
                _ => eprintln!("  {key}: {value}"),
            }
        }
        for step in &err.remediation {
            eprintln!("  hint: {step}");
        }
        if let Some(r) = &err.recovery {
            eprintln!("  next: {}", recovery_command(r));
        }
    }
    ExitCode::from(err.exit_code() as u8)
}

/// A recovery as a command line: the engine's own text, or the catalogued
/// operation rendered from its declaration.
fn recovery_command(r: &flameox_engine::error::Recovery) -> String {
    if r.next_command.is_empty() {
        operations::command_line(&r.next_tool, &r.next_arguments)
    } else {
        r.next_command.clone()
    }
}
