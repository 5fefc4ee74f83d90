//! `flameox`: the command-line transport. Parses arguments, calls the engine's
//! services, renders tables or `--json`, and maps errors to exit codes. No
//! domain logic lives here.

mod analysis_views;
mod analyze;
mod args;
mod capture;
mod commands;
mod derived_views;
mod detached_view;
mod execution_view;
mod experiment;
mod frame_cells;
mod gaps_memory_view;
mod gpu_breakdown;
mod gpu_diagnosis;
mod gpu_diagnosis_mfu;
mod gpu_diagnosis_mpi;
mod import_view;
mod inventory_views;
mod investigation_views;
mod open;
mod operations;
mod params;
mod render;
mod retention_views;
mod run_set_views;
mod seed_forms;
mod setup;
mod stack_views;
mod terminal;
mod views;
mod workload;

use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

use crate::args::{Cli, GlobalOptions};
use flameox_engine::FlameoxError;

fn main() -> ExitCode {
    flameox_engine::allocator::tune_malloc();
    let usage_error = |err: clap::Error| {
        let code = if err.use_stderr() { 2 } else { 0 };
        let _ = err.print();
        ExitCode::from(code)
    };
    // The derived commands plus the engine's catalogued operations.
    let args = seed_forms::normalized(std::env::args_os().collect());
    let matches = match operations::augment(Cli::command()).try_get_matches_from(args) {
        Ok(m) => m,
        Err(err) => return usage_error(err),
    };
    if let Some((op, sub)) = operations::chosen(&matches) {
        let global = match GlobalOptions::from_arg_matches(&matches) {
            Ok(g) => g,
            Err(err) => return usage_error(err),
        };
        return match operations::run(&global, op, sub) {
            Ok(()) => terminal::exit_after_answer(),
            Err(err) => report_error(&err, global.json),
        };
    }
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(err) => return usage_error(err),
    };
    let json = cli.global.json;
    match commands::run(cli) {
        Ok(()) => terminal::exit_after_answer(),
        Err(err) => report_error(&err, json),
    }
}

fn report_error(err: &FlameoxError, json: bool) -> ExitCode {
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
                // The message already names the closest; an empty list says nothing.
                ("closest", _) if err.message.contains("did you mean") => {}
                (_, serde_json::Value::Array(items)) if items.is_empty() => {}
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
        flameox_engine::operations::command_line::command_line(&r.next_tool, &r.next_arguments)
    } else {
        r.next_command.clone()
    }
}
