//! The terminal's view of a detached operation (a capture, a capability
//! setup): where it stands, its run or its installs when done, why it
//! ended otherwise, and the command to run next.

use flameox_engine::error::Result;
use flameox_engine::operations::command_line::command_line;
use serde_json::Value;

use crate::render::{bytes, duration_ns};

/// `capture start|status|cancel`, `capability-setup start|status|cancel`:
/// the operation as a person reads it.
pub(crate) fn render(result: &Value) -> Result<String> {
    let text = |key: &str| result[key].as_str().unwrap_or("").to_owned();
    let id = text("operation_id");
    let status = text("status");
    let mut out = String::new();
    if result["reconnected"] == Value::Bool(true) {
        out += "reconnected to the operation this idempotency key started\n";
    }
    let percent = result["percent"]
        .as_f64()
        .filter(|_| matches!(status.as_str(), "queued" | "running"))
        .map(|p| format!(" ({p:.0} %)"))
        .unwrap_or_default();
    let running = status == "queued" || status == "running";
    let label = match text("kind").as_str() {
        "capability_setup" => "capability setup",
        "capture" => "capture",
        "experiment" => "experiment",
        "reduction" => "reduction",
        _ => "operation",
    };
    if running && text("phase") != status {
        out += &format!("{label} {id} {status}: {}{percent}\n", text("phase"));
    } else {
        out += &format!("{label} {id} {status}{percent}\n");
    }
    out += &format!("  started {}", text("created_at"));
    match result["finished_at"].as_str() {
        Some(end) => out += &format!(", ended {end}\n"),
        None => out += &format!(", updated {}\n", text("updated_at")),
    }
    if let Some(items) = result["items"].as_array() {
        for item in items {
            out += &format!(
                "  {}: {}",
                item["item"].as_str().unwrap_or("item"),
                item["status"].as_str().unwrap_or("")
            );
            if let Some(run) = item["run_id"].as_str() {
                out += &format!(" (run {run})");
            } else if label == "capture" {
                out += " (no run)";
            }
            if let Some(detail) = item["detail"].as_str() {
                out += &format!("; {detail}");
            }
            out.push('\n');
        }
    }
    let receipt = &result["receipt"];
    for check in receipt["verification"].as_array().into_iter().flatten() {
        out += &format!(
            "  {} {}: {}\n",
            check["adapter"].as_str().unwrap_or("adapter"),
            check["version"].as_str().unwrap_or("(no version)"),
            if check["verified"] == Value::Bool(true) {
                "verified by its version probe"
            } else {
                "not verified"
            }
        );
    }
    if let Some(experiment) = receipt["experiment_id"].as_str() {
        out += &format!(
            "  experiment {experiment}: {}",
            receipt["status"].as_str().unwrap_or("")
        );
        if let Some(trial) = receipt["first_failing_trial"].as_str() {
            out += &format!("; first failing trial {trial}");
        }
        out.push('\n');
    }
    if receipt.get("wall_time_ns").is_some() {
        let exit = receipt["exit_code"]
            .as_i64()
            .map_or_else(|| "none".to_owned(), |c| c.to_string());
        out += &format!(
            "  exit {exit}, wall {}, CPU {}, peak RSS {}\n",
            duration_ns(receipt["wall_time_ns"].as_i64().unwrap_or(0)),
            duration_ns(receipt["cpu_time_ns"].as_i64().unwrap_or(0)),
            bytes(receipt["peak_rss_bytes"].as_u64().unwrap_or(0))
        );
    }
    let cancellation = &result["cancellation"];
    if let Some(at) = cancellation["requested_at"].as_str() {
        out += &format!(
            "  cancel asked {at}; cleanup: {}\n",
            cancellation["cleanup"].as_str().unwrap_or("pending")
        );
    }
    if let Some(message) = result["error"]["message"].as_str() {
        out += &format!("  why: {message}\n");
    }
    if let Some(tool) = result["next"]["tool"].as_str() {
        out += &format!(
            "next: {}\n",
            command_line(tool, &result["next"]["arguments"])
        );
    }
    Ok(out)
}
