//! Execution receipts → `measurements`.
//!
//! When flameox runs a workload it writes a small JSON receipt (what ran,
//! how it ended, the resources the process tree used) and stores it as an
//! artifact like any trace. This extractor turns a receipt into
//! `measurements` rows — `wall_time` (ns), `cpu_time` (ns), `peak_rss`
//! (bytes) — so executed runs publish their evidence through the same staged
//! publication path as imports. A failed or timed-out run has a receipt too:
//! its rows are published and its status lives on the run manifest.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray};
use arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::api::{BatchSink, ExtractError, ExtractOptions, ExtractionSummary};
use crate::arrow_util::{DictColumn, const_dict};
use crate::schema::EvidenceTable;

pub const RECEIPT_EXTRACTOR_NAME: &str = "execution_receipt";
pub const RECEIPT_EXTRACTOR_VERSION: &str = "1";
/// The `schema` field every receipt carries.
pub const RECEIPT_SCHEMA: &str = "flameox.execution_receipt/1";

/// Captured stream sizes, as the receipt records them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamReceipt {
    pub total_bytes: u64,
    pub kept_bytes: u64,
    pub truncated: bool,
}

/// One execution, as recorded after the process tree ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionReceipt {
    pub schema: String,
    pub run_id: String,
    pub workload: String,
    pub definition_hash: String,
    pub adapter: String,
    /// The workload's argv after substitution (never a shell string).
    pub argv: Vec<String>,
    /// What was executed (argv wrapped by the adapter).
    pub command: Vec<String>,
    /// Project-relative working folder.
    pub cwd: String,
    pub parameters: BTreeMap<String, serde_json::Value>,
    pub variant: Option<String>,
    pub trial_id: Option<String>,
    #[serde(default)]
    pub is_warmup: bool,
    pub started_at: String,
    /// `completed`, `failed`, `timed_out` or `cancelled`.
    pub status: String,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub wall_time_ns: u64,
    pub cpu_time_ns: u64,
    pub user_cpu_ns: u64,
    pub system_cpu_ns: u64,
    pub peak_rss_bytes: u64,
    pub peak_tree_rss_bytes: u64,
    pub rusage_max_rss_bytes: u64,
    pub rss_samples: u64,
    pub max_processes: u32,
    pub survivors_killed: u32,
    pub stdout: StreamReceipt,
    pub stderr: StreamReceipt,
}

impl ExecutionReceipt {
    /// `(name, value, unit)` of every measurement the receipt yields.
    pub fn measurements(&self) -> [(&'static str, f64, &'static str); 3] {
        [
            ("wall_time", self.wall_time_ns as f64, "ns"),
            ("cpu_time", self.cpu_time_ns as f64, "ns"),
            ("peak_rss", self.peak_rss_bytes as f64, "bytes"),
        ]
    }
}

fn measurement_id(artifact_id: &str, name: &str, sample_index: i64) -> String {
    let mut hasher = Sha256::new();
    hasher.update(artifact_id.as_bytes());
    hasher.update([0]);
    hasher.update(name.as_bytes());
    hasher.update([0]);
    hasher.update(sample_index.to_le_bytes());
    hex::encode(hasher.finalize())
}

