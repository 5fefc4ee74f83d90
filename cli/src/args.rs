//! The command line's own arguments: the global options and the commands
//! that are not catalogued operations (the catalog's commands are built
//! from their declarations, `operations.rs`).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// A local evidence engine for performance investigations.
#[derive(Parser, Debug)]
#[command(
    name = "flameox",
    version = concat!(
        env!("CARGO_PKG_VERSION"),
        " (commit ",
        env!("FLAMEOX_COMMIT"),
        ", ",
        env!("FLAMEOX_PROFILE"),
        " build)"
    ),
    about,
    long_about = None
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalOptions,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command accepts (listed apart in every command's help).
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Global options")]
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
    /// Run this command's queries on the Ballista cluster whose scheduler
    /// is at df://HOST:PORT (over query.cluster; needs a shared store).
    #[arg(long, global = true, value_name = "df://HOST:PORT")]
    pub cluster: Option<String>,
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
    /// Clean up after a crashed writer and list the quarantine; --quarantine extracts a capture's quarantined profile into its run. Example: `flameox recover`, then `flameox recover --quarantine capture-<run>`
    Recover {
        /// A quarantine entry to salvage (an id `flameox recover` lists).
        #[arg(long, value_name = "QUARANTINE_ID")]
        quarantine: Option<String>,
    },
    /// Collect what nothing retains (abandoned staging, superseded generations, unreferenced artifacts) into a restorable trash; dry-run unless --apply. Example: `flameox gc`, then `flameox gc --apply`
    Gc {
        /// List what would be collected and why, change nothing (the default).
        #[arg(long, conflicts_with_all = ["apply", "purge", "restore"])]
        dry_run: bool,
        /// Move the eligible entries to trash/gc-<id>/ with a manifest.
        #[arg(long, conflicts_with_all = ["purge", "restore"])]
        apply: bool,
        /// Delete one expired trash collection (its manifest, folder or id).
        #[arg(long, value_name = "MANIFEST", conflicts_with = "restore")]
        purge: Option<PathBuf>,
        /// Put one trash collection's entries back.
        #[arg(long, value_name = "MANIFEST")]
        restore: Option<PathBuf>,
        /// With --purge: delete a collection that has not expired yet.
        #[arg(long, requires = "purge")]
        force: bool,
    },
    /// Plan repairs from a full validation (written to .flameox/logs/), then apply a plan. Example: `flameox repair`, then `flameox repair .flameox/logs/repair-<id>.json`
    Repair {
        /// A plan made by `flameox repair` to apply.
        #[arg(value_name = "PLAN.json")]
        plan: Option<PathBuf>,
    },
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
        action: ExperimentCommand,
    },
    /// Connect local MCP clients (Claude Code, Claude Desktop, Cursor, VS Code, Windsurf, Codex, Gemini CLI) to this flameox: shows each edit, writes it with a backup, verifies the launcher with an MCP initialize, rolls back on failure. Example: `flameox setup --dry-run`, then `flameox setup --client cursor --yes`
    Setup(SetupArgs),
    /// Shell completions for every command, from the same command tree. Example: `flameox completions bash > ~/.local/share/bash-completion/completions/flameox`
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// The man page (roff) of every command, from the same command tree. Example: `flameox man > flameox.1`
    Man,
    /// The worker process of a detached operation (started by `capture start`, never by hand).
    #[command(hide = true, name = "detached-worker")]
    DetachedWorker { operation_id: String },
    /// The MCP server over stdio. Example: `flameox mcp serve --project-root .`
    Mcp {
        #[command(subcommand)]
        action: McpCommand,
    },
    /// Ballista processes that run the recipes over a shared store (a build with the `cluster` feature). Example: `flameox cluster scheduler --bind 0.0.0.0:50050 --store s3://bucket/team`
    #[command(subcommand_required = true)]
    Cluster {
        #[command(subcommand)]
        action: ClusterCommand,
    },
}

