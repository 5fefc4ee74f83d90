//! Helpers for flameox's end-to-end tests: find (or build) the real `flameox`
//! binary, run it in a scratch project, and locate the shared corpus.

pub mod golden_experiment;
pub mod nsight_export;
pub mod package_index;
pub mod s3_server;
pub mod workloads;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The repository root (this crate lives in `<root>/tests`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Where `.ci/run` installs the profilers (py-spy, viztracer, pytest,
/// coverage, moto) when `FLAMEOX_PROFILERS_VENV` names no other place.
pub const DEFAULT_PROFILERS_VENV: &str = "/var/tmp/flameox-profilers-venv";

/// The profilers virtualenv's bin folder when it has `tools`. When
/// `FLAMEOX_PROFILERS_VENV` or `CI` is set a missing tool fails the test;
/// an ad-hoc local run without the virtualenv skips it, saying so.
pub fn profilers_bin(tools: &[&str]) -> Option<PathBuf> {
    let configured = std::env::var_os("FLAMEOX_PROFILERS_VENV");
    let required = configured.is_some() || std::env::var_os("CI").is_some();
    let bin =
        PathBuf::from(configured.unwrap_or_else(|| DEFAULT_PROFILERS_VENV.into())).join("bin");
    if tools.iter().all(|tool| bin.join(tool).is_file()) {
        return Some(bin);
    }
    assert!(
        !required,
        "{tools:?} not found in {}: .ci/run installs them and sets FLAMEOX_PROFILERS_VENV",
        bin.display()
    );
    eprintln!(
        "SKIPPED: no {tools:?} in {} (set FLAMEOX_PROFILERS_VENV; CI always does)",
        bin.display()
    );
    None
}

/// Says that a kernel tracer (`perf record`, an ftrace instance) does not
/// run here and the test is skipped — or fails it when
/// `FLAMEOX_REQUIRE_KERNEL_TRACING` is set (`.ci/run` sets it: CI runs as
/// root with perf installed).
pub fn skip_without_kernel_tracing(what: &str) {
    assert!(
        std::env::var_os("FLAMEOX_REQUIRE_KERNEL_TRACING").is_none(),
        "{what} does not run here, and FLAMEOX_REQUIRE_KERNEL_TRACING is set"
    );
    eprintln!("SKIPPED: {what} does not run here (needs root and a kernel that traces)");
}

/// The profilers virtualenv's bin folder when its `python3` imports every
/// one of `modules` (same rules as [`profilers_bin`]: required under `CI`
/// or `FLAMEOX_PROFILERS_VENV`, else skipped with the reason).
pub fn profilers_python(modules: &[&str]) -> Option<PathBuf> {
    let configured = std::env::var_os("FLAMEOX_PROFILERS_VENV");
    let required = configured.is_some() || std::env::var_os("CI").is_some();
    let bin =
        PathBuf::from(configured.unwrap_or_else(|| DEFAULT_PROFILERS_VENV.into())).join("bin");
    let python = bin.join("python3");
    let complete = python.is_file()
        && modules.iter().all(|module| {
            std::process::Command::new(&python)
                .args(["-c", &format!("import {module}")])
                .status()
                .is_ok_and(|s| s.success())
        });
    if complete {
        return Some(bin);
    }
    assert!(
        !required,
        "{modules:?} not importable in {}: .ci/run installs them and sets FLAMEOX_PROFILERS_VENV",
        bin.display()
    );
    eprintln!(
        "SKIPPED: {modules:?} not importable in {} (set FLAMEOX_PROFILERS_VENV; CI always does)",
        bin.display()
    );
    None
}

/// The shared corpus folder: `$FLAMEOX_CORPUS` at build time, else
/// `../shared/corpus` beside the repository (tests/build.rs decides; tests
/// that read it are skipped when it is absent).
pub fn corpus() -> PathBuf {
    PathBuf::from(env!("FLAMEOX_CORPUS_DIR"))
}

/// The eight per-rank Kineto files of the DLRM job in the corpus, sorted
/// by name (one folder = one multi-artifact run).
/// Writes a generated `ranks`-rank Kineto job into `dir` (one
/// `rank<r>.pt.trace.json` per rank, `events` events each, from `seed`).
pub fn write_kineto_job(dir: &Path, ranks: u64, events: u64, seed: u64) {
    let spec = flameox_benches::kineto::KinetoSpec {
        seed,
        events,
        streams: 2,
        ops_per_step: 0,
    };
    for rank in 0..ranks {
        let file = std::fs::File::create(dir.join(format!("rank{rank}.pt.trace.json")))
            .expect("rank file");
        flameox_benches::kineto::write_kineto_rank(
            &spec,
            rank,
            ranks,
            std::io::BufWriter::new(file),
        )
        .expect("write a rank");
    }
}

pub fn dlrm_rank_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus().join("kineto/param_dlrm_8rank"))
        .expect("param_dlrm_8rank")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 8);
    files
}

