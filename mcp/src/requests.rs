//! The typed arguments of each tool, decoded after `arguments::check` has
//! validated them against the tool's strict schema.

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactArgs {
    pub target: String,
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
