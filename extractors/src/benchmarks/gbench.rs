//! Google Benchmark JSON (`--benchmark_format=json` on stdout, or
//! `--benchmark_out=FILE --benchmark_out_format=json`).
//!
//! `benchmarks[]` holds one row per repetition (`run_type: iteration`)
//! and, with repetitions, aggregate rows (`run_type: aggregate`: mean,
//! median, stddev, cv and user-defined ones). Each iteration row is one
//! sample: its `real_time` and `cpu_time` (already per iteration, in
//! `time_unit`) become `gbench.<run_name>.real_time` and
//! `gbench.<run_name>.cpu_time` rows in `ns`, `sample_index` =
//! `repetition_index`. Aggregates are not samples (they are computed from
//! the iteration rows) and are skipped, counted as the `aggregate_skipped`
//! limitation. Rows with `error_occurred` (SkipWithError) are skipped as
//! `benchmark_error`. Google Benchmark runs its own warm-up outside the
//! reported repetitions, so no row is a warmup. User counters
//! (`items_per_second`, …) are not kept.

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{MeasurementWriter, Sample, SummaryHeader, kept_metadata, ns_per_unit};
use crate::api::{BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary};
use crate::json_doc::read_document;

pub const GBENCH_EXTRACTOR_NAME: &str = "google_benchmark_json";

#[derive(Deserialize)]
struct Report {
    #[serde(default)]
    context: Map<String, Value>,
    benchmarks: Vec<Row>,
}

#[derive(Deserialize)]
struct Row {
    name: String,
    run_name: Option<String>,
    run_type: Option<String>,
    repetition_index: Option<i64>,
    real_time: Option<f64>,
    cpu_time: Option<f64>,
    time_unit: Option<String>,
    #[serde(default)]
    error_occurred: bool,
    error_message: Option<String>,
    aggregate_name: Option<String>,
}

/// Context fields worth keeping on the run (bounded, no paths).
const KEPT_CONTEXT: [&str; 6] = [
    "host_name",
    "num_cpus",
    "mhz_per_cpu",
    "cpu_scaling_enabled",
    "library_build_type",
    "library_version",
];

/// Aggregate suffixes of reports written before `run_type` existed.
const AGGREGATE_SUFFIXES: [&str; 4] = ["_mean", "_median", "_stddev", "_cv"];

impl Row {
    fn is_aggregate(&self) -> bool {
        match self.run_type.as_deref() {
            Some(kind) => kind == "aggregate",
            None => AGGREGATE_SUFFIXES.iter().any(|s| self.name.ends_with(s)),
        }
    }
}

/// Extracts a Google Benchmark JSON report into `measurements`.
pub fn extract_gbench<R: BufRead>(
    reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let (report, input_bytes): (Report, u64) =
        read_document(reader, observer, "Google Benchmark JSON")?;
    let mut writer = MeasurementWriter::new(options);
    let no_parameters = BTreeMap::new();
    let mut next_index: HashMap<&str, i64> = HashMap::new();
    for row in &report.benchmarks {
        if row.is_aggregate() {
            writer.log.note("aggregate_skipped", || {
                format!(
                    "{} ({}) is an aggregate of the repetitions, not a sample; skipped",
                    row.name,
                    row.aggregate_name.as_deref().unwrap_or("aggregate")
                )
            });
            continue;
        }
        if row.error_occurred {
            writer.log.note("benchmark_error", || {
                format!(
                    "{} reported an error ({}); skipped",
                    row.name,
                    row.error_message.as_deref().unwrap_or("no message")
                )
            });
            continue;
        }
        let unit = row.time_unit.as_deref().unwrap_or("ns");
        let Some(scale) = ns_per_unit(unit) else {
            writer.log.note("unknown_time_unit", || {
                format!("{}: time_unit {unit:?} is unknown; skipped", row.name)
            });
            continue;
        };
        let run_name = row.run_name.as_deref().unwrap_or(&row.name);
        let counter = next_index.entry(run_name).or_insert(0);
        let index = row.repetition_index.unwrap_or(*counter);
        *counter = index + 1;
        for (clock, value) in [("real_time", row.real_time), ("cpu_time", row.cpu_time)] {
            let Some(value) = value else {
                writer.log.note("missing_time", || {
                    format!("{}: no {clock}; that sample is skipped", row.name)
                });
                continue;
            };
            writer.push(Sample {
                name: &format!("gbench.{run_name}.{clock}"),
                value: value * scale,
                unit: "ns",
                sample_index: index,
                is_warmup: false,
                parameters: &no_parameters,
            });
        }
    }
    let metadata = kept_metadata("google_benchmark", &report.context, &KEPT_CONTEXT);
    writer.finish(
        sink,
        SummaryHeader {
            format: GBENCH_EXTRACTOR_NAME,
            producer: "google-benchmark".to_owned(),
            metadata,
            input_bytes,
        },
    )
}
