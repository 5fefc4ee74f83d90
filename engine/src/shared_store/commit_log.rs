//! The shared store's commit log: `corpus/log/<seq>.json`, one entry per
//! published commit, created with put-if-absent so one publisher wins each
//! sequence number. The highest entry is the store's head. Locally,
//! `corpus/store_head` holds the last entry this workspace has pulled.

use futures::TryStreamExt;
use object_store::ObjectStore;
use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, FlameoxError, Result, io_error};
use crate::fsutil::write_atomic;
use crate::workspace::Workspace;

use super::SharedStore;

/// Digits of a log entry's sequence number (keys sort as numbers).
const SEQ_DIGITS: usize = 20;

/// One published commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    pub seq: u64,
    pub commit_id: String,
    /// The commit it was built on (the previous entry's commit).
    pub parent: Option<String>,
    /// The workspace that published it.
    pub workspace_id: String,
    pub created_at: String,
}

/// What a workspace last saw of its store: sequence 0 is "nothing yet".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoreHead {
    pub seq: u64,
    pub commit_id: Option<String>,
}

pub(super) fn entry_path(seq: u64) -> String {
    format!("corpus/log/{seq:0SEQ_DIGITS$}.json")
}

fn local_path(ws: &Workspace) -> std::path::PathBuf {
    ws.dir().join("corpus").join("store_head")
}

/// Reads `corpus/store_head` (`<seq> <commit id>`); missing = nothing pulled.
pub fn read_local_head(ws: &Workspace) -> Result<StoreHead> {
    let text = match std::fs::read_to_string(local_path(ws)) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(StoreHead::default()),
        Err(e) => return Err(io_error("reading corpus/store_head", e)),
    };
    let malformed = || {
        FlameoxError::new(
            ErrorCode::WorkspaceInvalid,
            "corpus/store_head is malformed",
        )
    };
    let mut parts = text.split_whitespace();
    let seq = parts
        .next()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(malformed)?;
    let commit_id = parts.next().map(str::to_owned);
    if commit_id
        .as_deref()
        .is_some_and(|c| c.len() != 64 || !c.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return Err(malformed());
    }
    Ok(StoreHead { seq, commit_id })
}

pub(super) fn write_local_head(ws: &Workspace, head: &StoreHead) -> Result<()> {
    let text = match &head.commit_id {
        Some(commit) => format!("{} {commit}\n", head.seq),
        None => format!("{}\n", head.seq),
    };
    write_atomic(&local_path(ws), text.as_bytes())
}

/// The highest log entry after `after` (`None` when nothing is newer).
pub(super) async fn latest_after(store: &SharedStore, after: u64) -> Result<Option<LogEntry>> {
    let prefix = store.key("corpus/log/");
    let offset = store.key(&entry_path(after));
    let listed: Vec<object_store::ObjectMeta> = store
        .location
        .store
        .list_with_offset(Some(&prefix), &offset)
        .try_collect()
        .await
        .map_err(|e| store.error(e, "listing the commit log of"))?;
    let newest = listed
        .iter()
        .filter_map(|meta| {
            let name = meta.location.filename()?;
            let seq = name.strip_suffix(".json")?.parse::<u64>().ok()?;
            (seq > after).then_some(seq)
        })
        .max();
    let Some(seq) = newest else {
        return Ok(None);
    };
    read_entry(store, seq).await.map(Some)
}

/// Reads one log entry and checks it names itself.
pub(super) async fn read_entry(store: &SharedStore, seq: u64) -> Result<LogEntry> {
    let bytes = store.get_named(&entry_path(seq)).await?;
    let entry: LogEntry = serde_json::from_slice(&bytes).map_err(|e| {
        FlameoxError::new(
            ErrorCode::WorkspaceInvalid,
            format!(
                "commit log entry {seq} of {} is malformed: {e}",
                store.display()
            ),
        )
    })?;
    let sound_id =
        entry.commit_id.len() == 64 && entry.commit_id.bytes().all(|b| b.is_ascii_hexdigit());
    if entry.seq != seq || !sound_id {
        return Err(FlameoxError::new(
            ErrorCode::WorkspaceInvalid,
            format!(
                "commit log entry {seq} of {} names another entry",
                store.display()
            ),
        ));
    }
    Ok(entry)
}

/// Creates entry `entry.seq`; `Ok(false)` when another publisher has it.
pub(super) async fn append(store: &SharedStore, entry: &LogEntry) -> Result<bool> {
    let mut bytes = serde_json::to_vec_pretty(entry)
        .map_err(|e| FlameoxError::internal(format!("serializing a log entry: {e}")))?;
    bytes.push(b'\n');
    store.put(&entry_path(entry.seq), bytes, true).await
}
