//! Helpers for flameox's end-to-end tests: find (or build) the real `flameox`
//! binary, run it in a scratch project, and locate the shared corpus.

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

/// `../shared/corpus` beside the repository.
pub fn corpus() -> PathBuf {
    repo_root().join("../shared/corpus")
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
        // The same selection as the README test command, so the features
        // (and the compiled dependencies) are the ones the runner built: a
        // no-op after `cargo nextest run --workspace --all-targets`.
        cmd.args(["build", "--workspace", "--all-targets"])
            .current_dir(repo_root());
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

    /// Runs with `--json`, asserts success, parses stdout.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.run(&all);
        assert!(
            out.status.success(),
            "flameox {args:?} failed ({:?}): {}{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("stdout is one JSON document")
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
