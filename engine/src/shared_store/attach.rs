//! `flameox init --store URL`: puts a workspace on a shared prefix. The
//! store is checked writable (its marker object is created once), the URL
//! is recorded in `config.toml`, evidence the workspace already had is
//! published into the store, and what others published is pulled.

use serde::{Deserialize, Serialize};

use crate::error::{FlameoxError, Result};
use crate::fsutil::{now_rfc3339, write_atomic};
use crate::workspace::Workspace;

use super::{SharedStore, block_on, pull, push_snapshot};

/// The marker object at the prefix's root.
const MARKER: &str = "flameox-store.json";

/// Where a workspace's published evidence lives, after `init --store`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoreState {
    /// The prefix (no credentials, no query).
    pub url: String,
    /// Commits the store's log holds.
    pub commits: u64,
    /// The store's head commit, now also the local HEAD.
    pub head_commit: Option<String>,
    /// True when this workspace's own evidence was published into it.
    pub pushed_local_evidence: bool,
}

/// Records `url` as the workspace's store and syncs both ways; returns the
/// reopened workspace.
pub fn attach(ws: &Workspace, url: &str) -> Result<(Workspace, StoreState)> {
    let store = SharedStore::open(url)?;
    let current = ws.config.store.shared_url();
    if let Some(current) = current.filter(|current| *current != url) {
        return Err(FlameoxError::invalid_argument(
            "store",
            format!("this workspace already keeps its evidence in {current}"),
        )
        .remedy("initialize another project folder for the other store"));
    }
    let marker = serde_json::to_vec_pretty(&serde_json::json!({
        "what": "a flameox evidence store",
        "created_at": now_rfc3339(),
        "flameox_version": env!("CARGO_PKG_VERSION"),
    }))
    .map_err(|e| FlameoxError::internal(format!("serializing the store marker: {e}")))?;
    let remote = store.clone();
    block_on(async move { remote.put(MARKER, marker, true).await })?;
    if current.is_none() {
        record_url(ws, store.display())?;
    }
    let ws = Workspace::open(ws.dir())?;
    let pushed = push_snapshot(&ws, &store)?.is_some();
    let head = pull(&ws, &store)?;
    Ok((
        ws,
        StoreState {
            url: store.display().to_owned(),
            commits: head.seq,
            head_commit: head.commit_id,
            pushed_local_evidence: pushed,
        },
    ))
}

/// Sets `store.url` in `config.toml`, keeping the rest of the file.
fn record_url(ws: &Workspace, url: &str) -> Result<()> {
    let path = ws.dir().join("config.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| {
        FlameoxError::invalid_argument("config.toml", format!("cannot be edited: {e}"))
    })?;
    if !doc.contains_table("store") {
        doc["store"] = toml_edit::table();
    }
    doc["store"]["url"] = toml_edit::value(url);
    let edited = doc.to_string();
    crate::config::Config::parse(&edited)?;
    write_atomic(&path, edited.as_bytes())
}
