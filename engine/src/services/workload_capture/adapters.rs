//! Capture adapters: how a declared workload is run under a profiler, and
//! whether that profiler works on this machine.
//!
//! - `process`: the workload alone (timing and resources). Always available.
//! - `py-spy`: `py-spy record --format speedscope -- <argv>` → speedscope.
//! - `viztracer`: `<python> -m viztracer -o out.json <script|-c|--module …>`
//!   with the workload's own interpreter → Chrome trace JSON.
//! - `perf`: `perf record -g -- <argv>`, then `perf script`, folded by
//!   inferno's perf collapser → folded stacks.
//! - `nsys`: `nsys profile -- <argv>`, then `nsys export --type sqlite`.
//!
//! A tool program is looked up on PATH, then in flameox's managed runtime
//! (where capability setup installs py-spy). Listing capabilities is
//! passive by default (file lookups and kernel settings, nothing runs);
//! the active modes run each adapter's version probe, bounded, or reuse
//! the last one of the same program file. Planning a viztracer capture runs
//! one bounded active probe: the declared interpreter with
//! `-c "import viztracer"` (no workload code).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, FlameoxError, Result};
use crate::execution::env::child_environment;
use crate::execution::{ProcessSpec, Unsupervised, run_process};
use crate::project::AdapterDef;
use crate::services::capability_setup::pins::managed;
use crate::services::capability_setup::probe_cache;
use crate::services::capability_setup::runtime::find_program;
use crate::services::capability_setup::third_party::{self, ThirdPartyStatus};
use crate::workspace::Workspace;

/// Every adapter, in the order they are listed.
pub const ADAPTERS: [&str; 5] = ["process", "py-spy", "viztracer", "perf", "nsys"];

/// Token standing for the capture's private output folder in planned commands.
pub const CAPTURE_DIR: &str = "$CAPTURE_DIR";

/// One adapter's state on this machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdapterStatus {
    pub name: String,
    pub available: bool,
    /// Why it is (not) available.
    pub reason: String,
    /// `none`, `passive` (PATH lookup) or `active` (ran a bounded probe).
    pub probe: String,
    /// Format of the profile it writes and what it becomes.
    pub output: String,
    pub remediation: Vec<String>,
    /// Where its program comes from: `bundled`, `host` (PATH),
    /// `managed_runtime` (installed by capability setup) or
    /// `workload_environment` (inside the workload's interpreter).
    #[serde(default)]
    pub provisioning: String,
    /// The version its probe printed (active modes only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `not_applicable`, `pending` (capability setup can install it),
    /// `passively_observed`, `actively_verified` or `probe_failed`.
    #[serde(default)]
    pub setup_verification: String,
    /// Host permissions it needs, as this machine has them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permissions: Vec<PermissionStatus>,
}

/// One host permission an adapter needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionStatus {
    /// The kernel setting, e.g. `kernel.yama.ptrace_scope`.
    pub name: String,
    /// Its value here (absent: the setting does not exist).
    pub value: Option<String>,
    pub satisfied: bool,
    pub note: String,
}

/// How much `list_capabilities` may run to find out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProbeMode {
    /// PATH and file lookups only; nothing runs.
    #[default]
    Passive,
    /// Passive, plus the last active probe of the same program file.
    ActiveCached,
    /// Each adapter's version probe runs now (bounded, 10 s each).
    ActiveRefresh,
}

/// The profile file an adapter writes and how it is imported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileOutput {
    pub file_name: String,
    /// Format kind it is imported as.
    pub kind: String,
}

/// A workload wrapped by an adapter, ready to execute.
#[derive(Debug, Clone, PartialEq)]
pub struct Wrapped {
    pub program: PathBuf,
    /// argv of what runs (argv[0] as the program sees it).
    pub command: Vec<String>,
    pub profile: Option<ProfileOutput>,
}

