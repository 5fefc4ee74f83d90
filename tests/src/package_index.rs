//! A Python package index on loopback, built in the test: wheels made by
//! `tests/package_index/local_index.py` in a temporary folder, served by
//! that script's HTTP server, so pip installs them through
//! `PIP_INDEX_URL` with no network. Also the environment that points a
//! flameox server at it and at a private data folder (the managed runtime).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn script() -> PathBuf {
    crate::repo_root().join("tests/package_index/local_index.py")
}

/// A folder of wheels and the server that serves it.
pub struct LocalIndex {
    pub dir: tempfile::TempDir,
    pub url: String,
    server: Child,
}

impl LocalIndex {
    /// An empty index, served.
    pub fn start() -> LocalIndex {
        let dir = tempfile::tempdir().expect("index dir");
        let mut server = Command::new("python3")
            .arg(script())
            .arg("serve")
            .arg(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting the local package index");
        let stdout = server.stdout.take().expect("index stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the index's port");
        let port: u16 = line.trim().parse().expect("a port number");
        LocalIndex {
            dir,
            url: format!("http://127.0.0.1:{port}/"),
            server,
        }
    }

    /// Adds a wheel of `name` at `version` with `scripts` (installed name,
    /// file to copy) and importable `modules`.
    pub fn add(&self, name: &str, version: &str, scripts: &[(&str, &Path)], modules: &[&str]) {
        let mut cmd = Command::new("python3");
        cmd.arg(script())
            .arg("build")
            .arg(self.dir.path())
            .arg(name)
            .arg(version);
        for (installed, source) in scripts {
            cmd.arg("--script")
                .arg(format!("{installed}={}", source.display()));
        }
        for module in modules {
            cmd.arg("--module").arg(module);
        }
        let out = cmd.output().expect("building a wheel");
        assert!(
            out.status.success(),
            "wheel build failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The environment of a flameox process that installs from this index
    /// into a managed runtime under `data_dir`, with a PATH that has no
    /// `hidden` program on it.
    pub fn server_env(&self, data_dir: &Path, hidden: &[&str]) -> Vec<(&'static str, String)> {
        vec![
            ("PIP_INDEX_URL", self.url.clone()),
            ("PIP_NO_CACHE_DIR", "1".into()),
            ("PIP_DISABLE_PIP_VERSION_CHECK", "1".into()),
            ("FLAMEOX_DATA_DIR", data_dir.display().to_string()),
            ("PATH", path_without(hidden)),
        ]
    }
}

impl Drop for LocalIndex {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// This process's PATH without the folders that hold any of `programs`.
pub fn path_without(programs: &[&str]) -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|dir| !programs.iter().any(|p| dir.join(p).exists()))
        .collect();
    std::env::join_paths(kept)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A shell script that prints `text` (a stand-in program's `--version`).
pub fn printing_script(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\necho \"{text}\"\n")).expect("script");
    path
}
