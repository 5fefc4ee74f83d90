//! Run sets and the records that keep an answer: freezing sets, paired
//! comparisons, scaling fits and their analysis records.

pub mod analysis_records;
pub mod analysis_requests;
pub mod compare;
pub mod compare_checks;
pub mod run_set_samples;
pub mod run_sets;
pub mod scaling;
