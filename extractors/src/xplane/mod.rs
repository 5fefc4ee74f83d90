//! XPlane (`*.xplane.pb`, the XSpace protobuf `jax.profiler` and
//! `tf.profiler` write under `plugins/profile/<run>/`): decoded in place
//! ([`crate::xplane_model`]) and written as the same evidence as a Kineto
//! trace ([`events`]) — host threads' slices, runtime launches with their
//! correlation ids, device kernels, copies and memsets on GPU streams, XLA
//! ops and modules, step markers as `ProfilerStep#N` phases — so the
//! summary, hotspots and the GPU analyses answer on JAX and TensorFlow
//! profiles.
//!
//! An XSpace needs its bytes whole (a plane's lines come before the
//! metadata that names them); the decompressed-input bound caps them.

mod events;
mod format;

use std::collections::BTreeMap;
use std::io::BufRead;

use crate::api::{BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary};
use crate::format_kind::FormatKind;
use crate::trace_events::builder::TraceBuilder;
use crate::trace_events::in_memory::emit_held_trace;
use crate::xplane_model::decode::{XSpaceError, decode_space};

pub use format::FORMAT;

pub const XPLANE_EXTRACTOR_NAME: &str = "xplane";
/// Bumped whenever the rows produced for the same input change.
pub const XPLANE_EXTRACTOR_VERSION: &str = "1";

/// Extracts an XSpace into `trace_events`, `tracks` and the reductions.
pub fn extract_xplane<R: BufRead>(
    mut reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let mut bytes = Vec::new();
    reader.read_to_end(&mut bytes).map_err(ExtractError::Io)?;
    observer.bytes_read(bytes.len() as u64);
    let space = decode_space(&bytes).map_err(|e| ExtractError::Parse {
        offset: match &e {
            XSpaceError::NotXSpace { offset, .. } => Some(*offset as u64),
            XSpaceError::Empty => Some(0),
        },
        message: e.to_string(),
    })?;
    if observer.cancelled() {
        return Err(ExtractError::Cancelled);
    }
    let mut trace = TraceBuilder::default();
    trace.store.arena = crate::trace_events::args_arena::ArgsArena::new(options.spill_dir.clone());
    let counts = events::add_space(&mut trace, &space, options.max_args_bytes);
    for note in &space.notes.kept {
        let (offset, message) = (note.offset, note.message.clone());
        trace.log.note("damaged_xspace", || {
            format!("{message} (byte {offset}); what came before was kept")
        });
    }
    if counts.events == 0 {
        let planes: Vec<&str> = space.planes.iter().map(|p| &*p.name).collect();
        return Err(ExtractError::Parse {
            message: format!(
                "the XSpace holds no timed event (planes: {})",
                planes.join(", ")
            ),
            offset: None,
        });
    }
    let (emitted, rows) = emit_held_trace(&mut trace, options, sink, observer)?;
    let mut coverage = BTreeMap::new();
    coverage.insert("host_slices".to_owned(), counts.host > 0);
    coverage.insert("device_activity".to_owned(), counts.device > 0);
    coverage.insert("correlation_ids".to_owned(), counts.correlated > 0);
    coverage.insert("phase_annotations".to_owned(), emitted.has_phases);
    let mut metadata = BTreeMap::new();
    metadata.insert(
        "planes".to_owned(),
        serde_json::json!(space.planes.iter().map(|p| &*p.name).collect::<Vec<_>>()),
    );
    metadata.insert("hostnames".to_owned(), serde_json::json!(space.hostnames));
    metadata.insert(
        "events_by_class".to_owned(),
        serde_json::json!(counts.by_class),
    );
    metadata.insert("steps".to_owned(), serde_json::json!(counts.steps));
    let device = counts.device > 0;
    let producer = options.producer.clone().unwrap_or_else(|| {
        if device {
            "xla.xplane.device".to_owned()
        } else {
            "xla.xplane".to_owned()
        }
    });
    Ok(ExtractionSummary {
        extractor: XPLANE_EXTRACTOR_NAME.to_owned(),
        extractor_version: XPLANE_EXTRACTOR_VERSION.to_owned(),
        format: FormatKind::XPlane.name().to_owned(),
        producer,
        rows,
        time_span_ns: emitted.span,
        tracks: trace.tracks.list.len() as u64,
        coverage,
        limitations: trace.log.into_limitations(),
        metadata,
        input_bytes: bytes.len() as u64,
        input_events: counts.events,
        max_event_dur_ns: None,
    })
}
