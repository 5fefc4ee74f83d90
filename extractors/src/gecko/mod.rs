//! The Gecko profile format: what the Firefox (Gecko) profiler hands out
//! (`Services.profiler.getProfileData()`), and what a Firefox DevTools
//! performance-panel recording (Firefox ≤ 65 or so) embeds under its
//! `profile` key next to `label`, `duration`, `markers`, `ticks`, ….
//!
//! `{meta: {startTime, interval, …}, libs, threads: [{name, tid, pid,
//! samples, stackTable, frameTable, stringTable, markers}], processes: [the
//! same, per child process]}`. Each table is `{schema: {column: position},
//! data: [[…], …]}`; columns are found by name. A sample names a stack; a
//! stack is (prefix stack, frame); a frame names a location string (see
//! `location.rs` for how `name (url:line)`, `0x…` and labels are read).
//! Rules (documented in `docs/extractors.md`):
//! - `cpu.samples`: 1 per sample. `cpu.time_ns`: a sample lasts until the
//!   thread's next sample (samples put in time order first); the last one
//!   lasts `meta.interval`. Sample rows carry absolute timestamps:
//!   `meta.startTime` (epoch ms, of the sample's own process) + `time` ms.
//! - A null stack is one `[no frames]` frame, so totals still add up.
//! - The profiler's synthetic outermost `(root)` label is dropped, as the
//!   V8 `(root)` is; a sample on it alone keeps a `(root)` frame.
//! - Every `processes` entry (recursively) is read with its own `meta` and
//!   `libs`; missing `startTime`/`interval` are inherited from the parent.
//! - The Firefox Profiler's *processed* format (`meta.preprocessedProfileVersion`,
//!   what profiler.firefox.com saves and samply writes) is refused with a
//!   `Parse` error naming it: its tables are columnar and differ by version.

mod format;
mod location;
mod model;
mod thread;

use std::collections::BTreeMap;
use std::io::BufRead;

use crate::api::{
    BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary, LimitationLog,
};
use crate::format_kind::FormatKind;
use crate::json_doc::{Decimal, read_document};
use crate::stack_profile::{StackProfileEnd, finish_stack_profile};
use crate::stacks::{ReductionSpec, StackAggregator};
use model::{Cell, GeckoFile, Meta, Profile};
use serde_json::json;
use thread::{Builder, Process};

pub use format::FORMAT;

pub const GECKO_EXTRACTOR_NAME: &str = "gecko_profile";
/// Bumped whenever the rows produced for the same input change.
pub const GECKO_EXTRACTOR_VERSION: &str = "1";

/// The profiler's synthetic root label at the base of every stack.
pub const ROOT: &str = "(root)";
/// The frame of a sample whose stack index is outside the `stackTable`.
pub const INVALID_STACK: &str = "[invalid stack index]";
/// The frame a stack names outside the `frameTable`.
pub const INVALID_FRAME: &str = "[invalid frame index]";
/// The frame whose location is not an index into the `stringTable`.
pub const INVALID_STRING: &str = "[invalid string index]";

fn spec(metric: &str, unit: &str) -> ReductionSpec {
    ReductionSpec {
        metric: metric.into(),
        weight_unit: unit.into(),
        unit: unit.into(),
    }
}

fn parse_error(message: impl Into<String>) -> ExtractError {
    ExtractError::Parse {
        message: message.into(),
        offset: Some(0),
    }
}

