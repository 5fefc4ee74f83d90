//! A query session whose plans run on a Ballista cluster: the same tables
//! as a local session, every file named by its URL in the shared store
//! (executors cannot read this machine's disk).

use std::sync::Arc;
use std::time::Duration;

use ballista_core::extension::{SessionConfigExt, SessionStateExt};
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::budget::MeteredPool;
use crate::catalog::Snapshot;
use crate::error::{ErrorCode, FlameoxError, Result};
use crate::query::{PinnedSession, QueryBudget, register_evidence, session_config};
use crate::shared_store::SharedStore;
use crate::workspace::Workspace;

/// Opens a session on the scheduler `cluster` names.
pub fn open_remote_session(
    ws: &Workspace,
    snapshot: Arc<Snapshot>,
    budget: QueryBudget,
    pool: Arc<MeteredPool>,
    cluster: &str,
) -> Result<PinnedSession> {
    let scheduler = super::scheduler_url(cluster)?;
    let store = SharedStore::of(ws)?.ok_or_else(|| {
        FlameoxError::invalid_argument(
            "query.cluster",
            "a cluster reads evidence from a shared store, and this workspace keeps it on local disk",
        )
        .remedy("initialize a workspace with `flameox init --store s3://bucket/prefix` and import into it")
    })?;
    reachable(cluster, &scheduler)?;
    let failed = |e: datafusion::error::DataFusionError| {
        FlameoxError::internal(format!("opening a cluster session: {e}"))
    };
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_pool(pool.clone())
        .build_arc()
        .map_err(failed)?;
    runtime.register_object_store(store.base_url(), store.object_store());
    let state = SessionStateBuilder::new()
        .with_config(session_config(SessionConfig::new_with_ballista()))
        .with_runtime_env(runtime)
        .with_default_features()
        .build()
        .upgrade_for_ballista(scheduler)
        .map_err(failed)?;
    let ctx = SessionContext::new_with_state(state);
    for udf in flameox_recipes::text_udf::recipe_udfs() {
        ctx.register_udf((*udf).clone());
    }
    register_evidence(&ctx, &snapshot, &|file| store.url_of(&file.path))?;
    Ok(PinnedSession {
        ctx,
        snapshot,
        budget,
        pool,
    })
}

/// Says so up front when nothing listens at the scheduler's address (the
/// first query would fail with a transport error deep in a plan).
fn reachable(cluster: &str, scheduler: &str) -> Result<()> {
    use std::net::ToSocketAddrs;
    let host_port = scheduler.trim_start_matches("http://");
    let unreachable = |why: String| {
        let mut err = FlameoxError::new(
            ErrorCode::RemoteSourceUnavailable,
            format!("the cluster's scheduler at {cluster} does not answer: {why}"),
        )
        .remedy("start it with `flameox cluster scheduler`, or drop --cluster / query.cluster to run here");
        err.retryable = true;
        err
    };
    let addresses: Vec<_> = host_port
        .to_socket_addrs()
        .map_err(|e| unreachable(e.to_string()))?
        .collect();
    let mut last = String::from("no address");
    for address in addresses {
        match std::net::TcpStream::connect_timeout(&address, Duration::from_secs(5)) {
            Ok(_) => return Ok(()),
            Err(e) => last = e.to_string(),
        }
    }
    Err(unreachable(last))
}
