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
//! Listing capabilities is passive (a PATH lookup, nothing runs). Planning a
//! viztracer capture runs one bounded active probe: the declared interpreter
//! with `-c "import viztracer"` (no workload code).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, FlameoxError, Result};
use crate::execution::env::{child_environment, resolve_program};
use crate::execution::{ProcessSpec, Unsupervised, run_process};

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

fn passive_status(adapter: &str) -> AdapterStatus {
    let output = output_of(adapter);
    if adapter == "process" {
        return status(
            adapter,
            true,
            "runs the workload directly".into(),
            "none",
            output,
        );
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
        s.remediation.push(
            "install viztracer into the workload's interpreter (pip install viztracer)".into(),
        );
        return s;
    }
    let program = tool_program(adapter).unwrap_or(adapter);
    match resolve_program(program) {
        Some(_) => status(
            adapter,
            true,
            format!("{program} found on PATH"),
            "passive",
            output,
        ),
        None => {
            let mut s = status(
                adapter,
                false,
                format!("{program} not found on PATH"),
                "passive",
                output,
            );
            s.remediation.push(match adapter {
                "py-spy" => "pip install py-spy (or put py-spy on PATH)".to_owned(),
                "perf" => "install linux-perf (perf) for this kernel".to_owned(),
                _ => "install NVIDIA Nsight Systems and put nsys on PATH".to_owned(),
            });
            s
        }
    }
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

fn is_python(program: &str) -> bool {
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

/// How `argv` runs under `adapter`, writing its profile into `dir`.
pub fn wrap(adapter: &str, program: &Path, argv: &[String], dir: &str) -> Result<Wrapped> {
    let out = |name: &str| format!("{dir}/{name}");
    let tool =
        |name: &str| resolve_program(name).ok_or_else(|| unavailable(&passive_status(adapter)));
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
                    vec![
                        "py-spy",
                        "record",
                        "--format",
                        "speedscope",
                        "--rate",
                        "200",
                        "--output",
                    ],
                ),
                "perf" => (
                    "perf.data",
                    "folded_stacks",
                    vec!["perf", "record", "-g", "--output"],
                ),
                _ => (
                    "profile",
                    "nsight_systems_sqlite",
                    vec!["nsys", "profile", "--force-overwrite", "true", "--output"],
                ),
            };
            let mut full: Vec<String> = command.drain(..).map(str::to_owned).collect();
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
        )
        .unwrap();
        assert_eq!(&m.command[6..], &argv(&["--module", "pkg", "x"])[..]);
        let s = wrap("viztracer", python, &argv(&["python3", "s.py", "1"]), "D").unwrap();
        assert_eq!(&s.command[6..], &argv(&["s.py", "1"])[..]);
        assert_eq!(s.program, python);
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
