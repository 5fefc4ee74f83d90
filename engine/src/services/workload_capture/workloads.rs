//! Workload discovery: `workload_configuration_status`,
//! `list_declared_workflows` and `get_declared_workflow` (and the CLI's
//! `flameox workload list|show`). Read-only views of `flameox.toml`; nothing
//! here runs a workload or writes a file.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{FlameoxError, Result};
use crate::project::edit::agent_sources;
use crate::project::{
    self, CONFIG_FILE, ConfigFile, Diagnostic, ExperimentDef, ProjectConfig, Scalar, WorkloadDef,
};
use crate::workspace::Workspace;

/// `workload_configuration_status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigurationStatus {
    /// `missing`, `valid` or `invalid`.
    pub status: String,
    pub path: String,
    /// sha256 of the file bytes (present whenever the file exists; a
    /// replace, including a repair of an invalid file, names it).
    pub configuration_id: Option<String>,
    pub workloads: Vec<String>,
    pub experiments: Vec<String>,
    /// At most [`project::MAX_DIAGNOSTICS`].
    pub diagnostics: Vec<Diagnostic>,
    pub next_tool: String,
}

pub fn configuration_status(ws: &Workspace) -> Result<ConfigurationStatus> {
    let file = project::read(ws.project_root())?;
    let (status, id, config, diagnostics) = match file {
        ConfigFile::Missing => ("missing", None, None, Vec::new()),
        ConfigFile::Present {
            configuration_id,
            parsed: Ok(config),
            ..
        } => ("valid", Some(configuration_id), Some(config), Vec::new()),
        ConfigFile::Present {
            configuration_id,
            parsed: Err(diagnostics),
            ..
        } => ("invalid", Some(configuration_id), None, diagnostics),
    };
    let config = config.unwrap_or_default();
    let next_tool = if status == "valid" && !config.workloads.is_empty() {
        "list_declared_workflows"
    } else {
        "configure_workload"
    };
    Ok(ConfigurationStatus {
        status: status.to_owned(),
        path: CONFIG_FILE.to_owned(),
        configuration_id: id,
        workloads: config.workloads.keys().cloned().collect(),
        experiments: config.experiments.keys().cloned().collect(),
        diagnostics,
        next_tool: next_tool.to_owned(),
    })
}

/// A declared parameter: its choices and default (the first choice).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParameterView {
    pub choices: Vec<Scalar>,
    pub default: Option<Scalar>,
}

/// One workload in a listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadSummary {
    pub name: String,
    pub argv: Vec<String>,
    pub cwd: String,
    pub timeout_seconds: f64,
    pub parameters: BTreeMap<String, ParameterView>,
    pub definition_hash: String,
    /// `agent` when configure_workload wrote this exact definition, else `project`.
    pub configuration_source: String,
}

/// One experiment in a listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentSummary {
    pub name: String,
    pub workload: String,
    pub variants: Vec<String>,
    pub scaling_parameter: Option<String>,
    pub repetitions: u32,
    pub primary_metric: String,
}

/// `list_declared_workflows`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeclaredList {
    pub kind: String,
    pub configuration_id: String,
    pub workloads: Vec<WorkloadSummary>,
    pub experiments: Vec<ExperimentSummary>,
}

/// One requirement as discovery reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequirementView {
    /// `executable` or `python_distribution`.
    pub kind: String,
    pub name: String,
    pub required: bool,
    /// `passive` (looked up on PATH) or `active` (needs running a probe).
    pub probe: String,
    /// For passive probes: whether it was found.
    pub satisfied: Option<bool>,
}

/// `get_declared_workflow` for a workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadDetail {
    #[serde(flatten)]
    pub summary: WorkloadSummary,
    pub definition: WorkloadDef,
    pub requirements: Vec<RequirementView>,
    /// Capture adapters (passive status; plan_capture probes actively).
    pub adapters: Vec<crate::services::adapters::AdapterStatus>,
}

/// `get_declared_workflow` for an experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentDetail {
    #[serde(flatten)]
    pub summary: ExperimentSummary,
    pub definition: ExperimentDef,
    pub workload_definition_hash: String,
}

fn check_kind(kind: Option<&str>) -> Result<&str> {
    match kind.unwrap_or("workload") {
        k @ ("workload" | "experiment") => Ok(k),
        _ => Err(FlameoxError::invalid_argument(
            "kind",
            "must be workload or experiment",
        )),
    }
}

