//! What this build can read and answer and which capture adapters work on
//! this machine (passively by default: nothing is run or installed; the
//! active modes run or reuse each adapter's bounded version probe), what
//! capability setup can install, and how to view an artifact in its native
//! viewer.

use flameox_extractors::formats::FORMATS;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::services::adapters::{ProbeMode, adapter_statuses_in, third_party_statuses};
use crate::services::capability_setup::pins::managed;
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
    /// How the adapters were examined: `passive`, `active_cached` or
    /// `active_refresh`.
    pub mode: String,
    /// Capture adapters and whether they work on this machine.
    pub adapters: Vec<crate::services::adapters::AdapterStatus>,
    /// Missing adapters capability setup can install (pinned), with the call.
    pub setup_adapters: Vec<SetupAction>,
    /// Declared third-party adapters installed here whose exact identity
    /// is not approved yet, with the prepare_adapter call.
    pub setup_third_party_adapters: Vec<SetupAction>,
}

/// One adapter capability setup can install.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetupAction {
    pub adapter: String,
    /// `distribution==version`, as it would be installed.
    pub requirement: String,
    pub tool: String,
    /// Its arguments, apart from the idempotency_key you choose.
    pub arguments: serde_json::Value,
}

/// The formats detection knows, which have an extractor in this build, and
/// the adapters examined as `mode` allows.
pub fn capabilities(mode: ProbeMode, ws: Option<&Workspace>) -> Capabilities {
    let mut adapters = adapter_statuses_in(mode);
    let mut setup_third_party_adapters = Vec::new();
    for (status, third) in ws.map(third_party_statuses).unwrap_or_default() {
        if let (false, Some(identity)) = (third.approved, &third.identity) {
            setup_third_party_adapters.push(SetupAction {
                adapter: third.adapter.clone(),
                requirement: format!(
                    "{} {} (content sha256:{})",
                    identity.distribution.as_deref().unwrap_or("program"),
                    identity.version.as_deref().unwrap_or("unversioned"),
                    &identity.content_sha256[..identity.content_sha256.len().min(16)]
                ),
                tool: "prepare_adapter".to_owned(),
                arguments: serde_json::json!({
                    "adapter": third.adapter,
                    "distribution": identity.distribution,
                    "version": identity.version,
                }),
            });
        }
        adapters.push(status);
    }
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
        mode: match mode {
            ProbeMode::Passive => "passive",
            ProbeMode::ActiveCached => "active_cached",
            ProbeMode::ActiveRefresh => "active_refresh",
        }
        .to_owned(),
        setup_adapters: adapters
            .iter()
            .filter(|a| !a.available && a.setup_verification == "pending")
            .filter_map(|a| managed(&a.name))
            .map(|m| SetupAction {
                adapter: m.adapter.to_owned(),
                requirement: m.requirement(),
                tool: "start_capability_setup".to_owned(),
                arguments: serde_json::json!({ "adapters": [m.adapter] }),
            })
            .collect(),
        setup_third_party_adapters,
        adapters,
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
