//! A diagnosis answer: each section's rows (null when not asked) and the
//! rules they fire; [`super::rules`] reads it, [`super`] fills it.

use serde::{Deserialize, Serialize};

use super::params::DiagnosisSection;
use super::{collectives, copies, critical_path, fusion, geometry, iterations, mfu, ranks, rules};

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
    /// Model-FLOPs utilization per artifact (lowest first).
    pub mfu: Option<mfu::Mfu>,
    /// The declared rules ([`rules`]) these sections fire, most time at
    /// stake first.
    pub diagnoses: Vec<rules::Diagnosis>,
}
