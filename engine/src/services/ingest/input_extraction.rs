//! One input of an import, stored and extracted: the original bytes copied
//! into the artifact store while the format's extractor reads them (or
//! stored first, for formats read by path), the accelerator reductions
//! computed beside it, and the evidence staged for the import's commit.
//! The import ([`super::import`]) decides which inputs, when, and how many
//! at once.

use flameox_extractors::phase_cpu::{self, Phase};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use flameox_extractors::detect::FormatKind;
use flameox_extractors::formats::{Extractor, Reading, format};
use flameox_extractors::input::{open_input, open_input_from};
use flameox_extractors::stream_gaps::StreamGapsReducer;
use flameox_extractors::stream_gaps_thread::ThreadedReducingSink;
use flameox_extractors::{
    BatchSink, ExtractObserver, ExtractOptions, ExtractionSummary, Limitation, SinkError,
};
use serde_json::json;

use crate::catalog::OperationKey;
use crate::error::{FlameoxError, Result};
use crate::publish::{StagedGeneration, stage_extraction, stage_extraction_with_late_id};
use crate::services::import_plan::{
    InputShape, PlannedInput, extract_error, extractor_of, input_limits, stamps_run_labels,
};
use crate::services::ingest::import_progress::ImportProgress;
use crate::services::ingest::input_workers::{ByteTally, InputBytes};
use crate::staging::StagingArea;
use crate::store::{self, ArtifactRecord};
use crate::store_in_flight::{IdTiming, StoringFile, begin_store_file};
use crate::workspace::Workspace;

/// Reports progress in stored (compressed) bytes, read from the input
/// stream's own counter, so a gzipped artifact's bar ends at its size;
/// inputs extracted at the same time add up in one tally.
struct ObserverAdapter<'a> {
    progress: &'a dyn ImportProgress,
    /// Another input of the import failed.
    stop: &'a AtomicBool,
    bytes_read: &'a InputBytes<'a>,
    /// `None` for path-based extractors (SQLite, export folders), which
    /// report file bytes.
    stored_bytes_read: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

impl ExtractObserver for ObserverAdapter<'_> {
    fn bytes_read(&self, read: u64) {
        let done = match &self.stored_bytes_read {
            Some(counter) => counter.load(std::sync::atomic::Ordering::Relaxed),
            None => read,
        };
        self.bytes_read.read_to(done);
    }
    fn cancelled(&self) -> bool {
        self.progress.cancelled() || self.stop.load(Ordering::SeqCst)
    }
}

/// Version of the reductions computed beside every extractor (part of the
/// operation key, so a new version re-extracts instead of reusing).
/// 2: a caller → callee edge counts each stack once under recursion, and
/// async tracks' slices are a pseudo-thread of their own in
/// `frame_totals` (never a thread's self time).
pub(super) const REDUCTIONS_VERSION: u32 = 2;

/// Where an extractor reads its input from.
enum ExtractSource {
    /// A stored payload (path-based extractors need this).
    Stored(PathBuf),
    /// The blocks the store is copying, `bytes` long in all.
    Copying(Box<dyn std::io::Read + Send>, u64),
}

/// Runs the extractor for `kind` over a stored payload, with the
/// accelerator reductions ([`flameox_extractors::stream_gaps`]) computed
/// from the `trace_events` it emits.
fn run_extractor(
    ws: &Workspace,
    kind: FormatKind,
    payload: ExtractSource,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: ObserverAdapter<'_>,
) -> Result<ExtractionSummary> {
    let reducer = StreamGapsReducer::new(&options.run_id, &options.artifact_id, options.batch_rows);
    let reduction_error =
        |e: SinkError| crate::error::wrapped_io_error("writing accelerator reductions", &*e);
    let mut reducing = ThreadedReducingSink::start(sink, reducer).map_err(reduction_error)?;
    let mut summary = run_format_extractor(ws, kind, payload, options, &mut reducing, observer)?;
    let reduced = reducing.finish().map_err(reduction_error)?;
    summary
        .rows
        .insert("stream_gaps".into(), reduced.stream_gaps);
    summary
        .rows
        .insert("launch_latency".into(), reduced.launch_latency);
    summary.max_event_dur_ns = reduced.max_event_dur_ns;
    if !reduced.complete {
        summary.limitations.push(Limitation {
            code: "REDUCTIONS_SKIPPED".into(),
            message: "trace events were not emitted in time order; accelerator analyses \
                      compute gaps from the events instead of the stream_gaps table"
                .into(),
            count: 1,
        });
    }
    Ok(summary)
}

