//! Third-party capture adapters (`[adapters.<name>]` in flameox.toml): an
//! installed program flameox runs around a workload. Nothing of it runs
//! before `prepare_adapter` approved its exact identity — the adapter, its
//! Python distribution and version when it declares one, and a content
//! hash (the program file's sha256, or a digest over every file the
//! distribution's RECORD lists, read from its dist-info beside the program:
//! identifying an adapter runs nothing). The approval lives in the workspace
//! (`.flameox/adapter_approvals.json`, written under the write lock); a
//! changed version or content invalidates it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, FlameoxError, Result};
use crate::execution::env::resolve_program_in;
use crate::fsutil::{now_rfc3339, read_json, write_json_atomic};
use crate::lock::FileLock;
use crate::project::{self, AdapterDef};
use crate::publish::hash_file;
use crate::workspace::Workspace;

/// What an approval binds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdapterIdentity {
    pub adapter: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub program_sha256: String,
    /// The distribution's files' digest, or the program's sha256.
    pub content_sha256: String,
}

/// An approval as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Approval {
    pub identity: AdapterIdentity,
    pub approved_at: String,
}

/// A declared adapter as this machine has it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThirdPartyStatus {
    pub adapter: String,
    /// Absent when the program (or distribution) is not installed.
    pub identity: Option<AdapterIdentity>,
    pub approved: bool,
    pub reason: String,
}

/// Files of a distribution hashed at most.
const MAX_FILES: usize = 20_000;

/// The distribution's version and the digest of every file its RECORD
/// lists, read from `<prefix>/lib/python*/site-packages/*.dist-info` beside
/// the program (files only: nothing runs).
fn distribution_digest(program: &Path, distribution: &str) -> Option<(String, String)> {
    use sha2::{Digest, Sha256};
    let wanted = super::requirement::normalize_name(distribution);
    let prefix = program.parent()?.parent()?;
    let lib = std::fs::read_dir(prefix.join("lib")).ok()?;
    for python_dir in lib.flatten() {
        let site = python_dir.path().join("site-packages");
        let Ok(entries) = std::fs::read_dir(&site) else {
            continue;
        };
        for entry in entries.flatten() {
            let dist_info = entry.path();
            if dist_info.extension().and_then(|e| e.to_str()) != Some("dist-info") {
                continue;
            }
            let Ok(metadata) = std::fs::read_to_string(dist_info.join("METADATA")) else {
                continue;
            };
            let field = |key: &str| {
                metadata
                    .lines()
                    .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_owned()))
            };
            if field("Name:").map(|n| super::requirement::normalize_name(&n))
                != Some(wanted.clone())
            {
                continue;
            }
            let version = field("Version:")?;
            let record = std::fs::read_to_string(dist_info.join("RECORD")).ok()?;
            let mut paths: Vec<&str> = record
                .lines()
                .filter_map(|l| l.split(',').next())
                .filter(|p| !p.is_empty() && !p.ends_with(".pyc"))
                .collect();
            paths.sort_unstable();
            let mut digest = Sha256::new();
            for path in paths.into_iter().take(MAX_FILES) {
                if let Ok(bytes) = std::fs::read(site.join(path)) {
                    digest.update(path.as_bytes());
                    digest.update([0]);
                    digest.update(Sha256::digest(&bytes));
                }
            }
            return Some((version, hex::encode(digest.finalize())));
        }
    }
    None
}

fn approvals_path(ws: &Workspace) -> PathBuf {
    ws.dir().join("adapter_approvals.json")
}

fn approvals(ws: &Workspace) -> BTreeMap<String, Approval> {
    read_json(&approvals_path(ws), "the adapter approvals").unwrap_or_default()
}

/// The program `def` runs: on PATH, absolute, or relative to the project.
pub fn adapter_program(def: &AdapterDef, project_root: &Path) -> Option<PathBuf> {
    resolve_program_in(&def.program, project_root)
}

