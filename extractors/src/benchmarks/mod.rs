//! Benchmark results → the `measurements` table: pyperf JSON, hyperfine
//! `--export-json`, criterion output folders and Google Benchmark JSON.
//!
//! These files hold measured values (one per timed sample), not events or
//! stacks, so they share one writer here: [`MeasurementWriter`] merges the
//! import-time parameters and variant into every row, computes the stable
//! `measurement_id`, and emits the batches. Each format has its own module
//! that reads the file with serde and hands samples over. Time is stored in
//! nanoseconds whatever the producer wrote (pyperf and hyperfine seconds,
//! Google Benchmark's `time_unit`), so runs of different tools share a unit.
//! See `docs/extractors.md` (Benchmark results).

pub mod criterion;
pub mod formats;
pub mod gbench;
pub mod hyperfine;
pub mod pyperf;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray};
use arrow::record_batch::RecordBatch;
use sha2::{Digest, Sha256};

use crate::api::{
    BatchSink, ExtractError, ExtractOptions, ExtractionSummary, LimitationLog, SinkError,
};
use crate::arrow_util::{DictColumn, const_dict};
use crate::schema::EvidenceTable;

/// Version of the four benchmark extractors (one writer, one version).
pub const BENCHMARK_EXTRACTOR_VERSION: &str = "1";

/// Multiplier from a time unit name to nanoseconds (`None`: not a time unit).
pub fn ns_per_unit(unit: &str) -> Option<f64> {
    match unit {
        "ns" => Some(1.0),
        "us" => Some(1e3),
        "ms" => Some(1e6),
        "s" | "second" | "seconds" => Some(1e9),
        _ => None,
    }
}

/// One measured value as a format module reads it.
pub(crate) struct Sample<'a> {
    pub name: &'a str,
    pub value: f64,
    pub unit: &'a str,
    /// Position within its benchmark (warmups included).
    pub sample_index: i64,
    pub is_warmup: bool,
    /// Parameters the file itself names for this benchmark (hyperfine's
    /// `parameters`); merged over the import-time ones.
    pub parameters: &'a BTreeMap<String, String>,
}

struct Row {
    measurement_id: String,
    name: String,
    value: f64,
    unit: String,
    sample_index: i64,
    is_warmup: bool,
    parameters_json: Option<String>,
}

/// Collects the samples of one artifact and writes them as `measurements`.
pub(crate) struct MeasurementWriter<'o> {
    options: &'o ExtractOptions,
    rows: Vec<Row>,
    ids: BTreeSet<String>,
    pub log: LimitationLog,
}

/// The canonical JSON object of `parameters` (keys sorted, no spaces), or
/// `None` when there are none.
pub fn canonical_parameters(parameters: &BTreeMap<String, String>) -> Option<String> {
    if parameters.is_empty() {
        return None;
    }
    serde_json::to_string(parameters).ok()
}

/// The `measurement_id` of a row: a digest of what makes it unique within
/// the table (artifact, name, parameters, variant, sample index), so the
/// same file imported the same way always gives the same ids.
pub fn measurement_id(
    artifact_id: &str,
    name: &str,
    parameters_json: Option<&str>,
    variant: Option<&str>,
    sample_index: i64,
) -> String {
    let key = serde_json::json!([artifact_id, name, parameters_json, variant, sample_index]);
    hex::encode(Sha256::digest(key.to_string().as_bytes()))
}

impl<'o> MeasurementWriter<'o> {
    pub fn new(options: &'o ExtractOptions) -> Self {
        MeasurementWriter {
            options,
            rows: Vec::new(),
            ids: BTreeSet::new(),
            log: LimitationLog::default(),
        }
    }

    /// Adds one sample; a non-finite value or a repeated
    /// `(name, parameters, index)` is skipped as a limitation.
    pub fn push(&mut self, sample: Sample<'_>) {
        if !sample.value.is_finite() {
            self.log.note("invalid_value", || {
                format!(
                    "{} sample {} is not a finite number; skipped",
                    sample.name, sample.sample_index
                )
            });
            return;
        }
        let mut merged = self.options.parameters.clone();
        for (key, value) in sample.parameters {
            if let Some(old) = merged.insert(key.clone(), value.clone())
                && &old != value
            {
                self.log.note("parameter_conflict", || {
                    format!(
                        "{}: the file's parameter {key}={value} replaces the import-time {key}={old}",
                        sample.name
                    )
                });
            }
        }
        let parameters_json = canonical_parameters(&merged);
        let id = measurement_id(
            &self.options.artifact_id,
            sample.name,
            parameters_json.as_deref(),
            self.options.variant.as_deref(),
            sample.sample_index,
        );
        if !self.ids.insert(id.clone()) {
            self.log.note("duplicate_sample", || {
                format!(
                    "{} sample {} appears twice; the first is kept",
                    sample.name, sample.sample_index
                )
            });
            return;
        }
        self.rows.push(Row {
            measurement_id: id,
            name: sample.name.to_owned(),
            value: sample.value,
            unit: sample.unit.to_owned(),
            sample_index: sample.sample_index,
            is_warmup: sample.is_warmup,
            parameters_json,
        });
    }