/// Extracts a Gecko profile (bare, or inside a DevTools recording) into
/// `frames`, `stack_nodes`, `samples` (timed), `frame_totals` and
/// `call_edges` (metrics `cpu.samples`, `cpu.time_ns`).
pub fn extract_gecko_profile<R: BufRead>(
    reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let (file, input_bytes): (GeckoFile, u64) = read_document(reader, observer, "Gecko profile")?;
    let label = file.label.clone();
    let duration_ms = file.duration.and_then(Cell::number);
    let file_type = file.file_type.clone();
    let Some((profile, wrapped)) = file.into_profile() else {
        return Err(parse_error(
            "not a Gecko profile: no `threads` (and no DevTools recording `profile`)",
        ));
    };
    let meta = profile.meta.as_ref();
    if meta.is_some_and(|m| m.preprocessed_version.is_some()) {
        return Err(parse_error(
            "this is a Firefox Profiler processed profile (`meta.preprocessedProfileVersion`; \
             what profiler.firefox.com saves and samply writes), not a Gecko profile; \
             flameox does not read the processed format yet",
        ));
    }
    let mut b = Builder {
        agg: StackAggregator::new(),
        log: LimitationLog::default(),
        samples_metric: 0,
        time_metric: 0,
        samples: 0,
        timed: false,
        thread_ids: false,
        unsymbolized: false,
        source_locations: false,
        span: None,
    };
    b.samples_metric = b.agg.metric(spec("cpu.samples", "samples"));
    b.time_metric = b.agg.metric(spec("cpu.time_ns", "ns"));

    // Depth-first over the process tree, without recursion.
    let root = process_of(meta, profile.libs.as_deref(), None, &mut b.log);
    // (serde_json's nesting limit already refuses absurd depths as `Parse`.)
    let mut pending: Vec<(&Profile, Process)> = vec![(&profile, root)];
    let (mut threads, mut processes) = (0usize, 0usize);
    while let Some((p, process)) = pending.pop() {
        processes += 1;
        for t in p.threads.as_deref().unwrap_or(&[]) {
            if observer.cancelled() {
                return Err(ExtractError::Cancelled);
            }
            b.thread(threads, t, &process, observer)?;
            threads += 1;
        }
        for child in p.processes.as_deref().unwrap_or(&[]).iter().rev() {
            let sub = process_of(
                child.meta.as_ref(),
                child.libs.as_deref(),
                Some(&process),
                &mut b.log,
            );
            pending.push((child, sub));
        }
    }
    if b.samples == 0 {
        return Err(parse_error(format!(
            "no samples in the {threads} thread(s) of this Gecko profile"
        )));
    }

    let (samples, timed, span) = (b.samples, b.timed, b.span);

    let mut metadata = BTreeMap::new();
    if let Some(m) = meta {
        if let Some(v) = m.version.and_then(Cell::int) {
            metadata.insert("gecko_version".to_owned(), json!(v));
        }
        for (key, value) in [
            ("product", &m.product),
            ("platform", &m.platform),
            ("oscpu", &m.oscpu),
        ] {
            if let Some(v) = value {
                metadata.insert(key.to_owned(), json!(v));
            }
        }
        if let Some(ms) = m.start_time.and_then(|d| d.scaled(6)) {
            metadata.insert("start_time_ns".to_owned(), json!(ms));
        }
        if let Some(ns) = m.interval.and_then(|d| d.scaled(6)) {
            metadata.insert("interval_ns".to_owned(), json!(ns));
        }
    }
    if wrapped {
        metadata.insert("wrapper".to_owned(), json!("firefox_devtools_recording"));
        if let Some(label) = &label {
            metadata.insert("label".to_owned(), json!(label));
        }
        if let Some(d) = duration_ms {
            metadata.insert("duration_ms".to_owned(), json!(d));
        }
        if let Some(t) = &file_type {
            metadata.insert("file_type".to_owned(), json!(t));
        }
    }
    metadata.insert("threads".to_owned(), json!(threads));
    metadata.insert("processes".to_owned(), json!(processes));
    metadata.insert("samples".to_owned(), json!(samples));
    let producer = options.producer.clone().unwrap_or_else(|| {
        meta.and_then(|m| m.product.as_deref())
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map_or_else(|| "gecko".to_owned(), str::to_ascii_lowercase)
    });
    finish_stack_profile(
        b.agg,
        options,
        sink,
        StackProfileEnd {
            extractor: GECKO_EXTRACTOR_NAME,
            extractor_version: GECKO_EXTRACTOR_VERSION,
            format: FormatKind::GeckoProfile,
            producer,
            time_span_ns: span,
            thread_identity: b.thread_ids,
            timestamps: timed,
            symbolized_frames: !b.unsymbolized,
            more_coverage: vec![("source_locations", b.source_locations)],
            metadata,
            log: b.log,
            input_bytes,
            input_events: samples,
        },
    )
}