fn status(name: &str, available: bool, reason: String, probe: &str, output: &str) -> AdapterStatus {
    AdapterStatus {
        name: name.to_owned(),
        available,
        reason,
        probe: probe.to_owned(),
        output: output.to_owned(),
        remediation: Vec::new(),
        provisioning: "host".to_owned(),
        version: None,
        setup_verification: "not_applicable".to_owned(),
        permissions: Vec::new(),
    }
}

/// The program an adapter needs on PATH (`process` and `viztracer` need none
/// of their own: viztracer runs inside the workload's interpreter).
fn tool_program(adapter: &str) -> Option<&'static str> {
    match adapter {
        "py-spy" => Some("py-spy"),
        "perf" => Some("perf"),
        "nsys" => Some("nsys"),
        _ => None,
    }
}

fn output_of(adapter: &str) -> &'static str {
    match adapter {
        "process" => "execution receipt → measurements (wall_time, cpu_time, peak_rss)",
        "py-spy" => "speedscope JSON → stacks",
        "viztracer" => "Chrome trace JSON → trace events and stacks",
        "perf" => "perf.data → perf script → folded stacks",
        _ => "nsys-rep → nsys export --type sqlite → GPU/CUDA trace evidence",
    }
}

/// Passive status of every adapter (nothing is executed).
pub fn adapter_statuses() -> Vec<AdapterStatus> {
    ADAPTERS.iter().map(|a| passive_status(a)).collect()
}

/// Every adapter's status, probing as much as `mode` allows.
pub fn adapter_statuses_in(mode: ProbeMode) -> Vec<AdapterStatus> {
    ADAPTERS
        .iter()
        .map(|a| {
            let passive = passive_status(a);
            match mode {
                ProbeMode::Passive => passive,
                ProbeMode::ActiveCached => active_status(passive, false),
                ProbeMode::ActiveRefresh => active_status(passive, true),
            }
        })
        .collect()
}

