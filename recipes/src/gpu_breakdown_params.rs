//! What a GPU breakdown call asks for (sections, thresholds, limits, ranks)
//! and the key every row of its answer carries: shared by the breakdown
//! ([`crate::gpu_breakdown`]) and its per-stream parts
//! ([`crate::gpu_breakdown_ops`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::common::{RecipeError, RecipeResult};

/// The parts of the breakdown a call can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    Temporal,
    Idle,
    Overlap,
    Kernels,
    Launches,
    Bandwidth,
}

impl Section {
    pub const ALL: [Section; 6] = [
        Section::Temporal,
        Section::Idle,
        Section::Overlap,
        Section::Kernels,
        Section::Launches,
        Section::Bandwidth,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Section::Temporal => "temporal",
            Section::Idle => "idle",
            Section::Overlap => "overlap",
            Section::Kernels => "kernels",
            Section::Launches => "launches",
            Section::Bandwidth => "bandwidth",
        }
    }

    /// The section by name, or the valid names.
    pub fn parse(name: &str) -> RecipeResult<Section> {
        Section::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| RecipeError::NotFound {
                what: format!("section {name}"),
                closest: Vec::new(),
                valid: Section::ALL.iter().map(|s| s.name().to_owned()).collect(),
            })
    }
}

/// Thresholds, in ns. Defaults are HTA's (`get_idle_time_breakdown`,
/// `get_cuda_kernel_launch_stats`), read in the trace's unit (µs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thresholds {
    /// A gap on a stream shorter than this, not explained by a late launch,
    /// is kernel wait (HTA `consecutive_kernel_delay` = 30; HTA's docstring
    /// says ns but it compares against µs timestamps, so 30 µs).
    pub kernel_wait_ns: i64,
    /// Launch calls longer than this are runtime outliers (`runtime_cutoff`).
    pub runtime_outlier_ns: i64,
    /// Launch delays longer than this are outliers (`launch_delay_cutoff`).
    pub launch_delay_outlier_ns: i64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            kernel_wait_ns: 30_000,
            runtime_outlier_ns: 50_000,
            launch_delay_outlier_ns: 100_000,
        }
    }
}

/// What to compute.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakdownParams {
    pub sections: Vec<Section>,
    pub thresholds: Thresholds,
    /// Kernel names per artifact and examples per outlier kind.
    pub limit: usize,
    /// Rank of each artifact (Kineto `distributedInfo.rank`), when known.
    pub ranks: BTreeMap<String, i64>,
}

/// Where a row belongs: artifact (= rank) and device.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct DeviceKey {
    pub rank: Option<i64>,
    pub artifact_id: String,
    pub device: Option<i64>,
}
