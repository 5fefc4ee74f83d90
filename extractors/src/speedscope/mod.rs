//! speedscope JSON (<https://www.speedscope.app/file-format-schema.json>):
//! the exchange format of the speedscope viewer, written by py-spy
//! (`--format speedscope`), rbspy, Austin, pyinstrument and others.
//!
//! The file is `shared.frames` (name, file, line) plus `profiles`, one per
//! thread: `sampled` (stacks of frame indices, root first, with weights) or
//! `evented` (frame open/close events at times). Both feed a
//! [`StackAggregator`]; each profile is one thread (`Thread TID "NAME"` as
//! py-spy writes it gives the tid; the profile name is the thread name).
//! py-spy also roots every stack in a `thread (TID): NAME` frame with no
//! file; that frame is dropped (as the folded extractor drops the same
//! element), and a stack left empty is one `[no frames]` frame.
//!
//! Metrics (see `docs/extractors.md` for why):
//! - sampled, unit seconds/milliseconds/microseconds/nanoseconds →
//!   `cpu.time_ns` (weights converted exactly to ns) and `cpu.samples` (one
//!   per sample); unit `bytes` → `memory.alloc_bytes`; unit `none` →
//!   `cpu.samples` weighted by the written weight.
//! - evented → the time each stack was the innermost open one, under
//!   `trace.wall_ns` (time units; it is wall time, not CPU time),
//!   `memory.alloc_bytes` (bytes) or `trace.wall_units` (`none`).

mod build;
mod evented;
mod format;
mod model;

use std::collections::BTreeMap;
use std::io::BufRead;

use crate::api::{
    BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary, LimitationLog,
};
use crate::format_kind::FormatKind;
use crate::json_doc::read_document;
use crate::stack_profile::{StackProfileEnd, finish_stack_profile};
use crate::stacks::{StackAggregator, ThreadInfo};
use build::Builder;

pub use format::FORMAT;
use model::SpeedscopeFile;

pub const SPEEDSCOPE_EXTRACTOR_NAME: &str = "speedscope_json";
/// Bumped whenever the rows produced for the same input change.
pub const SPEEDSCOPE_EXTRACTOR_VERSION: &str = "1";

/// The frame used where a stack names a frame index outside `shared.frames`.
pub const INVALID_FRAME: &str = "[invalid frame index]";
/// The name of a frame written without one.
pub const UNNAMED_FRAME: &str = "[unnamed frame]";

/// The thread a profile name describes: py-spy writes `Thread TID "NAME"`
/// (`Process PID Thread TID "NAME"` with `--subprocesses`); TID/PID may be
/// decimal or `0x` hex. The whole profile name is kept as the thread name.
pub fn profile_thread(name: Option<&str>) -> ThreadInfo {
    let mut info = ThreadInfo {
        thread_name: name.filter(|n| !n.trim().is_empty()).map(str::to_owned),
        ..ThreadInfo::default()
    };
    let Some(name) = name else { return info };
    let mut words = name.split_whitespace();
    while let Some(word) = words.next() {
        let id = match word {
            "Thread" | "Process" => words.next().and_then(parse_id),
            _ => continue,
        };
        match word {
            "Thread" => info.tid = info.tid.or(id),
            _ => info.pid = info.pid.or(id),
        }
    }
    info
}

fn parse_id(text: &str) -> Option<i64> {
    let text = text.trim_end_matches([':', ',']);
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok().map(|v| v as i64),
        None => text.parse().ok(),
    }
}

