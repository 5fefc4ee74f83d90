//! flameox's recipes: reviewed query families.
//!
//! Each recipe is a function from a DataFusion [`SessionContext`] (with the
//! pinned commit's evidence tables registered by name) and typed parameters to
//! a typed result. Plans are built with the DataFrame API from those typed
//! parameters; no SQL text is ever parsed. Recipes never touch the filesystem
//! and never decide scope, budgets or cursors' signatures: the engine does.
//!
//! [`SessionContext`]: datafusion::prelude::SessionContext

pub mod accelerator;
pub mod accelerator_answer;
pub mod accelerator_reduced;
pub mod common;
pub mod counter_series;
pub mod device_pass;
pub mod drilldown;
pub mod frame_deltas;
pub mod frame_identity;
pub mod gap_launchers;
pub mod gap_samples;
pub mod gap_stalls;
pub mod gpu_breakdown;
pub mod gpu_breakdown_ops;
pub mod gpu_breakdown_params;
pub mod gpu_diagnosis;
pub mod gpu_gaps;
pub mod gpu_summary;
pub mod host_activity;
pub mod hot_path;
pub mod hotspots;
pub mod input_shapes;
pub mod instances;
pub mod kernel_family;
pub mod measurements;
pub mod memory;
pub mod memory_allocations;
pub mod memory_sites;
pub mod merged_stacks;
pub mod operator_device_time;
pub mod page_urls;
pub mod phase_span;
pub mod pytorch;
pub mod run_set_evidence;
pub mod stack_forest;
pub mod stats;
pub mod text_udf;
pub mod thread_scope;
pub mod thread_sources;
pub mod threads;
pub mod time_accounting;
pub mod window;
pub mod window_stacks;

pub use common::{ArtifactScope, RecipeError};
