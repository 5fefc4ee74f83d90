//! Import: store the original bytes, detect the format by content, extract
//! into staging, publish atomically, and record a new import run.
//!
//! One call may import several artifacts into ONE run (several paths, or a
//! folder of trace files such as one Kineto file per rank; see
//! [`crate::services::import_plan`]). Then it is all or nothing: every artifact is
//! extracted into staging first (a few at once, [`super::input_workers`],
//! inside the import's one staging folder), the run is recorded only once all of them
//! succeeded, and their generations are published in one commit. A single
//! file keeps the original behaviour: its run is recorded before extraction
//! and marked failed (with the error) if extraction fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use flameox_extractors::Limitation;
#[cfg(doc)]
use flameox_extractors::detect::FormatKind;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::input_extraction::{ImportCall, InputOutcome, store_input};
use crate::error::{ErrorCode, FlameoxError, Result};
use crate::publish::{PublishOutcome, StagedGeneration, commit_staged};
use crate::runs::{Collector, RunArtifact, RunManifest, save_run};
use crate::services::NextCall;
use crate::services::import_deadline::{DeadlineProgress, ImportDeadline};
use crate::services::import_plan::{
    AUTO, InputShape, PlannedInput, check_run_labels, extractor_of, for_input, plan_inputs,
};
use crate::services::ingest::input_workers::{ByteTally, each_input, worker_count};
use crate::services::ingest::remote_fetch::fetch_remote_inputs;
use crate::services::inventory::{ARTIFACTS_LISTED, more_artifacts};
use crate::staging::{StagingArea, clean_abandoned};
use crate::store::ArtifactRecord;
use crate::workspace::Workspace;

/// What `flameox import` / `import_artifact` asks.
#[derive(Debug, Clone, Default)]
pub struct ImportRequest {
    /// A trace file, a folder of trace files, an nsys export folder, or
    /// the URL of an object or a prefix (`s3://`, `gs://`, `az://`,
    /// `https://`; [`crate::object_location`]).
    pub path: PathBuf,
    /// Further files or folders imported into the same run.
    pub more_paths: Vec<PathBuf>,
    /// Forced format kind of the files (see [`FormatKind::from_name`]);
    /// `auto` = detect. A folder recognized as an nsys export is always one.
    pub kind: Option<String>,
    /// Forced producer (`torch.profiler`, …); `auto` = detect.
    pub producer: Option<String>,
    /// The variant this run measures (`--variant base`): recorded in the
    /// run manifest and on every `measurements` row.
    pub variant: Option<String>,
    /// Workload parameters (`--param n=1024`): recorded in the run manifest
    /// and merged into every `measurements` row's `parameters_json`.
    pub parameters: BTreeMap<String, String>,
    /// Lowers `import.timeout_seconds` for this import (`--timeout`); past
    /// the deadline the import stops as if cancelled ([`crate::services::import_deadline`]).
    pub timeout: Option<std::time::Duration>,
}

pub use crate::services::import_progress::{ImportProgress, Quiet};
pub use crate::services::import_totals::ImportedArtifact;

/// The result of an import. With one artifact the top-level fields are
/// that artifact's; with several they describe the run: the first
/// artifact's id and generation, the common kind/producer (or `mixed`),
/// summed bytes/rows/tracks, the union of time spans, coverage flags true
/// in every artifact, limitations merged by code. `artifacts` lists each;
/// with one artifact its entry carries only what the top level does not
/// (id, original name, metadata), so nothing is said twice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportResult {
    pub run_id: String,
    pub artifact_id: String,
    pub kind: String,
    pub producer: String,
    pub bytes: u64,
    pub generation_id: String,
    pub commit_id: String,
    /// True when earlier runs already extracted the same bytes the same way.
    pub reused_generation: bool,
    pub rows: BTreeMap<String, u64>,
    pub time_span_ns: Option<(i64, i64)>,
    pub tracks: u64,
    pub coverage: BTreeMap<String, bool>,
    pub limitations: Vec<Limitation>,
    /// Each artifact (the first [`ARTIFACTS_LISTED`] when there are more;
    /// `more_artifacts` pages them all); with several, each entry is its
    /// name, kind, producer, bytes, events, frames, samples and
    /// measurements, limitations and `distributedInfo` (`get_artifact` has
    /// the rest).
    #[serde(
        serialize_with = "beyond_the_top_level",
        deserialize_with = "whole_entries",
        default
    )]
    pub artifacts: Vec<ImportedArtifact>,
    #[serde(default)]
    pub artifacts_total: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_artifacts: Option<NextCall>,
    /// The URLs the artifacts were fetched from (no secrets), when any was
    /// remote; also in the run's metadata as `source_urls`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
}

