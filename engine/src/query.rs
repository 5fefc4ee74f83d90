//! The query runtime: a DataFusion session over exactly the files of one
//! pinned commit, run under a memory pool and a deadline.
//!
//! Table schemas come from the code (checked against the commit's recorded
//! schema versions), so opening a snapshot reads no Parquet footer just to
//! learn a schema. Sessions are cached per commit id in long-lived processes.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use datafusion::catalog::TableProvider;
use datafusion::datasource::empty::EmptyTable;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::execution::memory_pool::{GreedyMemoryPool, TrackConsumersPool};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::logical_expr::col;
use datafusion::prelude::{SessionConfig, SessionContext};
use flameox_extractors::{EvidenceTable, OLDEST_READ_SCHEMA_VERSION, SCHEMA_VERSION};
use flameox_recipes::RecipeError;

use crate::budget::{self, MeteredPool};
use crate::catalog::{GenerationFile, Snapshot};
use crate::error::{ErrorCode, FlameoxError, Result};
use crate::shared_store::SharedStore;
use crate::workspace::Workspace;

/// Budgets of one query (from config, lowerable per call).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QueryBudget {
    pub memory_bytes: u64,
    pub deadline: Duration,
    /// `query.timeout_ms` (the deadline before any per-call lowering).
    pub configured_deadline: Duration,
}

impl QueryBudget {
    pub fn from_config(ws: &Workspace, timeout_override: Option<Duration>) -> QueryBudget {
        let configured = Duration::from_millis(ws.config.query.timeout_ms);
        QueryBudget {
            memory_bytes: ws.config.query.memory_limit_mib * 1024 * 1024,
            deadline: timeout_override
                .map(|t| t.min(configured))
                .unwrap_or(configured),
            configured_deadline: configured,
        }
    }
}

/// A session bound to one commit.
#[derive(Clone)]
pub struct PinnedSession {
    pub ctx: SessionContext,
    pub snapshot: Arc<Snapshot>,
    pub budget: QueryBudget,
    /// The session's memory pool, metered for budget errors.
    pub pool: Arc<MeteredPool>,
}

/// Builds the session for a snapshot: one listing table per evidence table
/// over exactly the files the commit lists (on a Ballista cluster when
/// `query.cluster` names one, see [`crate::cluster`]).
pub fn open_session(
    ws: &Workspace,
    snapshot: Arc<Snapshot>,
    budget: QueryBudget,
) -> Result<PinnedSession> {
    check_schema_versions(&snapshot)?;
    let pool = Arc::new(MeteredPool::new(Arc::new(TrackConsumersPool::new(
        GreedyMemoryPool::new(budget.memory_bytes as usize),
        std::num::NonZeroUsize::new(5).unwrap_or(std::num::NonZeroUsize::MIN),
    ))));
    let cluster = ws.config.query.cluster.trim();
    if !cluster.is_empty() {
        #[cfg(feature = "cluster")]
        return crate::cluster::open_remote_session(ws, snapshot, budget, pool, cluster);
        #[cfg(not(feature = "cluster"))]
        return Err(crate::cluster::unavailable());
    }
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_pool(pool.clone())
        .build_arc()
        .map_err(|e| FlameoxError::internal(format!("creating the query runtime: {e}")))?;
    let ctx = SessionContext::new_with_config_rt(session_config(SessionConfig::new()), runtime);
    // A store-backed workspace reads what it did not publish itself from
    // the store, in place (range reads through DataFusion's registry).
    let shared = SharedStore::of(ws)?;
    if let Some(store) = &shared {
        ctx.runtime_env()
            .register_object_store(store.base_url(), store.object_store());
    }
    register_evidence(&ctx, &snapshot, &|file| {
        let path = ws.dir().join(&file.path);
        match &shared {
            Some(store) if !path.is_file() => store.url_of(&file.path),
            _ => path.to_string_lossy().into_owned(),
        }
    })?;
    Ok(PinnedSession {
        ctx,
        snapshot,
        budget,
        pool,
    })
}

/// Refuses a commit whose tables this build cannot read.
fn check_schema_versions(snapshot: &Snapshot) -> Result<()> {
    let Some(commit) = &snapshot.commit else {
        return Ok(());
    };
    for (table, version) in &commit.tables {
        if *version > SCHEMA_VERSION {
            return Err(FlameoxError::new(
                ErrorCode::EvidenceSchemaMismatch,
                format!(
                    "table {table} was written by a newer flameox (evidence schema \
                     version {version}); this build (flameox {}) reads schema version \
                     {SCHEMA_VERSION}",
                    env!("CARGO_PKG_VERSION")
                ),
            )
            .detail("schema_version", *version)
            .detail("supported_schema_version", SCHEMA_VERSION)
            .remedy("upgrade flameox to the version that wrote this workspace"));
        }
        if *version < OLDEST_READ_SCHEMA_VERSION {
            return Err(FlameoxError::new(
                ErrorCode::EvidenceSchemaMismatch,
                format!(
                    "table {table} has schema version {version}; this build reads \
                     {OLDEST_READ_SCHEMA_VERSION} to {SCHEMA_VERSION}"
                ),
            )
            .remedy("re-import the artifacts with this version of flameox"));
        }
    }
    Ok(())
}

/// The options every session runs with (local or on a cluster).
pub(crate) fn session_config(base: SessionConfig) -> SessionConfig {
    let mut config = base
        .with_target_partitions(2)
        .with_information_schema(false);
    config.options_mut().execution.parquet.pushdown_filters = true;
    config.options_mut().execution.parquet.reorder_filters = true;
    config
}

