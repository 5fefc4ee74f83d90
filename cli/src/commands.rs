//! Dispatch: one function per command, each calling one engine service and
//! rendering its result.

use std::io::Write;

use flameox_engine::error::Result;
use flameox_engine::retention::{collect, trash};
use flameox_engine::services::{inventory, quarantine};
use flameox_engine::{FlameoxError, catalog_rebuild, repair};

use crate::args::{
    CatalogAction, Cli, ClusterCommand, Command, ConfigAction, GlobalOptions, McpCommand,
};
use crate::retention_views;
use crate::terminal::{block_on, emit, open};

pub fn run(cli: Cli) -> Result<()> {
    let g = &cli.global;
    match cli.command {
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
        Command::Catalog {
            action: CatalogAction::Rebuild { dry_run },
        } => {
            let ws = open(g)?;
            let report = catalog_rebuild::rebuild(&ws, dry_run)?;
            emit(g, &report, retention_views::rebuilt)
        }
        Command::Gc {
            dry_run: _,
            apply,
            purge,
            restore,
            force,
        } => gc_command(g, apply, purge, restore, force),
        Command::Repair { plan } => {
            let ws = open(g)?;
            match plan {
                None => emit(g, &repair::plan(&ws)?, retention_views::repair_plan),
                Some(path) => emit(g, &repair::apply(&ws, &path)?, retention_views::repaired),
            }
        }
        Command::Recover { quarantine } => {
            let ws = open(g)?;
            match quarantine {
                Some(id) => {
                    use std::io::IsTerminal;
                    let show = !g.json && !g.quiet && std::io::stderr().is_terminal();
                    let progress = crate::terminal::CliProgress::new(show);
                    let salvaged = quarantine::salvage(&ws, &id, &progress);
                    progress.finish();
                    let salvaged = salvaged?;
                    emit(g, &salvaged, crate::retention_views::salvaged)
                }
                None => emit(
                    g,
                    &quarantine::recover(&ws)?,
                    crate::retention_views::recovered,
                ),
            }
        }
        Command::Mcp { action } => mcp_command(g, action),
        Command::DetachedWorker { operation_id } => {
            let ws = open(g)?;
            flameox_engine::operations::run_detached_worker(&ws, &operation_id).map(|_| ())
        }
        Command::Cluster { action } => cluster_command(action),
        Command::Setup(args) => crate::setup::setup_command(g, args),
        Command::Completions { shell } => {
            let mut cmd = crate::operations::augment(<Cli as clap::CommandFactory>::command());
            clap_complete::generate(shell, &mut cmd, "flameox", &mut std::io::stdout());
            Ok(())
        }
        Command::Man => {
            let cmd = crate::operations::augment(<Cli as clap::CommandFactory>::command());
            let mut page = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut page)
                .map_err(|e| FlameoxError::internal(format!("rendering the man page: {e}")))?;
            let _ = std::io::stdout().lock().write_all(&page);
            Ok(())
        }
        Command::Workload { action } => crate::workload::workload_command(g, action),
        Command::Capture { action } => crate::capture::capture_dispatch(g, action),
        Command::Experiment { action } => crate::experiment::experiment_command(g, action),
    }
}

/// `gc`: the dry-run unless --apply, --purge or --restore.
fn gc_command(
    g: &GlobalOptions,
    apply: bool,
    purge: Option<std::path::PathBuf>,
    restore: Option<std::path::PathBuf>,
    force: bool,
) -> Result<()> {
    let ws = open(g)?;
    if let Some(manifest) = restore {
        let outcome = trash::restore(&ws, &manifest)?;
        return emit(g, &outcome, |o| {
            retention_views::trash_outcome("restored", o)
        });
    }
    if let Some(manifest) = purge {
        let outcome = trash::purge(&ws, &manifest, force)?;
        return emit(g, &outcome, |o| retention_views::trash_outcome("purged", o));
    }
    if apply {
        return emit(g, &trash::apply(&ws)?, retention_views::applied);
    }
    emit(g, &collect::collection_plan(&ws)?, retention_views::plan)
}

/// `flameox cluster …`: runs a Ballista process until it is stopped.
fn cluster_command(action: ClusterCommand) -> Result<()> {
    use flameox_engine::cluster::{ProcessOptions, run_executor, run_scheduler};
    match action {
        ClusterCommand::Scheduler { bind, store } => run_scheduler(ProcessOptions {
            bind,
            scheduler: None,
            stores: store,
            cores: 0,
        }),
        ClusterCommand::Executor {
            scheduler,
            bind,
            store,
            cores,
        } => run_executor(ProcessOptions {
            bind,
            scheduler: Some(scheduler),
            stores: store,
            cores,
        }),
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
                inventory::init(&project_root, None)?;
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
