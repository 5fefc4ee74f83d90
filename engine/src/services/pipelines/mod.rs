//! Artifact pipelines (`docs/pipelines.md`, section 4): a named,
//! revisioned chain from a raw artifact to an evidence product — which
//! extraction (format kind, producer) and which analysis (hotspots of a
//! metric) — registered as a record ([`registry`]), and the comparison of
//! two pipelines over their artifacts ([`comparison`]): which frames'
//! shares differ beyond a tolerance, which only one side has, and how
//! well the top frames agree.

pub mod comparison;
pub mod registry;

pub use comparison::{ComparePipelinesRequest, PipelineComparison, compare_artifact_pipelines};
pub use registry::{ArtifactPipeline, RegisterPipelineRequest, register_artifact_pipeline};
