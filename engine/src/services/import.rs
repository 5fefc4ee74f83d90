//! Import: store the original bytes, detect the format by content, extract
//! into staging, publish atomically, and record a new import run.

use std::path::{Path, PathBuf};

use flameox_extractors::chrome::{
    CHROME_EXTRACTOR_NAME, CHROME_EXTRACTOR_VERSION, extract_chrome_json,
};
use flameox_extractors::cpuprofile::{
    CPUPROFILE_EXTRACTOR_NAME, CPUPROFILE_EXTRACTOR_VERSION, extract_cpuprofile,
};
use flameox_extractors::detect::{FormatKind, detect};
use flameox_extractors::folded::{
    FOLDED_EXTRACTOR_NAME, FOLDED_EXTRACTOR_VERSION, extract_folded_stacks,
};
use flameox_extractors::gecko::{
    GECKO_EXTRACTOR_NAME, GECKO_EXTRACTOR_VERSION, extract_gecko_profile,
};
use flameox_extractors::input::{InputLimits, open_input, read_head};
use flameox_extractors::nsight::{
    NSIGHT_EXTRACTOR_NAME, NSIGHT_EXTRACTOR_VERSION, extract_nsight_sqlite,
};
use flameox_extractors::perfetto::{
    PERFETTO_EXTRACTOR_NAME, PERFETTO_EXTRACTOR_VERSION, extract_perfetto,
};
use flameox_extractors::pprof::{PPROF_EXTRACTOR_NAME, PPROF_EXTRACTOR_VERSION, extract_pprof};
use flameox_extractors::speedscope::{
    SPEEDSCOPE_EXTRACTOR_NAME, SPEEDSCOPE_EXTRACTOR_VERSION, extract_speedscope,
};
use flameox_extractors::{
    ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary, Limitation,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::catalog::OperationKey;
use crate::error::{ErrorCode, FlameoxError, Result};
use crate::publish::publish_extraction;
use crate::runs::{Collector, RunArtifact, RunManifest, save_run};
use crate::store::{self, check_regular_file};
use crate::workspace::Workspace;

/// What `flameox import` / `import_artifact` asks.
#[derive(Debug, Clone, Default)]
pub struct ImportRequest {
    pub path: PathBuf,
    /// Forced format kind (see [`FormatKind::from_name`]); `auto` = detect.
    pub kind: Option<String>,
    /// Forced producer (`torch.profiler`, …); `auto` = detect.
    pub producer: Option<String>,
}

/// Progress and cancellation for long imports.
pub trait ImportProgress: Sync {
    /// Entering a named phase (`validating_artifact`, `extracting`, `publishing`, `completed`).
    fn phase(&self, _phase: &str) {}
    /// Input bytes processed of the total.
    fn bytes(&self, _done: u64, _total: u64) {}
    fn cancelled(&self) -> bool {
        false
    }
}

/// Reports nothing, never cancels.
pub struct Quiet;
impl ImportProgress for Quiet {}

/// The result of an import.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportResult {
    pub run_id: String,
    pub artifact_id: String,
    pub kind: String,
    pub producer: String,
    pub bytes: u64,
    pub generation_id: String,
    pub commit_id: String,
    /// True when an earlier run already extracted the same bytes the same way.
    pub reused_generation: bool,
    pub rows: std::collections::BTreeMap<String, u64>,
    pub time_span_ns: Option<(i64, i64)>,
    pub tracks: u64,
    pub coverage: std::collections::BTreeMap<String, bool>,
    pub limitations: Vec<Limitation>,
}

/// Reports progress in stored (compressed) bytes, read from the input
/// stream's own counter, so a gzipped artifact's bar ends at its size.
struct ObserverAdapter<'a> {
    progress: &'a dyn ImportProgress,
    total: u64,
    /// `None` for path-based extractors (SQLite), which report file bytes.
    stored_bytes_read: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

