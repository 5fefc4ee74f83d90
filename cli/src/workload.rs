//! `flameox workload list|show|run`: the declared workloads and experiments
//! of `flameox.toml` (engine: `services::workloads`; `run` is a capture under
//! the process adapter, see `capture.rs`). Rendering only.

use flameox_engine::error::Result;
use flameox_engine::services::workloads;

use crate::commands::{emit, open};
use crate::render::{Table, cut};
use crate::{GlobalOptions, WorkloadCommand};

pub(crate) fn workload_command(g: &GlobalOptions, action: WorkloadCommand) -> Result<()> {
    match action {
        WorkloadCommand::Run {
            name,
            params,
            adapter,
        } => {
            let request = flameox_engine::services::capture::CaptureRequest {
                adapter,
                workload: name,
                parameters: crate::capture::parse_param_pairs(&params)?,
                variant: None,
                trial_id: None,
                ..Default::default()
            };
            crate::capture::capture_command(g, request, true)
        }
        WorkloadCommand::List { kind } => {
            let ws = open(g)?;
            let listing = workloads::list_declared(&ws, kind.as_deref())?;
            emit(g, &listing, |l| {
                let mut out = String::new();
                if l.kind == "workload" {
                    let mut t = Table::new(&["workload", "parameters", "timeout", "argv"], &[]);
                    for w in &l.workloads {
                        let params: Vec<String> = w
                            .parameters
                            .iter()
                            .map(|(k, p)| format!("{k}({})", p.choices.len()))
                            .collect();
                        t.row(vec![
                            w.name.clone(),
                            params.join(" "),
                            format!("{} s", w.timeout_seconds),
                            cut(&w.argv.join(" "), 60),
                        ]);
                    }
                    out += &t.render();
                } else {
                    let mut t = Table::new(&["experiment", "workload", "variants", "scaling"], &[]);
                    for e in &l.experiments {
                        t.row(vec![
                            e.name.clone(),
                            e.workload.clone(),
                            e.variants.join(","),
                            e.scaling_parameter.clone().unwrap_or_default(),
                        ]);
                    }
                    out += &t.render();
                }
                out + &format!("configuration {}\n", l.configuration_id)
            })
        }
        WorkloadCommand::Show { name, kind } => {
            let ws = open(g)?;
            if kind.as_deref() == Some("experiment") {
                let detail = workloads::show_experiment(&ws, &name)?;
                return emit(g, &detail, |d| {
                    serde_json::to_string_pretty(d).unwrap_or_default() + "\n"
                });
            }
            let detail = workloads::show_workload(&ws, &name)?;
            emit(g, &detail, |d| {
                let mut out = format!(
                    "workload {} ({})\n  argv     {}\n  cwd      {}\n  timeout  {} s\n  hash     {}\n",
                    d.summary.name,
                    d.summary.configuration_source,
                    d.summary.argv.join(" "),
                    d.summary.cwd,
                    d.summary.timeout_seconds,
                    d.summary.definition_hash
                );
                for (k, p) in &d.summary.parameters {
                    let choices: Vec<String> = p.choices.iter().map(|c| c.to_string()).collect();
                    out += &format!("  param    {k} = {}\n", choices.join(" | "));
                }
                for r in &d.requirements {
                    let state = match r.satisfied {
                        Some(true) => "found",
                        Some(false) => "MISSING",
                        None => "not probed",
                    };
                    out += &format!("  requires {} {} ({state})\n", r.kind, r.name);
                }
                out
            })
        }
    }
}
