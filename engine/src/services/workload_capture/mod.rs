//! Running declared workloads under a profiler and recording what they
//! produced.

pub mod adapter_options;
pub mod adapters;
pub mod capture;
pub mod capture_outputs;
pub mod capture_run;
pub mod dependencies;
pub mod detached_capture;
pub mod observations;
pub mod plans;
pub mod workloads;