impl ExtractObserver for ObserverAdapter<'_> {
    fn bytes_read(&self, read: u64) {
        let done = match &self.stored_bytes_read {
            Some(counter) => counter.load(std::sync::atomic::Ordering::Relaxed),
            None => read,
        };
        self.progress.bytes(done.min(self.total), self.total);
    }
    fn cancelled(&self) -> bool {
        self.progress.cancelled()
    }
}

/// Maps an extractor failure to the contract's codes.
fn extract_error(err: ExtractError, kind: &str) -> FlameoxError {
    match err {
        ExtractError::Parse { message, offset } => FlameoxError::new(
            ErrorCode::ArtifactParseFailed,
            format!("the input could not be read as {kind}: {message}"),
        )
        .detail("kind", kind)
        .detail("offset", offset)
        .remedy("check that the file is complete, or force another kind with --kind"),
        ExtractError::TooLarge { message } => {
            FlameoxError::new(ErrorCode::ArtifactTooLarge, message).remedy(
                "raise import.max_decompression_ratio in config.toml if the input is genuine",
            )
        }
        ExtractError::Cancelled => {
            FlameoxError::new(ErrorCode::OperationCancelled, "the import was cancelled")
        }
        ExtractError::Io(e) => FlameoxError::internal(format!("reading the input failed: {e}")),
        ExtractError::Sink(e) => FlameoxError::internal(format!("writing evidence failed: {e}")),
    }
}

fn input_limits(ws: &Workspace) -> InputLimits {
    InputLimits {
        max_ratio: ws.config.import.max_decompression_ratio,
        min_decompressed_cap_bytes: ws.config.import.min_decompressed_cap_mib * 1024 * 1024,
    }
}

/// Decides the format: forced by `kind`, else detected from content.
fn decide_kind(ws: &Workspace, request: &ImportRequest) -> Result<(FormatKind, Option<String>)> {
    let limits = input_limits(ws);
    let head =
        read_head(&request.path, &limits, 64 * 1024).map_err(|e| extract_error(e, "input"))?;
    let name = request.path.file_name().and_then(|n| n.to_str());
    let detection = detect(&head, name);
    let kind = match request.kind.as_deref().filter(|k| *k != AUTO) {
        Some(forced) => FormatKind::from_name(forced).ok_or_else(|| {
            let mut valid = vec![AUTO, "execution_trace", "folded"];
            valid.extend(SUPPORTED_KINDS);
            FlameoxError::invalid_argument("kind", format!("unknown kind {forced}"))
                .detail(
                    "closest",
                    crate::error::closest(forced, valid.iter().copied(), 1),
                )
                .detail("valid", valid)
        })?,
        None => detection.kind,
    };
    if kind == FormatKind::Unknown || head.is_empty() {
        let shown: String = String::from_utf8_lossy(&head[..head.len().min(32)])
            .escape_debug()
            .to_string();
        return Err(FlameoxError::new(
            ErrorCode::ArtifactParseFailed,
            "no extractor accepts this input",
        )
        .detail("kinds_tried", SUPPORTED_KINDS.to_vec())
        .detail("first_bytes", shown)
        .remedy("pass --kind when the format is known"));
    }
    Ok((kind, detection.producer_hint))
}

