//! GPU diagnoses a performance engineer asks for after "where is the GPU
//! idle": launch geometry against the device's SMs, copies by memory kind
//! with the host's synchronous calls, collectives with their bandwidth and
//! exposed time, ranks side by side (who arrives last at each
//! collective, and why), iterations found without markers, fusion
//! candidates, and the critical path of a step. One read of the device rows serves every section
//! ([`device_rows`]); each section is one file.

pub mod collectives;
pub mod copies;
pub mod critical_path;
pub mod critical_path_graph;
pub mod critical_path_sync;
pub mod device_rows;
pub mod fusion;
pub mod geometry;
pub mod iterations;
pub mod period;
pub mod ranks;
pub mod rules;
pub mod sequences;
pub mod unions;

use std::collections::BTreeMap;

use datafusion::prelude::SessionContext;
use serde::{Deserialize, Serialize};

use crate::common::{ArtifactScope, RecipeError, RecipeResult};
pub use crate::gpu_breakdown_params::DeviceKey;
use device_rows::WorkRows;

/// Devices whose launch geometry an answer lists.
const GEOMETRY_DEVICES: usize = 2;
/// Artifacts without device work named in an answer.
const MISSING_NAMED: usize = 8;

/// The parts of the diagnosis a call can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosisSection {
    Geometry,
    Copies,
    Collectives,
    Ranks,
    Iterations,
    Fusion,
    CriticalPath,
}

impl DiagnosisSection {
    pub const ALL: [DiagnosisSection; 7] = [
        DiagnosisSection::Geometry,
        DiagnosisSection::Copies,
        DiagnosisSection::Collectives,
        DiagnosisSection::Ranks,
        DiagnosisSection::Iterations,
        DiagnosisSection::Fusion,
        DiagnosisSection::CriticalPath,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DiagnosisSection::Geometry => "geometry",
            DiagnosisSection::Copies => "copies",
            DiagnosisSection::Collectives => "collectives",
            DiagnosisSection::Ranks => "ranks",
            DiagnosisSection::Iterations => "iterations",
            DiagnosisSection::Fusion => "fusion",
            DiagnosisSection::CriticalPath => "critical_path",
        }
    }

    /// The section by name, or the valid names.
    pub fn parse(name: &str) -> RecipeResult<DiagnosisSection> {
        DiagnosisSection::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| RecipeError::NotFound {
                what: format!("section {name}"),
                closest: Vec::new(),
                valid: DiagnosisSection::ALL
                    .iter()
                    .map(|s| s.name().to_owned())
                    .collect(),
            })
    }
}

/// What the engine knows of each artifact from its metadata.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ArtifactFacts {
    /// `distributedInfo.rank` (Kineto), when recorded.
    pub rank: Option<i64>,
    pub world_size: Option<i64>,
    /// SMs (CUs) per device id, from the trace's device properties.
    pub sm_counts: BTreeMap<i64, i64>,
}

/// What to compute.
#[derive(Debug, Clone, PartialEq)]
pub struct DiagnosisParams {
    pub sections: Vec<DiagnosisSection>,
    /// Rows per artifact in each section; ranks shown in the rank view.
    pub limit: usize,
    pub facts: BTreeMap<String, ArtifactFacts>,
    /// Only kernels whose name contains this (geometry).
    pub kernel: Option<String>,
    /// Device work starting in `[start, end)` only.
    pub window: Option<(i64, i64)>,
}

impl DiagnosisParams {
    pub fn wants(&self, section: DiagnosisSection) -> bool {
        self.sections.contains(&section)
    }

    pub fn key(&self, artifact_id: &str, device: Option<i64>) -> DeviceKey {
        DeviceKey {
            rank: self.facts.get(artifact_id).and_then(|f| f.rank),
            artifact_id: artifact_id.to_owned(),
            device,
        }
    }

