//! flameox's extractors: the evidence table schemas, format detection, and one
//! streaming decoder per input format.
//!
//! An extractor reads a byte stream and hands Arrow record batches of the
//! tables in [`schema`] to a [`BatchSink`] as they fill. It knows nothing about
//! workspaces, commits or files on disk: the engine opens the input, owns the
//! sink (staging Parquet) and publishes. See `docs/extractors.md`.

pub mod api;
mod arrow_util;
pub mod benchmarks;
pub mod chrome;
pub mod configuration_observations;
pub mod coverage_json;
pub mod cpuprofile;
mod decoder_guard;
pub mod detect;
pub mod device_work;
pub mod execution_receipt;
pub mod folded;
pub mod format_descriptor;
pub mod format_kind;
pub mod formats;
pub mod ftrace_text;
pub mod gecko;
pub mod go_trace;
pub mod importtime;
pub mod input;
pub mod input_errors;
mod json_doc;
pub mod junit_xml;
pub mod kernel_events;
mod kernel_latencies;
mod launch_starts;
pub mod memray;
pub mod nsight;
pub mod otlp;
pub mod perf_data;
pub mod perfetto;
pub mod phase_cpu;
pub mod pprof;
pub mod reduced_stacks;
pub mod rocprof;
pub mod schema;
pub mod sniff;
mod sorted_runs;
pub mod speedscope;
#[cfg(test)]
mod spill_compare;
mod stack_profile;
mod stack_totals;
pub mod stacks;
pub mod stream_gaps;
pub mod stream_gaps_thread;
mod timed_sample_runs;
mod timed_samples;
pub mod trace_cmd;
pub mod trace_events;
pub mod ustar;
mod varint;
pub mod xplane;
pub mod xplane_model;

/// The hash map of the extractors' per-event paths: foldhash (seeded per
/// process) instead of SipHash, which took ~4 % of a JSON import.
pub(crate) type FastHashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
/// The set counterpart of [`FastHashMap`].
pub(crate) type FastHashSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

pub use api::{
    BatchSink, CountingSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary,
    Limitation, LimitationLog, NoObserver, SinkError,
};
pub use benchmarks::BENCHMARK_EXTRACTOR_VERSION;
pub use benchmarks::criterion::{CRITERION_EXTRACTOR_NAME, extract_criterion_dir};
pub use benchmarks::gbench::{GBENCH_EXTRACTOR_NAME, extract_gbench};
pub use benchmarks::hyperfine::{HYPERFINE_EXTRACTOR_NAME, extract_hyperfine};
pub use benchmarks::pyperf::{PYPERF_EXTRACTOR_NAME, extract_pyperf};
pub use chrome::{CHROME_EXTRACTOR_NAME, CHROME_EXTRACTOR_VERSION, extract_chrome_json};
pub use cpuprofile::{CPUPROFILE_EXTRACTOR_NAME, CPUPROFILE_EXTRACTOR_VERSION, extract_cpuprofile};
pub use detect::{Detection, FormatKind, detect};
pub use folded::{FOLDED_EXTRACTOR_NAME, FOLDED_EXTRACTOR_VERSION, extract_folded_stacks};
pub use gecko::{GECKO_EXTRACTOR_NAME, GECKO_EXTRACTOR_VERSION, extract_gecko_profile};
pub use importtime::{IMPORTTIME_EXTRACTOR_NAME, IMPORTTIME_EXTRACTOR_VERSION, extract_importtime};
pub use input::{InputLimits, InputStream, open_input, read_head};
pub use nsight::{
    NSIGHT_EXPORT_DIR_EXTRACTOR_NAME, NSIGHT_EXTRACTOR_NAME, NSIGHT_EXTRACTOR_VERSION,
    extract_nsight_export_dir, extract_nsight_sqlite,
};
pub use perfetto::{PERFETTO_EXTRACTOR_NAME, PERFETTO_EXTRACTOR_VERSION, extract_perfetto};
pub use pprof::{PPROF_EXTRACTOR_NAME, PPROF_EXTRACTOR_VERSION, extract_pprof};
pub use schema::{EvidenceTable, OLDEST_READ_SCHEMA_VERSION, SCHEMA_VERSION};
pub use speedscope::{SPEEDSCOPE_EXTRACTOR_NAME, SPEEDSCOPE_EXTRACTOR_VERSION, extract_speedscope};
