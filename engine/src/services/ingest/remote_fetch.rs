//! Import from object stores and URLs (`s3://`, `gs://`, `az://`,
//! `http[s]://`): each remote argument is mirrored into a private staging
//! folder through `object_store`, then imported exactly as the same local
//! file or folder would be — the same format detection, hashing, integrity
//! checks, limits and one-run-per-call rules (`import_plan`).
//!
//! An object is pinned before its bytes are read: its size, ETag and
//! version come from a HEAD (or the listing), the GET asks for that ETag
//! and version, and the bytes received must add up to that size; an object
//! replaced meanwhile is `ARTIFACT_INTEGRITY_FAILED`. A broken body is
//! resumed by `object_store` from the byte it stopped at (same ETag); a
//! body that sends nothing for [`STALL`] fails. A prefix (a URL ending in
//! `/`, or a key with objects under it) becomes a folder of its objects by
//! relative key, at most `import.max_remote_objects` of them, and must fit
//! on the workspace's disk before a byte is fetched. Objects are fetched
//! [`CONCURRENT_OBJECTS`] at a time (per-rank files of one job).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, ObjectMeta, ObjectStoreExt};

use crate::error::{ErrorCode, FlameoxError, Result};
use crate::object_location::{ObjectLocation, StoreKind, looks_like_url};
use crate::services::import_progress::ImportProgress;
use crate::staging::StagingArea;
use crate::workspace::Workspace;

/// Objects fetched at once.
pub const CONCURRENT_OBJECTS: usize = 4;
/// A body that delivers no byte for this long fails the import.
pub const STALL: Duration = Duration::from_secs(60);
/// Bytes buffered before a write to the mirror file.
const WRITE_BUFFER: usize = 1024 * 1024;

/// The import's arguments with every URL replaced by its local mirror.
pub struct FetchedInputs {
    /// Holds the mirrors until the import has stored them.
    _area: Option<StagingArea>,
    pub paths: Vec<PathBuf>,
    /// Each remote argument as it may be recorded (no secrets), in order.
    pub sources: Vec<String>,
}

/// One object to fetch and where its mirror goes.
struct PlannedObject {
    location: usize,
    meta: ObjectMeta,
    local: PathBuf,
}

/// Mirrors every URL among `paths`; local paths pass through unchanged.
pub fn fetch_remote_inputs(
    ws: &Workspace,
    paths: &[PathBuf],
    progress: &dyn ImportProgress,
) -> Result<FetchedInputs> {
    let remote: Vec<(usize, String)> = paths
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            p.to_str()
                .filter(|s| looks_like_url(s))
                .map(|s| (i, s.to_owned()))
        })
        .collect();
    if remote.is_empty() {
        return Ok(FetchedInputs {
            _area: None,
            paths: paths.to_vec(),
            sources: Vec::new(),
        });
    }
    let locations = remote
        .iter()
        .map(|(_, url)| ObjectLocation::parse(url))
        .collect::<Result<Vec<_>>>()?;
    progress.phase("downloading");
    let area = StagingArea::create(ws, &format!("fetch-{}", uuid::Uuid::now_v7()))?;
    let max_objects = ws.config.import.max_remote_objects;
    let mut mirrors = paths.to_vec();
    // A dedicated thread: the caller may itself be on a runtime's thread.
    let fetched = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| {
                        FlameoxError::internal(format!("starting the fetch runtime: {e}"))
                    })?;
                let work = async {
                    let mut planned = Vec::new();
                    let mut roots = Vec::with_capacity(locations.len());
                    for (index, location) in locations.iter().enumerate() {
                        let root = area.dir().join(index.to_string());
                        let (local, objects) =
                            plan_location(location, index, &root, max_objects).await?;
                        roots.push(local);
                        planned.extend(objects);
                    }
                    check_space(area.dir(), &planned)?;
                    fetch_all(&locations, &planned, progress).await?;
                    Ok::<_, FlameoxError>(roots)
                };
                // A request that hangs (a HEAD, a listing, a connection)
                // still stops at a cancel or the import's deadline.
                runtime.block_on(async {
                    tokio::select! {
                        done = work => done,
                        () = cancelled(progress) => Err(FlameoxError::new(
                            ErrorCode::OperationCancelled,
                            "the import was cancelled",
                        )),
                    }
                })
            })
            .join()
            .map_err(|_| FlameoxError::internal("the fetch thread panicked"))?
    })?;
    for ((index, _), local) in remote.iter().zip(fetched) {
        if let Some(slot) = mirrors.get_mut(*index) {
            *slot = local;
        }
    }
    Ok(FetchedInputs {
        _area: Some(area),
        paths: mirrors,
        sources: locations.into_iter().map(|l| l.display).collect(),
    })
}