    pub fn rank(&self, artifact_id: &str) -> Option<i64> {
        self.facts.get(artifact_id).and_then(|f| f.rank)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiagnosisAnswer {
    pub sections: Vec<DiagnosisSection>,
    /// Artifacts in scope with device work (kernels, copies, sets).
    pub artifacts_with_device_work: usize,
    /// Artifacts in scope without any (at most 8 named).
    pub artifacts_without_device_work: Vec<String>,
    /// Sections not asked for are null. Geometry lists the devices with
    /// the most underfilled time, then the most compute time (at most 2).
    pub geometry: Option<Vec<geometry::GeometryDevice>>,
    /// Devices with compute kernels, when geometry left some out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geometry_devices_total: Option<usize>,
    pub copies: Option<copies::Copies>,
    pub collectives: Option<collectives::Collectives>,
    pub ranks: Option<ranks::Ranks>,
    pub iterations: Option<iterations::Iterations>,
    pub fusion: Option<Vec<fusion::ArtifactFusion>>,
    /// HTA's critical path over the window (`phase`) of one artifact: the
    /// rank the others waited for, else the first in scope.
    pub critical_path: Option<Vec<critical_path::PathOfArtifact>>,
    /// The declared rules ([`rules`]) these sections fire, most time at
    /// stake first.
    pub diagnoses: Vec<rules::Diagnosis>,
}

/// The sections `params` asks for over `scope`.
pub async fn gpu_diagnosis(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    params: &DiagnosisParams,
) -> RecipeResult<DiagnosisAnswer> {
    let work = WorkRows::read(ctx, scope, params.window).await?;
    let present: std::collections::BTreeSet<&str> = work
        .rows
        .iter()
        .map(|r| work.strings.get(r.artifact))
        .collect();
    let missing: Vec<String> = scope
        .artifact_ids
        .iter()
        .filter(|a| !present.contains(a.as_str()))
        .take(MISSING_NAMED)
        .cloned()
        .collect();
    let mut geometry_devices_total = None;
    let geometry = params.wants(DiagnosisSection::Geometry).then(|| {
        let mut devices = geometry::geometry(&work, params);
        devices.sort_by(|a, b| {
            (b.underfilled_ns, b.compute_ns, &a.key).cmp(&(a.underfilled_ns, a.compute_ns, &b.key))
        });
        if devices.len() > GEOMETRY_DEVICES {
            geometry_devices_total = Some(devices.len());
            devices.truncate(GEOMETRY_DEVICES);
        }
        devices
    });
    let copies = match params.wants(DiagnosisSection::Copies) {
        true => Some(copies::copies(ctx, scope, &work, params).await?),
        false => None,
    };
    let matched = (params.wants(DiagnosisSection::Collectives)
        || params.wants(DiagnosisSection::Ranks))
    .then(|| collectives::match_instances(&work, params));
    let collectives = match (&matched, params.wants(DiagnosisSection::Collectives)) {
        (Some(m), true) => Some(collectives::collectives(&work, m, params)),
        _ => None,
    };
    let ranks = match (&matched, params.wants(DiagnosisSection::Ranks)) {
        (Some(m), true) => Some(ranks::ranks(ctx, scope, &work, m, params).await?),
        _ => None,
    };
    let mut answer = DiagnosisAnswer {
        sections: params.sections.clone(),
        artifacts_with_device_work: present.len(),
        artifacts_without_device_work: missing,
        geometry,
        geometry_devices_total,
        copies,
        collectives,
        ranks,
        iterations: params
            .wants(DiagnosisSection::Iterations)
            .then(|| iterations::iterations(&work, params)),
        fusion: params
            .wants(DiagnosisSection::Fusion)
            .then(|| fusion::fusion(&work, params)),
        critical_path: None,
        diagnoses: Vec::new(),
    };
    if params.wants(DiagnosisSection::CriticalPath) {
        // One rank's path: the one the others waited for, else the first.
        let one = answer
            .ranks
            .as_ref()
            .and_then(|r| r.holders.first())
            .map(|h| h.artifact_id.clone())
            .or_else(|| scope.artifact_ids.first().cloned());
        let scope = ArtifactScope {
            artifact_ids: one.into_iter().collect(),
        };
        answer.critical_path = Some(critical_path::critical_paths(ctx, &scope, params).await?);
    }
    answer.diagnoses = rules::diagnose(&answer);
    Ok(answer)
}

/// The middle value (the upper one of an even count); None when empty.
pub fn median_i64(values: &[i64]) -> Option<i64> {
    let mut v = values.to_vec();
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}
