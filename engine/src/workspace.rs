//! Finding, creating and laying out a `.flameox/` workspace.
//!
//! The layout is fixed by `evidence.md`; every path the engine touches is
//! derived here so no other module builds workspace paths by hand.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::error::{ErrorCode, FlameoxError, Result, io_error};
use crate::fsutil::{
    now_rfc3339, random_bytes, read_versioned_json, write_atomic, write_json_atomic,
};

pub const WORKSPACE_DIR: &str = ".flameox";
pub const WORKSPACE_SCHEMA_VERSION: u32 = 1;

/// `workspace.json`: who this workspace is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceIdentity {
    pub schema_version: u32,
    pub workspace_id: String,
    pub created_at: String,
    pub flameox_version: String,
}

/// How a command names its workspace: explicitly, by project root, or by
/// walking up from the current folder.
#[derive(Debug, Clone, Default)]
pub struct WorkspaceLocator {
    pub workspace: Option<PathBuf>,
    pub project_root: Option<PathBuf>,
    /// `--cluster`: this command's `query.cluster`, over the config's.
    pub cluster: Option<String>,
}

impl WorkspaceLocator {
    /// The `.flameox` folder this locator names, if it can be found.
    pub fn find(&self) -> Result<PathBuf> {
        if let Some(dir) = &self.workspace {
            return Ok(dir.clone());
        }
        if let Some(root) = &self.project_root {
            return Ok(root.join(WORKSPACE_DIR));
        }
        let cwd = std::env::current_dir().map_err(|e| io_error("reading the current folder", e))?;
        cwd.ancestors()
            .map(|dir| dir.join(WORKSPACE_DIR))
            .find(|candidate| candidate.join("workspace.json").is_file())
            .ok_or_else(FlameoxError::workspace_not_found)
    }

    /// The project root `init` creates the workspace in.
    pub fn init_root(&self) -> Result<PathBuf> {
        if let Some(dir) = &self.workspace {
            return Ok(dir
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| dir.clone()));
        }
        match &self.project_root {
            Some(root) => Ok(root.clone()),
            None => std::env::current_dir().map_err(|e| io_error("reading the current folder", e)),
        }
    }
}

/// An opened workspace: its folder, identity and configuration.
#[derive(Debug, Clone)]
pub struct Workspace {
    dir: PathBuf,
    pub identity: WorkspaceIdentity,
    pub config: Config,
}

/// What `init` did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InitOutcome {
    pub created: bool,
    pub workspace_id: String,
    pub git_exclude_updated: bool,
    /// The shared store its evidence lives in (`init --store`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<crate::shared_store::StoreState>,
}

const SUBDIRS: &[&str] = &[
    "locks",
    "artifacts/sha256",
    "runs",
    "records",
    "evidence",
    "generations",
    "corpus/commits",
    "staging",
    "quarantine",
    "trash",
    "logs",
];

impl Workspace {
    /// Creates `.flameox/` under `project_root` (idempotent: an existing
    /// workspace is opened and only missing folders are added).
    pub fn init(project_root: &Path) -> Result<(Workspace, InitOutcome)> {
        let dir = project_root.join(WORKSPACE_DIR);
        let identity_path = dir.join("workspace.json");
        let created = !identity_path.is_file();
        for sub in SUBDIRS {
            fs::create_dir_all(dir.join(sub)).map_err(|e| io_error("creating the workspace", e))?;
        }
        if !dir.join("config.toml").is_file() {
            write_atomic(&dir.join("config.toml"), Config::default_toml().as_bytes())?;
        }
        if !dir.join("cursor.key").is_file() {
            let key: [u8; 32] = random_bytes()?;
            write_atomic(&dir.join("cursor.key"), hex::encode(key).as_bytes())?;
        }
        if created {
            let identity = WorkspaceIdentity {
                schema_version: WORKSPACE_SCHEMA_VERSION,
                workspace_id: uuid::Uuid::now_v7().to_string(),
                created_at: now_rfc3339(),
                flameox_version: env!("CARGO_PKG_VERSION").to_owned(),
            };
            write_json_atomic(&identity_path, &identity)?;
        }
        let git_exclude_updated = add_git_exclude(project_root)?;
        let workspace = Workspace::open(&dir)?;
        let outcome = InitOutcome {
            created,
            workspace_id: workspace.identity.workspace_id.clone(),
            git_exclude_updated,
            store: None,
        };
        Ok((workspace, outcome))
    }

