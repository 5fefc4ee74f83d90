//! Declared experiments: their plans and randomized runs.

pub mod detached_experiment;
pub mod experiment_plan;
pub mod experiment_records;
pub mod experiment_run;
pub mod experiments;
pub mod scaling_design;