/// `artifacts` as answers show it: whole entries for several artifacts (the
/// first [`ARTIFACTS_LISTED`]); for one, only the fields the top level does
/// not repeat.
fn beyond_the_top_level<S: serde::Serializer>(
    artifacts: &[ImportedArtifact],
    out: S,
) -> std::result::Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut seq = out.serialize_seq(Some(artifacts.len().min(ARTIFACTS_LISTED)))?;
    match artifacts {
        [one] => seq.serialize_element(&OnlyArtifact {
            artifact_id: &one.artifact_id,
            original_name: &one.original_name,
            metadata: devices_by_identity(&one.metadata),
        })?,
        many => {
            // Each entry's metadata is its rank only: a job of one trace
            // per rank would otherwise repeat each file's device
            // properties (`get_artifact` has one artifact's whole metadata).
            for a in many.iter().take(ARTIFACTS_LISTED) {
                let mut rows = a.rows.clone();
                rows.retain(|table, n| *n > 0 && LISTED_ROWS.contains(&table.as_str()));
                let mut metadata = a.metadata.clone();
                metadata.retain(|key, _| key == "distributedInfo");
                seq.serialize_element(&ListedArtifact {
                    artifact_id: &a.artifact_id,
                    original_name: &a.original_name,
                    kind: &a.kind,
                    producer: &a.producer,
                    bytes: a.bytes,
                    rows,
                    limitations: &a.limitations,
                    metadata,
                })?;
            }
        }
    }
    seq.end()
}

/// Reads `artifacts` back (the terminal renders from the JSON): the whole
/// entries of several artifacts; a lone artifact's partial entry reads as
/// none, its fields being the top level's.
fn whole_entries<'de, D: serde::Deserializer<'de>>(
    input: D,
) -> std::result::Result<Vec<ImportedArtifact>, D::Error> {
    let entries: Vec<Value> = Deserialize::deserialize(input)?;
    Ok(entries
        .into_iter()
        .filter_map(|entry| serde_json::from_value(entry).ok())
        .collect())
}

/// Row counts each listed artifact of several shows (the top level sums
/// every table).
const LISTED_ROWS: [&str; 4] = ["trace_events", "frames", "samples", "measurements"];

/// One of several artifacts of an import, as answers list it.
#[derive(Serialize)]
struct ListedArtifact<'a> {
    artifact_id: &'a str,
    original_name: &'a str,
    kind: &'a str,
    producer: &'a str,
    bytes: u64,
    rows: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "<[Limitation]>::is_empty")]
    limitations: &'a [Limitation],
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    metadata: BTreeMap<String, Value>,
}

/// The one artifact of an import, beyond the top level's fields.
#[derive(Serialize)]
struct OnlyArtifact<'a> {
    artifact_id: &'a str,
    original_name: &'a str,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    metadata: BTreeMap<String, Value>,
}

/// Fields of a device (Kineto `deviceProperties[]`, Nsight and rocprof
/// `gpus[]`) an import answer shows: which device it is.
const DEVICE_IDENTITY: [&str; 5] = ["id", "cuda_device", "name", "numSms", "sm_count"];

/// `metadata` with each device cut to its identity: the SM limits
/// analyses read (registers, shared memory, warps per SM, …) are in
/// `get_artifact`'s whole metadata, not in every import answer.
fn devices_by_identity(metadata: &BTreeMap<String, Value>) -> BTreeMap<String, Value> {
    let mut out = metadata.clone();
    for key in ["deviceProperties", "gpus"] {
        if let Some(Value::Array(devices)) = out.get_mut(key) {
            for device in devices.iter_mut() {
                if let Value::Object(fields) = device {
                    fields.retain(|k, _| DEVICE_IDENTITY.contains(&k.as_str()));
                }
            }
        }
    }
    out
}

