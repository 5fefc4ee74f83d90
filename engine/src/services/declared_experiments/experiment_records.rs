//! The records an experiment leaves: its protocol (written before the
//! first trial), one record per attempted trial, and its outcome (the
//! frozen run sets and the analyses it suggests). Kept apart from running
//! (`experiment_run`) and reading (`experiments`) so both use them without
//! depending on each other.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::project::Scalar;
use crate::services::analysis_requests::{CompareRequest, ScalingRequest};
use crate::services::experiment_plan::ExperimentPlan;

/// Prefix of experiment ids.
pub const EXPERIMENT_PREFIX: &str = "ex_";

/// `records/experiments/<id>.json`: what was planned, written before the
/// first trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentProtocol {
    pub schema_version: u32,
    pub experiment_id: String,
    pub created_at: String,
    pub adapter: String,
    pub plan: ExperimentPlan,
}

/// `records/trials/<experiment>-<trial>.json`: one attempted trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    pub schema_version: u32,
    pub experiment_id: String,
    pub trial_id: String,
    pub block: Option<u64>,
    pub position: u64,
    pub position_in_block: u64,
    pub variant: String,
    pub parameters: BTreeMap<String, Scalar>,
    pub warmup: bool,
    pub run_id: Option<String>,
    /// `completed`, `failed`, `timed_out` or `cancelled`.
    pub status: String,
    pub failure: Option<String>,
    pub wall_time_ns: Option<u64>,
    pub started_at: String,
    pub finished_at: String,
}

/// One variant's frozen run set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantRunSet {
    pub variant: String,
    pub run_set_id: String,
    pub members: usize,
}

/// The analyses an experiment suggests, ready to call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AnalysisReferences {
    /// Baseline (first variant) → candidate, with exactly two variants.
    pub compare: Option<CompareRequest>,
    pub compare_command: Option<String>,
    /// Over the experiment, when it has a scaling parameter.
    pub scaling: Option<ScalingRequest>,
    pub scaling_command: Option<String>,
}

/// Trial counts by status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialCounts {
    pub planned: usize,
    pub attempted: usize,
    pub completed: usize,
    pub failed: usize,
    pub timed_out: usize,
    pub cancelled: usize,
    pub warmups: usize,
}

/// `records/experiment_outcomes/<id>.json`: how the experiment ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentOutcome {
    pub schema_version: u32,
    pub experiment_id: String,
    /// `completed` (every trial attempted) or `cancelled`.
    pub status: String,
    pub finished_at: String,
    pub counts: TrialCounts,
    pub first_failing_trial: Option<String>,
    pub run_sets: Vec<VariantRunSet>,
    pub analyses: AnalysisReferences,
}

/// The trial record's id.
pub fn trial_record_id(experiment_id: &str, trial_id: &str) -> String {
    format!("{experiment_id}-{trial_id}")
}
