//! An artifact's original bytes, fetched from the shared store into the
//! local cache the first time this workspace needs them (pulls copy only
//! artifact records): streamed to a temporary file, checked against the
//! artifact id's sha256, then renamed into place.

use std::io::Write;

use futures::StreamExt;
use object_store::ObjectStoreExt;
use sha2::{Digest, Sha256};

use crate::error::{ErrorCode, FlameoxError, Result, io_error};
use crate::store::{self, ArtifactRecord};
use crate::workspace::Workspace;

use super::pull::relative;
use super::{SharedStore, block_on};

/// Makes sure the payload of `record` is on local disk (a no-op for a
/// local workspace or a payload already here).
pub fn ensure_payload(ws: &Workspace, record: &ArtifactRecord) -> Result<()> {
    let path = store::payload_path(ws, record);
    if path.is_file() {
        return Ok(());
    }
    let Some(shared) = SharedStore::of(ws)? else {
        return Ok(());
    };
    let key = shared.key(&relative(ws, &path)?);
    let tmp = path.with_extension(format!("part-{}", uuid::Uuid::now_v7().simple()));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| io_error("creating an artifact folder", e))?;
    }
    let remote = shared.clone();
    let target = tmp.clone();
    let fetched = block_on(async move {
        let mut file =
            std::fs::File::create(&target).map_err(|e| io_error("writing an artifact", e))?;
        let mut hasher = Sha256::new();
        let mut stream = remote
            .location
            .store
            .get(&key)
            .await
            .map_err(|e| remote.error(e, "reading"))?
            .into_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| remote.error(e, "reading"))?;
            hasher.update(&chunk);
            file.write_all(&chunk)
                .map_err(|e| io_error("writing an artifact", e))?;
        }
        file.sync_all()
            .map_err(|e| io_error("writing an artifact", e))?;
        Ok(format!("sha256:{}", hex::encode(hasher.finalize())))
    });
    let checked = fetched.and_then(|id| {
        if id == record.artifact_id {
            Ok(())
        } else {
            Err(FlameoxError::new(
                ErrorCode::ArtifactIntegrityFailed,
                format!(
                    "the shared store's copy of {} does not match its id",
                    record.artifact_id
                ),
            )
            .remedy("restore the object from a copy, or import the original file again"))
        }
    });
    if let Err(e) = checked {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, &path).map_err(|e| io_error("placing an artifact", e))
}