/// Extracts a speedscope file into `frames`, `stack_nodes`, `samples`,
/// `frame_totals` and `call_edges`.
pub fn extract_speedscope<R: BufRead>(
    reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let (file, input_bytes): (SpeedscopeFile, u64) = read_document(reader, observer, "speedscope")?;
    let profiles = file.profiles.unwrap_or_default();
    if profiles.is_empty() {
        return Err(ExtractError::Parse {
            message: "a speedscope file needs a non-empty `profiles` array".into(),
            offset: Some(0),
        });
    }
    let frames = file.shared.unwrap_or_default().frames;
    let mut b = Builder {
        agg: StackAggregator::new(),
        log: LimitationLog::default(),
        frames: &frames,
        frame_ids: vec![None; frames.len()],
        samples: 0,
        events: 0,
        thread_ids: false,
    };
    for (n, profile) in profiles.iter().enumerate() {
        if observer.cancelled() {
            return Err(ExtractError::Cancelled);
        }
        let info = profile_thread(profile.name.as_deref());
        b.thread_ids |= info.tid.is_some();
        let thread = b.agg.thread(info);
        match profile.kind.as_deref() {
            Some("sampled") => b.sampled(n, profile, thread, observer)?,
            Some("evented") => b.evented(n, profile, thread),
            other => b.log.note("unknown_profile_type", || {
                format!("profile {n} has type {other:?} (want sampled or evented); skipped")
            }),
        }
    }
    if b.samples == 0 && b.events == 0 {
        return Err(ExtractError::Parse {
            message: format!(
                "no samples or events in {} speedscope profile(s)",
                profiles.len()
            ),
            offset: Some(0),
        });
    }

    let exporter = file.exporter.as_deref().unwrap_or("");
    let producer = options.producer.clone().unwrap_or_else(|| {
        match exporter.split('@').next().map(str::trim) {
            Some(p) if !p.is_empty() => p.to_owned(),
            _ => "speedscope".to_owned(),
        }
    });
    let mut metadata = BTreeMap::new();
    if !exporter.is_empty() {
        metadata.insert("exporter".to_owned(), serde_json::json!(exporter));
    }
    if let Some(name) = &file.name {
        metadata.insert("name".to_owned(), serde_json::json!(name));
    }
    metadata.insert("profiles".to_owned(), serde_json::json!(profiles.len()));
    metadata.insert("samples".to_owned(), serde_json::json!(b.samples));
    metadata.insert("events".to_owned(), serde_json::json!(b.events));
    finish_stack_profile(
        b.agg,
        options,
        sink,
        StackProfileEnd {
            extractor: SPEEDSCOPE_EXTRACTOR_NAME,
            extractor_version: SPEEDSCOPE_EXTRACTOR_VERSION,
            format: FormatKind::SpeedscopeJson,
            producer,
            time_span_ns: None,
            thread_identity: b.thread_ids,
            timestamps: false,
            symbolized_frames: true,
            more_coverage: vec![("source_locations", frames.iter().any(|f| f.file.is_some()))],
            metadata,
            log: b.log,
            input_bytes,
            input_events: b.samples + b.events,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_names() {
        let t = profile_thread(Some("Thread 23087 \"worker-0\""));
        assert_eq!(t.tid, Some(23087));
        assert_eq!(t.thread_name.as_deref(), Some("Thread 23087 \"worker-0\""));
        let t = profile_thread(Some("Process 12 Thread 0x1f \"x\""));
        assert_eq!((t.pid, t.tid), (Some(12), Some(31)));
        let t = profile_thread(Some("main"));
        assert_eq!((t.tid, t.thread_name.as_deref()), (None, Some("main")));
        assert_eq!(profile_thread(None), ThreadInfo::default());
        assert_eq!(profile_thread(Some("Thread")).tid, None);
    }

    #[test]
    fn units() {
        use build::{Unit, unit_of};
        assert_eq!(unit_of(Some("seconds")), Unit::Time(9));
        assert_eq!(unit_of(Some("nanoseconds")), Unit::Time(0));
        assert_eq!(unit_of(Some("bytes")), Unit::Bytes);
        assert_eq!(unit_of(Some("none")), Unit::None);
        assert_eq!(unit_of(Some("parsecs")), Unit::Unknown);
        assert_eq!(unit_of(None), Unit::Unknown);
    }
}