    /// Opens an existing `.flameox` folder.
    pub fn open(dir: &Path) -> Result<Workspace> {
        let identity_path = dir.join("workspace.json");
        if !identity_path.is_file() {
            return Err(FlameoxError::workspace_not_found());
        }
        // A newer flameox may have added keys too: its schema version is
        // read first, so the error says who wrote it and what to upgrade to.
        let identity: WorkspaceIdentity = read_versioned_json(
            &identity_path,
            "this workspace",
            WORKSPACE_SCHEMA_VERSION,
            |i: &WorkspaceIdentity| i.schema_version,
        )?;
        if identity.schema_version != WORKSPACE_SCHEMA_VERSION {
            return Err(FlameoxError::new(
                ErrorCode::WorkspaceInvalid,
                format!(
                    "this workspace has schema version {}, older than any this build \
                     (flameox {}) reads: it supports schema version {WORKSPACE_SCHEMA_VERSION}",
                    identity.schema_version,
                    env!("CARGO_PKG_VERSION")
                ),
            )
            .detail("schema_version", identity.schema_version)
            .detail("supported_schema_version", WORKSPACE_SCHEMA_VERSION)
            .remedy("open it with the flameox version that wrote it, or import its traces into a new workspace"));
        }
        let config_text = fs::read_to_string(dir.join("config.toml")).unwrap_or_default();
        let config = Config::parse(&config_text)?;
        Ok(Workspace {
            dir: dir.to_path_buf(),
            identity,
            config,
        })
    }

    /// Finds and opens the workspace a locator names.
    pub fn locate(locator: &WorkspaceLocator) -> Result<Workspace> {
        let mut ws = Workspace::open(&locator.find()?)?;
        if let Some(cluster) = &locator.cluster {
            crate::cluster::scheduler_url(cluster).map_err(|e| e.detail("field", "--cluster"))?;
            ws.config.query.cluster = cluster.clone();
        }
        Ok(ws)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
    pub fn project_root(&self) -> &Path {
        self.dir.parent().unwrap_or(&self.dir)
    }
    pub fn locks_dir(&self) -> PathBuf {
        self.dir.join("locks")
    }
    pub fn artifacts_dir(&self) -> PathBuf {
        self.dir.join("artifacts").join("sha256")
    }
    pub fn runs_dir(&self) -> PathBuf {
        self.dir.join("runs")
    }
    pub fn evidence_dir(&self) -> PathBuf {
        self.dir.join("evidence")
    }
    pub fn generations_dir(&self) -> PathBuf {
        self.dir.join("generations")
    }
    pub fn commits_dir(&self) -> PathBuf {
        self.dir.join("corpus").join("commits")
    }
    pub fn head_path(&self) -> PathBuf {
        self.dir.join("corpus").join("HEAD")
    }
    pub fn staging_dir(&self) -> PathBuf {
        self.dir.join("staging")
    }
    /// `records/`: JSON records (run sets, analyses, comparisons, …).
    pub fn records_dir(&self) -> PathBuf {
        self.dir.join("records")
    }
    pub fn trash_dir(&self) -> PathBuf {
        self.dir.join("trash")
    }
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("logs").join("operations.jsonl")
    }

    /// The per-workspace key that signs cursors.
    pub fn cursor_key(&self) -> Result<Vec<u8>> {
        let text = fs::read_to_string(self.dir.join("cursor.key"))
            .map_err(|e| io_error("reading the cursor key", e))?;
        hex::decode(text.trim())
            .map_err(|_| FlameoxError::new(ErrorCode::WorkspaceInvalid, "cursor.key is malformed"))
    }

    /// Appends one line to `logs/operations.jsonl` (best effort).
    pub fn log_operation(&self, entry: &serde_json::Value) {
        use std::io::Write;
        let line = format!("{entry}\n");
        if let Ok(mut file) = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
        {
            let _ = file.write_all(line.as_bytes());
        }
    }
}

/// Adds `.flameox/` to `.git/info/exclude` when `root` is a git checkout;
/// never edits the tracked `.gitignore`. Returns whether a line was added.
fn add_git_exclude(root: &Path) -> Result<bool> {
    let git_dir = root.join(".git");
    if !git_dir.is_dir() {
        return Ok(false);
    }
    let exclude = git_dir.join("info").join("exclude");
    let current = fs::read_to_string(&exclude).unwrap_or_default();
    let entry = format!("/{WORKSPACE_DIR}/");
    if current
        .lines()
        .any(|l| l.trim() == entry || l.trim() == WORKSPACE_DIR)
    {
        return Ok(false);
    }
    let mut text = current;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&entry);
    text.push('\n');
    write_atomic(&exclude, text.as_bytes())?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_is_idempotent_and_excludes_from_git() {
        let project = tempfile::tempdir().unwrap();
        fs::create_dir_all(project.path().join(".git/info")).unwrap();
        let (first, outcome) = Workspace::init(project.path()).unwrap();
        assert!(outcome.created && outcome.git_exclude_updated);
        let (second, again) = Workspace::init(project.path()).unwrap();
        assert!(!again.created && !again.git_exclude_updated);
        assert_eq!(first.identity, second.identity);
        let exclude = fs::read_to_string(project.path().join(".git/info/exclude")).unwrap();
        assert_eq!(exclude.matches(".flameox").count(), 1);
        assert!(!project.path().join(".gitignore").exists());
    }

    #[test]
    fn missing_workspace_is_a_typed_error() {
        let empty = tempfile::tempdir().unwrap();
        let locator = WorkspaceLocator {
            project_root: Some(empty.path().into()),
            workspace: None,
            cluster: None,
        };
        let err = Workspace::locate(&locator).unwrap_err();
        assert_eq!(err.code, ErrorCode::WorkspaceNotFound);
        assert_eq!(
            err.recovery.as_ref().unwrap().next_tool,
            "initialize_workspace"
        );
    }
}
