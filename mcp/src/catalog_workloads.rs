//! The workload tools of the surface: configuration status, configure,
//! discovery, and (with capture) planning and execution. Same table shape as
//! `catalog.rs`; kept apart so each file stays small.

use serde_json::json;

use crate::catalog::{ToolGroup, ToolSpec, id_prop, object};

fn name_prop(what: &str) -> serde_json::Value {
    json!({ "type": "string", "minLength": 1, "maxLength": 64, "description": what })
}

/// The workload tools, in the order clients see them.
pub fn tools() -> Vec<ToolSpec> {
    use ToolGroup::*;
    vec![
        ToolSpec {
            name: "workload_configuration_status",
            title: "Workload configuration status",
            description: "Whether flameox.toml is missing, valid or invalid: its configuration_id, workload and experiment names, diagnostics and next_tool.",
            group: ReadOnly,
            input_schema: object(json!({}), &[]),
        },
        ToolSpec {
            name: "configure_workload",
            title: "Configure workload",
            description: "Create (idempotent) or replace (needs configuration_id) one [workloads.<name>] in flameox.toml. Validates the whole file, keeps comments. Never runs it.",
            group: Configure,
            input_schema: object(
                json!({
                    "operation": { "type": "string", "enum": ["create", "replace"], "description": "create adds; replace needs configuration_id." },
                    "name": name_prop("Workload name."),
                    "argv": { "type": "array", "minItems": 1, "maxItems": 256, "items": { "type": "string", "maxLength": 4096 }, "description": "Program and arguments; {param} placeholders; no shell strings, no --." },
                    "cwd": { "type": "string", "maxLength": 4096, "description": "Project-relative folder (default .)." },
                    "timeout_seconds": { "type": "number", "minimum": 0, "description": "Positive wall-clock limit." },
                    "parameters": { "type": "object", "description": "Name → non-empty list of allowed scalar choices." },
                    "environment": { "type": "object", "description": "Variables added to the filtered environment." },
                    "oracle": { "type": "object", "description": "{exit_codes, stdout_contains}." },
                    "requirements": { "type": "object", "description": "{executables, python_distributions}." },
                    "writable_paths": { "type": "array", "maxItems": 64, "items": { "type": "string", "maxLength": 4096 }, "description": "Project-relative paths it writes." },
                    "identity": { "type": "object", "description": "{executable_sha256, version}." },
                    "outputs": { "type": "object", "description": "Name → {path, kind, required}: files imported into the run." },
                    "configuration_id": id_prop("Current configuration_id (required for replace).")
                }),
                &["operation", "name", "argv", "timeout_seconds"],
            ),
        },
        ToolSpec {
            name: "list_declared_workflows",
            title: "List declared workflows",
            description: "Declared workloads (default) or experiments with parameters, choices and definition hashes.",
            group: ReadOnly,
            input_schema: object(
                json!({ "kind": { "type": "string", "enum": ["workload", "experiment"], "description": "Default workload." } }),
                &[],
            ),
        },
        ToolSpec {
            name: "get_declared_workflow",
            title: "Get declared workflow",
            description: "One workload (requirements, adapter options) or experiment, by name.",
            group: ReadOnly,
            input_schema: object(
                json!({
                    "name": name_prop("Workload or experiment name."),
                    "kind": { "type": "string", "enum": ["workload", "experiment"], "description": "Default workload." }
                }),
                &["name"],
            ),
        },
        ToolSpec {
            name: "plan_capture",
            title: "Plan capture",
            description: "Resolve a declared workload, parameter choices and adapter into the exact command, without running it. Returns a single-use, short-lived plan_id.",
            group: ReadOnly,
            input_schema: object(
                json!({
                    "workload_name": name_prop("Declared workload."),
                    "adapter": { "type": "string", "enum": ["process", "py-spy", "viztracer", "perf", "nsys"], "description": "Default process; list_capabilities says which work." },
                    "parameters": { "type": "object", "description": "Parameter → one of its declared choices (default: the first)." }
                }),
                &["workload_name"],
            ),
        },
        ToolSpec {
            name: "execute_capture_plan",
            title: "Execute capture plan",
            description: "Run a plan_id once: the workload's process tree with timing, CPU, peak RSS and the adapter's profile, recorded as a run. Progress; cancel kills the tree.",
            group: Execute,
            input_schema: object(
                json!({ "plan_id": { "type": "string", "minLength": 64, "maxLength": 64, "description": "plan_id from plan_capture." } }),
                &["plan_id"],
            ),
        },
    ]
}
