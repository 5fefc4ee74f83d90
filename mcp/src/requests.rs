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
