//! What a diagnosis call asks for (sections, limits, the window, what the
//! engine knows of each artifact) and the key its rows carry: shared by the
//! sections, which import it, and by [`super`], which runs them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::common::{RecipeError, RecipeResult};
use crate::gpu_breakdown_params::DeviceKey;

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
    Mfu,
}

impl DiagnosisSection {
    pub const ALL: [DiagnosisSection; 8] = [
        DiagnosisSection::Geometry,
        DiagnosisSection::Copies,
        DiagnosisSection::Collectives,
        DiagnosisSection::Ranks,
        DiagnosisSection::Iterations,
        DiagnosisSection::Fusion,
        DiagnosisSection::CriticalPath,
        DiagnosisSection::Mfu,
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
            DiagnosisSection::Mfu => "mfu",
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
    /// Device names per device id, as the trace names them.
    pub device_names: BTreeMap<i64, String>,
    /// SM resources per device id (NVIDIA devices whose trace recorded them).
    pub sm_limits: BTreeMap<i64, super::SmLimits>,
    /// The artifact's first event start and last event end.
    pub trace_span: Option<(i64, i64)>,
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

/// The middle value (the upper one of an even count); None when empty.
pub fn median_i64(values: &[i64]) -> Option<i64> {
    let mut v = values.to_vec();
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}
