//! Capture adapters with the real profilers: py-spy (speedscope) and
//! viztracer (Chrome JSON) from the virtualenv `.ci/run` installs (path in
//! `FLAMEOX_PROFILERS_VENV`), perf when the machine has it. Each capture is
//! imported into the execution run, so hotspots name the workload's hot
//! Python function. When `FLAMEOX_PROFILERS_VENV` or `CI` is set, a missing
//! profiler FAILS these tests; only an ad-hoc local run without the
//! virtualenv skips them, loudly.

use std::path::PathBuf;

use flameox_tests::Project;
use serde_json::Value;

/// The virtualenv's bin folder with py-spy and viztracer, if usable.
fn profilers_bin() -> Option<PathBuf> {
    flameox_tests::profilers_bin(&["python3", "py-spy", "viztracer"])
}

/// A CPU-bound workload with one obviously hot function. Its default size
/// runs ~1.5 s: at 0.4 s a loaded machine let the process exit before py-spy
/// attached ("Failed to get process executable name").
const CONFIG: &str = r#"
[workloads.hot]
argv = ["python3", "-c", "def hot_loop(n):\n    x = 0\n    for i in range(n):\n        x += i * i\n    return x\nprint(hot_loop({n}) > 0)"]
timeout_seconds = 120
parameters = { n = [20000000, 1000000000] }

[workloads.not_python]
argv = ["env", "true"]
timeout_seconds = 10
"#;

struct Setup {
    project: Project,
    path: String,
}

fn setup(bin: &std::path::Path) -> Setup {
    let project = Project::new();
    std::fs::write(project.path().join("flameox.toml"), CONFIG).expect("config");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Setup { project, path }
}

impl Setup {
    fn json(&self, args: &[&str]) -> (Option<i32>, Value) {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self
            .project
            .command(&all)
            .env("PATH", &self.path)
            .output()
            .expect("flameox");
        let body = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
            panic!(
                "{args:?}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out.status.code(), body)
    }

    /// Captures `hot` under `adapter` and checks the profile names `hot_loop`.
    fn capture_names_the_hot_function(&self, adapter: &str, kind: &str) -> Value {
        let (code, out) = self.json(&["capture", "run", "hot", "--adapter", adapter]);
        assert_eq!(code, Some(0), "{out}");
        let result = &out["result"];
        assert_eq!(result["status"], "completed", "{result}");
        assert_eq!(result["capture"], "completed", "{result}");
        assert_eq!(result["measurements"], 3);
        let profile = result["artifacts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["role"] == "profile")
            .unwrap_or_else(|| panic!("no profile artifact: {result}"));
        assert_eq!(profile["kind"], kind);
        let run_id = result["run_id"].as_str().unwrap();
        let (code, hotspots) = self.json(&["analyze", "hotspots", run_id, "--limit", "50"]);
        assert_eq!(code, Some(0), "{hotspots}");
        assert!(hotspots.to_string().contains("hot_loop"), "{hotspots}");
        result.clone()
    }
}

#[cfg_attr(
    profilers_absent,
    ignore = "needs the tools .ci/run installs (py-spy, viztracer, pytest, coverage, moto[server]): set FLAMEOX_PROFILERS_VENV"
)]
#[test]
fn py_spy_captures_are_imported_as_speedscope_stacks() {
    let Some(bin) = profilers_bin() else { return };
    let setup = setup(&bin);
    let result = setup.capture_names_the_hot_function("py-spy", "speedscope_json");
    assert!(
        result["cpu_time_ns"].as_u64().unwrap_or(0) >= 100_000_000,
        "{result}"
    );
}

#[cfg_attr(
    profilers_absent,
    ignore = "needs the tools .ci/run installs (py-spy, viztracer, pytest, coverage, moto[server]): set FLAMEOX_PROFILERS_VENV"
)]
#[test]
fn viztracer_captures_are_imported_as_chrome_traces() {
    let Some(bin) = profilers_bin() else { return };
    let setup = setup(&bin);
    setup.capture_names_the_hot_function("viztracer", "chrome_json");
    // viztracer needs a Python argv[0]: refused at planning, nothing runs.
    let (code, err) = setup.json(&["capture", "plan", "not_python", "--adapter", "viztracer"]);
    assert_eq!(
        (code, err["code"].as_str()),
        (Some(3), Some("CAPABILITY_UNAVAILABLE"))
    );
    let (_, runs) = setup.json(&["runs", "list"]);
    assert_eq!(runs["total"], 1);
}

#[cfg_attr(
    profilers_absent,
    ignore = "needs the tools .ci/run installs (py-spy, viztracer, pytest, coverage, moto[server]): set FLAMEOX_PROFILERS_VENV"
)]
#[test]
fn an_interrupted_profile_is_quarantined_not_imported() {
    let Some(bin) = profilers_bin() else { return };
    let setup = setup(&bin);
    let config = CONFIG.replace("timeout_seconds = 120", "timeout_seconds = 2");
    std::fs::write(setup.project.path().join("flameox.toml"), config).expect("config");
    let (code, err) = setup.json(&[
        "capture",
        "run",
        "hot",
        "--adapter",
        "py-spy",
        "--parameters",
        r#"{"n": 1000000000}"#,
    ]);
    assert_eq!(
        (code, err["code"].as_str()),
        (Some(8), Some("PROCESS_TIMEOUT")),
        "{err}"
    );
    let result = &err["details"]["result"];
    assert_eq!(result["status"], "timed_out");
    let roles: Vec<&str> = result["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["receipt", "stdout", "stderr", "observations"],
        "complete artifacts kept, no profile"
    );
    let run_id = result["run_id"].as_str().unwrap();
    let quarantine = setup
        .project
        .path()
        .join(".flameox/quarantine")
        .join(format!("capture-{run_id}"));
    for name in result["quarantined"].as_array().unwrap() {
        assert!(quarantine.join(name.as_str().unwrap()).is_file());
    }
    let expected_capture = if result["quarantined"].as_array().unwrap().is_empty() {
        "interrupted"
    } else {
        "partial"
    };
    assert_eq!(result["capture"], expected_capture);
}

#[test]
fn perf_captures_are_folded_into_stacks_when_perf_is_installed() {
    let Some(perf) = flameox_engine::execution::env::resolve_program("perf") else {
        eprintln!("SKIPPED: perf is not installed (the perf adapter reports itself unavailable)");
        return;
    };
    let project = Project::new();
    std::fs::write(project.path().join("flameox.toml"), CONFIG).expect("config");
    let out = project.json(&["capture", "run", "hot", "--adapter", "perf"]);
    let result = &out["result"];
    assert_eq!(
        result["capture"],
        "completed",
        "{result} ({})",
        perf.display()
    );
    let run = project.json(&["runs", "show", result["run_id"].as_str().unwrap()]);
    assert!(run["rows"]["samples"].as_u64().unwrap_or(0) > 0, "{run}");
    let profile = result["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["role"] == "profile")
        .expect("profile");
    assert_eq!(profile["kind"], "folded_stacks");
}
