//! Capture planning: resolve a declared workload, its parameter values and
//! an adapter into the exact command that would run — without running it or
//! writing anything. A plan is bound to the workload definition hash, the
//! configuration id, the resolved program and its sha256, the substituted
//! argv, cwd, environment and limits; `binding_digest` covers all of them, and
//! execution re-plans and refuses a plan whose digest no longer matches.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ErrorCode, FlameoxError, Result};
use crate::execution::env::{ALLOWED_PREFIX, ALLOWED_VARIABLES, resolve_program_in};
use crate::execution::output::DEFAULT_OUTPUT_LIMIT;
use crate::fsutil::digest_json;
use crate::project::validate::{allowed_choice, render_template};
use crate::project::{self, Scalar, WorkloadDef};
use crate::publish::hash_file;
use crate::services::adapters::{self, AdapterStatus, CAPTURE_DIR, Wrapped};
use crate::services::check_id;
use crate::services::dependencies::{Preflight, preflight, preflight_warning};
use crate::workspace::Workspace;

/// What `capture plan|run` / `plan_capture` asks: a workload by name and
/// values for its declared parameters. Never an argv or a cwd.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CaptureRequest {
    pub adapter: String,
    pub workload: String,
    /// Parameter name → a declared choice (JSON scalar). Missing ones take
    /// their default (the first choice).
    pub parameters: BTreeMap<String, Value>,
    pub variant: Option<String>,
    pub trial_id: Option<String>,
    /// The experiment that runs this capture as one of its trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experiment_id: Option<String>,
    /// The experiment's randomized block (absent for warmups and plain runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_index: Option<u64>,
    /// A warmup trial: its measurements are marked `is_warmup`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warmup: bool,
    /// `auto` (default): check the declared python_distributions in the
    /// workload's interpreter; `passive`: run nothing to check them.
    #[serde(default, skip_serializing_if = "PreflightMode::is_auto")]
    pub preflight_mode: PreflightMode,
    /// The adapter's declared options ([`super::adapter_options`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub adapter_options: BTreeMap<String, Value>,
    /// How the workload is contained ([`CaptureMode`]).
    #[serde(default, skip_serializing_if = "CaptureMode::is_auto")]
    pub capture_mode: CaptureMode,
}

/// How a capture's workload is contained (the seed's `capture_mode`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum CaptureMode {
    /// Run it directly (as `trusted_local`) and record that no enforced
    /// descendant containment was used.
    #[default]
    Auto,
    /// Run it directly as this user, explicitly.
    TrustedLocal,
    /// Enforced descendant containment; refused where flameox cannot
    /// enforce it (this build never can).
    Managed,
}

impl CaptureMode {
    pub fn is_auto(&self) -> bool {
        *self == CaptureMode::Auto
    }
}

/// How much planning may run to check a workload's requirements.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PreflightMode {
    #[default]
    Auto,
    Passive,
}

impl PreflightMode {
    pub fn is_auto(&self) -> bool {
        *self == PreflightMode::Auto
    }
}

/// A declared output as the plan resolved it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedOutput {
    pub name: String,
    /// Project-relative path after substitution.
    pub path: String,
    pub kind: String,
    pub required: bool,
}

/// The environment the child gets, as policy (values of inherited
/// variables are not shown).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentPolicy {
    pub inherited_allowlist: Vec<String>,
    pub inherited_prefix: String,
    pub declared: BTreeMap<String, String>,
}

/// The exact resolved plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapturePlan {
    pub request: CaptureRequest,
    pub workspace_id: String,
    pub configuration_id: String,
    pub definition_hash: String,
    pub parameters: BTreeMap<String, Scalar>,
    /// The workload's argv after substitution.
    pub argv: Vec<String>,
    /// What runs: argv wrapped by the adapter; `$CAPTURE_DIR` is the run's
    /// private output folder.
    pub command: Vec<String>,
    pub cwd: String,
    pub program: String,
    pub program_sha256: String,
    pub environment: EnvironmentPolicy,
    pub timeout_seconds: f64,
    pub output_limit_bytes: u64,
    pub adapter: AdapterStatus,
    pub expected_artifacts: Vec<String>,
    pub outputs: Vec<PlannedOutput>,
    pub writable_paths: Vec<String>,
    pub containment: String,
    /// The check of the workload's declared python_distributions (absent
    /// when it declares none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preflight: Option<Preflight>,
    pub warnings: Vec<String>,
    /// Digest of every bound input above (not of the warnings or the
    /// configuration id: the definition hash binds the workload itself).
    pub binding_digest: String,
}

