//! `flameox capture run <workload> [--adapter A] [--parameters k=v …]` and
//! `flameox workload run <name> [--param k=v …]`: plan and execute in one
//! step (engine: `services::capture`, `services::capture_run`), plus the
//! terminal's views of `capture plan` and `capabilities`. The CLI names a
//! declared workload; it has no argv, cwd or trailing `-- argv` of its own
//! (clap refuses them). Ctrl-C cancels: the workload's process tree is
//! killed and the run recorded.

use std::collections::BTreeMap;
use std::io::IsTerminal;

use flameox_engine::FlameoxError;
use flameox_engine::error::{ErrorCode, NEGATIVE_RESULT_EXIT_CODE, Result};
use flameox_engine::operations::command_line::command_line;
use flameox_engine::services::capabilities::Capabilities;
use flameox_engine::services::capture::{CapturePlan, CaptureRequest, plan_capture};
use flameox_engine::services::capture_run::{CaptureResult, execute_capture};
use serde_json::{Value, json};

use crate::args::{CaptureCommand, GlobalOptions};
use crate::render::{Table, bytes, cut, duration_ns};
use crate::terminal::{CliProgress, emit, open, verdict};

/// `--param size=10` pairs (or one JSON object) as a map (values matched
/// against choices as text).
pub(crate) fn parse_param_pairs(pairs: &[String]) -> Result<BTreeMap<String, Value>> {
    Ok(crate::params::parse_object(pairs, true)?
        .into_iter()
        .collect())
}

/// The terminal's view of `plan_capture` (the plan under `plan`).
pub(crate) fn plan_view(answer: &Value) -> Result<String> {
    let plan: CapturePlan = serde_json::from_value(answer["plan"].clone())
        .map_err(|e| FlameoxError::internal(format!("reading the plan back: {e}")))?;
    let next = match answer["next"]["tool"].as_str() {
        Some(tool) if tool != "execute_capture_plan" => {
            command_line(tool, &answer["next"]["arguments"])
        }
        _ => format!(
            "flameox capture run {} --adapter {}",
            plan.request.workload, plan.request.adapter
        ),
    };
    Ok(render_plan(&plan) + &format!("next: {next}\n"))
}

fn render_plan(p: &CapturePlan) -> String {
    let mut out = format!(
        "plan: workload {} under {} ({})\n  command  {}\n  cwd      {}\n  timeout  {} s\n",
        p.request.workload,
        p.request.adapter,
        p.adapter.reason,
        p.command.join(" "),
        p.cwd,
        p.timeout_seconds
    );
    for (k, v) in &p.parameters {
        out += &format!("  param    {k} = {v}\n");
    }
    for a in &p.expected_artifacts {
        out += &format!("  keeps    {a}\n");
    }
    for w in &p.warnings {
        out += &format!("  warning  {w}\n");
    }
    out + &format!(
        "  bound to {} (definition {})\n",
        p.binding_digest, p.definition_hash
    )
}

fn render_result(r: &CaptureResult) -> String {
    let mut out = format!(
        "run {} {}: exit {}, wall {}, cpu {}, peak RSS {}\n  capture {}, validation {}, {} measurements\n",
        r.run_id,
        r.status,
        r.exit_code
            .map_or_else(|| format!("signal {:?}", r.signal), |c| c.to_string()),
        duration_ns(r.wall_time_ns as i64),
        duration_ns(r.cpu_time_ns as i64),
        bytes(r.peak_rss_bytes),
        r.capture,
        r.validation,
        r.measurements
    );
    for a in &r.artifacts {
        out += &format!(
            "  {:<10} {} ({}, {})\n",
            a.role,
            a.artifact_id,
            a.kind,
            bytes(a.bytes)
        );
    }
    for l in &r.limitations {
        out += &format!("  limitation {l}\n");
    }
    out
}

/// The error a run that did not complete becomes (after it was recorded).
fn run_error(result: &CaptureResult) -> Option<FlameoxError> {
    let code = match result.status.as_str() {
        "completed" => return None,
        "timed_out" => ErrorCode::ProcessTimeout,
        "cancelled" => ErrorCode::ProcessCancelled,
        _ => ErrorCode::ProcessFailed,
    };
    let how = match (result.exit_code, result.signal) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        _ => "no exit status".to_owned(),
    };
    Some(
        FlameoxError::new(
            code,
            format!(
                "the workload {} ({how}); run {} recorded",
                result.status.replace('_', " "),
                result.run_id
            ),
        )
        .with_run(result.run_id.clone())
        .detail("result", serde_json::to_value(result).unwrap_or_default())
        .recover_with(
            "get_run",
            json!({ "target": result.run_id }),
            format!("flameox runs show {}", result.run_id),
        ),
    )
}

