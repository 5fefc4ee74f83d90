//! Reductions: derived evidence over a declared scope too large for one
//! bounded call (`docs/pipelines.md`, section 3). `plan_reduction` states
//! what a reduction will read — its inputs (the HEAD generations of the
//! target's artifacts), their rows and bytes from the generation manifests,
//! an estimated time — and a `plan_digest` bound to those generations;
//! `execute_reduction` runs it as a detached operation of kind `reduction`
//! (the lifecycle of `docs/detached.md`) that writes its output as an
//! artifact and imports it into a new run; `get_reduction` polls it. The
//! first kind is `merged_stacks`: one stack profile of the whole target.

pub mod plan;
pub mod work;

pub use plan::{ReductionKind, ReductionPlan, ReductionRequest, plan_reduction};
pub use work::{REDUCTION_KIND, REDUCTION_PHASES, run_reduction_work, start_reduction};