/// Resolves once the import is cancelled (polled every 100 ms).
async fn cancelled(progress: &dyn ImportProgress) {
    while !progress.cancelled() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The local path one remote argument becomes and the objects behind it:
/// one object, or every object under a prefix (sorted by key).
async fn plan_location(
    location: &ObjectLocation,
    index: usize,
    root: &Path,
    max_objects: u64,
) -> Result<(PathBuf, Vec<PlannedObject>)> {
    let name = location.file_name();
    if !location.names_prefix {
        match location.store.head(&location.path).await {
            Ok(meta) => {
                let local = root.join(&name);
                return Ok((
                    local.clone(),
                    vec![PlannedObject {
                        location: index,
                        meta,
                        local,
                    }],
                ));
            }
            Err(object_store::Error::NotFound { .. }) if location.kind != StoreKind::Http => {}
            Err(e) => return Err(remote_error(location, e)),
        }
    } else if location.kind == StoreKind::Http {
        return Err(FlameoxError::invalid_argument(
            "path",
            format!(
                "{} names a folder; an HTTP folder cannot be listed",
                location.display
            ),
        )
        .remedy("name each file's URL, or use the object store's own URL (s3://, gs://, az://)"));
    }
    let folder = root.join(&name);
    let objects = list_prefix(location, max_objects).await?;
    if objects.is_empty() {
        return Err(FlameoxError::invalid_argument(
            "path",
            format!("`{}` does not exist", location.display),
        )
        .remedy("check the bucket and key (a folder is a prefix ending in /)"));
    }
    let mut planned = Vec::with_capacity(objects.len());
    for meta in objects {
        let relative: Vec<String> = match meta.location.prefix_match(&location.path) {
            Some(parts) => parts.map(|p| p.as_ref().to_owned()).collect(),
            None => continue,
        };
        if relative.is_empty() {
            continue;
        }
        let local = relative.iter().fold(folder.clone(), |p, part| p.join(part));
        planned.push(PlannedObject {
            location: index,
            meta,
            local,
        });
    }
    Ok((folder, planned))
}

/// Every object under the prefix, sorted by key; more than `max_objects`
/// is refused before anything is fetched.
async fn list_prefix(location: &ObjectLocation, max_objects: u64) -> Result<Vec<ObjectMeta>> {
    let prefix = (!location.path.as_ref().is_empty()).then_some(&location.path);
    let mut listing = location.store.list(prefix);
    let mut objects = Vec::new();
    while let Some(meta) = listing.next().await {
        let meta = meta.map_err(|e| remote_error(location, e))?;
        if objects.len() as u64 >= max_objects {
            return Err(FlameoxError::invalid_argument(
                "path",
                format!(
                    "{} holds more than {max_objects} objects (import.max_remote_objects)",
                    location.display
                ),
            )
            .remedy("name a narrower prefix, or raise import.max_remote_objects in .flameox/config.toml"));
        }
        objects.push(meta);
    }
    objects.sort_by(|a, b| a.location.cmp(&b.location));
    Ok(objects)
}

/// Refuses a fetch that would not fit on the workspace's disk.
fn check_space(dir: &Path, planned: &[PlannedObject]) -> Result<()> {
    let needed: u64 = planned.iter().map(|o| o.meta.size).sum();
    let Some(free) = free_bytes(dir) else {
        return Ok(());
    };
    // The mirror and the stored copy live on the same disk until the
    // import ends.
    if needed.saturating_mul(2) > free {
        return Err(FlameoxError::new(
            ErrorCode::StorageQuotaExceeded,
            format!(
                "importing {} bytes needs {} free on the workspace's disk; {} are free",
                needed,
                needed.saturating_mul(2),
                free
            ),
        )
        .detail("needed_bytes", needed.saturating_mul(2))
        .detail("free_bytes", free)
        .remedy("free disk space, or import fewer objects at once"));
    }
    Ok(())
}

fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c_path` is a NUL-terminated string and `stat` a writable
    // statvfs; the kernel fills it on success, which is checked first.
    let rc = unsafe { libc::statvfs(c_path.as_ptr(), stat.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so the struct is initialized.
    let stat = unsafe { stat.assume_init() };
    Some(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// Fetches every planned object, [`CONCURRENT_OBJECTS`] at a time.
async fn fetch_all(
    locations: &[ObjectLocation],
    planned: &[PlannedObject],
    progress: &dyn ImportProgress,
) -> Result<()> {
    let total: u64 = planned.iter().map(|o| o.meta.size).sum();
    let done = AtomicU64::new(0);
    progress.bytes(0, total);
    futures::stream::iter(planned.iter().map(|object| {
        let location = &locations[object.location];
        fetch_object(location, object, &done, total, progress)
    }))
    .buffer_unordered(CONCURRENT_OBJECTS)
    .try_collect::<Vec<()>>()
    .await?;
    Ok(())
}

/// Streams one pinned object into its mirror file.
async fn fetch_object(
    location: &ObjectLocation,
    object: &PlannedObject,
    done: &AtomicU64,
    total: u64,
    progress: &dyn ImportProgress,
) -> Result<()> {
    let path: &ObjectPath = &object.meta.location;
    let options = GetOptions {
        if_match: object.meta.e_tag.clone(),
        version: object.meta.version.clone(),
        ..GetOptions::default()
    };
    let result = location
        .store
        .get_opts(path, options)
        .await
        .map_err(|e| remote_error(location, e))?;
    if result.meta.size != object.meta.size {
        return Err(changed(location));
    }
    if let Some(parent) = object.local.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| local_error(e, "creating a download folder"))?;
    }
    let file = std::fs::File::create(&object.local)
        .map_err(|e| local_error(e, "creating a download file"))?;
    let mut out = std::io::BufWriter::with_capacity(WRITE_BUFFER, file);
    let mut body = result.into_stream();
    let mut received = 0u64;
    loop {
        let next = tokio::time::timeout(STALL, body.next())
            .await
            .map_err(|_| {
                FlameoxError::new(
                    ErrorCode::RemoteSourceUnavailable,
                    format!(
                        "{} sent nothing for {} s",
                        location.display,
                        STALL.as_secs()
                    ),
                )
                .remedy("check the network, then import again")
            })?;
        let Some(chunk) = next else { break };
        let chunk = chunk.map_err(|e| remote_error(location, e))?;
        received += chunk.len() as u64;
        if received > object.meta.size {
            return Err(changed(location));
        }
        out.write_all(&chunk)
            .map_err(|e| local_error(e, "writing a download"))?;
        let so_far = done.fetch_add(chunk.len() as u64, Ordering::Relaxed) + chunk.len() as u64;
        progress.bytes(so_far, total);
        if progress.cancelled() {
            return Err(FlameoxError::new(
                ErrorCode::OperationCancelled,
                "the import was cancelled",
            ));
        }
    }
    out.flush()
        .map_err(|e| local_error(e, "writing a download"))?;
    if received != object.meta.size {
        return Err(changed(location));
    }
    Ok(())
}

fn changed(location: &ObjectLocation) -> FlameoxError {
    FlameoxError::new(
        ErrorCode::ArtifactIntegrityFailed,
        format!("{} changed while it was being imported", location.display),
    )
    .remedy("import it again once the program writing it has finished")
}

fn local_error(e: std::io::Error, doing: &str) -> FlameoxError {
    crate::error::io_error(doing, e)
}

/// A typed error for a failed store call; the message never carries the
/// URL's secrets.
fn remote_error(location: &ObjectLocation, e: object_store::Error) -> FlameoxError {
    let text = location.redact(&e.to_string());
    let not_found = matches!(e, object_store::Error::NotFound { .. });
    if location.credentials_missing && !not_found {
        // Usually an MCP client that started flameox with a reduced
        // environment (no AWS_* variables): say so, not "network".
        return FlameoxError::new(
            ErrorCode::RemoteSourceUnavailable,
            format!(
                "{}: no AWS credentials in flameox's environment or ~/.aws, so the instance \
                 metadata service was asked: {text}",
                location.display
            ),
        )
        .remedy("put the keys in ~/.aws/credentials (and a non-AWS endpoint_url in ~/.aws/config), or set AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY where flameox starts — an MCP client passes only the variables its server entry's `env` names")
        .remedy(location.kind.credentials_hint());
    }
    match e {
        object_store::Error::NotFound { .. } => {
            FlameoxError::invalid_argument("path", format!("`{}` does not exist", location.display))
                .remedy("check the bucket and key (a folder is a prefix ending in /)")
        }
        object_store::Error::Precondition { .. } | object_store::Error::NotModified { .. } => {
            changed(location)
        }
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => FlameoxError::new(
            ErrorCode::RemoteSourceUnavailable,
            format!("{} refused the credentials: {text}", location.display),
        )
        .remedy(location.kind.credentials_hint()),
        _ => {
            let mut err = FlameoxError::new(
                ErrorCode::RemoteSourceUnavailable,
                format!("cannot read {}: {text}", location.display),
            )
            .remedy("check the URL and the network, then import again")
            .remedy(location.kind.credentials_hint());
            err.retryable = true;
            err
        }
    }
}