/// Refuses formats this build recognizes but cannot extract yet.
/// `(name, version)` of the extractor that reads `kind`.
fn extractor_of(kind: FormatKind) -> (&'static str, &'static str) {
    match kind {
        FormatKind::FoldedStacks => (FOLDED_EXTRACTOR_NAME, FOLDED_EXTRACTOR_VERSION),
        FormatKind::PerfettoProtobuf => (PERFETTO_EXTRACTOR_NAME, PERFETTO_EXTRACTOR_VERSION),
        FormatKind::Pprof => (PPROF_EXTRACTOR_NAME, PPROF_EXTRACTOR_VERSION),
        FormatKind::SpeedscopeJson => (SPEEDSCOPE_EXTRACTOR_NAME, SPEEDSCOPE_EXTRACTOR_VERSION),
        FormatKind::ChromeCpuProfile => (CPUPROFILE_EXTRACTOR_NAME, CPUPROFILE_EXTRACTOR_VERSION),
        FormatKind::GeckoProfile => (GECKO_EXTRACTOR_NAME, GECKO_EXTRACTOR_VERSION),
        FormatKind::NsightSqlite => (NSIGHT_EXTRACTOR_NAME, NSIGHT_EXTRACTOR_VERSION),
        _ => (CHROME_EXTRACTOR_NAME, CHROME_EXTRACTOR_VERSION),
    }
}

/// Runs the extractor for `kind` (one that [`require_extractor`] accepted).
fn run_extractor(
    kind: FormatKind,
    input: flameox_extractors::InputStream,
    options: &ExtractOptions,
    sink: &mut dyn flameox_extractors::BatchSink,
    observer: &dyn flameox_extractors::ExtractObserver,
) -> std::result::Result<ExtractionSummary, flameox_extractors::ExtractError> {
    match kind {
        FormatKind::FoldedStacks => extract_folded_stacks(input, options, sink, observer),
        FormatKind::PerfettoProtobuf => extract_perfetto(input, options, sink, observer),
        FormatKind::Pprof => extract_pprof(input, options, sink, observer),
        FormatKind::SpeedscopeJson => extract_speedscope(input, options, sink, observer),
        FormatKind::ChromeCpuProfile => extract_cpuprofile(input, options, sink, observer),
        FormatKind::GeckoProfile => extract_gecko_profile(input, options, sink, observer),
        _ => extract_chrome_json(input, options, sink, observer),
    }
}

/// `kind` / `producer` value that means "detect it".
const AUTO: &str = "auto";

/// Formats this build extracts.
const SUPPORTED_KINDS: [&str; 8] = [
    "chrome_json",
    "folded_stacks",
    "perfetto_protobuf",
    "pprof",
    "speedscope_json",
    "chrome_cpuprofile",
    "gecko_profile",
    "nsight_systems_sqlite",
];

fn require_extractor(kind: FormatKind) -> Result<()> {
    match kind {
        FormatKind::ChromeJson
        | FormatKind::FoldedStacks
        | FormatKind::PerfettoProtobuf
        | FormatKind::Pprof
        | FormatKind::SpeedscopeJson
        | FormatKind::ChromeCpuProfile
        | FormatKind::GeckoProfile
        | FormatKind::NsightSqlite => Ok(()),
        FormatKind::NsightReport => Err(FlameoxError::new(
            ErrorCode::CapabilityUnavailable,
            "an .nsys-rep report is a proprietary container; export it to SQLite first",
        )
        .detail("kind", kind.name())
        .remedy("nsys export --type sqlite --output report.sqlite report.nsys-rep")
        .remedy("then: flameox import report.sqlite")),
        other => Err(FlameoxError::new(
            ErrorCode::CapabilityUnavailable,
            format!(
                "{} inputs are recognized but this build has no extractor for them yet",
                other.name()
            ),
        )
        .detail("kind", other.name())
        .detail("supported_kinds", SUPPORTED_KINDS.to_vec())),
    }
}

