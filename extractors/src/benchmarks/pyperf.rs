//! pyperf JSON (`python -m pyperf timeit … -o FILE`, `Runner` scripts,
//! pyperformance results; plain or gzipped), format version `1.0`.
//!
//! A file is a suite: `benchmarks[]`, each with `runs[]` (one per worker
//! process). A run holds `warmups` as `[loops, value]` pairs and `values`;
//! pyperf stores both already divided by `loops × inner_loops` (time per
//! loop iteration — format 1.0; older formats stored raw warmups, so they
//! are refused rather than misread). The first run of a benchmark is often
//! a calibration run with warmups only. Every warmup becomes a row with
//! `is_warmup = true`, every value a row with `is_warmup = false`, in file
//! order, `sample_index` counting across runs. Name: `pyperf.<name>`; unit
//! from the merged metadata (`second` → stored in `ns`, `byte` → `bytes`,
//! `integer` → `count`).

use std::collections::BTreeMap;
use std::io::BufRead;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{MeasurementWriter, Sample, SummaryHeader, kept_metadata, ns_per_unit, scalar_text};
use crate::api::{BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary};
use crate::json_doc::read_document;

pub const PYPERF_EXTRACTOR_NAME: &str = "pyperf_json";

/// The one pyperf JSON format version this extractor reads.
const SUPPORTED_VERSION: &str = "1.0";

#[derive(Deserialize)]
struct Suite {
    version: Option<Value>,
    #[serde(default)]
    metadata: Map<String, Value>,
    benchmarks: Vec<Benchmark>,
}

#[derive(Deserialize)]
struct Benchmark {
    #[serde(default)]
    metadata: Map<String, Value>,
    runs: Vec<Run>,
}

#[derive(Deserialize)]
struct Run {
    #[serde(default)]
    metadata: Map<String, Value>,
    #[serde(default)]
    warmups: Vec<(f64, f64)>,
    #[serde(default)]
    values: Vec<f64>,
}

/// Suite metadata worth keeping on the run (bounded, no host paths).
const KEPT_METADATA: [&str; 6] = [
    "perf_version",
    "python_implementation",
    "python_version",
    "platform",
    "cpu_model_name",
    "cpu_count",
];

/// The stored unit and the multiplier for a pyperf `unit` metadata value.
fn stored_unit(unit: &str) -> Option<(&'static str, f64)> {
    match unit {
        "byte" => Some(("bytes", 1.0)),
        "integer" => Some(("count", 1.0)),
        other => ns_per_unit(other).map(|scale| ("ns", scale)),
    }
}

/// Extracts a pyperf JSON suite into `measurements`.
pub fn extract_pyperf<R: BufRead>(
    reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let (suite, input_bytes): (Suite, u64) = read_document(reader, observer, "pyperf JSON")?;
    let version = suite.version.as_ref().and_then(scalar_text);
    if version.as_deref() != Some(SUPPORTED_VERSION) {
        return Err(ExtractError::Parse {
            message: format!(
                "pyperf JSON format version {} is not supported (this build reads {SUPPORTED_VERSION}, written by pyperf ≥ 1.0)",
                version.as_deref().unwrap_or("(missing)")
            ),
            offset: None,
        });
    }
    let mut writer = MeasurementWriter::new(options);
    let no_parameters = BTreeMap::new();
    for (position, bench) in suite.benchmarks.iter().enumerate() {
        let name = bench
            .metadata
            .get("name")
            .or_else(|| suite.metadata.get("name"))
            .and_then(scalar_text)
            .ok_or_else(|| ExtractError::Parse {
                message: format!("pyperf benchmark #{position} has no name in its metadata"),
                offset: None,
            })?;
        let name = format!("pyperf.{name}");
        let mut index = 0i64;
        for run in &bench.runs {
            let unit_text = [&run.metadata, &bench.metadata, &suite.metadata]
                .iter()
                .find_map(|m| m.get("unit").and_then(scalar_text))
                .unwrap_or_else(|| "second".to_owned());
            let Some((unit, scale)) = stored_unit(&unit_text) else {
                writer.log.note("unknown_unit", || {
                    format!("{name}: pyperf unit {unit_text:?} is unknown; its runs are skipped")
                });
                index += (run.warmups.len() + run.values.len()) as i64;
                continue;
            };
            let samples = run
                .warmups
                .iter()
                .map(|(_loops, value)| (*value, true))
                .chain(run.values.iter().map(|value| (*value, false)));
            for (value, is_warmup) in samples {
                writer.push(Sample {
                    name: &name,
                    value: value * scale,
                    unit,
                    sample_index: index,
                    is_warmup,
                    parameters: &no_parameters,
                });
                index += 1;
            }
        }
    }
    let metadata = kept_metadata("pyperf", &suite.metadata, &KEPT_METADATA);
    writer.finish(
        sink,
        SummaryHeader {
            format: PYPERF_EXTRACTOR_NAME,
            producer: "pyperf".to_owned(),
            metadata,
            input_bytes,
        },
    )
}
