//! GPU diagnoses a performance engineer asks for after "where is the GPU
//! idle": launch geometry against the device's SMs, copies by memory kind
//! with the host's synchronous calls, collectives with their bandwidth and
//! exposed time, ranks side by side (who arrives last at each
//! collective, and why), iterations found without markers, fusion
//! candidates, the critical path of a step, and model-FLOPs utilization.
//! One read of the device rows serves every section
//! ([`device_rows`]); each section is one file.

pub mod answer;
pub mod collectives;
pub mod copies;
pub mod critical_path;
pub mod critical_path_graph;
pub mod critical_path_model;
pub mod critical_path_sync;
pub mod device_rows;
pub mod flops;
pub mod fusion;
pub mod geometry;
pub mod iterations;
pub mod mfu;
mod mfu_calls;
pub mod mpi_calls;
pub mod occupancy;
pub mod params;
pub mod peaks;
pub mod period;
pub mod ranks;
pub mod rules;
pub mod sequences;
pub mod unions;

use datafusion::prelude::SessionContext;

use crate::common::{ArtifactScope, RecipeResult};
pub use crate::gpu_breakdown_params::DeviceKey;
pub use answer::DiagnosisAnswer;
use device_rows::WorkRows;
pub use occupancy::SmLimits;
pub use params::{ArtifactFacts, DiagnosisParams, DiagnosisSection, median_i64};

/// Devices whose launch geometry an answer lists.
const GEOMETRY_DEVICES: usize = 2;
/// Artifacts without device work named in an answer.
const MISSING_NAMED: usize = 8;

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
        (Some(m), true) => {
            let unions = unions::device_unions(&work);
            let mut c = collectives::collectives(&work, &unions, m, params);
            c.mpi = mpi_calls::mpi_calls(ctx, scope, &work, &unions, params).await?;
            Some(c)
        }
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
        mfu: None,
        diagnoses: Vec::new(),
    };
    if params.wants(DiagnosisSection::Mfu) {
        answer.mfu = Some(mfu::mfu(ctx, scope, &work, params).await?);
    }
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