/// The `flameox` binary of this build profile, built on first use when the
/// test runner did not build it (a runner limited to this package).
pub fn flameox_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().expect("test executable path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target/<profile>")
            .to_path_buf();
        let bin = profile_dir.join("flameox");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        // The same selection as the README test command (with the cluster
        // feature when this crate has it), so the features (and the compiled
        // dependencies) are the ones the runner built: a no-op after
        // `cargo nextest run --workspace --all-targets [--features
        // flameox-tests/cluster]`.
        cmd.args(["build", "--workspace", "--all-targets"])
            .current_dir(repo_root());
        if cfg!(feature = "cluster") {
            cmd.args(["--features", "flameox-tests/cluster"]);
        }
        // What cargo set for this test binary must not reach the nested
        // build: build scripts that watch these variables (ring's watches
        // CARGO_MANIFEST_DIR and CARGO_PKG_*) would rerun, and everything
        // above them (object_store, DataFusion) would compile again — and
        // once more at the next ordinary build.
        for (key, _) in std::env::vars_os() {
            let Some(key) = key.to_str() else { continue };
            let set_for_tests = [
                "CARGO_PKG_",
                "CARGO_MANIFEST_",
                "CARGO_CRATE_",
                "CARGO_BIN_",
            ]
            .iter()
            .any(|prefix| key.starts_with(prefix))
                || matches!(
                    key,
                    "CARGO_PRIMARY_PACKAGE" | "CARGO_TARGET_TMPDIR" | "OUT_DIR"
                );
            if set_for_tests {
                cmd.env_remove(key);
            }
        }
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        // Keep the same target folder as this test binary.
        if let Some(target) = profile_dir.parent() {
            cmd.env("CARGO_TARGET_DIR", target);
        }
        let status = cmd
            .status()
            .expect("running cargo build for the flameox binary");
        assert!(status.success(), "building the flameox binary failed");
        assert!(
            bin.is_file(),
            "flameox binary not found at {}",
            bin.display()
        );
        bin
    })
    .clone()
}

/// Runs a `--json` command, asserts success, parses stdout (`args` name
/// it in the failure message).
pub fn success_json(cmd: &mut Command, args: &[&str]) -> serde_json::Value {
    let out = cmd.output().expect("running flameox");
    assert!(
        out.status.success(),
        "flameox {args:?} failed ({:?}): {}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON document")
}

/// A scratch project with an initialized workspace.
pub struct Project {
    pub dir: tempfile::TempDir,
}

impl Project {
    pub fn new() -> Project {
        let project = Project::bare();
        let out = project.run(&["init"]);
        assert!(
            out.status.success(),
            "init failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        project
    }

    pub fn bare() -> Project {
        Project {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Sets `import.events_in_memory` in the workspace's config (from its
    /// default), so a small trace goes through spill runs.
    pub fn set_events_in_memory(&self, limit: u64) {
        let path = self.path().join(".flameox/config.toml");
        let config = std::fs::read_to_string(&path).expect("config");
        let default = format!(
            "events_in_memory = {}",
            flameox_extractors::api::DEFAULT_SPILL_AFTER_EVENTS
        );
        assert!(config.contains(&default), "{config}");
        let changed = config.replace(&default, &format!("events_in_memory = {limit}"));
        std::fs::write(&path, changed).expect("config written");
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(flameox_bin());
        cmd.args(args)
            .current_dir(self.path())
            .env("NO_COLOR", "1")
            .env_remove("FLAMEOX_TEST_PAUSE_AT");
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("running flameox")
    }

    /// Imports a corpus file or folder (path relative to the corpus) as a
    /// new run; its run id.
    pub fn import_corpus(&self, rel: &str) -> String {
        self.import_path(&corpus().join(rel))
    }

    /// Imports `path` as a new run; its run id.
    pub fn import_path(&self, path: &Path) -> String {
        let imported = self.json(&["import", path.to_str().expect("utf-8 path")]);
        imported["run_id"].as_str().expect("run id").to_owned()
    }

    /// Runs with `--json`, asserts success, parses stdout.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = args.to_vec();
        all.push("--json");
        success_json(&mut self.command(&all), args)
    }

    /// Every `trace_events` row of `kind` in the latest run, page by page
    /// (`trace window`, the whole clock range), with `fields`.
    pub fn window_events(&self, kind: &str, fields: &[&str]) -> Vec<serde_json::Value> {
        self.window_events_where(&["--kind", kind], fields)
    }

    /// Every event of the latest run that `filter` (e.g. `["--name",
    /// "compute"]`) selects, with `fields`, across all pages.
    pub fn window_events_where(&self, filter: &[&str], fields: &[&str]) -> Vec<serde_json::Value> {
        let mut args = vec![
            "trace",
            "window",
            "latest",
            "--start-ns",
            "0",
            "--end-ns",
            "9000000000000000000",
            "--limit",
            "1000",
        ];
        args.extend_from_slice(filter);
        for field in fields {
            args.extend(["--fields", field]);
        }
        let mut rows = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut page_args = args.clone();
            if let Some(c) = &cursor {
                page_args.extend(["--cursor", c.as_str()]);
            }
            let page = self.json(&page_args);
            rows.extend(page["events"].as_array().into_iter().flatten().cloned());
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => return rows,
            }
        }
    }