/// Reads one receipt (JSON bytes) and writes its measurement rows.
pub fn extract_execution_receipt(
    bytes: &[u8],
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
) -> Result<ExtractionSummary, ExtractError> {
    let receipt: ExecutionReceipt =
        serde_json::from_slice(bytes).map_err(|e| ExtractError::Parse {
            message: format!("not an execution receipt: {e}"),
            offset: None,
        })?;
    if receipt.schema != RECEIPT_SCHEMA {
        return Err(ExtractError::Parse {
            message: format!("unsupported receipt schema {}", receipt.schema),
            offset: None,
        });
    }
    let rows = receipt.measurements();
    let n = rows.len();
    let parameters = serde_json::to_string(&receipt.parameters).ok();
    let mut names = DictColumn::new();
    let mut units = DictColumn::new();
    let mut trials = DictColumn::new();
    let mut variants = DictColumn::new();
    for (name, _, unit) in &rows {
        names.push(Some(name));
        units.push(Some(unit));
        trials.push(receipt.trial_id.as_deref());
        variants.push(receipt.variant.as_deref());
    }
    let columns: Vec<ArrayRef> = vec![
        const_dict(&options.run_id, n),
        const_dict(&options.artifact_id, n),
        Arc::new(StringArray::from_iter_values(rows.iter().map(
            |(name, _, _)| measurement_id(&options.artifact_id, name, 0),
        ))),
        names.finish(),
        Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.1))),
        units.finish(),
        Arc::new(Int64Array::from(vec![0i64; n])),
        Arc::new(BooleanArray::from(vec![receipt.is_warmup; n])),
        trials.finish(),
        variants.finish(),
        Arc::new(StringArray::from(vec![parameters.as_deref(); n])),
    ];
    let batch = RecordBatch::try_new(EvidenceTable::Measurements.schema(), columns)
        .map_err(|e| ExtractError::Sink(Box::new(e)))?;
    sink.write_batch(EvidenceTable::Measurements, batch)
        .map_err(ExtractError::Sink)?;
    Ok(ExtractionSummary {
        extractor: RECEIPT_EXTRACTOR_NAME.into(),
        extractor_version: RECEIPT_EXTRACTOR_VERSION.into(),
        format: "execution_receipt".into(),
        producer: "flameox".into(),
        rows: BTreeMap::from([(EvidenceTable::Measurements.name().to_owned(), n as u64)]),
        input_bytes: bytes.len() as u64,
        input_events: 1,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Collect(Vec<RecordBatch>);
    impl BatchSink for Collect {
        fn write_batch(
            &mut self,
            _table: EvidenceTable,
            batch: RecordBatch,
        ) -> Result<(), crate::api::SinkError> {
            self.0.push(batch);
            Ok(())
        }
    }

    fn receipt() -> serde_json::Value {
        serde_json::json!({
            "schema": RECEIPT_SCHEMA, "run_id": "r", "workload": "w", "definition_hash": "h",
            "adapter": "process", "argv": ["p"], "command": ["p"], "cwd": ".",
            "parameters": { "n": 10 }, "variant": null, "trial_id": "t", "started_at": "now",
            "status": "failed", "exit_code": 1, "signal": null, "wall_time_ns": 5000,
            "cpu_time_ns": 3000, "user_cpu_ns": 2000, "system_cpu_ns": 1000,
            "peak_rss_bytes": 4096, "peak_tree_rss_bytes": 4096, "rusage_max_rss_bytes": 2048,
            "rss_samples": 3, "max_processes": 1, "survivors_killed": 0,
            "stdout": { "total_bytes": 0, "kept_bytes": 0, "truncated": false },
            "stderr": { "total_bytes": 0, "kept_bytes": 0, "truncated": false }
        })
    }

    #[test]
    fn a_receipt_becomes_three_measurement_rows_with_stable_ids() {
        let bytes = serde_json::to_vec(&receipt()).unwrap();
        let options = ExtractOptions::new("run-1", "sha256:aa");
        let mut sink = Collect(Vec::new());
        let summary = extract_execution_receipt(&bytes, &options, &mut sink).unwrap();
        assert_eq!(summary.rows["measurements"], 3);
        let batch = &sink.0[0];
        assert_eq!(batch.schema(), EvidenceTable::Measurements.schema());
        let values = batch
            .column_by_name("value")
            .unwrap()
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap();
        assert_eq!(values.values(), &[5000.0, 3000.0, 4096.0]);
        let ids = batch.column_by_name("measurement_id").unwrap();
        let ids = ids.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(ids.value(0), measurement_id("sha256:aa", "wall_time", 0));
        assert_ne!(ids.value(0), ids.value(1));
    }

    #[test]
    fn other_json_is_a_parse_error() {
        let mut wrong = receipt();
        wrong["schema"] = "something/9".into();
        let mut sink = Collect(Vec::new());
        let options = ExtractOptions::new("run-1", "sha256:aa");
        for bytes in [serde_json::to_vec(&wrong).unwrap(), b"{}".to_vec()] {
            let err = extract_execution_receipt(&bytes, &options, &mut sink).unwrap_err();
            assert!(matches!(err, ExtractError::Parse { .. }));
        }
        assert!(sink.0.is_empty());
    }
}