/// Registers one table per evidence table over the snapshot's files, each
/// read from `url_of(file)`; a table without files is empty.
pub(crate) fn register_evidence(
    ctx: &SessionContext,
    snapshot: &Snapshot,
    url_of: &dyn Fn(&GenerationFile) -> String,
) -> Result<()> {
    let failed = |e: datafusion::error::DataFusionError| {
        FlameoxError::internal(format!("registering evidence: {e}"))
    };
    for table in EvidenceTable::ALL {
        let urls: Vec<ListingTableUrl> = snapshot
            .generations
            .iter()
            .flat_map(|g| g.files.iter())
            .filter(|f| f.table == table.name())
            .map(|f| ListingTableUrl::parse(url_of(f)))
            .collect::<std::result::Result<_, _>>()
            .map_err(failed)?;
        let provider: Arc<dyn TableProvider> = if urls.is_empty() {
            Arc::new(EmptyTable::new(table.schema()))
        } else {
            let sort: Vec<_> = table
                .sort_columns()
                .iter()
                .map(|c| col(*c).sort(true, false))
                .collect();
            let mut options = ListingOptions::new(Arc::new(ParquetFormat::default()))
                .with_file_extension(".parquet");
            if !sort.is_empty() {
                options = options.with_file_sort_order(vec![sort]);
            }
            let config = ListingTableConfig::new_with_multi_paths(urls)
                .with_listing_options(options)
                .with_schema(table.schema());
            Arc::new(ListingTable::try_new(config).map_err(failed)?)
        };
        ctx.register_table(table.name(), provider).map_err(failed)?;
    }
    Ok(())
}

/// Maps a recipe failure to the contract's error codes.
pub fn recipe_error(err: RecipeError, budget: &QueryBudget) -> FlameoxError {
    match err {
        RecipeError::ResourcesExhausted(text) => FlameoxError::new(
            ErrorCode::QueryBudgetExceeded,
            "the query needed more memory than its budget",
        )
        .detail("memory_budget_bytes", budget.memory_bytes)
        .detail("engine_message", text)
        .remedy("narrow the call: a time window, one thread, or a smaller scope"),
        RecipeError::NotFound {
            what,
            closest,
            valid,
        } => {
            let mut near = closest;
            if near.is_empty() {
                // Match on the name alone, not "frame <name>".
                let typed = what.split_once(' ').map_or(what.as_str(), |(_, name)| name);
                near = crate::error::closest(typed, valid.iter().map(String::as_str), 3);
            }
            let shown: Vec<String> = valid.into_iter().take(20).collect();
            // A frame or metric the evidence lacks is a negative answer
            // (exit 1), an unknown report or section a bad argument.
            let (code, noun) = match what.split_once(' ') {
                Some(("frame", name)) => (ErrorCode::FrameNotFound, Some(("frame", name))),
                Some(("metric", name)) => (ErrorCode::MetricNotFound, Some(("metric", name))),
                _ => (ErrorCode::InvalidArguments, None),
            };
            let message = match noun {
                Some((noun, name)) if near.is_empty() => {
                    format!("{noun} '{name}' not found in this target")
                }
                Some((noun, name)) => format!(
                    "{noun} '{name}' not found in this target; did you mean {}?",
                    near.iter()
                        .map(|n| format!("'{n}'"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => format!("{what} in this scope"),
            };
            FlameoxError::new(code, message)
                .detail("closest", near)
                .detail("valid", shown)
        }
        RecipeError::DataFusion(e) => FlameoxError::internal(format!("query failed: {e}")),
    }
}

/// Runs a recipe future under the session's deadline; a memory or deadline
/// overrun is `QUERY_BUDGET_EXCEEDED` with what the call used.
pub async fn run_budgeted<T>(
    session: &PinnedSession,
    fut: impl Future<Output = std::result::Result<T, RecipeError>>,
) -> Result<T> {
    let started = Instant::now();
    session.pool.reset_peak();
    match tokio::time::timeout(session.budget.deadline, fut).await {
        Ok(Err(RecipeError::ResourcesExhausted(text))) => Err(budget::memory_exceeded(
            session.budget.memory_bytes,
            &session.pool,
            text,
        )),
        Ok(result) => result.map_err(|e| recipe_error(e, &session.budget)),
        Err(_) => Err(budget::deadline_exceeded(
            session.budget.deadline,
            session.budget.configured_deadline,
            started.elapsed(),
            &session.pool,
        )),
    }
}

/// Sessions per commit id for long-lived processes (the MCP server).
#[derive(Default, Clone)]
pub struct SessionCache {
    sessions: Arc<Mutex<HashMap<(String, QueryBudget), PinnedSession>>>,
}

impl SessionCache {
    /// Returns the cached session for the snapshot's commit or builds one.
    pub fn get_or_open(
        &self,
        ws: &Workspace,
        snapshot: Arc<Snapshot>,
        budget: QueryBudget,
    ) -> Result<PinnedSession> {
        let key = (snapshot.commit_id().to_owned(), budget);
        if let Ok(map) = self.sessions.lock()
            && let Some(found) = map.get(&key)
        {
            return Ok(found.clone());
        }
        let session = open_session(ws, snapshot, budget)?;
        if let Ok(mut map) = self.sessions.lock() {
            if map.len() >= 8 {
                map.clear();
            }
            map.insert(key, session.clone());
        }
        Ok(session)
    }
}