/// The shared context of one process's threads; what its `meta` lacks is
/// inherited from `parent`.
fn process_of(
    meta: Option<&Meta>,
    libs: Option<&[model::Lib]>,
    parent: Option<&Process>,
    log: &mut LimitationLog,
) -> Process {
    let start = meta.and_then(|m| m.start_time);
    let start_ns = match (start.and_then(|d| d.scaled(6)), parent) {
        (Some(ns), _) => ns,
        (None, Some(p)) => p.start_ns,
        (None, None) => {
            log.note("no_start_time", || {
                format!(
                    "meta.startTime is {}; sample timestamps are relative to the profile start",
                    if start.is_some() {
                        "not a number"
                    } else {
                        "missing"
                    }
                )
            });
            0
        }
    };
    let interval = meta
        .and_then(|m| m.interval)
        .and_then(|d: Decimal| d.scaled(6))
        .filter(|&ns| ns > 0);
    let interval_ns = interval.or(parent.and_then(|p| p.interval_ns));
    let libs = libs
        .unwrap_or(&[])
        .iter()
        .filter_map(|l| {
            let start = u64::try_from(l.start?.int()?).ok()?;
            let end = u64::try_from(l.end?.int()?).ok()?;
            Some((start, end, l.name.clone()?))
        })
        .collect();
    Process::new(start_ns, interval_ns, libs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::NoObserver;
    use crate::schema::EvidenceTable;

    struct Sink(usize);
    impl BatchSink for Sink {
        fn write_batch(
            &mut self,
            _: EvidenceTable,
            batch: arrow::record_batch::RecordBatch,
        ) -> Result<(), crate::api::SinkError> {
            self.0 += batch.num_rows();
            Ok(())
        }
    }

    fn run(doc: &str) -> Result<ExtractionSummary, ExtractError> {
        let options = ExtractOptions::new("r", "a");
        extract_gecko_profile(doc.as_bytes(), &options, &mut Sink(0), &NoObserver)
    }

    #[test]
    fn sub_processes_inherit_the_interval_and_keep_their_start() {
        let thread = |tid: i64| {
            format!(
                r#"{{"name": "GeckoMain", "tid": {tid}, "pid": "7",
                    "samples": {{"schema": {{"stack": 0, "time": 1}}, "data": [[0, 1.5], [0, 2]]}},
                    "stackTable": {{"schema": {{"prefix": 0, "frame": 1}}, "data": [[null, 0]]}},
                    "frameTable": {{"schema": {{"location": 0}}, "data": [[0]]}},
                    "stringTable": ["main"]}}"#
            )
        };
        let doc = format!(
            r#"{{"meta": {{"startTime": 1000, "interval": 0.5, "product": "Firefox"}},
                "threads": [{}],
                "processes": [{{"meta": {{"startTime": 2000}}, "threads": [{}],
                                "processes": [{{"threads": [{}]}}]}}]}}"#,
            thread(1),
            thread(2),
            thread(3)
        );
        let s = run(&doc).unwrap();
        assert!(s.limitations.is_empty(), "{:?}", s.limitations);
        assert_eq!(s.input_events, 6);
        assert_eq!(s.metadata["processes"], 3);
        assert_eq!(s.metadata["threads"], 3);
        assert_eq!(s.producer, "firefox");
        // First sample 1000 ms + 1.5 ms; last: 2000 ms + 2 ms + interval.
        assert_eq!(s.time_span_ns, Some((1_001_500_000, 2_002_500_000)));
    }

    #[test]
    fn processed_profiles_and_other_json_are_refused() {
        let err = run(r#"{"meta": {"preprocessedProfileVersion": 49}, "threads": []}"#);
        assert!(
            matches!(&err, Err(ExtractError::Parse { message, .. }) if message.contains("processed")),
            "{err:?}"
        );
        assert!(matches!(
            run(r#"{"a": 1}"#),
            Err(ExtractError::Parse { .. })
        ));
        assert!(matches!(
            run(r#"{"meta": {}, "threads": []}"#),
            Err(ExtractError::Parse { .. })
        ));
    }
}
