//! MCP conformance: the tool inventory, strict input schemas with an output
//! schema on every tool, annotations per group, input-schema snapshots, and
//! the byte budgets of the surface and the instructions.
//!
//! Snapshots live in `tests/snapshots/mcp_input_schemas.json` and change only
//! with `UPDATE_SNAPSHOTS=1`. Budgets are pinned here; every raise is logged
//! in `tests/snapshots/mcp_budget_log.md`, and this test fails until the log
//! has a row for the current ceiling.

use std::collections::BTreeMap;

use flameox_mcp::{FlameoxServer, ServerOptions, catalog, instructions};
use serde_json::{Value, json};

/// Bytes of the whole tool list as a client receives it (compact JSON).
/// 52 KB since investigation memory (issue 28): seven tools at 51,580.
const SURFACE_CEILING: usize = 78_000;
/// Bytes of the `initialize` instructions.
const INSTRUCTIONS_CEILING: usize = 640;
/// Characters of any one tool description.
const DESCRIPTION_LIMIT: usize = 200;

const READ_ONLY: &[&str] = &[
    "workspace_status",
    "get_detached_capture",
    "get_capability_setup",
    "get_detached_experiment",
    "validate_workspace",
    "list_capabilities",
    "list_runs",
    "get_run",
    "list_artifacts",
    "get_artifact",
    "get_native_viewer_plan",
    "analyze_hotspots",
    "get_frame_callers",
    "get_frame_callees",
    "get_stack_examples",
    "list_threads",
    "summarize_target",
    "get_frame_instances",
    "find_frames",
    "compare_hotspots",
    "analyze_gpu_summary",
    "analyze_accelerator_launches",
    "analyze_pytorch",
    "analyze_gpu_breakdown",
    "analyze_gpu_diagnosis",
    "analyze_gpu_gaps",
    "analyze_memory",
    "get_trace_window",
    "query_measurements",
    "get_evidence",
    "workload_configuration_status",
    "list_declared_workflows",
    "get_declared_workflow",
    "plan_capture",
    "compare_run_sets",
    "analyze_scaling",
    "plan_experiment",
    "get_experiment",
    "list_experiment_trials",
    "list_investigations",
    "get_investigation",
    "get_hypothesis",
    "list_findings",
    "get_finding",
    "summarize_evidence",
    "analyze_failures",
    "analyze_execution",
    "plan_reduction",
    "get_reduction",
    "compare_artifact_pipelines",
];
/// Mutating but non-executing and idempotent for an identical definition;
/// `initialize_workspace` is the seed's "additive and idempotent": a second
/// call changes nothing.
const CONFIGURE: &[&str] = &[
    "initialize_workspace",
    "configure_workload",
    "prepare_adapter",
    "register_artifact_pipeline",
];
/// Command-executing: destructive and open-world.
const EXECUTE: &[&str] = &[
    "execute_capture_plan",
    "run_experiment",
    "start_detached_capture",
    "cancel_detached_capture",
    "start_capability_setup",
    "cancel_capability_setup",
    "prepare_workload_dependencies",
    "start_detached_experiment",
    "cancel_detached_experiment",
];
const ADDITIVE: &[&str] = &[
    "import_artifact",
    "extract_artifact",
    "freeze_run_set",
    "record_comparison",
    "record_analysis",
    "create_investigation",
    "record_hypothesis",
    "record_finding",
    "execute_reduction",
];

fn advertised() -> Vec<Value> {
    let server = FlameoxServer::new(ServerOptions {
        project_root: std::env::temp_dir(),
        workspace: None,
    });
    server
        .advertised_tools()
        .iter()
        .map(|t| serde_json::to_value(t).expect("tool json"))
        .collect()
}

#[test]
fn inventory_is_exactly_the_documented_tools() {
    let names: Vec<String> = advertised()
        .iter()
        .map(|t| t["name"].as_str().unwrap_or("").to_owned())
        .collect();
    let mut expected: Vec<&str> = READ_ONLY
        .iter()
        .chain(ADDITIVE)
        .chain(CONFIGURE)
        .chain(EXECUTE)
        .copied()
        .collect();
    expected.sort();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(sorted, expected);
    assert_eq!(
        names.first().map(String::as_str),
        Some("initialize_workspace")
    );
}