    /// Runs with `--json`, expects failure with `code` and `exit`; returns the error object.
    pub fn json_err(&self, args: &[&str], code: &str, exit: i32) -> serde_json::Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.run(&all);
        let body: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
            panic!("stdout not JSON: {}", String::from_utf8_lossy(&out.stdout))
        });
        assert_eq!(body["code"], code, "{body}");
        assert_eq!(out.status.code(), Some(exit), "{body}");
        body
    }

    pub fn head(&self) -> Option<String> {
        std::fs::read_to_string(self.path().join(".flameox/corpus/HEAD"))
            .ok()
            .map(|s| s.trim().to_owned())
    }

    pub fn staging_entries(&self) -> usize {
        std::fs::read_dir(self.path().join(".flameox/staging"))
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

impl Default for Project {
    fn default() -> Self {
        Project::new()
    }
}

/// Kineto categories (lower-cased) that are not host activity: device
/// rows, device annotations and the profiler's own span.
pub const NOT_HOST_CATEGORIES: [&str; 5] = [
    "kernel",
    "gpu_memcpy",
    "gpu_memset",
    "gpu_user_annotation",
    "trace",
];

/// A corpus Chrome-trace JSON file (gzipped or plain), parsed.
pub fn corpus_json(path: &str) -> serde_json::Value {
    use std::io::Read;
    let raw = std::fs::read(corpus().join(path)).expect("corpus file");
    let mut text = String::new();
    if raw.starts_with(&[0x1f, 0x8b]) {
        flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_string(&mut text)
            .expect("gunzip");
    } else {
        text = String::from_utf8(raw).expect("utf-8");
    }
    serde_json::from_str(&text).expect("json")
}

/// A Chrome-trace µs number as integer ns, from its decimal text: three
/// fractional digits exact, the rest rounded half away from zero (no f64
/// arithmetic, so epoch-scale timestamps stay exact).
pub fn micros_to_ns(v: &serde_json::Value) -> i64 {
    let text = v.to_string();
    let text = text.trim_matches('"');
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    assert!(!digits.contains(['e', 'E']), "exponent in {text}");
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let mut ns: i64 = whole.parse::<i64>().expect("integer part") * 1000;
    let frac: Vec<i64> = fraction
        .bytes()
        .map(|b| i64::from(b - b'0'))
        .chain(std::iter::repeat(0))
        .take(4)
        .collect();
    ns += frac[0] * 100 + frac[1] * 10 + frac[2];
    if frac[3] >= 5 {
        ns += 1;
    }
    if negative { -ns } else { ns }
}

pub mod fuzz;
pub mod generated_runs;

/// The sum of a device's idle breakdown (`analyze gpu-gaps` → `devices[].idle`):
/// before its first activity, starved, stalled, unlinked and after its last.
pub fn idle_parts_ns(idle: &serde_json::Value) -> i64 {
    [
        "before_first_activity_ns",
        "starved_ns",
        "stalled_ns",
        "unlinked_ns",
        "after_last_activity_ns",
    ]
    .iter()
    .map(|k| idle[*k].as_i64().unwrap_or(0))
    .sum()
}
