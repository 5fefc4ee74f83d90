//! The one ending of every stack-profile extractor (folded stacks, pprof,
//! V8 cpuprofile, Gecko, speedscope): the reductions are written through a
//! sink that counts rows per table, every evidence table is named in the
//! counts (zero when empty), and the summary is assembled from what the
//! format knows. A format reads its input into a [`StackAggregator`] and
//! hands it here with a [`StackProfileEnd`].

use std::collections::BTreeMap;

use crate::api::{
    BatchSink, CountingSink, ExtractError, ExtractOptions, ExtractionSummary, LimitationLog,
};
use crate::format_kind::FormatKind;
use crate::schema::EvidenceTable;
use crate::stacks::StackAggregator;

/// What a stack format reports about its input besides the reductions.
pub struct StackProfileEnd {
    pub extractor: &'static str,
    pub extractor_version: &'static str,
    pub format: FormatKind,
    pub producer: String,
    pub time_span_ns: Option<(i64, i64)>,
    /// Samples name the thread (or process) they were taken on.
    pub thread_identity: bool,
    /// Samples carry their own timestamps (`timed_samples` rows).
    pub timestamps: bool,
    /// Every frame has a function name (no bare addresses).
    pub symbolized_frames: bool,
    /// Format-specific coverage flags (`source_locations`, `inlined_frames`).
    pub more_coverage: Vec<(&'static str, bool)>,
    pub metadata: BTreeMap<String, serde_json::Value>,
    pub log: LimitationLog,
    pub input_bytes: u64,
    pub input_events: u64,
}

/// Writes `agg`'s tables to `sink` and returns the extraction summary.
pub fn finish_stack_profile(
    agg: StackAggregator,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    end: StackProfileEnd,
) -> Result<ExtractionSummary, ExtractError> {
    let mut rows = BTreeMap::new();
    agg.finish_all(
        &options.run_id,
        &options.artifact_id,
        options.batch_rows,
        &mut CountingSink {
            inner: sink,
            rows: &mut rows,
        },
    )?;
    for table in EvidenceTable::ALL {
        rows.entry(table.name().to_string()).or_insert(0);
    }
    let mut coverage = BTreeMap::new();
    coverage.insert("thread_identity".to_owned(), end.thread_identity);
    coverage.insert("timestamps".to_owned(), end.timestamps);
    coverage.insert("symbolized_frames".to_owned(), end.symbolized_frames);
    for (key, covered) in end.more_coverage {
        coverage.insert(key.to_owned(), covered);
    }
    Ok(ExtractionSummary {
        extractor: end.extractor.into(),
        extractor_version: end.extractor_version.into(),
        format: end.format.name().into(),
        producer: end.producer,
        rows,
        time_span_ns: end.time_span_ns,
        tracks: 0,
        coverage,
        limitations: end.log.into_limitations(),
        metadata: end.metadata,
        input_bytes: end.input_bytes,
        input_events: end.input_events,
        max_event_dur_ns: None,
    })
}