    /// Writes the rows (refusing a file without any sample) and returns the
    /// summary of the extraction.
    pub fn finish(
        self,
        sink: &mut dyn BatchSink,
        header: SummaryHeader,
    ) -> Result<ExtractionSummary, ExtractError> {
        if self.rows.is_empty() {
            return Err(ExtractError::Parse {
                message: format!("the {} file holds no benchmark samples", header.format),
                offset: None,
            });
        }
        let total = self.rows.len() as u64;
        for chunk in self.rows.chunks(self.options.batch_rows.max(1)) {
            let batch = build_batch(self.options, chunk).map_err(ExtractError::Sink)?;
            sink.write_batch(EvidenceTable::Measurements, batch)
                .map_err(ExtractError::Sink)?;
        }
        let warmups = self.rows.iter().filter(|r| r.is_warmup).count();
        let mut coverage = BTreeMap::new();
        coverage.insert("warmups".to_owned(), warmups > 0);
        Ok(ExtractionSummary {
            extractor: header.format.to_owned(),
            extractor_version: BENCHMARK_EXTRACTOR_VERSION.to_owned(),
            format: header.format.to_owned(),
            producer: header.producer,
            rows: BTreeMap::from([(EvidenceTable::Measurements.name().to_owned(), total)]),
            time_span_ns: None,
            tracks: 0,
            coverage,
            limitations: self.log.into_limitations(),
            metadata: header.metadata,
            input_bytes: header.input_bytes,
            input_events: total,
            max_event_dur_ns: None,
        })
    }
}

/// What the format module knows about the file as a whole.
pub(crate) struct SummaryHeader {
    /// The format name (also the extractor's name).
    pub format: &'static str,
    pub producer: String,
    pub metadata: BTreeMap<String, serde_json::Value>,
    pub input_bytes: u64,
}

fn build_batch(options: &ExtractOptions, rows: &[Row]) -> Result<RecordBatch, SinkError> {
    let n = rows.len();
    let mut names = DictColumn::new();
    let mut units = DictColumn::new();
    let mut trials = DictColumn::new();
    let mut variants = DictColumn::new();
    for row in rows {
        names.push(Some(&row.name));
        units.push(Some(&row.unit));
        trials.push(None);
        variants.push(options.variant.as_deref());
    }
    let columns: Vec<ArrayRef> = vec![
        const_dict(&options.run_id, n),
        const_dict(&options.artifact_id, n),
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|r| r.measurement_id.as_str()),
        )),
        names.finish(),
        Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.value))),
        units.finish(),
        Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|r| r.sample_index),
        )),
        Arc::new(BooleanArray::from(
            rows.iter().map(|r| r.is_warmup).collect::<Vec<_>>(),
        )),
        trials.finish(),
        variants.finish(),
        Arc::new(StringArray::from(
            rows.iter()
                .map(|r| r.parameters_json.as_deref())
                .collect::<Vec<_>>(),
        )),
    ];
    Ok(RecordBatch::try_new(
        EvidenceTable::Measurements.schema(),
        columns,
    )?)
}

/// Producer metadata for the run: the `keys` of `source` that are present,
/// under one `section` name (nothing when none is present).
pub(crate) fn kept_metadata(
    section: &str,
    source: &serde_json::Map<String, serde_json::Value>,
    keys: &[&str],
) -> BTreeMap<String, serde_json::Value> {
    let kept: serde_json::Map<String, serde_json::Value> = keys
        .iter()
        .filter_map(|k| source.get(*k).map(|v| ((*k).to_owned(), v.clone())))
        .collect();
    let mut metadata = BTreeMap::new();
    if !kept.is_empty() {
        metadata.insert(section.to_owned(), serde_json::Value::Object(kept));
    }
    metadata
}

/// Reads a string-valued parameter or metadata value (numbers and booleans
/// by their JSON text), so `{"n": 3}` and `{"n": "3"}` both give `3`.
pub(crate) fn scalar_text(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_depend_on_every_part_of_the_key_and_parameters_are_canonical() {
        let a = measurement_id("sha256:a", "x", None, None, 0);
        assert_eq!(a, measurement_id("sha256:a", "x", None, None, 0));
        for other in [
            measurement_id("sha256:b", "x", None, None, 0),
            measurement_id("sha256:a", "y", None, None, 0),
            measurement_id("sha256:a", "x", Some("{}"), None, 0),
            measurement_id("sha256:a", "x", None, Some("base"), 0),
            measurement_id("sha256:a", "x", None, None, 1),
        ] {
            assert_ne!(a, other);
        }
        let params = BTreeMap::from([
            ("z".to_owned(), "1".to_owned()),
            ("a".to_owned(), "x y".to_owned()),
        ]);
        assert_eq!(
            canonical_parameters(&params).as_deref(),
            Some(r#"{"a":"x y","z":"1"}"#)
        );
        assert_eq!(canonical_parameters(&BTreeMap::new()), None);
        assert_eq!(ns_per_unit("us"), Some(1e3));
        assert_eq!(ns_per_unit("fortnight"), None);
    }

    #[test]
    fn import_parameters_merge_under_file_parameters_and_conflicts_are_noted() {
        let mut options = ExtractOptions::new("run", "sha256:a");
        options.parameters.insert("n".into(), "1".into());
        options.parameters.insert("mode".into(), "fast".into());
        let mut writer = MeasurementWriter::new(&options);
        let file = BTreeMap::from([("n".to_owned(), "2".to_owned())]);
        writer.push(Sample {
            name: "b",
            value: 1.0,
            unit: "ns",
            sample_index: 0,
            is_warmup: false,
            parameters: &file,
        });
        writer.push(Sample {
            name: "b",
            value: f64::NAN,
            unit: "ns",
            sample_index: 1,
            is_warmup: false,
            parameters: &file,
        });
        assert_eq!(writer.rows.len(), 1);
        assert_eq!(
            writer.rows[0].parameters_json.as_deref(),
            Some(r#"{"mode":"fast","n":"2"}"#)
        );
        assert_eq!(writer.log.count("parameter_conflict"), 1);
        assert_eq!(writer.log.count("invalid_value"), 1);
    }
}