fn summarize(ws: &Workspace, name: &str, def: &WorkloadDef) -> WorkloadSummary {
    let hash = project::definition_hash(def);
    let source = if agent_sources(ws).get(name) == Some(&hash) {
        "agent"
    } else {
        "project"
    };
    WorkloadSummary {
        name: name.to_owned(),
        argv: def.argv.clone(),
        cwd: def.cwd.clone(),
        timeout_seconds: def.timeout_seconds,
        parameters: def
            .parameters
            .iter()
            .map(|(k, choices)| {
                (
                    k.clone(),
                    ParameterView {
                        choices: choices.clone(),
                        default: choices.first().cloned(),
                    },
                )
            })
            .collect(),
        definition_hash: hash,
        configuration_source: source.to_owned(),
    }
}

fn summarize_experiment(name: &str, def: &ExperimentDef) -> ExperimentSummary {
    let variants = match (&def.variants, &def.factors) {
        (Some(v), _) => v.keys().cloned().collect(),
        (None, Some(f)) => f.keys().map(|k| format!("factor:{k}")).collect(),
        (None, None) => Vec::new(),
    };
    ExperimentSummary {
        name: name.to_owned(),
        workload: def.workload.clone(),
        variants,
        scaling_parameter: def.scaling.as_ref().map(|s| s.parameter.clone()),
        repetitions: def.repetitions,
        primary_metric: def.primary_metric.clone(),
    }
}

/// `list_declared_workflows` (default kind `workload`).
pub fn list_declared(ws: &Workspace, kind: Option<&str>) -> Result<DeclaredList> {
    let kind = check_kind(kind)?;
    let (config, configuration_id) = project::load_valid(ws.project_root())?;
    let ProjectConfig {
        workloads,
        experiments,
        ..
    } = &config;
    Ok(DeclaredList {
        kind: kind.to_owned(),
        configuration_id,
        workloads: if kind == "workload" {
            workloads.iter().map(|(n, d)| summarize(ws, n, d)).collect()
        } else {
            Vec::new()
        },
        experiments: if kind == "experiment" {
            experiments
                .iter()
                .map(|(n, d)| summarize_experiment(n, d))
                .collect()
        } else {
            Vec::new()
        },
    })
}

/// The requirements of a workload, executables probed passively on PATH.
pub fn requirement_views(def: &WorkloadDef) -> Vec<RequirementView> {
    let mut views = Vec::new();
    let mut executables: Vec<&String> = vec![&def.argv[0]];
    if let Some(req) = &def.requirements {
        executables.extend(req.executables.iter());
    }
    executables.dedup();
    for exe in executables {
        views.push(RequirementView {
            kind: "executable".into(),
            name: exe.clone(),
            required: true,
            probe: "passive".into(),
            satisfied: Some(crate::execution::env::resolve_program(exe).is_some()),
        });
    }
    for dist in def
        .requirements
        .iter()
        .flat_map(|r| r.python_distributions.iter())
    {
        views.push(RequirementView {
            kind: "python_distribution".into(),
            name: dist.clone(),
            required: true,
            probe: "active".into(),
            satisfied: None,
        });
    }
    views
}

/// `get_declared_workflow` / `flameox workload show`: a workload's detail.
pub fn show_workload(ws: &Workspace, name: &str) -> Result<WorkloadDetail> {
    let (config, _) = project::load_valid(ws.project_root())?;
    let def = project::find_workload(&config, name)?;
    Ok(WorkloadDetail {
        summary: summarize(ws, name, def),
        definition: def.clone(),
        requirements: requirement_views(def),
        adapters: crate::services::adapters::adapter_statuses(),
    })
}

/// `get_declared_workflow` for kind `experiment`.
pub fn show_experiment(ws: &Workspace, name: &str) -> Result<ExperimentDetail> {
    let (config, _) = project::load_valid(ws.project_root())?;
    let def = project::find_experiment(&config, name)?;
    let workload = project::find_workload(&config, &def.workload)?;
    Ok(ExperimentDetail {
        summary: summarize_experiment(name, def),
        definition: def.clone(),
        workload_definition_hash: project::definition_hash(workload),
    })
}