#[test]
fn every_tool_is_strict_bounded_annotated_and_has_an_output_schema() {
    for tool in advertised() {
        let name = tool["name"].as_str().unwrap_or("?");
        let input = &tool["inputSchema"];
        assert_eq!(input["type"], "object", "{name}");
        assert_eq!(input["additionalProperties"], false, "{name}");
        for (field, rule) in input["properties"].as_object().into_iter().flatten() {
            let self_explanatory = rule["type"] == "boolean" || field.ends_with("_ns");
            assert!(
                rule["description"].is_string() || self_explanatory,
                "{name}.{field} undocumented"
            );
            if rule["type"] == "string" {
                let max = match rule["enum"].as_array() {
                    Some(values) => values
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::len)
                        .max()
                        .unwrap_or(0) as u64,
                    None => rule["maxLength"].as_u64().unwrap_or(u64::MAX),
                };
                assert!(max <= 4096, "{name}.{field} unbounded string");
                let is_id = field.ends_with("_id")
                    || ["target", "frame", "reference"].contains(&field.as_str());
                if is_id {
                    assert!(max <= 200, "{name}.{field}: ids are at most 200 chars");
                }
            }
            if field == "limit" {
                assert_eq!(
                    (rule["minimum"].as_u64(), rule["maximum"].as_u64()),
                    (Some(1), Some(1000)),
                    "{name}"
                );
            }
        }
        for required in input["required"].as_array().into_iter().flatten() {
            let field = required.as_str().unwrap_or("");
            assert!(
                input["properties"].get(field).is_some(),
                "{name} requires unknown {field}"
            );
        }

        let output = &tool["outputSchema"];
        assert_eq!(output, &catalog::output_schema(), "{name}");
        assert_eq!(output["required"], json!(["ok", "result", "error"]));

        let a = &tool["annotations"];
        let hints = (
            a["readOnlyHint"].as_bool(),
            a["destructiveHint"].as_bool(),
            a["idempotentHint"].as_bool(),
            a["openWorldHint"].as_bool(),
        );
        let expected = if READ_ONLY.contains(&name) {
            (Some(true), Some(false), Some(true), Some(false))
        } else if ADDITIVE.contains(&name) {
            (Some(false), Some(false), Some(false), Some(false))
        } else if CONFIGURE.contains(&name) {
            (Some(false), Some(false), Some(true), Some(false))
        } else if EXECUTE.contains(&name) {
            (Some(false), Some(true), Some(false), Some(true))
        } else {
            panic!("{name} has no annotation group in this test");
        };
        assert_eq!(hints, expected, "{name} annotations");

        let description = tool["description"].as_str().unwrap_or("");
        assert!(
            !description.is_empty() && tool["title"].is_string(),
            "{name}"
        );
        assert!(
            description.chars().count() <= DESCRIPTION_LIMIT,
            "{name}: description of {} chars > {DESCRIPTION_LIMIT}",
            description.chars().count()
        );
    }
}

#[test]
fn input_schemas_match_their_snapshot() {
    let current: BTreeMap<String, Value> = advertised()
        .into_iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap_or("").to_owned(),
                t["inputSchema"].clone(),
            )
        })
        .collect();
    let path = flameox_tests::repo_root().join("tests/snapshots/mcp_input_schemas.json");
    let rendered = serde_json::to_string_pretty(&current).expect("render") + "\n";
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &rendered).expect("write snapshot");
        return;
    }
    let stored = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        stored == rendered,
        "input schemas changed; review the diff and rerun with UPDATE_SNAPSHOTS=1 to accept:\n{}",
        first_difference(&stored, &rendered)
    );
}

fn first_difference(stored: &str, current: &str) -> String {
    for (i, (a, b)) in stored.lines().zip(current.lines()).enumerate() {
        if a != b {
            return format!("line {}: snapshot `{a}` vs now `{b}`", i + 1);
        }
    }
    format!(
        "snapshot has {} lines, now {}",
        stored.lines().count(),
        current.lines().count()
    )
}

#[test]
fn surface_and_instructions_stay_within_their_logged_budgets() {
    let surface = serde_json::to_string(&advertised()).expect("render").len();
    eprintln!("tool surface: {surface} bytes");
    let text = instructions::instructions();
    assert!(
        surface <= SURFACE_CEILING,
        "tool surface is {surface} bytes > {SURFACE_CEILING}; trim it, or raise the ceiling and log why"
    );
    assert!(
        text.len() <= INSTRUCTIONS_CEILING,
        "instructions are {} bytes > {INSTRUCTIONS_CEILING}",
        text.len()
    );
    let log = std::fs::read_to_string(
        flameox_tests::repo_root().join("tests/snapshots/mcp_budget_log.md"),
    )
    .expect("budget log");
    for (what, ceiling) in [
        ("surface", SURFACE_CEILING),
        ("instructions", INSTRUCTIONS_CEILING),
    ] {
        assert!(
            log.lines()
                .any(|l| l.starts_with(&format!("| {what} | {ceiling} |"))),
            "mcp_budget_log.md has no row `| {what} | {ceiling} | …` for the current ceiling"
        );
    }
}
