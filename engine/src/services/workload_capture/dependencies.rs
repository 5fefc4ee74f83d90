//! A workload's declared Python distributions (`requirements.
//! python_distributions`): the active preflight that checks them in the
//! workload's own interpreter (run by `plan_capture` in `preflight_mode`
//! `auto`), and `prepare_workload_dependencies`, which installs exactly the
//! missing ones into that interpreter's virtualenv and checks again.
//!
//! Only a virtualenv is changed: a system interpreter belongs to the
//! operating system's package manager (PEP 668), so flameox refuses and
//! says how to declare a virtualenv's python instead. The managed runtime
//! is not used here: the workload runs with its own interpreter, so only
//! that interpreter's environment can satisfy its imports.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::{ErrorCode, FlameoxError, Result};
use crate::execution::Supervision;
use crate::execution::env::resolve_program_in;
use crate::project::{self, WorkloadDef};
use crate::services::NextCall;
use crate::services::adapters::is_python;
use crate::services::capability_setup::python_env::{self, InterpreterProbe};
use crate::services::capability_setup::requirement::{self, normalize_name};
use crate::workspace::Workspace;

/// One declared distribution as the workload's interpreter has it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DistributionCheck {
    /// As declared, e.g. `numpy>=1.26`.
    pub requirement: String,
    pub installed_version: Option<String>,
    pub satisfied: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The preflight of a workload's declared distributions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Preflight {
    /// `active` (the interpreter was asked) or `skipped` (with why).
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtualenv: Option<bool>,
    pub distributions: Vec<DistributionCheck>,
    /// Declared requirements that are not satisfied.
    pub missing: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<NextCall>,
}

fn declared(def: &WorkloadDef) -> Vec<String> {
    def.requirements
        .iter()
        .flat_map(|r| r.python_distributions.iter().cloned())
        .collect()
}

fn skipped(note: String, declared: &[String]) -> Preflight {
    Preflight {
        status: "skipped".into(),
        python_version: None,
        virtualenv: None,
        distributions: declared
            .iter()
            .map(|r| DistributionCheck {
                requirement: r.clone(),
                installed_version: None,
                satisfied: false,
                note: Some("not checked".into()),
            })
            .collect(),
        missing: Vec::new(),
        note: Some(note),
        next: None,
    }
}

fn check(requirement_text: &str, probe: &InterpreterProbe) -> DistributionCheck {
    let parsed = match requirement::parse(requirement_text) {
        Ok(p) => p,
        Err(why) => {
            return DistributionCheck {
                requirement: requirement_text.to_owned(),
                installed_version: None,
                satisfied: false,
                note: Some(why),
            };
        }
    };
    let installed = probe
        .distributions
        .iter()
        .find(|(n, _)| normalize_name(n) == parsed.normalized)
        .and_then(|(_, v)| v.clone());
    let (satisfied, mut note) = match &installed {
        None => (false, Some("not installed".to_owned())),
        Some(v) => match parsed.satisfied_by(v) {
            Ok(true) => (true, None),
            Ok(false) => (false, Some(format!("{v} does not satisfy the specifiers"))),
            Err(why) => (false, Some(why)),
        },
    };
    if let Some(marker) = &parsed.marker {
        let text = format!("marker `{marker}` not evaluated");
        note = Some(match note {
            Some(n) => format!("{n}; {text}"),
            None => text,
        });
    }
    DistributionCheck {
        requirement: requirement_text.to_owned(),
        installed_version: installed,
        satisfied,
        note,
    }
}

/// Checks `def`'s declared distributions in `program` (its resolved
/// argv[0]); `None` when it declares none.
pub fn preflight(workload: &str, def: &WorkloadDef, program: &Path) -> Option<Preflight> {
    let declared = declared(def);
    if declared.is_empty() {
        return None;
    }
    if !is_python(&def.argv[0]) {
        return Some(skipped(
            format!(
                "argv[0] `{}` is not a Python interpreter, so its distributions cannot be checked",
                def.argv[0]
            ),
            &declared,
        ));
    }
    let names: Vec<String> = declared
        .iter()
        .filter_map(|r| requirement::parse(r).ok().map(|p| p.name))
        .collect();
    let probe = match python_env::probe(program, &names) {
        Ok(p) => p,
        Err(e) => return Some(skipped(e.message.clone(), &declared)),
    };
    let distributions: Vec<DistributionCheck> = declared.iter().map(|r| check(r, &probe)).collect();
    let missing: Vec<String> = distributions
        .iter()
        .filter(|d| !d.satisfied)
        .map(|d| d.requirement.clone())
        .collect();
    let next = (!missing.is_empty()).then(|| NextCall {
        operation: "prepare_workload_dependencies".into(),
        arguments: json!({ "workload_name": workload }),
        why: format!(
            "installs {} into the workload's virtualenv",
            missing.join(", ")
        ),
    });
    Some(Preflight {
        status: "active".into(),
        python_version: Some(probe.python_version.clone()),
        virtualenv: Some(probe.virtualenv),
        distributions,
        missing,
        note: None,
        next,
    })
}