fn read_setting(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether py-spy may trace the workload it starts (Yama's ptrace scope).
fn ptrace_permission() -> PermissionStatus {
    let value = read_setting("/proc/sys/kernel/yama/ptrace_scope");
    let (satisfied, note) = match value.as_deref().and_then(|v| v.parse::<u8>().ok()) {
        None => (true, "no Yama ptrace restriction".to_owned()),
        Some(0 | 1) => (
            true,
            "a process may trace the children it starts".to_owned(),
        ),
        Some(2) if is_root() => (true, "scope 2 allows tracing as root".to_owned()),
        Some(2) => (
            false,
            "scope 2 needs CAP_SYS_PTRACE: run as root, or sysctl kernel.yama.ptrace_scope=1"
                .to_owned(),
        ),
        Some(_) => (false, "ptrace is disabled until the next boot".to_owned()),
    };
    PermissionStatus {
        name: "kernel.yama.ptrace_scope".into(),
        value,
        satisfied,
        note,
    }
}

/// Whether perf events may sample this user's processes.
fn perf_permission() -> PermissionStatus {
    let value = read_setting("/proc/sys/kernel/perf_event_paranoid");
    let level = value.as_deref().and_then(|v| v.parse::<i32>().ok());
    let (satisfied, note) = match level {
        None => (
            false,
            "perf events are not available on this kernel".to_owned(),
        ),
        Some(l) if l <= 2 || is_root() => (
            true,
            "user-space sampling of this user's processes is allowed".to_owned(),
        ),
        Some(_) => (
            false,
            "sampling needs sysctl kernel.perf_event_paranoid=2 (or root)".to_owned(),
        ),
    };
    PermissionStatus {
        name: "kernel.perf_event_paranoid".into(),
        value,
        satisfied,
        note,
    }
}

fn permissions_of(adapter: &str) -> Vec<PermissionStatus> {
    match adapter {
        "py-spy" => vec![ptrace_permission()],
        "perf" | "nsys" => vec![perf_permission()],
        _ => Vec::new(),
    }
}

/// The program an adapter runs, and where it comes from.
fn adapter_program(adapter: &str) -> Option<(std::path::PathBuf, &'static str)> {
    find_program(tool_program(adapter)?)
}

fn passive_status(adapter: &str) -> AdapterStatus {
    let output = output_of(adapter);
    if adapter == "process" {
        let mut s = status(
            adapter,
            true,
            "runs the workload directly".into(),
            "none",
            output,
        );
        s.provisioning = "bundled".into();
        return s;
    }
    if adapter == "viztracer" {
        let mut s = status(
            adapter,
            true,
            "runs inside the workload's Python interpreter; planning probes `import viztracer` there"
                .into(),
            "active",
            output,
        );
        s.provisioning = "workload_environment".into();
        s.remediation.push(
            "declare viztracer in the workload's requirements.python_distributions, then prepare_workload_dependencies installs it into the workload's virtualenv".into(),
        );
        return s;
    }
    let program = tool_program(adapter).unwrap_or(adapter);
    let mut s = match adapter_program(adapter) {
        Some((_, provisioning)) => {
            let mut s = status(
                adapter,
                true,
                if provisioning == "host" {
                    format!("{program} found on PATH")
                } else {
                    format!("{program} installed in the managed runtime")
                },
                "passive",
                output,
            );
            s.provisioning = provisioning.into();
            s.setup_verification = "passively_observed".into();
            s
        }
        None => {
            let mut s = status(
                adapter,
                false,
                format!("{program} not found on PATH"),
                "passive",
                output,
            );
            match managed(adapter) {
                Some(m) => {
                    s.provisioning = "managed_runtime".into();
                    s.setup_verification = "pending".into();
                    s.reason = format!("{program} is not on PATH nor in the managed runtime");
                    s.remediation.push(format!(
                        "start_capability_setup with adapters [\"{adapter}\"] installs {} into flameox's managed runtime (CLI: flameox capability-setup start {adapter})",
                        m.requirement()
                    ));
                }
                None => s.remediation.push(match adapter {
                    "perf" => "install linux-perf (perf) for this kernel".to_owned(),
                    _ => "install NVIDIA Nsight Systems and put nsys on PATH".to_owned(),
                }),
            }
            s
        }
    };
    s.permissions = permissions_of(adapter);
    if let Some(p) = s.permissions.iter().find(|p| !p.satisfied)
        && s.available
    {
        s.available = false;
        s.reason = format!(
            "{}; but {} = {}: {}",
            s.reason,
            p.name,
            p.value.as_deref().unwrap_or("absent"),
            p.note
        );
    }
    s
}

/// `passive` with the active probe's answer (run now when `refresh`).
fn active_status(mut s: AdapterStatus, refresh: bool) -> AdapterStatus {
    let (program, argv, what) = if s.name == "viztracer" {
        let Some(python) = crate::execution::env::resolve_program("python3") else {
            return s;
        };
        (
            python,
            vec![
                "python3".to_owned(),
                "-I".to_owned(),
                "-c".to_owned(),
                "import viztracer; print('viztracer', viztracer.__version__)".to_owned(),
            ],
            "python3 on PATH (plan_capture probes the workload's own interpreter)",
        )
    } else {
        let Some(tool) = tool_program(&s.name) else {
            return s;
        };
        let Some((path, _)) = adapter_program(&s.name) else {
            return s;
        };
        (path, vec![tool.to_owned(), "--version".to_owned()], "")
    };
    let result = if refresh {
        Some(probe_cache::probe(&s.name, &program, argv))
    } else {
        probe_cache::cached(&s.name, &program)
    };
    let Some(result) = result else {
        s.reason = format!(
            "{}; no cached probe of this program (mode active_refresh runs one)",
            s.reason
        );
        return s;
    };
    s.probe = "active".into();
    s.version = result.version.clone();
    if result.ok {
        s.setup_verification = "actively_verified".into();
        if !what.is_empty() {
            s.reason = format!(
                "viztracer {} imports in {what}",
                result.version.as_deref().unwrap_or("?")
            );
        }
    } else {
        s.setup_verification = "probe_failed".into();
        if s.name == "viztracer" {
            // The workload's own interpreter decides; plan_capture asks it.
            s.reason = format!("viztracer does not import in {what}: {}", result.detail);
        } else {
            s.available = false;
            s.reason = format!("its version probe failed: {}", result.detail);
        }
    }
    s
}

fn unavailable(s: &AdapterStatus) -> FlameoxError {
    let mut err = FlameoxError::new(
        ErrorCode::CapabilityUnavailable,
        format!("adapter {} is unavailable: {}", s.name, s.reason),
    )
    .detail("adapter", s.name.clone());
    for step in &s.remediation {
        err = err.remedy(step.clone());
    }
    err.recover_with(
        "list_capabilities",
        serde_json::json!({}),
        "flameox capabilities",
    )
}

pub(crate) fn is_python(program: &str) -> bool {
    let base = program.rsplit('/').next().unwrap_or(program);
    base.starts_with("python")
}

/// Checks `adapter` for a workload whose resolved program is `program` (the
/// bounded active probe for viztracer) and returns its status.
pub fn check_for_workload(adapter: &str, program: &Path, argv: &[String]) -> Result<AdapterStatus> {
    if !ADAPTERS.contains(&adapter) {
        return Err(FlameoxError::invalid_argument(
            "adapter",
            format!(
                "unknown adapter `{adapter}`; one of {}",
                ADAPTERS.join(", ")
            ),
        ));
    }
    let mut s = passive_status(adapter);
    if adapter == "viztracer" {
        if !argv.first().is_some_and(|a| is_python(a)) {
            s.available = false;
            s.reason = "viztracer needs a workload whose argv[0] is a Python interpreter".into();
        } else {
            let mut probe = ProcessSpec::new(
                program.to_path_buf(),
                vec![argv[0].clone(), "-c".into(), "import viztracer".into()],
                std::env::temp_dir(),
                Duration::from_secs(30),
            );
            probe.env = child_environment(&Default::default());
            let outcome = run_process(&probe, &Unsupervised)?;
            s.available = outcome.exit_code == Some(0);
            s.reason = if s.available {
                "viztracer imports in the workload's interpreter".into()
            } else {
                "viztracer is not importable in the workload's interpreter".into()
            };
        }
    }
    if !s.available {
        return Err(unavailable(&s));
    }
    Ok(s)
}

/// How `argv` runs under `adapter`, writing its profile into `dir`;
/// `options` are the profiler arguments of its adapter options
/// ([`super::adapter_options::arguments`]).
pub fn wrap(
    adapter: &str,
    program: &Path,
    argv: &[String],
    dir: &str,
    options: &[String],
) -> Result<Wrapped> {
    let out = |name: &str| format!("{dir}/{name}");
    let tool = |name: &str| {
        find_program(name)
            .map(|(path, _)| path)
            .ok_or_else(|| unavailable(&passive_status(adapter)))
    };
    let wrapped = match adapter {
        "process" => Wrapped {
            program: program.to_path_buf(),
            command: argv.to_vec(),
            profile: None,
        },
        "py-spy" | "perf" | "nsys" => {
            let tool_path = tool(tool_program(adapter).unwrap_or(adapter))?;
            let (name, kind, mut command) = match adapter {
                "py-spy" => (
                    "profile.speedscope.json",
                    "speedscope_json",
                    vec!["py-spy", "record", "--format", "speedscope"],
                ),
                "perf" => ("perf.data", "folded_stacks", vec!["perf", "record", "-g"]),
                _ => (
                    "profile",
                    "nsight_systems_sqlite",
                    vec!["nsys", "profile", "--force-overwrite", "true"],
                ),
            };
            let mut full: Vec<String> = command.drain(..).map(str::to_owned).collect();
            full.extend(options.iter().cloned());
            full.push("--output".into());
            full.push(out(name));
            full.push("--".into());
            full.push(program.to_string_lossy().into_owned());
            full.extend(argv.iter().skip(1).cloned());
            Wrapped {
                program: tool_path,
                command: full,
                profile: Some(ProfileOutput {
                    file_name: name.to_owned(),
                    kind: kind.to_owned(),
                }),
            }
        }
        "viztracer" => {
            let mut full = vec![
                argv[0].clone(),
                "-m".into(),
                "viztracer".into(),
                "--quiet".into(),
                "--output_file".into(),
                out("trace.viztracer.json"),
            ];
            full.extend(options.iter().cloned());
            match argv.get(1).map(String::as_str) {
                Some("-m") => full.push("--module".into()),
                Some("-c") => full.push("-c".into()),
                _ => {}
            }
            let skip = if matches!(argv.get(1).map(String::as_str), Some("-m" | "-c")) {
                2
            } else {
                1
            };
            full.extend(argv.iter().skip(skip).cloned());
            Wrapped {
                program: program.to_path_buf(),
                command: full,
                profile: Some(ProfileOutput {
                    file_name: "trace.viztracer.json".into(),
                    kind: "chrome_json".into(),
                }),
            }
        }
        other => {
            return Err(FlameoxError::invalid_argument(
                "adapter",
                format!("unknown adapter `{other}`"),
            ));
        }
    };
    Ok(wrapped)
}

/// A declared third-party adapter and its status in `ws` (`None`: `name`
/// is built in).
fn declared(ws: &Workspace, name: &str) -> Result<Option<(AdapterDef, ThirdPartyStatus)>> {
    if ADAPTERS.contains(&name) {
        return Ok(None);
    }
    let (config, _) = crate::project::load_valid(ws.project_root())?;
    let Some(def) = config.adapters.get(name) else {
        let mut known: Vec<&str> = ADAPTERS.to_vec();
        known.extend(config.adapters.keys().map(String::as_str));
        return Err(FlameoxError::invalid_argument(
            "adapter",
            format!("unknown adapter `{name}`; one of {}", known.join(", ")),
        ));
    };
    let status = third_party::status(ws, name, def);
    Ok(Some((def.clone(), status)))
}

fn third_party_status(def: &AdapterDef, status: &ThirdPartyStatus) -> AdapterStatus {
    let mut s = AdapterStatus {
        name: status.adapter.clone(),
        available: status.approved,
        reason: status.reason.clone(),
        probe: "passive".into(),
        output: format!(
            "{} → {}",
            def.profile,
            def.kind.as_deref().unwrap_or("detected by content")
        ),
        remediation: Vec::new(),
        provisioning: "third_party_approval".into(),
        version: status.identity.as_ref().and_then(|i| i.version.clone()),
        setup_verification: if status.approved {
            "passively_observed".into()
        } else {
            "pending".into()
        },
        permissions: Vec::new(),
    };
    if !status.approved && status.identity.is_some() {
        s.remediation.push(format!(
            "prepare_adapter approves {}'s exact identity (list_capabilities: setup_third_party_adapters)",
            status.adapter
        ));
    }
    s
}

/// The status of every third-party adapter `ws`'s project declares.
pub fn third_party_statuses(ws: &Workspace) -> Vec<(AdapterStatus, ThirdPartyStatus)> {
    let Ok((config, _)) = crate::project::load_valid(ws.project_root()) else {
        return Vec::new();
    };
    config
        .adapters
        .iter()
        .map(|(name, def)| {
            let status = third_party::status(ws, name, def);
            (third_party_status(def, &status), status)
        })
        .collect()
}

/// [`check_for_workload`], for built-in and declared third-party adapters:
/// a third-party one must be approved for the identity it has now.
pub fn check_in(
    ws: &Workspace,
    adapter: &str,
    program: &Path,
    argv: &[String],
) -> Result<AdapterStatus> {
    let Some((def, status)) = declared(ws, adapter)? else {
        return check_for_workload(adapter, program, argv);
    };
    let s = third_party_status(&def, &status);
    if !s.available {
        let mut err = unavailable(&s);
        if let Some(identity) = &status.identity {
            err = err.recover_with(
                "prepare_adapter",
                serde_json::json!({
                    "adapter": adapter,
                    "distribution": identity.distribution,
                    "version": identity.version,
                }),
                format!(
                    "flameox adapter approve {adapter}{}{}",
                    identity
                        .distribution
                        .as_deref()
                        .map(|d| format!(" --distribution {d}"))
                        .unwrap_or_default(),
                    identity
                        .version
                        .as_deref()
                        .map(|v| format!(" --version {v}"))
                        .unwrap_or_default()
                ),
            );
        }
        return Err(err);
    }
    Ok(s)
}

/// [`wrap`], for built-in and declared third-party adapters.
pub fn wrap_in(
    ws: &Workspace,
    adapter: &str,
    program: &Path,
    argv: &[String],
    dir: &str,
    options: &BTreeMap<String, serde_json::Value>,
) -> Result<Wrapped> {
    let Some((def, status)) = declared(ws, adapter)? else {
        let options = super::adapter_options::arguments(adapter, options)?;
        return wrap(adapter, program, argv, dir, &options);
    };
    // A declared adapter's command is its declaration's: it takes none.
    super::adapter_options::arguments(adapter, options)?;
    if !status.approved {
        return Err(unavailable(&third_party_status(&def, &status)));
    }
    let tool = third_party::adapter_program(&def, ws.project_root())
        .ok_or_else(|| unavailable(&third_party_status(&def, &status)))?;
    let profile = format!("{dir}/{}", def.profile);
    let mut command = Vec::new();
    for arg in &def.command {
        if arg == "{argv}" {
            command.push(program.to_string_lossy().into_owned());
            command.extend(argv.iter().skip(1).cloned());
        } else {
            command.push(
                arg.replace("{program}", &tool.to_string_lossy())
                    .replace("{profile}", &profile),
            );
        }
    }
    Ok(Wrapped {
        program: tool,
        command,
        profile: Some(ProfileOutput {
            file_name: def.profile.clone(),
            kind: def.kind.clone().unwrap_or_else(|| "auto".into()),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viztracer_keeps_the_interpreter_and_maps_c_and_m_forms() {
        let python = Path::new("/usr/bin/python3");
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let c = wrap(
            "viztracer",
            python,
            &argv(&["python3", "-c", "print(1)"]),
            "D",
            &[],
        )
        .unwrap();
        assert_eq!(c.command[0], "python3");
        assert_eq!(
            &c.command[5..],
            &argv(&["D/trace.viztracer.json", "-c", "print(1)"])[..]
        );
        let m = wrap(
            "viztracer",
            python,
            &argv(&["python3", "-m", "pkg", "x"]),
            "D",
            &[],
        )
        .unwrap();
        assert_eq!(&m.command[6..], &argv(&["--module", "pkg", "x"])[..]);
        let s = wrap(
            "viztracer",
            python,
            &argv(&["python3", "s.py", "1"]),
            "D",
            &[],
        )
        .unwrap();
        assert_eq!(&s.command[6..], &argv(&["s.py", "1"])[..]);
        assert_eq!(s.program, python);
        // Adapter options go after the tool's own flags, before the program.
        let o = wrap(
            "viztracer",
            python,
            &argv(&["python3", "s.py"]),
            "D",
            &argv(&["--log_gc"]),
        )
        .unwrap();
        assert_eq!(&o.command[6..], &argv(&["--log_gc", "s.py"])[..]);
    }

    #[test]
    fn unknown_adapters_are_invalid_arguments() {
        let err = check_for_workload("dtrace", Path::new("/bin/true"), &[]).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArguments);
        assert!(
            adapter_statuses()
                .iter()
                .any(|s| s.name == "process" && s.available)
        );
    }
}