fn run_format_extractor(
    ws: &Workspace,
    kind: FormatKind,
    payload: ExtractSource,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    mut observer: ObserverAdapter<'_>,
) -> Result<ExtractionSummary> {
    // What an extractor does not charge elsewhere is reading its input.
    let _phase = phase_cpu::enter(Phase::Decode);
    let reading = format(kind).map(|f| f.reading);
    let result = match (reading, payload) {
        (
            Some(Reading::StoredFile(_, read) | Reading::StoredFolder { read, .. }),
            ExtractSource::Stored(path),
        ) => read(&path, options, sink, &observer),
        (Some(Reading::Stream(_, read)), payload) => {
            let input = match payload {
                ExtractSource::Stored(path) => open_input(&path, &input_limits(ws)),
                ExtractSource::Copying(blocks, bytes) => {
                    open_input_from(blocks, bytes, &input_limits(ws))
                }
            }
            .map_err(|e| extract_error(e, kind.name()))?;
            observer.stored_bytes_read = Some(input.progress_counter());
            read(input, options, sink, &observer)
        }
        _ => {
            return Err(FlameoxError::internal(format!(
                "{} is not read from this payload",
                kind.name()
            )));
        }
    };
    result.map_err(|e| extract_error(e, kind.name()))
}

/// Starts storing one planned input: a streamable file is copied while its
/// extractor reads it ([`crate::store_in_flight`]); a SQLite export (read
/// by path) and an export folder (archived) are stored before extraction.
pub(super) fn store_input(ws: &Workspace, input: &PlannedInput) -> Result<StoringFile> {
    // A copy made here (not streamed) is hashed on this thread.
    let _phase = phase_cpu::enter(Phase::Hash);
    match &input.shape {
        InputShape::File(path) if !streamed(input.kind) => Ok(StoringFile::Placed(
            store::store_file(ws, path, input.kind.name())?,
        )),
        InputShape::File(path) => {
            begin_store_file(ws, path, input.kind.name(), id_timing(input.kind))
        }
        InputShape::ExportDir { dir, files } => Ok(StoringFile::Placed(store::store_directory(
            ws,
            dir,
            files,
            input.kind.name(),
        )?)),
    }
}

/// Whether the format is read while its bytes are copied into the store.
fn streamed(kind: FormatKind) -> bool {
    format(kind).is_some_and(|f| matches!(f.reading, Reading::Stream(..)))
}

/// Benchmark extractors hash the artifact id into measurement ids, so they
/// need it before extraction; every other streamed extractor only writes
/// it in `artifact_id` columns, which can be stamped once the copy ends.
fn id_timing(kind: FormatKind) -> IdTiming {
    if format(kind).is_some_and(|f| f.measurements) {
        IdTiming::UpFront
    } else {
        IdTiming::LateAllowed
    }
}

/// What stays the same for every artifact of one import call.
pub(super) struct ImportCall<'a> {
    pub(super) ws: &'a Workspace,
    pub(super) run_id: String,
    pub(super) forced_producer: Option<String>,
    pub(super) variant: Option<String>,
    pub(super) parameters: BTreeMap<String, String>,
    pub(super) progress: &'a dyn ImportProgress,
    /// Trace events each extraction may hold (the import's budget shared
    /// by the inputs extracted at once).
    pub(super) events_in_memory: usize,
    /// Set once any input failed: the others stop as if cancelled.
    pub(super) stop: &'a AtomicBool,
    /// The import's one locked staging folder its generations are staged
    /// in (several inputs), or `None` for a folder of their own each.
    pub(super) staging: Option<Arc<StagingArea>>,
}