/// Plans and runs one capture.
pub(crate) fn capture_command(g: &GlobalOptions, request: CaptureRequest) -> Result<()> {
    let ws = open(g)?;
    let plan = plan_capture(&ws, &request)?;
    if !g.json && !g.quiet {
        eprint!("{}", render_plan(&plan));
    }
    let progress = CliProgress::new(!g.json && !g.quiet && std::io::stderr().is_terminal());
    let result = execute_capture(&ws, &plan, &progress);
    progress.finish();
    let result = result?;
    if let Some(err) = run_error(&result) {
        if !g.json && !g.quiet {
            eprint!("{}", render_result(&result));
        }
        return Err(err);
    }
    emit(g, &json!({ "plan": plan, "result": result }), |v| {
        serde_json::from_value::<CaptureResult>(v["result"].clone())
            .map(|r| render_result(&r))
            .unwrap_or_default()
    })?;
    // Seed, "Exit codes": "1: operation completed with a negative result
    // such as failed validation". The run is recorded and printed as usual.
    if result.validation == "failed" {
        verdict(
            g,
            NEGATIVE_RESULT_EXIT_CODE,
            &format!(
                "run {} completed but its validation failed (the workload's oracle or a required output)",
                result.run_id
            ),
        );
    }
    Ok(())
}

/// `flameox capture run`.
pub(crate) fn capture_dispatch(g: &GlobalOptions, action: CaptureCommand) -> Result<()> {
    let CaptureCommand::Run {
        workload_name,
        adapter,
        parameters,
        variant,
        trial_id,
        adapter_options,
        capture_mode,
    } = action;
    let capture_mode = match capture_mode {
        Some(mode) => serde_json::from_value(Value::String(mode.clone())).map_err(|_| {
            FlameoxError::invalid_argument(
                "capture_mode",
                format!("`{mode}` is not one of auto, trusted_local, managed"),
            )
        })?,
        None => Default::default(),
    };
    let request = CaptureRequest {
        adapter,
        workload: workload_name,
        parameters: parse_param_pairs(&parameters)?,
        variant,
        trial_id,
        adapter_options: crate::params::parse_object(&adapter_options, false)?
            .into_iter()
            .collect(),
        capture_mode,
        ..Default::default()
    };
    capture_command(g, request)
}

/// The terminal's view of `list_capabilities`: adapters (passive) and the
/// formats extracted.
pub(crate) fn capabilities_view(c: &Capabilities) -> String {
    let mut t = Table::new(&["adapter", "available", "version", "from", "why"], &[]);
    for a in &c.adapters {
        t.row(vec![
            a.name.clone(),
            a.available.to_string(),
            a.version.clone().unwrap_or_else(|| "-".into()),
            a.provisioning.replace('_', " "),
            cut(&a.reason, 60),
        ]);
    }
    let readable: Vec<&str> = c
        .formats
        .iter()
        .filter(|f| f.extract)
        .map(|f| f.kind.as_str())
        .collect();
    let mut out = t.render();
    if c.mode == "passive" {
        out += "versions: flameox capabilities --refresh runs each adapter's version probe\n";
    }
    for action in &c.setup_adapters {
        out += &format!(
            "{} can be installed ({}): flameox capability-setup start {} --idempotency-key <your key>\n",
            action.adapter, action.requirement, action.adapter
        );
    }
    for action in &c.setup_third_party_adapters {
        out += &format!(
            "{} needs approval ({}): {}\n",
            action.adapter,
            action.requirement,
            command_line(&action.tool, &action.arguments)
        );
    }
    out + &format!("formats extracted: {}\n", readable.join(", "))
}

/// `adapter approve`: the identity now approved, and what to run next.
pub(crate) fn approved_view(result: &Value) -> Result<String> {
    let id = &result["identity"];
    let text = |v: &Value, default: &str| v.as_str().unwrap_or(default).to_owned();
    Ok(format!(
        "adapter {} approved {}\n  distribution {} {}\n  content      sha256:{}\n  program      sha256:{}\nnext: flameox capabilities (then flameox capture plan <workload> --adapter {})\n",
        text(&id["adapter"], "?"),
        text(&result["approved_at"], ""),
        text(&id["distribution"], "(a program)"),
        text(&id["version"], "(unversioned)"),
        text(&id["content_sha256"], "?"),
        text(&id["program_sha256"], "?"),
        text(&id["adapter"], "?"),
    ))
}
