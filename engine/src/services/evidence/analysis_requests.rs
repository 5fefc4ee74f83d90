//! What the run-set analyses ask — `compare_run_sets` / `record_comparison`
//! and `analyze_scaling` / `record_analysis` — kept apart from the analyses
//! so that an experiment's outcome can name the calls it suggests without
//! depending on the analyses that read experiments.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What `compare_run_sets` and `record_comparison` ask.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompareRequest {
    /// Baseline: run set (rs_…) or run id.
    #[serde(alias = "baseline")]
    #[schemars(length(min = 1, max = 200))]
    pub base: String,
    /// Candidate: run set (rs_…) or run id.
    #[serde(alias = "candidate")]
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// Measurement name (default wall_time).
    #[schemars(length(max = 200))]
    pub metric: Option<String>,
    /// Default lower_is_better.
    #[schemars(extend("enum" = ["lower_is_better", "higher_is_better"]))]
    pub polarity: Option<String>,
    /// Practical threshold (default 0.02).
    #[schemars(range(min = 0, max = 1))]
    pub threshold: Option<f64>,
    /// Default 0.95.
    #[schemars(range(min = 0, max = 1))]
    pub confidence: Option<f64>,
    /// Bootstrap seed (default 0).
    pub seed: Option<u64>,
}

/// What `analyze_scaling` and `record_analysis` ask.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScalingRequest {
    /// Run set (rs_…), run or experiment (ex_…) id.
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// Numeric size parameter, e.g. n; required unless target is an experiment.
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub parameter: String,
    /// Measurement name (default wall_time).
    #[schemars(length(max = 200))]
    pub metric: Option<String>,
    /// Default 0.95.
    #[schemars(range(min = 0, max = 1))]
    pub confidence: Option<f64>,
    /// Bootstrap seed (default 0).
    pub seed: Option<u64>,
}
