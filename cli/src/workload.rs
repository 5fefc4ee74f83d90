//! `flameox workload run` (a capture under the process adapter, see
//! `capture.rs`) and the terminal's views of the declared-workload
//! operations (`workload status|configure|list|show`; engine:
//! `services::workloads`). Rendering only.

use flameox_engine::error::Result;
use flameox_engine::operations::command_line::command_line;
use flameox_engine::project::edit::ConfigureOutcome;
use flameox_engine::services::dependencies::DependencyReport;
use flameox_engine::services::workloads::{
    ConfigurationStatus, DeclaredList, ExperimentDetail, WorkloadDetail,
};
use serde_json::Value;

use crate::args::{GlobalOptions, WorkloadCommand};
use crate::render::{Table, cut};

pub(crate) fn workload_command(g: &GlobalOptions, action: WorkloadCommand) -> Result<()> {
    let WorkloadCommand::Run {
        name,
        params,
        adapter,
    } = action;
    let request = flameox_engine::services::capture::CaptureRequest {
        adapter,
        workload: name,
        parameters: crate::capture::parse_param_pairs(&params)?,
        variant: None,
        trial_id: None,
        ..Default::default()
    };
    crate::capture::capture_command(g, request)
}

/// `workload status`.
pub(crate) fn status(s: &ConfigurationStatus) -> String {
    let mut out = format!("flameox.toml: {}\n", s.status);
    if let Some(id) = &s.configuration_id {
        out += &format!("  configuration {id}\n");
    }
    if !s.workloads.is_empty() {
        out += &format!("  workloads   {}\n", s.workloads.join(", "));
    }
    if !s.experiments.is_empty() {
        out += &format!("  experiments {}\n", s.experiments.join(", "));
    }
    for d in &s.diagnostics {
        let at = d.line.map(|l| format!(" (line {l})")).unwrap_or_default();
        out += &format!("  {}: {}{at}\n", d.key_path, d.reason);
    }
    out += &format!(
        "next: {}\n",
        flameox_engine::operations::command_line::command_line(
            &s.next_tool,
            &serde_json::json!({})
        )
    );
    out
}

/// `workload configure`.
pub(crate) fn configured(o: &ConfigureOutcome) -> String {
    let verb = if o.changed {
        "configured"
    } else {
        "unchanged:"
    };
    format!(
        "{verb} workload {} (configuration {})\nnext: flameox workload show {}\n",
        o.name, o.configuration_id, o.name
    )
}

/// `workload list`.
pub(crate) fn list(l: &DeclaredList) -> String {
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
}

/// `workload show` (a workload, or an experiment with `--kind experiment`).
pub(crate) fn show(result: &Value) -> Result<String> {
    if result.get("workload_definition_hash").is_some() {
        let _: ExperimentDetail = crate::render::read(result)?;
        return Ok(serde_json::to_string_pretty(result).unwrap_or_default() + "\n");
    }
    let d: WorkloadDetail = crate::render::read(result)?;
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
    Ok(out)
}

/// `workload prepare`: what was installed into the workload's virtualenv,
/// each declared distribution as its interpreter has it now, what to run next.
pub(crate) fn prepared(r: &DependencyReport) -> String {
    let mut out = if r.installed.is_empty() && r.remaining.is_empty() {
        format!(
            "{}: every declared distribution is satisfied\n",
            r.workload_name
        )
    } else {
        format!(
            "{}: installed {}{}\n",
            r.workload_name,
            if r.installed.is_empty() {
                "nothing".to_owned()
            } else {
                r.installed.join(", ")
            },
            r.installer
                .as_deref()
                .map(|i| format!(" (with {i})"))
                .unwrap_or_default()
        )
    };
    let mut t = Table::new(&["requirement", "installed", "satisfied", "note"], &[]);
    for d in &r.preflight.distributions {
        t.row(vec![
            d.requirement.clone(),
            d.installed_version.clone().unwrap_or_else(|| "-".into()),
            d.satisfied.to_string(),
            cut(d.note.as_deref().unwrap_or(""), 50),
        ]);
    }
    if !r.preflight.distributions.is_empty() {
        out += &t.render();
    }
    if !r.remaining.is_empty() {
        out += &format!("still unsatisfied: {}\n", r.remaining.join(", "));
    }
    out + &format!(
        "next: {}\n",
        command_line(&r.next.operation, &r.next.arguments)
    )
}