#[derive(Subcommand, Debug)]
pub enum ClusterCommand {
    /// A Ballista scheduler: plans the recipes' queries and hands tasks to executors. Runs until stopped. Example: `flameox cluster scheduler --bind 127.0.0.1:50050 --store s3://bucket/team`
    Scheduler {
        /// Address to listen on.
        #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:50050")]
        bind: std::net::SocketAddr,
        /// Shared store whose evidence the cluster reads (repeatable).
        #[arg(long, value_name = "URL", required = true)]
        store: Vec<String>,
    },
    /// A Ballista executor: runs tasks for its scheduler, reading the store with its own credentials; shuffle data is served on the next port. Runs until stopped. Example: `flameox cluster executor --scheduler 127.0.0.1:50050 --bind 127.0.0.1:50051 --store s3://bucket/team`
    Executor {
        /// The scheduler to register with.
        #[arg(long, value_name = "HOST:PORT")]
        scheduler: std::net::SocketAddr,
        /// Address to listen on (and the next port for shuffle data).
        #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:50051")]
        bind: std::net::SocketAddr,
        /// Shared store whose evidence the cluster reads (repeatable).
        #[arg(long, value_name = "URL", required = true)]
        store: Vec<String>,
        /// Tasks run at once (default: one per core).
        #[arg(long, value_name = "N", default_value_t = 0)]
        cores: usize,
    },
}

#[derive(Subcommand, Debug)]
pub enum CaptureCommand {
    /// Plan, then run it and record the run (`flameox capture plan` shows the plan alone). Example: `flameox capture run sort --adapter py-spy --parameters size=1000`
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
        /// The adapter's options as one JSON object, e.g. '{"rate": 1000}' for py-spy (or NAME=VALUE, repeatable).
        #[arg(long, value_name = "JSON")]
        adapter_options: Vec<String>,
        /// auto (default) or trusted_local: the workload runs directly as you; managed is refused (no enforced containment).
        #[arg(long, value_name = "MODE")]
        capture_mode: Option<String>,
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
    /// Make HEAD again from the generation manifests on disk (valid, newest per extraction). Example: `flameox catalog rebuild --dry-run`
    Rebuild {
        /// Say what HEAD would hold, write nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum ExperimentCommand {
    /// One trial, found in any experiment. Example: `flameox experiment trial t000003 --experiment-id ex_…`
    Trial {
        trial_id: String,
        #[arg(long)]
        experiment_id: Option<String>,
    },
}

/// `flameox setup`'s options.
#[derive(Args, Debug)]
pub struct SetupArgs {
    /// A client to configure (repeatable): claude-code, claude-desktop, cursor, vscode, windsurf, codex, gemini. Default: every installed one.
    #[arg(long = "client", value_name = "NAME")]
    pub clients: Vec<String>,
    /// Every installed client (an explicit target for --yes).
    #[arg(long, conflicts_with = "clients")]
    pub all: bool,
    /// user: the client's own settings, for every folder it opens; project: the project's file (.mcp.json, .cursor/mcp.json, .vscode/mcp.json, .codex/config.toml, .gemini/settings.json).
    #[arg(long, default_value = "user", value_parser = ["user", "project"])]
    pub scope: String,
    /// Show each edit (path, before/after) and change nothing.
    #[arg(long, conflicts_with = "verify")]
    pub dry_run: bool,
    /// Take flameox's entry out again (only that entry).
    #[arg(long, conflicts_with = "verify")]
    pub remove: bool,
    /// Re-point the clients already connected at this executable (after an upgrade); others are left alone.
    #[arg(long, conflicts_with_all = ["verify", "remove", "rollback"])]
    pub refresh: bool,
    /// Put back each client's previous flameox launcher from setup's history, verified by an MCP initialize.
    #[arg(long, conflicts_with_all = ["verify", "remove"])]
    pub rollback: bool,
    /// Read-only: check each client's entry is this launcher and answers an MCP initialize (exit 1 if not).
    #[arg(long)]
    pub verify: bool,
    /// Apply without asking (needs --client or --all).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// The flameox executable the clients start (default: this one).
    #[arg(long, value_name = "PATH")]
    pub executable: Option<PathBuf>,
}