fn refused(message: String) -> FlameoxError {
    FlameoxError::new(ErrorCode::ExecutionRefused, message)
}

/// The declared parameters with the requested values laid over the defaults.
pub fn resolve_parameters(
    def: &WorkloadDef,
    requested: &BTreeMap<String, Value>,
) -> Result<BTreeMap<String, Scalar>> {
    let mut values: BTreeMap<String, Scalar> = def
        .parameters
        .iter()
        .filter_map(|(k, choices)| Some((k.clone(), choices.first()?.clone())))
        .collect();
    for (name, value) in requested {
        let field = format!("parameters.{name}");
        let scalar = Scalar::from_json(value)
            .ok_or_else(|| FlameoxError::invalid_argument(&field, "must be a scalar"))?;
        allowed_choice(def, name, &scalar)
            .map_err(|e| FlameoxError::invalid_argument(&field, e))?;
        // Keep the declared choice (its type), not the caller's spelling.
        let declared = def.parameters[name]
            .iter()
            .find(|c| c.to_string() == scalar.to_string())
            .cloned()
            .unwrap_or(scalar);
        values.insert(name.clone(), declared);
    }
    Ok(values)
}

/// `cwd` resolved through symlinks, required to stay inside the project.
pub fn resolve_cwd(project_root: &Path, cwd: &str) -> Result<PathBuf> {
    let root = project_root
        .canonicalize()
        .map_err(|e| crate::error::io_error("resolving the project root", e))?;
    let resolved = root.join(cwd).canonicalize().map_err(|_| {
        FlameoxError::invalid_argument("cwd", format!("`{cwd}` does not exist in the project"))
    })?;
    if !resolved.starts_with(&root) || !resolved.is_dir() {
        return Err(refused(format!(
            "cwd `{cwd}` resolves outside the project or is not a folder"
        )));
    }
    Ok(resolved)
}

