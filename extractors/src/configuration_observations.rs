//! Configuration observations: the record of what the machine and the
//! project looked like when a capture ran (host, git, interpreter and
//! packages, environment). The engine writes one with every capture
//! (`engine/src/services/workload_capture/observations.rs`); this module
//! holds its types, so the same record also imports on its own
//! (`flameox import observations.json`, kind `configuration_observations`):
//! the extractor checks the document reads as this schema and writes no
//! rows — `analyze_execution` reads the stored bytes.

use std::collections::BTreeMap;
use std::io::BufRead;

use serde::{Deserialize, Serialize};

use crate::api::{BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary};
use crate::format_kind::FormatKind;
use crate::json_doc::read_document;

/// Bumped when the fields change meaning.
pub const OBSERVATIONS_SCHEMA: &str = "flameox.configuration_observations/1";
/// The artifact kind the observations are stored as (the format's name).
pub const OBSERVATIONS_KIND: &str = "configuration_observations";
pub const OBSERVATIONS_EXTRACTOR_NAME: &str = "configuration_observations";
pub const OBSERVATIONS_EXTRACTOR_VERSION: &str = "1";

pub static FORMAT: crate::format_descriptor::Format = crate::format_descriptor::Format {
    kind: FormatKind::ConfigurationObservations,
    aliases: &["observations"],
    description: "flameox configuration observations JSON (host, git, interpreter, environment; written with every capture) → read by analyze_execution",
    sniff: Some(|head| {
        let scan = head.object()?;
        (scan.has("schema") && head.contains(b"\"flameox.configuration_observations/"))
            .then(|| {
                crate::sniff::Sniffed::certain(
                    Some("flameox"),
                    "JSON object whose `schema` is flameox.configuration_observations",
                )
            })
            .flatten()
    }),
    reading: crate::format_descriptor::Reading::Stream(
        crate::format_descriptor::Extractor {
            name: OBSERVATIONS_EXTRACTOR_NAME,
            version: OBSERVATIONS_EXTRACTOR_VERSION,
        },
        extract_configuration_observations,
    ),
    measurements: false,
};

/// The machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostObservations {
    pub os: String,
    pub arch: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    pub logical_cpus: usize,
    /// `scaling_governor` of cpu0 (`performance`, `powersave`, …); absent
    /// where the kernel exposes none (many VMs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_governor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_total_bytes: Option<u64>,
}

/// The project's checkout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitState {
    pub commit: String,
    /// Tracked files differ from the commit.
    pub dirty: bool,
}

/// The workload's interpreter (Python only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterpreterObservations {
    pub implementation: String,
    pub version: String,
    pub virtualenv: bool,
    /// Installed distributions, name (lower case) → version.
    pub packages: BTreeMap<String, String>,
    pub packages_total: usize,
}

/// The child's environment as policy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentObservations {
    /// The workload's declared variables and their values.
    pub declared: BTreeMap<String, String>,
    /// Inherited variables it got (names only).
    pub inherited: Vec<String>,
    /// Values of the inherited locale and time-zone variables (`LANG`,
    /// `TZ`, `LC_*`): they change what a program does with text and time;
    /// the others (`PATH`, `HOME`, `USER`, …) stay names.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub locale: BTreeMap<String, String>,
}

/// Everything observed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigurationObservations {
    pub schema: String,
    pub observed_at: String,
    pub host: HostObservations,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpreter: Option<InterpreterObservations>,
    pub environment: EnvironmentObservations,
    /// Probes that could not run, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_observed: Vec<String>,
}

/// Checks the document is configuration observations of a schema this
/// build reads; writes no rows (the summary keeps the headline fields).
pub fn extract_configuration_observations<R: BufRead>(
    reader: R,
    options: &ExtractOptions,
    _sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let (doc, input_bytes): (ConfigurationObservations, u64) =
        read_document(reader, observer, "configuration observations")?;
    if doc.schema != OBSERVATIONS_SCHEMA {
        return Err(ExtractError::Parse {
            message: format!(
                "configuration observations of schema `{}`; this build reads `{OBSERVATIONS_SCHEMA}`",
                doc.schema
            ),
            offset: Some(0),
        });
    }
    let mut metadata = BTreeMap::new();
    metadata.insert("observed_at".to_owned(), serde_json::json!(doc.observed_at));
    metadata.insert("host".to_owned(), serde_json::json!(doc.host));
    if let Some(git) = &doc.git {
        metadata.insert("git".to_owned(), serde_json::json!(git));
    }
    if let Some(i) = &doc.interpreter {
        metadata.insert(
            "interpreter".to_owned(),
            serde_json::json!(format!("{} {}", i.implementation, i.version)),
        );
    }
    let rows = crate::schema::EvidenceTable::ALL
        .iter()
        .map(|t| (t.name().to_owned(), 0))
        .collect();
    Ok(ExtractionSummary {
        extractor: OBSERVATIONS_EXTRACTOR_NAME.to_owned(),
        extractor_version: OBSERVATIONS_EXTRACTOR_VERSION.to_owned(),
        format: OBSERVATIONS_KIND.to_owned(),
        producer: options
            .producer
            .clone()
            .unwrap_or_else(|| "flameox".to_owned()),
        rows,
        time_span_ns: None,
        tracks: 0,
        coverage: BTreeMap::new(),
        limitations: Vec::new(),
        metadata,
        input_bytes,
        input_events: 1,
        max_event_dur_ns: None,
    })
}
