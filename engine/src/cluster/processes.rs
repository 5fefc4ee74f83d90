//! `flameox cluster scheduler` and `flameox cluster executor`: Ballista's
//! scheduler and executor processes, each session built with the shared
//! stores registered and the recipes' UDFs known.

use std::sync::Arc;

use ballista_core::extension::SessionConfigExt;
use ballista_core::registry::BallistaFunctionRegistry;
use ballista_executor::executor_process::{ExecutorProcessConfig, start_executor_process};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::start_server;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::execution::{FunctionRegistry, SessionState, SessionStateBuilder};
use datafusion::prelude::SessionConfig;

use super::ProcessOptions;
use crate::error::{FlameoxError, Result};
use crate::shared_store::SharedStore;

/// Runs a scheduler on `options.bind` until the process is stopped.
pub fn run_scheduler(options: ProcessOptions) -> Result<()> {
    let stores = open_stores(&options.stores)?;
    let bind = options.bind;
    block_on_own_runtime(async move {
        let builder_stores = stores.clone();
        let mut config = SchedulerConfig::default()
            .with_hostname(bind.ip().to_string())
            .with_port(bind.port())
            .with_override_config_producer(Arc::new(SessionConfig::new_with_ballista))
            .with_override_session_builder(Arc::new(move |config: SessionConfig| {
                session_state(config, &builder_stores)
            }));
        config.bind_host = bind.ip().to_string();
        let cluster = BallistaCluster::new_from_config(&config)
            .await
            .map_err(|e| failed("starting the scheduler", e))?;
        start_server(cluster, bind, Arc::new(config))
            .await
            .map_err(|e| failed("running the scheduler", e))
    })
}

/// Runs an executor on `options.bind` (shuffle data on the next port),
/// registered with `options.scheduler`, until the process is stopped.
pub fn run_executor(options: ProcessOptions) -> Result<()> {
    let scheduler = options.scheduler.ok_or_else(|| {
        FlameoxError::invalid_argument("scheduler", "an executor needs its scheduler's address")
    })?;
    let stores = open_stores(&options.stores)?;
    let registry = BallistaFunctionRegistry::from(
        &session_state(SessionConfig::new_with_ballista(), &stores)
            .map_err(|e| failed("starting the executor", e))?,
    );
    let runtime_stores = stores.clone();
    let cores = match options.cores {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        n => n,
    };
    let bind = options.bind;
    let config = ExecutorProcessConfig {
        bind_host: bind.ip().to_string(),
        external_host: Some(bind.ip().to_string()),
        port: bind.port(),
        grpc_port: bind.port().saturating_add(1),
        scheduler_host: scheduler.ip().to_string(),
        scheduler_port: scheduler.port(),
        scheduler_connect_timeout_seconds: 30,
        vcores: cores,
        print_thread_info: false,
        override_function_registry: Some(Arc::new(registry)),
        override_config_producer: Some(Arc::new(SessionConfig::new_with_ballista)),
        override_runtime_producer: Some(Arc::new(move |_: &SessionConfig| {
            runtime_with(&runtime_stores)
        })),
        ..ExecutorProcessConfig::default()
    };
    block_on_own_runtime(async move {
        start_executor_process(Arc::new(config))
            .await
            .map_err(|e| failed("running the executor", e))
    })
}

fn open_stores(urls: &[String]) -> Result<Vec<SharedStore>> {
    urls.iter().map(|url| SharedStore::open(url)).collect()
}

/// A runtime that reads every shared store.
fn runtime_with(stores: &[SharedStore]) -> datafusion::error::Result<Arc<RuntimeEnv>> {
    let runtime = RuntimeEnvBuilder::new().build_arc()?;
    for store in stores {
        runtime.register_object_store(store.base_url(), store.object_store());
    }
    Ok(runtime)
}

/// A session as the recipes need it: default functions plus theirs.
fn session_state(
    config: SessionConfig,
    stores: &[SharedStore],
) -> datafusion::error::Result<SessionState> {
    let mut state = SessionStateBuilder::new()
        .with_config(config)
        .with_runtime_env(runtime_with(stores)?)
        .with_default_features()
        .build();
    for udf in flameox_recipes::text_udf::recipe_udfs() {
        state.register_udf(udf)?;
    }
    Ok(state)
}

/// The process's own multi-threaded runtime (Ballista's servers spawn
/// onto it for the life of the process).
fn block_on_own_runtime(work: impl std::future::Future<Output = Result<()>>) -> Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("flameox-cluster")
        .build()
        .map_err(|e| FlameoxError::internal(format!("starting the cluster runtime: {e}")))?
        .block_on(work)
}

fn failed(doing: &str, e: impl std::fmt::Display) -> FlameoxError {
    FlameoxError::new(
        crate::error::ErrorCode::ProcessFailed,
        format!("{doing} failed: {e}"),
    )
}
