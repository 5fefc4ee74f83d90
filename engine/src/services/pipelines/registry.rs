//! `register_artifact_pipeline`: a pipeline definition stored as a
//! revisioned record named by the pipeline (`.flameox/records/pipelines/
//! <name>/`). Registering the same definition again changes nothing (its
//! revision is returned); another definition is a new revision, accepted
//! only against the revision the caller read (`expected_revision`), as
//! every revisioned record.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, FlameoxError, Result};
use crate::fsutil::now_rfc3339;
use crate::revisions::{self, RevisionedKind};
use crate::workspace::Workspace;

/// What `register_artifact_pipeline` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterPipelineRequest {
    /// Pipeline name (lowercase letters, digits, _ and -).
    #[schemars(length(min = 1, max = 80))]
    pub name: String,
    /// Format kind the artifacts must be extracted as (a --kind name), e.g. speedscope_json.
    #[schemars(length(max = 64))]
    pub kind: Option<String>,
    /// Producer the extraction must name, e.g. py-spy.
    #[schemars(length(max = 64))]
    pub producer: Option<String>,
    /// Reduction between extraction and analysis: its target must be that reduction's run.
    pub reduction: Option<crate::services::reductions::ReductionKind>,
    /// Metric the analysis reads; default each side's primary one.
    #[schemars(length(max = 64))]
    pub metric: Option<String>,
    /// What the pipeline is for.
    #[schemars(length(max = 400))]
    pub description: Option<String>,
    /// The revision you read, to change an existing definition.
    #[schemars(range(min = 1))]
    pub expected_revision: Option<u64>,
}

/// A registered pipeline (one revision).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtifactPipeline {
    pub name: String,
    pub revision: u64,
    /// Extraction: the format kind and producer its artifacts' evidence
    /// must have (absent: any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer: Option<String>,
    /// Reduction: the target is the run a reduction of this kind made
    /// (`execute_reduction`), not the raw artifacts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduction: Option<crate::services::reductions::ReductionKind>,
    /// Analysis: hotspots (self value per frame) of this metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub registered_at: String,
    /// False when the same definition was registered already.
    #[serde(default)]
    pub changed: bool,
}

crate::revisions::revisioned!(ArtifactPipeline);

impl ArtifactPipeline {
    fn same_definition(&self, other: &ArtifactPipeline) -> bool {
        let definition = |p: &ArtifactPipeline| {
            (
                p.kind.clone(),
                p.producer.clone(),
                p.reduction,
                p.metric.clone(),
                p.description.clone(),
            )
        };
        definition(self) == definition(other)
    }
}

/// Reads the current revision of pipeline `name`.
pub fn read_pipeline(ws: &Workspace, name: &str) -> Result<ArtifactPipeline> {
    let mut p: ArtifactPipeline = revisions::read_current(ws, RevisionedKind::Pipelines, name)?;
    p.changed = false;
    Ok(p)
}

/// Registers (or revises) a pipeline.
pub fn register_artifact_pipeline(
    ws: &Workspace,
    req: &RegisterPipelineRequest,
) -> Result<ArtifactPipeline> {
    if let Some(kind) = &req.kind
        && flameox_extractors::formats::by_name(kind).is_none()
    {
        let names = flameox_extractors::formats::readable_names();
        return Err(FlameoxError::invalid_argument(
            "kind",
            format!("`{kind}` is not a format kind: {}", names.join(", ")),
        ));
    }
    let kind = req
        .kind
        .as_deref()
        .and_then(flameox_extractors::formats::by_name)
        .map(|f| f.name().to_owned());
    let wanted = ArtifactPipeline {
        name: req.name.clone(),
        revision: 0,
        kind,
        producer: req.producer.clone(),
        reduction: req.reduction,
        metric: req.metric.clone(),
        description: req.description.clone(),
        registered_at: now_rfc3339(),
        changed: true,
    };
    let existing = match revisions::existing_revision(ws, RevisionedKind::Pipelines, &req.name) {
        Ok(_) => Some(read_pipeline(ws, &req.name)?),
        Err(e) if e.code == ErrorCode::RunNotFound => None,
        Err(e) => return Err(e),
    };
    match existing {
        None => revisions::create(ws, RevisionedKind::Pipelines, &req.name, wanted),
        Some(current) if current.same_definition(&wanted) => Ok(current),
        Some(current) => {
            let expected = req.expected_revision.ok_or_else(|| {
                FlameoxError::new(
                    ErrorCode::RevisionConflict,
                    format!(
                        "pipeline {} exists at revision {} with another definition",
                        req.name, current.revision
                    ),
                )
                .detail("current_revision", current.revision)
                .remedy(format!(
                    "pass expected_revision {} to replace it, or choose another name",
                    current.revision
                ))
            })?;
            revisions::revise(ws, RevisionedKind::Pipelines, &req.name, expected, |_| {
                Ok(wanted)
            })
        }
    }
}
