//! A workspace whose published evidence lives under an object-store prefix
//! (`flameox init --store s3://bucket/prefix`), shared by every workspace
//! initialized on it.
//!
//! Object stores have no rename, so publication follows the table formats:
//! everything a commit names is an immutable object written before the
//! commit (artifacts, Parquet files and generation manifests under their
//! unique or content-addressed keys, the commit itself), and the commit is
//! published by creating the next entry of the commit log,
//! `corpus/log/<seq>.json`, with a put-if-absent. Of two publishers that
//! race for one sequence number exactly one creates it; the other reads the
//! log again, rebases its independent generations onto the winner's commit
//! and tries the next number. A publisher killed before the log entry
//! leaves only objects nothing names.
//!
//! The local `.flameox` folder is the cache and the staging area: a pull
//! copies the manifests of commits others published (never their Parquet
//! files, which queries read in place with range reads), and
//! `corpus/store_head` records the last log entry it saw.

mod attach;
mod commit_log;
mod payload;
mod pull;
mod push;

use std::future::Future;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use url::Url;

use crate::error::{ErrorCode, FlameoxError, Result};
use crate::object_location::{ObjectLocation, StoreKind};
use crate::workspace::Workspace;

pub use attach::{StoreState, attach};
pub use commit_log::{LogEntry, StoreHead, read_local_head};
pub use payload::ensure_payload;
pub use pull::pull;
pub use push::{PublishAttempt, publish_commit, push_run, push_snapshot};

/// The shared prefix of a store-backed workspace.
#[derive(Clone)]
pub struct SharedStore {
    location: ObjectLocation,
    /// `scheme://bucket` (what DataFusion's object-store registry keys on).
    base_url: Url,
}

impl std::fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedStore")
            .field("url", &self.location.display)
            .finish()
    }
}

impl SharedStore {
    /// The workspace's shared store, or `None` for a local workspace.
    pub fn of(ws: &Workspace) -> Result<Option<SharedStore>> {
        ws.config
            .store
            .shared_url()
            .map(SharedStore::open)
            .transpose()
    }

    /// Parses a store URL (`s3://`, `gs://`, `az://`; not HTTP, which
    /// cannot list or put conditionally).
    pub fn open(url: &str) -> Result<SharedStore> {
        let location = ObjectLocation::parse(url)?;
        if location.kind == StoreKind::Http {
            return Err(FlameoxError::invalid_argument(
                "store",
                "an HTTP URL cannot hold a workspace: it cannot list or put conditionally",
            )
            .remedy("use an s3://, gs:// or az:// prefix"));
        }
        let parsed = Url::parse(&location.display)
            .map_err(|e| FlameoxError::invalid_argument("store", format!("not a URL: {e}")))?;
        let host = parsed.host_str().unwrap_or_default();
        if host.is_empty() {
            return Err(FlameoxError::invalid_argument(
                "store",
                "the URL names no bucket or container",
            ));
        }
        let base_url = Url::parse(&format!("{}://{host}", parsed.scheme()))
            .map_err(|e| FlameoxError::invalid_argument("store", format!("not a URL: {e}")))?;
        Ok(SharedStore { location, base_url })
    }

    /// The URL as it may be shown (no secrets).
    pub fn display(&self) -> &str {
        &self.location.display
    }

    pub fn object_store(&self) -> Arc<dyn ObjectStore> {
        self.location.store.clone()
    }

    /// `scheme://bucket`, under which the store is registered for queries.
    pub fn base_url(&self) -> &Url {
        &self.base_url
    }

    /// The object key of a workspace-relative path (`evidence/…`).
    pub fn key(&self, relative: &str) -> ObjectPath {
        let prefix = self.location.path.as_ref().trim_end_matches('/');
        let relative = relative.trim_start_matches('/');
        if prefix.is_empty() {
            ObjectPath::from(relative)
        } else {
            ObjectPath::from(format!("{prefix}/{relative}"))
        }
    }

    /// The URL DataFusion reads a workspace-relative file from.
    pub fn url_of(&self, relative: &str) -> String {
        format!(
            "{}/{}",
            self.base_url.as_str().trim_end_matches('/'),
            self.key(relative)
        )
    }

    /// Reads a small object whole; `None` when it does not exist.
    async fn get_optional(&self, relative: &str) -> Result<Option<Bytes>> {
        let key = self.key(relative);
        match self.location.store.get(&key).await {
            Ok(result) => result
                .bytes()
                .await
                .map(Some)
                .map_err(|e| self.error(e, "reading")),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.error(e, "reading")),
        }
    }

    /// Reads an object the published state names: missing is a damaged store.
    async fn get_named(&self, relative: &str) -> Result<Bytes> {
        self.get_optional(relative).await?.ok_or_else(|| {
            FlameoxError::new(
                ErrorCode::WorkspaceInvalid,
                format!(
                    "the shared store {} lacks {relative}, which its commit log names",
                    self.display()
                ),
            )
            .remedy("restore the object, or point store.url at an intact copy")
        })
    }

    /// Writes a small object; `Ok(false)` when `create_only` and it exists.
    async fn put(&self, relative: &str, bytes: Vec<u8>, create_only: bool) -> Result<bool> {
        let options = PutOptions {
            mode: if create_only {
                PutMode::Create
            } else {
                PutMode::Overwrite
            },
            ..PutOptions::default()
        };
        match self
            .location
            .store
            .put_opts(&self.key(relative), PutPayload::from(bytes), options)
            .await
        {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) if create_only => Ok(false),
            Err(e) => Err(self.error(e, "writing")),
        }
    }

    /// Whether an object exists.
    async fn exists(&self, relative: &str) -> Result<bool> {
        match self.location.store.head(&self.key(relative)).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(self.error(e, "reading")),
        }
    }

    /// A typed, redacted error for a failed store call.
    fn error(&self, e: object_store::Error, doing: &str) -> FlameoxError {
        if matches!(e, object_store::Error::NotFound { .. }) && doing == "writing" {
            // A put finds no object only when the bucket itself is missing.
            return FlameoxError::new(
                ErrorCode::RemoteSourceUnavailable,
                format!(
                    "{doing} the shared store {} failed: its bucket (or container) does not exist",
                    self.display()
                ),
            )
            .remedy("create the bucket first, or check the URL's bucket name")
            .remedy(self.location.kind.credentials_hint());
        }
        let text = self.location.redact(&e.to_string());
        let refused = matches!(
            e,
            object_store::Error::PermissionDenied { .. }
                | object_store::Error::Unauthenticated { .. }
        );
        let mut err = FlameoxError::new(
            ErrorCode::RemoteSourceUnavailable,
            format!("{doing} the shared store {} failed: {text}", self.display()),
        )
        .remedy(self.location.kind.credentials_hint());
        err.retryable = !refused;
        err
    }
}

/// One runtime for every store call of the process: a store's pooled
/// connections live on the runtime that opened them, so calls from
/// short-lived runtimes would find them dead.
fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> =
        OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("flameox-store")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| FlameoxError::internal(format!("starting the store runtime: {e}")))
}

/// Runs a store future to completion from synchronous code (which may
/// itself be on another runtime's thread).
pub(crate) fn block_on<T: Send + 'static>(
    work: impl Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    let (send, receive) = std::sync::mpsc::sync_channel(1);
    runtime()?.spawn(async move {
        let _ = send.send(work.await);
    });
    receive
        .recv()
        .map_err(|_| FlameoxError::internal("a shared-store call stopped without an answer"))?
}