/// Records a failed run (when it was recorded at all) and returns the error.
fn fail(ws: &Workspace, run: &mut RunManifest, recorded: bool, err: FlameoxError) -> FlameoxError {
    if !recorded {
        return err;
    }
    let err = err.with_run(run.run_id.clone());
    run.status.extraction = if err.code == ErrorCode::OperationCancelled {
        "cancelled"
    } else {
        "failed"
    }
    .into();
    run.status.validation = "failed".into();
    run.error = Some(err.clone());
    match save_run(ws, run) {
        Ok(()) => err,
        Err(save_err) => save_err,
    }
}

/// Imports one file, a folder, or several paths as a new import run,
/// within the import's deadline.
pub fn import_artifact(
    ws: &Workspace,
    request: &ImportRequest,
    progress: &dyn ImportProgress,
) -> Result<ImportResult> {
    let deadline = ImportDeadline::of(ws, request.timeout);
    let guarded = DeadlineProgress::new(progress, deadline);
    import_within(ws, request, &guarded).map_err(|e| guarded.explain(e))
}

fn import_within(
    ws: &Workspace,
    request: &ImportRequest,
    progress: &DeadlineProgress<'_>,
) -> Result<ImportResult> {
    progress.phase("validating_artifact");
    super::phase_profile::start();
    check_run_labels(request.variant.as_deref(), &request.parameters)?;
    let mut paths = vec![request.path.clone()];
    paths.extend(request.more_paths.iter().cloned());
    // URLs become local mirrors, held until the artifacts are stored.
    let fetched = fetch_remote_inputs(ws, &paths, progress)?;
    let inputs = plan_inputs(ws, &fetched.paths, request.kind.as_deref())?;
    let several = inputs.len() > 1;
    let named = |e: FlameoxError, input: &PlannedInput| {
        if several {
            for_input(e, &input.name)
        } else {
            e
        }
    };
    // One input is stored before its run is recorded (so a failed
    // extraction is recorded with it); several are stored by the workers
    // as they reach them: threads and open files stay bounded.
    let mut first = None;
    if !several && let Some(input) = inputs.first() {
        first = Some(store_input(ws, input)?);
    }
    let mut run = RunManifest::new_import();
    // Held until the run's status is final: listings tell a killed import.
    let _writer = crate::runs::hold_run_writer(ws, &run.run_id)?;
    run.collector = collector_of(&inputs);
    run.variant = request.variant.clone();
    run.parameters = request.parameters.clone();
    // Named from the start, so a failed import's run says where it read.
    note_sources(&mut run, &fetched.sources);
    if let (Some(storing), Some(input)) = (&first, inputs.first()) {
        run.artifacts = vec![run_artifact(input, storing.record())];
    }
    // One file: recorded now, so a failure (or a kill) stays visible as a
    // failed run. An id the copier computes says `sha256:pending` until
    // the copy ends and is filled in then.
    let mut recorded = !several;
    if recorded {
        save_run(ws, &mut run)?;
    }

    progress.phase("extracting");
    let workers = worker_count(ws.config.import.parallel_inputs, inputs.len());
    let stop = AtomicBool::new(false);
    let call = ImportCall {
        ws,
        run_id: run.run_id.clone(),
        forced_producer: request.producer.clone().filter(|p| p != AUTO),
        variant: request.variant.clone(),
        parameters: request.parameters.clone(),
        progress,
        events_in_memory: usize::try_from(ws.config.import.events_in_memory / workers as u64)
            .unwrap_or(usize::MAX)
            .max(1),
        stop: &stop,
        staging: match several {
            true => {
                // Dead writers' folders go first, as before any staging.
                let _ = clean_abandoned(ws);
                let name = format!("import-{}", run.run_id);
                Some(Arc::new(StagingArea::create(ws, &name)?))
            }
            false => None,
        },
    };
    let tally = ByteTally::new(progress, inputs.iter().map(planned_bytes).sum());
    let outcomes = match first {
        Some(storing) => vec![Some(call.store_and_stage(&inputs[0], Ok(storing), &tally))],
        None => each_input(
            inputs.len(),
            workers,
            &stop,
            |index| {
                let input = &inputs[index];
                call.store_and_stage(input, store_input(ws, input), &tally)
            },
            |outcome| outcome.extracted.is_err() || outcome.stored.is_err(),
        ),
    };
    let mut staged = Vec::with_capacity(inputs.len());
    let mut records = Vec::with_capacity(inputs.len());
    let mut failures = Vec::new();
    for (input, outcome) in inputs.iter().zip(outcomes) {
        // Not started: another input failed first.
        let Some(InputOutcome { extracted, stored }) = outcome else {
            continue;
        };
        if let (Ok(record), Some(artifact)) = (&stored, run.artifacts.first_mut())
            && !several
        {
            artifact.artifact_id = record.artifact_id.clone();
        }
        // The copy must be whole and verified before anything names it; a
        // copy failure explains an extraction that saw the input end early.
        match (extracted, stored) {
            (Ok(s), Ok(record)) => {
                staged.push(s);
                records.push(record);
            }
            (_, Err(err)) | (Err(err), Ok(_)) => failures.push(named(err, input)),
        }
    }
    // The first input that failed on its own (not stopped by another's
    // failure) explains the import.
    let first_failure = match failures
        .iter()
        .position(|e| e.code != ErrorCode::OperationCancelled)
    {
        Some(at) => Some(failures.swap_remove(at)),
        None => failures.into_iter().next(),
    };
    if let Some(err) = first_failure {
        return Err(fail(ws, &mut run, recorded, progress.explain(err)));
    }
    if several {
        run.artifacts = inputs
            .iter()
            .zip(&records)
            .map(|(input, record)| run_artifact(input, record))
            .collect();
    }
    // A cancel (or the deadline) that came after the last poll of the
    // extractors still stops the import before anything is published.
    if progress.cancelled() {
        let err = progress.explain(FlameoxError::new(
            ErrorCode::OperationCancelled,
            "the import was cancelled",
        ));
        return Err(fail(ws, &mut run, recorded, err));
    }
    progress.phase("publishing");
    if !recorded {
        // Every artifact extracted: the run exists from here on.
        save_run(ws, &mut run)?;
        recorded = true;
    }
    let outcomes = match commit_staged(ws, staged) {
        Ok(outcomes) => outcomes,
        Err(err) => return Err(fail(ws, &mut run, recorded, err)),
    };
    let mut result = complete_run(&mut run, &inputs, &records, &outcomes);
    note_sources(&mut run, &fetched.sources);
    result.sources = fetched.sources.clone();
    save_run(ws, &mut run)?;
    progress.phase("completed");
    super::phase_profile::write();
    Ok(result)
}

