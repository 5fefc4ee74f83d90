//! Getting evidence in: the import and its plan, deadline, totals, the
//! path confinement MCP imports pass, and extraction again of stored
//! artifacts (and which ones need it).

pub mod confine;
pub mod import;
pub mod import_deadline;
pub mod import_plan;
pub mod import_progress;
pub mod import_totals;
pub mod input_extraction;
pub mod input_workers;
pub mod phase_profile;
pub mod re_extract;
pub mod remote_fetch;
pub mod stale_extractions;