/// What became of one input: its extraction and its stored copy.
pub(super) struct InputOutcome {
    pub(super) extracted: Result<StagedGeneration>,
    pub(super) stored: Result<ArtifactRecord>,
}

impl ImportCall<'_> {
    /// Stores (already begun, or failed to begin) and extracts one input.
    pub(super) fn store_and_stage(
        &self,
        input: &PlannedInput,
        storing: Result<StoringFile>,
        tally: &ByteTally<'_>,
    ) -> InputOutcome {
        let mut storing = match storing {
            Ok(storing) => storing,
            Err(err) => {
                return InputOutcome {
                    extracted: Err(err.clone()),
                    stored: Err(err),
                };
            }
        };
        let bytes_read = InputBytes::new(tally, storing.record().bytes);
        let extracted = self.stage(input, &mut storing, &bytes_read);
        let stored = storing.finish(self.ws);
        bytes_read.finished();
        InputOutcome { extracted, stored }
    }

    /// Extracts one stored artifact into staging.
    fn stage(
        &self,
        input: &PlannedInput,
        storing: &mut StoringFile,
        bytes_read: &InputBytes<'_>,
    ) -> Result<StagedGeneration> {
        let bytes = storing.record().bytes;
        let (payload, late_id) = match storing {
            StoringFile::Copying(copying) => (
                copying
                    .take_reader()
                    .map(|blocks| ExtractSource::Copying(Box::new(blocks), bytes)),
                copying.late_id(),
            ),
            StoringFile::Placed(_) => (None, None),
        };
        let record = storing.record();
        let payload =
            payload.unwrap_or_else(|| ExtractSource::Stored(store::payload_path(self.ws, record)));
        let Extractor {
            name: extractor,
            version: extractor_version,
        } = extractor_of(input.kind)?;
        let mut operation_options = json!({
            "producer": self.forced_producer,
            "reductions": REDUCTIONS_VERSION,
        });
        let mut options = ExtractOptions::new(self.run_id.clone(), record.artifact_id.clone());
        // Only rows that carry the labels make them part of the identity
        // (keys added only when set, so unlabelled imports keep their key).
        if stamps_run_labels(input.kind) {
            if let Some(variant) = &self.variant {
                operation_options["variant"] = json!(variant);
            }
            if !self.parameters.is_empty() {
                operation_options["parameters"] = json!(self.parameters);
            }
            options.variant = self.variant.clone();
            options.parameters = self.parameters.clone();
        }
        let operation = OperationKey {
            extractor: extractor.into(),
            extractor_version: extractor_version.into(),
            artifact_id: record.artifact_id.clone(),
            options: operation_options,
        };
        options.producer = self
            .forced_producer
            .clone()
            .or_else(|| input.producer_hint.clone());
        let extract = |sink: &mut dyn BatchSink, spill_dir: &Path| {
            let mut options = options.clone();
            options.spill_dir = Some(spill_dir.to_path_buf());
            options.spill_after_events = self.events_in_memory;
            let observer = ObserverAdapter {
                progress: self.progress,
                stop: self.stop,
                bytes_read,
                stored_bytes_read: None,
            };
            run_extractor(self.ws, input.kind, payload, &options, sink, observer)
        };
        match late_id {
            Some(id) => {
                let within = self.staging.as_ref();
                stage_extraction_with_late_id(self.ws, operation, id, &self.run_id, within, extract)
            }
            None => stage_extraction(
                self.ws,
                operation,
                &self.run_id,
                self.staging.as_ref(),
                extract,
            ),
        }
    }
}