/// Records the URLs an import read (none for local files) in the run's
/// metadata as `source_urls`.
fn note_sources(run: &mut RunManifest, sources: &[String]) {
    if !sources.is_empty() {
        run.metadata.insert("source_urls".into(), json!(sources));
    }
}

/// One input as the run lists it.
fn run_artifact(input: &PlannedInput, record: &ArtifactRecord) -> RunArtifact {
    RunArtifact {
        artifact_id: record.artifact_id.clone(),
        kind: input.kind.name().into(),
        producer: None,
        role: "input".into(),
        original_name: record.original_name.clone(),
        bytes: record.bytes,
        metadata: BTreeMap::new(),
    }
}

/// The bytes an input's extraction reads (what its progress counts to).
fn planned_bytes(input: &PlannedInput) -> u64 {
    let size = |path: &Path| std::fs::metadata(path).map_or(0, |m| m.len());
    match &input.shape {
        InputShape::File(path) => size(path),
        InputShape::ExportDir { dir, files } => files.iter().map(|f| size(&dir.join(f))).sum(),
    }
}

/// The extractor that made the run's evidence (`mixed` when several did).
fn collector_of(inputs: &[PlannedInput]) -> Option<Collector> {
    let mut extractors: Vec<(&str, &str)> = inputs
        .iter()
        .filter_map(|i| extractor_of(i.kind).ok())
        .map(|e| (e.name, e.version))
        .collect();
    extractors.dedup();
    match extractors.as_slice() {
        [(name, version)] => Some(Collector {
            name: (*name).into(),
            version: (*version).into(),
        }),
        [] => None,
        _ => Some(Collector {
            name: "mixed".into(),
            version: extractors
                .iter()
                .map(|(n, v)| format!("{n} {v}"))
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// Fills the run from the published outcomes and builds the result.
fn complete_run(
    run: &mut RunManifest,
    inputs: &[PlannedInput],
    records: &[ArtifactRecord],
    outcomes: &[PublishOutcome],
) -> ImportResult {
    let artifacts: Vec<ImportedArtifact> = inputs
        .iter()
        .zip(records)
        .zip(outcomes)
        .map(|((input, record), outcome)| {
            let s = &outcome.generation.summary;
            ImportedArtifact {
                artifact_id: record.artifact_id.clone(),
                original_name: record.original_name.clone(),
                kind: input.kind.name().into(),
                producer: s.producer.clone(),
                bytes: record.bytes,
                generation_id: outcome.generation.generation_id.clone(),
                reused_generation: outcome.reused,
                rows: s.rows.clone(),
                time_span_ns: s.time_span_ns,
                tracks: s.tracks,
                coverage: s.coverage.clone(),
                limitations: s.limitations.clone(),
                metadata: s.metadata.clone(),
            }
        })
        .collect();
    let totals = crate::services::import_totals::RunTotals::of(&artifacts);
    let commit_id = crate::publish::commit_of(outcomes);
    run.status.extraction = "completed".into();
    run.status.validation = "passed".into();
    run.generation_ids = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for a in &artifacts {
        if seen.insert(a.generation_id.as_str()) {
            run.generation_ids.push(a.generation_id.clone());
        }
    }
    run.commit_id = Some(commit_id.clone());
    run.reused_generation = totals.reused_generation;
    run.rows = totals.rows.clone();
    run.time_span_ns = totals.time_span_ns;
    run.limitations = totals
        .limitations
        .iter()
        .map(|l| format!("{}: {}", l.code, l.message))
        .collect();
    run.limitation_details = totals.limitations.clone();
    run.metadata = totals.metadata.clone();
    for (entry, a) in run.artifacts.iter_mut().zip(&artifacts) {
        entry.producer = Some(a.producer.clone());
        entry.metadata = a.metadata.clone();
    }
    let first = artifacts.first();
    ImportResult {
        run_id: run.run_id.clone(),
        artifact_id: first.map(|a| a.artifact_id.clone()).unwrap_or_default(),
        kind: totals.kind,
        producer: totals.producer,
        bytes: totals.bytes,
        generation_id: first.map(|a| a.generation_id.clone()).unwrap_or_default(),
        commit_id,
        reused_generation: totals.reused_generation,
        rows: totals.rows,
        time_span_ns: totals.time_span_ns,
        tracks: totals.tracks,
        coverage: totals.coverage,
        limitations: totals.limitations,
        artifacts_total: artifacts.len(),
        more_artifacts: more_artifacts(&run.run_id, artifacts.len()),
        artifacts,
        sources: Vec::new(),
    }
}

/// One file stored and staged for an existing run (a capture imports its
/// profile and declared outputs into its execution run this way).
pub struct StagedForRun {
    pub artifact: RunArtifact,
    pub staged: StagedGeneration,
}

/// Stores `path`, detects (or forces) its kind and extracts it into
/// staging for `run_id`; publishing is the caller's (one commit per run).
pub fn stage_file_for_run(
    ws: &Workspace,
    run_id: &str,
    path: &Path,
    kind: Option<&str>,
    role: &str,
    progress: &dyn ImportProgress,
) -> Result<StagedForRun> {
    let input = plan_inputs(ws, &[path.to_path_buf()], kind)?
        .into_iter()
        .next()
        .ok_or_else(|| FlameoxError::internal("planning an input produced nothing"))?;
    let storing = store_input(ws, &input)?;
    let stop = AtomicBool::new(false);
    let call = ImportCall {
        ws,
        run_id: run_id.to_owned(),
        forced_producer: None,
        variant: None,
        parameters: BTreeMap::new(),
        progress,
        events_in_memory: usize::try_from(ws.config.import.events_in_memory).unwrap_or(usize::MAX),
        stop: &stop,
        staging: None,
    };
    let tally = ByteTally::new(progress, storing.record().bytes);
    let outcome = call.store_and_stage(&input, Ok(storing), &tally);
    // Placed (and verified) before the caller can publish anything naming it.
    let record = outcome.stored?;
    let staged = outcome.extracted?;
    let summary = staged.summary();
    Ok(StagedForRun {
        artifact: RunArtifact {
            artifact_id: record.artifact_id.clone(),
            kind: input.kind.name().into(),
            producer: Some(summary.producer.clone()),
            role: role.to_owned(),
            original_name: record.original_name.clone(),
            bytes: record.bytes,
            metadata: summary.metadata.clone(),
        },
        staged,
    })
}

/// True when `path` resolves (after symlinks) inside `root`.
pub fn is_inside(path: &Path, root: &Path) -> bool {
    match (path.canonicalize(), root.canonicalize()) {
        (Ok(p), Ok(r)) => p.starts_with(r),
        _ => false,
    }
}
