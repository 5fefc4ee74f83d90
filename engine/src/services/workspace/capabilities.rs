//! What this build can read and answer and which capture adapters work on
//! this machine, reported passively (nothing is probed or installed), and
//! how to view an artifact in its native viewer.

use flameox_extractors::formats::FORMATS;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::store;
use crate::workspace::Workspace;

/// One input format and whether this build extracts it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FormatCapability {
    pub kind: String,
    pub extract: bool,
    pub note: String,
}

/// `list_capabilities` / `flameox capabilities`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capabilities {
    pub flameox_version: String,
    pub formats: Vec<FormatCapability>,
    pub analyses: Vec<String>,
    pub drilldowns: Vec<String>,
    /// Capture adapters and whether they work on this machine (passive:
    /// a PATH lookup; nothing is executed).
    pub adapters: Vec<crate::services::adapters::AdapterStatus>,
}

/// The formats detection knows, and which have an extractor in this build.
pub fn capabilities() -> Capabilities {
    let formats = FORMATS
        .iter()
        .map(|f| FormatCapability {
            kind: f.name().to_owned(),
            extract: f.extractor().is_some(),
            note: f.description.to_owned(),
        })
        .collect();
    Capabilities {
        flameox_version: env!("CARGO_PKG_VERSION").to_owned(),
        formats,
        analyses: vec![
            "hotspots".into(),
            "frame_deltas".into(),
            "flame_graph".into(),
            "gpu_summary".into(),
            "accelerator_launches".into(),
            "gpu_breakdown".into(),
            "pytorch".into(),
            "gpu_gaps".into(),
            "memory".into(),
            "compare".into(),
            "scaling".into(),
        ],
        drilldowns: vec![
            "callers".into(),
            "callees".into(),
            "stack_examples".into(),
            "trace_window".into(),
            "measurements".into(),
        ],
        adapters: crate::services::adapters::adapter_statuses(),
    }
}

/// How to open an artifact in the viewer made for its format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewerPlan {
    pub artifact_id: String,
    pub kind: String,
    pub viewer: String,
    /// Steps for a person; no host path is included.
    pub steps: Vec<String>,
}

pub fn viewer_plan(ws: &Workspace, target: &str) -> Result<ViewerPlan> {
    let artifact_id = super::viewer::artifact_of(ws, target)?;
    let record = store::read_artifact(ws, &artifact_id)?;
    let (viewer, steps) = match record.kind.as_str() {
        "chrome_json" | "perfetto_protobuf" => (
            "Perfetto UI",
            vec![
                "open https://ui.perfetto.dev in a browser".to_owned(),
                format!(
                    "choose 'Open trace file' and pick {} (the original file)",
                    record.original_name
                ),
                format!("or run: flameox open {artifact_id} --launch"),
            ],
        ),
        "gecko_profile" => (
            "Firefox Profiler (profiler.firefox.com)",
            vec![
                "open https://profiler.firefox.com in a browser".to_owned(),
                format!(
                    "choose 'Load a profile from file' and pick {} (the original file)",
                    record.original_name
                ),
                format!(
                    "a Firefox DevTools recording also opens in speedscope: open https://www.speedscope.app and drop {}",
                    record.original_name
                ),
                "or run: flameox open <artifact-id> --launch (speedscope)".to_owned(),
            ],
        ),
        "nsight_systems_sqlite" => (
            "NVIDIA Nsight Systems",
            vec![
                "open the original .nsys-rep report in the Nsight Systems GUI (nsys-ui); the SQLite export itself has no viewer".to_owned(),
                format!("or query {} with sqlite3 (tables CUPTI_ACTIVITY_KIND_*, NVTX_EVENTS, StringIds)", record.original_name),
            ],
        ),
        "speedscope_json" | "folded_stacks" | "pprof" | "chrome_cpuprofile" => (
            "speedscope",
            vec![format!(
                "open https://www.speedscope.app and drop {}",
                record.original_name
            )],
        ),
        _ => (
            "none",
            vec!["no native viewer is known for this kind".to_owned()],
        ),
    };
    Ok(ViewerPlan {
        artifact_id: record.artifact_id,
        kind: record.kind,
        viewer: viewer.to_owned(),
        steps,
    })
}