/// Imports one file as a new import run.
pub fn import_artifact(
    ws: &Workspace,
    request: &ImportRequest,
    progress: &dyn ImportProgress,
) -> Result<ImportResult> {
    progress.phase("validating_artifact");
    check_regular_file(&request.path)?;
    let (kind, producer_hint) = decide_kind(ws, request)?;
    require_extractor(kind)?;
    let record = store::store_file(ws, &request.path, kind.name())?;
    let payload = store::payload_path(ws, &record);
    let forced_producer = request.producer.clone().filter(|p| p != AUTO);
    let producer = forced_producer.clone().or(producer_hint);
    let (extractor, extractor_version) = extractor_of(kind);

    let mut run = RunManifest::new_import();
    run.collector = Some(Collector {
        name: extractor.into(),
        version: extractor_version.into(),
    });
    run.artifacts.push(RunArtifact {
        artifact_id: record.artifact_id.clone(),
        kind: kind.name().into(),
        producer: producer.clone(),
        role: "input".into(),
        original_name: record.original_name.clone(),
        bytes: record.bytes,
    });
    save_run(ws, &mut run)?;

    progress.phase("extracting");
    let operation = OperationKey {
        extractor: extractor.into(),
        extractor_version: extractor_version.into(),
        artifact_id: record.artifact_id.clone(),
        options: json!({ "producer": forced_producer }),
    };
    let mut options = ExtractOptions::new(run.run_id.clone(), record.artifact_id.clone());
    options.producer = producer.clone();
    let limits = input_limits(ws);
    let outcome = publish_extraction(ws, operation, &run.run_id, |sink, spill_dir| {
        let mut options = options.clone();
        options.spill_dir = Some(spill_dir.to_path_buf());
        let summary = if kind == FormatKind::NsightSqlite {
            // SQLite reads the stored payload by path (read-only, immutable).
            let observer = ObserverAdapter {
                progress,
                total: record.bytes,
                stored_bytes_read: None,
            };
            extract_nsight_sqlite(&payload, &options, sink, &observer)
        } else {
            let input = open_input(&payload, &limits).map_err(|e| extract_error(e, kind.name()))?;
            let observer = ObserverAdapter {
                progress,
                total: record.bytes,
                stored_bytes_read: Some(input.progress_counter()),
            };
            run_extractor(kind, input, &options, sink, &observer)
        }
        .map_err(|e| extract_error(e, kind.name()))?;
        progress.phase("publishing");
        Ok(summary)
    });
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(err) => {
            let err = err.with_run(run.run_id.clone());
            run.status.extraction = if err.code == ErrorCode::OperationCancelled {
                "cancelled"
            } else {
                "failed"
            }
            .into();
            run.status.validation = "failed".into();
            run.error = Some(err.clone());
            save_run(ws, &mut run)?;
            return Err(err);
        }
    };
    let summary: &ExtractionSummary = &outcome.generation.summary;
    run.status.extraction = "completed".into();
    run.status.validation = "passed".into();
    run.generation_ids = vec![outcome.generation.generation_id.clone()];
    run.commit_id = Some(outcome.commit_id.clone());
    run.reused_generation = outcome.reused;
    run.rows = summary.rows.clone();
    run.time_span_ns = summary.time_span_ns;
    run.limitations = summary
        .limitations
        .iter()
        .map(|l| format!("{}: {}", l.code, l.message))
        .collect();
    run.limitation_details = summary.limitations.clone();
    run.metadata = summary.metadata.clone();
    if let Some(artifact) = run.artifacts.first_mut() {
        artifact.producer = Some(summary.producer.clone());
    }
    save_run(ws, &mut run)?;
    progress.phase("completed");
    Ok(ImportResult {
        run_id: run.run_id,
        artifact_id: record.artifact_id,
        kind: kind.name().into(),
        producer: summary.producer.clone(),
        bytes: record.bytes,
        generation_id: outcome.generation.generation_id.clone(),
        commit_id: outcome.commit_id,
        reused_generation: outcome.reused,
        rows: summary.rows.clone(),
        time_span_ns: summary.time_span_ns,
        tracks: summary.tracks,
        coverage: summary.coverage.clone(),
        limitations: summary.limitations.clone(),
    })
}

/// True when `path` resolves (after symlinks) inside `root`.
pub fn is_inside(path: &Path, root: &Path) -> bool {
    match (path.canonicalize(), root.canonicalize()) {
        (Ok(p), Ok(r)) => p.starts_with(r),
        _ => false,
    }
}