/// The identity `def` has on this machine now.
pub fn identity(name: &str, def: &AdapterDef, project_root: &Path) -> Result<AdapterIdentity> {
    let program = adapter_program(def, project_root).ok_or_else(|| {
        FlameoxError::new(
            ErrorCode::CapabilityUnavailable,
            format!(
                "adapter {name}: its program `{}` is not installed here",
                def.program
            ),
        )
        .detail("adapter", name)
    })?;
    let (program_sha256, _) = hash_file(&program)?;
    let Some(distribution) = &def.distribution else {
        return Ok(AdapterIdentity {
            adapter: name.to_owned(),
            distribution: None,
            version: None,
            content_sha256: program_sha256.clone(),
            program_sha256,
        });
    };
    let (version, content_sha256) =
        distribution_digest(&program, distribution).ok_or_else(|| {
            FlameoxError::new(
                ErrorCode::CapabilityUnavailable,
                format!(
                    "adapter {name}: distribution {distribution} is not installed beside its program"
                ),
            )
        })?;
    Ok(AdapterIdentity {
        adapter: name.to_owned(),
        distribution: Some(distribution.clone()),
        version: Some(version),
        program_sha256,
        content_sha256,
    })
}

/// Whether `name` is approved in `ws` for the identity it has now.
pub fn status(ws: &Workspace, name: &str, def: &AdapterDef) -> ThirdPartyStatus {
    let approval = approvals(ws).remove(name);
    match identity(name, def, ws.project_root()) {
        Err(e) => ThirdPartyStatus {
            adapter: name.to_owned(),
            identity: None,
            approved: false,
            reason: e.message.clone(),
        },
        Ok(now) => {
            let (approved, reason) = match approval {
                None => (false, "installed; not approved: prepare_adapter approves this exact identity".to_owned()),
                Some(a) if a.identity == now => (true, format!("approved {}", a.approved_at)),
                Some(a) if a.identity.version != now.version => (
                    false,
                    format!(
                        "its version changed since it was approved ({} → {}); prepare_adapter approves the new identity",
                        a.identity.version.as_deref().unwrap_or("-"),
                        now.version.as_deref().unwrap_or("-")
                    ),
                ),
                Some(_) => (
                    false,
                    "its files changed since it was approved (same version); prepare_adapter approves the new identity".to_owned(),
                ),
            };
            ThirdPartyStatus {
                adapter: name.to_owned(),
                identity: Some(now),
                approved,
                reason,
            }
        }
    }
}

/// `prepare_adapter`: approves `adapter`'s identity as it is now; the
/// caller names the distribution and version it saw, which must match.
pub fn approve(
    ws: &Workspace,
    adapter: &str,
    distribution: Option<&str>,
    version: Option<&str>,
) -> Result<Approval> {
    let (config, _) = project::load_valid(ws.project_root())?;
    let def = config.adapters.get(adapter).ok_or_else(|| {
        let declared: Vec<&str> = config.adapters.keys().map(String::as_str).collect();
        FlameoxError::invalid_argument(
            "adapter",
            format!(
                "`{adapter}` is not declared in flameox.toml [adapters]; declared: {}",
                if declared.is_empty() {
                    "none".to_owned()
                } else {
                    declared.join(", ")
                }
            ),
        )
    })?;
    let now = identity(adapter, def, ws.project_root())?;
    if distribution != now.distribution.as_deref() || version != now.version.as_deref() {
        return Err(FlameoxError::new(
            ErrorCode::RevisionConflict,
            format!(
                "adapter {adapter} is installed as {} {}, not the pair given",
                now.distribution.as_deref().unwrap_or("(a program)"),
                now.version.as_deref().unwrap_or("(unversioned)")
            ),
        )
        .remedy("approve the exact pair list_capabilities reports in setup_third_party_adapters"));
    }
    let _lock = FileLock::acquire(
        &ws.locks_dir().join("write.lock"),
        Duration::from_millis(ws.config.locks.write_timeout_ms),
    )?;
    let mut all = approvals(ws);
    let approval = Approval {
        identity: now,
        approved_at: now_rfc3339(),
    };
    all.insert(adapter.to_owned(), approval.clone());
    write_json_atomic(&approvals_path(ws), &all)?;
    Ok(approval)
}
