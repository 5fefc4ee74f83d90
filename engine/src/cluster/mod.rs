//! Recipes on a Ballista cluster (feature `cluster`): the same logical
//! plans, over the same Parquet files in a shared object store, planned by
//! a Ballista scheduler and run by its executors.
//!
//! `flameox cluster scheduler` and `flameox cluster executor` are Ballista's
//! own processes with flameox's pieces registered: the shared store (so
//! they read `s3://…` evidence with their own credentials) and the recipes'
//! text UDFs (plans name functions, and every process decodes them from its
//! own registry). The stock binaries lack both. A workspace asks for the
//! cluster with `query.cluster = "df://host:port"` or `--cluster`.

#[cfg(feature = "cluster")]
mod processes;
#[cfg(feature = "cluster")]
mod remote_session;

use std::net::SocketAddr;

use crate::error::{ErrorCode, FlameoxError, Result};

#[cfg(feature = "cluster")]
pub use processes::{run_executor, run_scheduler};
#[cfg(feature = "cluster")]
pub use remote_session::open_remote_session;

/// How `flameox cluster scheduler|executor` runs.
#[derive(Debug, Clone)]
pub struct ProcessOptions {
    /// Where this process listens (an executor also serves shuffle data
    /// on the next port).
    pub bind: SocketAddr,
    /// The scheduler an executor registers with.
    pub scheduler: Option<SocketAddr>,
    /// Shared stores whose evidence the cluster reads (`s3://bucket/…`).
    pub stores: Vec<String>,
    /// Tasks an executor runs at once (0 = one per core).
    pub cores: usize,
}

/// `df://host:port` (or `http://`) as the scheduler's gRPC URL.
pub fn scheduler_url(cluster: &str) -> Result<String> {
    let bad = || {
        FlameoxError::invalid_argument("query.cluster", format!("`{cluster}` is not a cluster URL"))
            .remedy("write it as df://host:port (the Ballista scheduler's address)")
    };
    let rest = cluster
        .strip_prefix("df://")
        .or_else(|| cluster.strip_prefix("http://"))
        .ok_or_else(bad)?;
    let host_port = rest.trim_end_matches('/');
    let (host, port) = host_port.rsplit_once(':').ok_or_else(bad)?;
    if host.is_empty() || port.parse::<u16>().is_err() {
        return Err(bad());
    }
    Ok(format!("http://{host_port}"))
}

/// The error of a build without the `cluster` feature.
pub fn unavailable() -> FlameoxError {
    FlameoxError::new(
        ErrorCode::CapabilityUnavailable,
        "this flameox was built without cluster support",
    )
    .remedy("build it with `cargo install --path cli --features cluster`, or unset query.cluster")
}

#[cfg(not(feature = "cluster"))]
pub fn run_scheduler(_: ProcessOptions) -> Result<()> {
    Err(unavailable())
}

#[cfg(not(feature = "cluster"))]
pub fn run_executor(_: ProcessOptions) -> Result<()> {
    Err(unavailable())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_urls_name_a_host_and_port() {
        assert_eq!(
            scheduler_url("df://127.0.0.1:50050").unwrap(),
            "http://127.0.0.1:50050"
        );
        assert_eq!(
            scheduler_url("df://sched.internal:7000/").unwrap(),
            "http://sched.internal:7000"
        );
        for bad in [
            "127.0.0.1:50050",
            "df://host",
            "df://:5",
            "s3://x:1",
            "df://h:port",
        ] {
            let err = scheduler_url(bad).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidArguments, "{bad}");
        }
    }
}
