//! flameox's engine: the workspace, the artifact store, atomic publication of
//! Parquet evidence, the query runtime, and the application services that the
//! CLI and the MCP server both call. See `docs/storage.md`.

pub mod allocator;
pub mod budget;
pub mod catalog;
pub mod catalog_rebuild;
pub mod client_setup;
pub mod cluster;
pub mod config;
pub mod cursor;
pub mod detached;
pub mod error;
pub mod execution;
pub mod fsutil;
pub mod late_identity;
pub mod lock;
pub mod object_location;
pub mod operations;
pub mod project;
pub mod publish;
pub mod query;
pub mod records;
pub mod repair;
pub mod retention;
pub mod revisions;
pub mod row_group_writer;
pub mod runs;
pub mod services;
pub mod shared_store;
pub mod staging;
pub mod store;
pub mod store_in_flight;
pub mod units;
pub mod validate;
pub mod workspace;

pub use error::{ErrorCode, FlameoxError, Result};
pub use workspace::{Workspace, WorkspaceLocator};

/// Re-exported so transports can name typed results without another dependency.
pub use flameox_extractors as extractors;
pub use flameox_recipes as recipes;
