//! Test helpers: an in-memory sink and column accessors.
#![allow(dead_code)]

pub mod fuzz;
pub mod perfetto;
pub mod proto_gen;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arrow::array::{Array, AsArray, DictionaryArray, StringArray};
use arrow::datatypes::{DataType, Float64Type, Int32Type, Int32Type as I32, Int64Type, UInt64Type};
use arrow::record_batch::RecordBatch;
use flameox_extractors::{
    BatchSink, EvidenceTable, ExtractError, ExtractOptions, ExtractionSummary, NoObserver,
    SinkError, extract_chrome_json,
};

/// Collects every batch, checking each one's schema.
#[derive(Default, Debug)]
pub struct MemorySink {
    pub batches: BTreeMap<EvidenceTable, Vec<RecordBatch>>,
}

impl BatchSink for MemorySink {
    fn write_batch(&mut self, table: EvidenceTable, batch: RecordBatch) -> Result<(), SinkError> {
        assert_eq!(batch.schema(), table.schema(), "schema of {}", table.name());
        self.batches.entry(table).or_default().push(batch);
        Ok(())
    }
}

impl MemorySink {
    pub fn rows(&self, table: EvidenceTable) -> usize {
        self.batches
            .get(&table)
            .map_or(0, |b| b.iter().map(|b| b.num_rows()).sum())
    }

    fn column(&self, table: EvidenceTable, name: &str) -> Vec<arrow::array::ArrayRef> {
        self.batches
            .get(&table)
            .map(|bs| {
                bs.iter()
                    .map(|b| b.column_by_name(name).unwrap().clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn i64s(&self, table: EvidenceTable, name: &str) -> Vec<Option<i64>> {
        let mut out = Vec::new();
        for c in self.column(table, name) {
            match c.data_type() {
                DataType::Int64 => out.extend(c.as_primitive::<Int64Type>().iter()),
                DataType::UInt64 => out.extend(
                    c.as_primitive::<UInt64Type>()
                        .iter()
                        .map(|v| v.map(|v| v as i64)),
                ),
                DataType::Int32 => {
                    out.extend(c.as_primitive::<I32>().iter().map(|v| v.map(i64::from)))
                }
                other => panic!("{name} is {other:?}"),
            }
        }
        out
    }

    pub fn f64s(&self, table: EvidenceTable, name: &str) -> Vec<f64> {
        self.column(table, name)
            .iter()
            .flat_map(|c| c.as_primitive::<Float64Type>().values().to_vec())
            .collect()
    }

    pub fn strs(&self, table: EvidenceTable, name: &str) -> Vec<Option<String>> {
        let mut out = Vec::new();
        for c in self.column(table, name) {
            match c.data_type() {
                DataType::Utf8 => {
                    let a = c.as_any().downcast_ref::<StringArray>().unwrap();
                    out.extend(a.iter().map(|v| v.map(str::to_string)));
                }
                DataType::Dictionary(_, _) => {
                    let d = c
                        .as_any()
                        .downcast_ref::<DictionaryArray<Int32Type>>()
                        .unwrap();
                    let values = d.values().as_any().downcast_ref::<StringArray>().unwrap();
                    for k in d.keys().iter() {
                        out.push(k.map(|k| values.value(k as usize).to_string()));
                    }
                }
                other => panic!("{name} is {other:?}"),
            }
        }
        out
    }
}

pub fn corpus(rel: &str) -> PathBuf {
    Path::new(env!("FLAMEOX_CORPUS_DIR")).join(rel)
}

pub fn options() -> ExtractOptions {
    ExtractOptions::new("run-1", "artifact-1")
}

pub fn extract_bytes(bytes: &[u8]) -> Result<(ExtractionSummary, MemorySink), ExtractError> {
    extract_with(bytes, &options())
}

pub fn extract_with(
    bytes: &[u8],
    opts: &ExtractOptions,
) -> Result<(ExtractionSummary, MemorySink), ExtractError> {
    let mut sink = MemorySink::default();
    let summary = extract_chrome_json(bytes, opts, &mut sink, &NoObserver)?;
    Ok((summary, sink))
}

pub fn limitation(summary: &ExtractionSummary, code: &str) -> u64 {
    summary
        .limitations
        .iter()
        .find(|l| l.code == code)
        .map_or(0, |l| l.count)
}
