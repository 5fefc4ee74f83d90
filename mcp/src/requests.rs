//! The typed arguments of each tool, decoded after `arguments::check` has
//! validated them against the tool's strict schema.

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidateArgs {
    pub full: Option<bool>,
}
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageArgs {
    pub limit: Option<usize>,
    pub cursor: Option<String>,
}
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    pub target: String,
}
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactArgs {
    pub target: String,
}
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvidenceArgs {
    pub reference: String,
}
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportArgs {
    pub path: String,
    pub source_root: Option<String>,
    pub kind: Option<String>,
    pub producer: Option<String>,
    pub variant: Option<String>,
    #[serde(default)]
    pub parameters: std::collections::BTreeMap<String, String>,
    pub timeout_seconds: Option<f64>,
}
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HotspotArgs {
    pub target: String,
    pub metric: Option<String>,
    pub thread: Option<String>,
    pub process: Option<String>,
    pub window_start_ns: Option<i64>,
    pub window_end_ns: Option<i64>,
    pub limit: Option<usize>,
    pub cursor: Option<String>,
}
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrameArgs {
    pub target: String,
    pub frame: String,
    pub thread: Option<String>,
    pub process: Option<String>,
    pub metric: Option<String>,
    pub limit: Option<usize>,
    pub cursor: Option<String>,
}
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExamplesArgs {
    pub target: String,
    pub frame: String,
    pub thread: Option<String>,
    pub process: Option<String>,
    pub metric: Option<String>,
    pub limit: Option<usize>,
}
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompareArgs {
    pub target: String,
    pub base: String,
    pub metric: Option<String>,
    pub limit: Option<usize>,
}
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuSummaryArgs {
    pub target: String,
    pub report: Option<String>,
    pub limit: Option<usize>,
}
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcceleratorArgs {
    pub target: String,
    pub phase: Option<String>,
    pub base: Option<String>,
    pub limit: Option<usize>,
}
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PytorchArgs {
    pub target: String,
    pub limit: Option<usize>,
}
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakdownArgs {
    pub target: OneOrMany,
    pub section: Option<String>,
    pub limit: Option<usize>,
}
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GapsArgs {
    pub target: String,
    pub min_gap_us: Option<f64>,
    pub chunks: Option<usize>,
    pub below: Option<f64>,
    pub limit: Option<usize>,
}
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryArgs {
    pub target: String,
    pub limit: Option<usize>,
}
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowArgs {
    pub target: String,
    pub start_ns: i64,
    pub end_ns: i64,
    pub relative: Option<bool>,
    pub kind: Option<String>,
    pub name: Option<String>,
    pub track_id: Option<u64>,
    pub limit: Option<usize>,
    pub cursor: Option<String>,
}
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasurementsArgs {
    pub target: Option<String>,
    pub name_prefix: Option<String>,
    pub include_warmups: Option<bool>,
    pub limit: Option<usize>,
    pub cursor: Option<String>,
}

/// One id, or a list of them.
#[derive(serde::Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(one) => vec![one],
            OneOrMany::Many(many) => many,
        }
    }
}