/// The warning a plan carries for a preflight.
pub fn preflight_warning(p: &Preflight) -> Option<String> {
    if !p.missing.is_empty() {
        return Some(format!(
            "requirements.python_distributions not satisfied in the workload's interpreter: {}; prepare_workload_dependencies installs them",
            p.missing.join(", ")
        ));
    }
    (p.status == "skipped").then(|| {
        format!(
            "requirements.python_distributions were not checked: {}",
            p.note.as_deref().unwrap_or("no reason recorded")
        )
    })
}

/// What `prepare_workload_dependencies` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DependencyReport {
    pub workload_name: String,
    /// Requirements this call installed.
    pub installed: Vec<String>,
    /// Requirements still not satisfied after it.
    pub remaining: Vec<String>,
    /// `pip` or `uv`, when something was installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installer: Option<String>,
    /// The preflight after the install.
    pub preflight: Preflight,
    pub next: NextCall,
}

/// The workload's interpreter, as an absolute path when it was relative.
fn workload_program(ws: &Workspace, def: &WorkloadDef) -> Result<PathBuf> {
    let cwd = crate::services::capture::resolve_cwd(ws.project_root(), &def.cwd)?;
    resolve_program_in(&def.argv[0], &cwd).ok_or_else(|| {
        FlameoxError::new(
            ErrorCode::CapabilityUnavailable,
            format!("the workload's program `{}` was not found", def.argv[0]),
        )
    })
}

/// Installs the declared distributions `workload` is missing into its
/// interpreter's virtualenv, then checks again.
pub fn prepare_workload_dependencies(
    ws: &Workspace,
    workload: &str,
    supervision: &dyn Supervision,
) -> Result<DependencyReport> {
    crate::services::check_id("workload_name", workload)?;
    let (config, _) = project::load_valid(ws.project_root())?;
    let def = project::find_workload(&config, workload)?;
    let program = workload_program(ws, def)?;
    let plan_next = NextCall {
        operation: "plan_capture".into(),
        arguments: json!({ "workload_name": workload }),
        why: "plan the capture now that its dependencies are checked".into(),
    };
    let Some(before) = preflight(workload, def, &program) else {
        return Ok(DependencyReport {
            workload_name: workload.to_owned(),
            installed: Vec::new(),
            remaining: Vec::new(),
            installer: None,
            preflight: skipped("the workload declares no python_distributions".into(), &[]),
            next: plan_next,
        });
    };
    if before.status != "active" {
        return Err(FlameoxError::new(
            ErrorCode::CapabilityUnavailable,
            format!(
                "the workload's distributions cannot be checked: {}",
                before.note.as_deref().unwrap_or("unknown")
            ),
        ));
    }
    if before.missing.is_empty() {
        return Ok(DependencyReport {
            workload_name: workload.to_owned(),
            installed: Vec::new(),
            remaining: Vec::new(),
            installer: None,
            preflight: before,
            next: plan_next,
        });
    }
    if before.virtualenv != Some(true) {
        return Err(FlameoxError::new(
            ErrorCode::ExecutionRefused,
            format!(
                "the workload's interpreter `{}` is not a virtualenv; flameox installs only into a virtualenv (a system Python belongs to the OS package manager)",
                def.argv[0]
            ),
        )
        .detail("missing", before.missing.clone())
        .remedy("create a virtualenv (python3 -m venv .venv), make the workload's argv[0] its python (configure_workload), then call prepare_workload_dependencies again"));
    }
    let has_pip = python_env::probe(&program, &[])?.pip;
    let installed = python_env::install(&program, has_pip, &before.missing, supervision)?;
    let after = preflight(workload, def, &program).unwrap_or(before.clone());
    Ok(DependencyReport {
        workload_name: workload.to_owned(),
        installed: before
            .missing
            .iter()
            .filter(|r| !after.missing.contains(r))
            .cloned()
            .collect(),
        remaining: after.missing.clone(),
        installer: Some(installed.installer.to_owned()),
        next: if after.missing.is_empty() {
            plan_next
        } else {
            NextCall {
                operation: "get_declared_workflow".into(),
                arguments: json!({ "name": workload }),
                why: "some requirements are still unsatisfied after the install; check their specifiers".into(),
            }
        },
        preflight: after,
    })
}
