//! The terminal's own views of catalogued operations whose answers read
//! better as several tables, stacks or sections than as the one table of
//! columns a declaration gives. Each view reads the operation's typed
//! result back from its JSON; a test checks that every operation without
//! columns has a view here, and no operation has both.

use flameox_engine::error::Result;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{
    analysis_views, capture, derived_views, detached_view, execution_view, experiment,
    gaps_memory_view, gpu_breakdown, gpu_diagnosis, import_view, inventory_views,
    investigation_views, open, run_set_views, stack_views, workload,
};

/// The operation's answer as a person reads it (None: no view of its own).
pub(crate) fn render(operation: &str, result: &Value) -> Option<Result<String>> {
    Some(match operation {
        "analyze_hotspots" => typed(result, analysis_views::hotspots),
        "get_stack_examples" => typed(result, stack_views::stack_examples),
        "compare_hotspots" => typed(result, analysis_views::deltas),
        "get_trace_window" => typed(result, stack_views::trace_window),
        "query_measurements" => typed(result, stack_views::measurements),
        "analyze_gpu_summary" => typed(result, analysis_views::gpu_summary),
        "analyze_accelerator_launches" => typed(result, analysis_views::accelerator),
        "analyze_pytorch" => typed(result, analysis_views::pytorch),
        "analyze_gpu_breakdown" => typed(result, gpu_breakdown::render),
        "analyze_gpu_diagnosis" => typed(result, gpu_diagnosis::render),
        "analyze_gpu_gaps" => typed(result, gaps_memory_view::render_gpu_gaps),
        "analyze_memory" => typed(result, gaps_memory_view::render_memory),
        "workspace_status" => typed(result, inventory_views::status),
        "validate_workspace" => typed(result, inventory_views::validation),
        "get_run" | "get_artifact" | "get_evidence" => Ok(inventory_views::record(result)),
        "freeze_run_set" => typed(result, run_set_views::freeze),
        "compare_run_sets" => typed(result, run_set_views::compare),
        "analyze_scaling" => typed(result, run_set_views::scaling),
        "record_comparison" | "record_analysis" => typed(result, run_set_views::record),
        "initialize_workspace" => typed(result, inventory_views::initialized),
        "list_capabilities" => typed(result, capture::capabilities_view),
        "prepare_adapter" => capture::approved_view(result),
        "import_artifact" => typed(result, import_view::render_import),
        "get_native_viewer_plan" => typed(result, open::plan_view),
        "workload_configuration_status" => typed(result, workload::status),
        "configure_workload" => typed(result, workload::configured),
        "list_declared_workflows" => typed(result, workload::list),
        "get_declared_workflow" => workload::show(result),
        "plan_capture" => capture::plan_view(result),
        "prepare_workload_dependencies" => typed(result, workload::prepared),
        "start_detached_capture"
        | "get_detached_capture"
        | "cancel_detached_capture"
        | "start_capability_setup"
        | "get_capability_setup"
        | "cancel_capability_setup"
        | "start_detached_experiment"
        | "get_detached_experiment"
        | "cancel_detached_experiment"
        | "execute_reduction"
        | "get_reduction" => detached_view::render(result),
        "plan_experiment" => typed(result, experiment::render_plan),
        "run_experiment" | "get_experiment" => typed(result, experiment::render_view),
        "list_experiment_trials" => typed(result, experiment::render_page),
        "create_investigation" => typed(result, investigation_views::investigation),
        "get_investigation" => typed(result, investigation_views::detail),
        "record_hypothesis" | "get_hypothesis" => typed(result, investigation_views::hypothesis),
        "record_finding" | "get_finding" => typed(result, investigation_views::finding),
        "summarize_evidence" => Ok(investigation_views::report(result)),
        "analyze_execution" => typed(result, execution_view::render),
        "plan_reduction" => typed(result, derived_views::reduction_plan),
        "compare_artifact_pipelines" => typed(result, derived_views::pipeline_comparison),
        "register_artifact_pipeline" => Ok(inventory_views::record(result)),
        _ => return None,
    })
}

fn typed<T: DeserializeOwned>(result: &Value, view: fn(&T) -> String) -> Result<String> {
    crate::render::read(result).map(|r| view(&r))
}

#[cfg(test)]
mod tests {
    use flameox_engine::operations::catalog;

    #[test]
    fn every_operation_has_columns_or_a_view_of_its_own_never_both() {
        // An operation without a command is never drawn by the terminal.
        for op in catalog().iter().filter(|op| op.has_command()) {
            assert_eq!(
                op.columns.is_empty(),
                super::render(op.name, &serde_json::json!({})).is_some(),
                "{}: columns or a view, one of them",
                op.name
            );
        }
    }
}