/// Plans a capture; side-effect free apart from the viztracer import probe.
pub fn plan_capture(ws: &Workspace, request: &CaptureRequest) -> Result<CapturePlan> {
    check_id("workload", &request.workload)?;
    for (field, value) in [
        ("variant", &request.variant),
        ("trial_id", &request.trial_id),
    ] {
        if let Some(v) = value {
            check_id(field, v)?;
        }
    }
    let (config, configuration_id) = project::load_valid(ws.project_root())?;
    let def = project::find_workload(&config, &request.workload)?;
    let parameters = resolve_parameters(def, &request.parameters)?;
    let render = |field: String, template: &str| {
        render_template(template, &parameters)
            .map_err(|e| FlameoxError::invalid_argument(&field, e))
    };
    let mut argv = vec![def.argv[0].clone()];
    for (i, arg) in def.argv.iter().enumerate().skip(1) {
        argv.push(render(format!("argv[{i}]"), arg)?);
    }
    let workload_dir = resolve_cwd(ws.project_root(), &def.cwd)?;
    let program = resolve_program_in(&argv[0], &workload_dir).ok_or_else(|| {
        FlameoxError::new(
            ErrorCode::CapabilityUnavailable,
            format!("the workload's program `{}` was not found", argv[0]),
        )
        .remedy("install it or put it on PATH; get_declared_workflow lists requirements")
    })?;
    let (program_sha256, _) = hash_file(&program)?;
    if let Some(pinned) = def
        .identity
        .as_ref()
        .and_then(|i| i.executable_sha256.as_ref())
        && *pinned != program_sha256
    {
        return Err(refused(format!(
            "`{}` does not match identity.executable_sha256",
            argv[0]
        ))
        .detail("expected_sha256", pinned.clone())
        .detail("actual_sha256", program_sha256));
    }
    let mut declared = BTreeMap::new();
    for (name, value) in &def.environment {
        declared.insert(name.clone(), render(format!("environment.{name}"), value)?);
    }
    let mut outputs = Vec::new();
    for (name, decl) in &def.outputs {
        let path = render(format!("outputs.{name}.path"), &decl.path)?;
        project::validate::check_relative_path(&path)
            .map_err(|e| FlameoxError::invalid_argument(&format!("outputs.{name}.path"), e))?;
        outputs.push(PlannedOutput {
            name: name.clone(),
            path,
            kind: decl.kind.clone().unwrap_or_else(|| "auto".into()),
            required: decl.required.unwrap_or(true),
        });
    }
    if request.capture_mode == CaptureMode::Managed {
        return Err(FlameoxError::new(
            ErrorCode::CapabilityUnavailable,
            "capture_mode managed needs enforced descendant containment, which this build does not provide",
        )
        .detail("capture_mode", "managed")
        .remedy("use capture_mode auto or trusted_local: the workload runs directly as this user, in its own process group, and the plan says so"));
    }
    let adapter = adapters::check_in(ws, &request.adapter, &program, &argv)?;
    let Wrapped {
        command, profile, ..
    } = adapters::wrap_in(
        ws,
        &request.adapter,
        &program,
        &argv,
        CAPTURE_DIR,
        &request.adapter_options,
    )?;
    let mut expected_artifacts = vec![
        "execution receipt (execution_receipt → measurements)".to_owned(),
        "stdout (text)".to_owned(),
        "stderr (text)".to_owned(),
        "configuration observations (host, git, interpreter; observed before the run)".to_owned(),
    ];
    if let Some(p) = &profile {
        expected_artifacts.push(format!("{} ({})", p.file_name, p.kind));
    }
    for o in &outputs {
        expected_artifacts.push(format!("output {} at {} ({})", o.name, o.path, o.kind));
    }
    let mut warnings = Vec::new();
    if !def.writable_paths.is_empty() {
        warnings.push("writable_paths are recorded, not enforced (no containment)".to_owned());
    }
    let preflight = match request.preflight_mode {
        PreflightMode::Auto => preflight(&request.workload, def, &program),
        PreflightMode::Passive => (!def
            .requirements
            .as_ref()
            .is_none_or(|r| r.python_distributions.is_empty()))
        .then(|| Preflight {
            status: "skipped".into(),
            python_version: None,
            virtualenv: None,
            distributions: Vec::new(),
            missing: Vec::new(),
            note: Some("preflight_mode passive: nothing was run to check them".into()),
            next: None,
        }),
    };
    if let Some(warning) = preflight.as_ref().and_then(preflight_warning) {
        warnings.push(warning);
    }
    let mut plan = CapturePlan {
        request: request.clone(),
        workspace_id: ws.identity.workspace_id.clone(),
        configuration_id,
        definition_hash: project::definition_hash(def),
        parameters,
        argv,
        command,
        cwd: def.cwd.clone(),
        program: program.to_string_lossy().into_owned(),
        program_sha256,
        environment: EnvironmentPolicy {
            inherited_allowlist: ALLOWED_VARIABLES.iter().map(|s| s.to_string()).collect(),
            inherited_prefix: ALLOWED_PREFIX.to_owned(),
            declared,
        },
        timeout_seconds: def.timeout_seconds,
        output_limit_bytes: DEFAULT_OUTPUT_LIMIT as u64,
        adapter,
        expected_artifacts,
        outputs,
        writable_paths: def.writable_paths.clone(),
        containment: format!(
            "none: trusted_local{} — the workload runs directly as this user, in its own \
             process group, and may write files or use the network; no enforced descendant \
             containment was used",
            if request.capture_mode.is_auto() {
                " (capture_mode auto)"
            } else {
                ""
            }
        ),
        preflight,
        warnings,
        binding_digest: String::new(),
    };
    plan.binding_digest = binding_digest(&plan);
    Ok(plan)
}

/// The digest of everything a plan is bound to.
pub fn binding_digest(plan: &CapturePlan) -> String {
    let mut value = serde_json::to_value(plan).unwrap_or_default();
    if let Value::Object(map) = &mut value {
        map.remove("warnings");
        map.remove("preflight");
        map.remove("binding_digest");
        // Informational: an edit elsewhere in flameox.toml (a comment,
        // another workload) does not invalidate this workload's plans.
        map.remove("configuration_id");
    }
    format!("sha256:{}", digest_json(&value))
}
