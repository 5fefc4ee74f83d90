//! Answering questions over published evidence: analyses, drill-downs,
//! trace windows, GPU and framework views, measurements, and the narrower
//! call a budget overrun offers.

pub mod analyze;
pub mod execution;
pub mod frame_instances;
pub mod gpu;
pub mod gpu_breakdown;
pub mod gpu_breakdown_ranks;
pub mod gpu_diagnosis;
pub mod gpu_gaps;
pub mod measurements;
pub mod memory;
pub(crate) mod narrower;
pub mod phase_window;
pub mod pytorch;
pub mod sdk_observations;
pub mod summary;
pub mod summary_gpu;
pub(crate) mod summary_headline;
pub mod threads;
pub mod views;
pub mod window_count;
