//! The parallel writer must write the very bytes `ArrowWriter` writes, for
//! every evidence table's schema and properties, across row group
//! boundaries that fall inside batches.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, DictionaryArray, Float64Array, Int32Array, Int64Array, StringArray,
    UInt64Array,
};
use datafusion::arrow::datatypes::{DataType, Int32Type};
use flameox_extractors::EvidenceTable;

use super::*;
use crate::staging::writer_properties;

/// Reproducible pseudo-random values: a counter through a multiplicative mix.
struct Seeded(u64);

impl Seeded {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        (self.0 ^ (self.0 >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9) >> 7
    }
}

/// A column of `rows` values for `data_type`, a tenth null when nullable.
fn column(data_type: &DataType, nullable: bool, rows: usize, rng: &mut Seeded) -> ArrayRef {
    let null = |rng: &mut Seeded| nullable && rng.next().is_multiple_of(10);
    match data_type {
        DataType::UInt64 => Arc::new(UInt64Array::from_iter(
            (0..rows).map(|_| (!null(rng)).then(|| rng.next() % 1_000_000)),
        )),
        DataType::Int64 => Arc::new(Int64Array::from_iter(
            (0..rows).map(|_| (!null(rng)).then(|| (rng.next() % 5_000_000) as i64)),
        )),
        DataType::Int32 => Arc::new(Int32Array::from_iter(
            (0..rows).map(|_| (!null(rng)).then(|| (rng.next() % 40) as i32)),
        )),
        DataType::Float64 => Arc::new(Float64Array::from_iter(
            (0..rows).map(|_| (!null(rng)).then(|| (rng.next() % 1000) as f64 / 7.0)),
        )),
        DataType::Boolean => Arc::new(BooleanArray::from_iter(
            (0..rows).map(|_| (!null(rng)).then(|| rng.next().is_multiple_of(3))),
        )),
        DataType::Utf8 => {
            Arc::new(StringArray::from_iter((0..rows).map(|_| {
                (!null(rng)).then(|| format!("{{\"v\":{}}}", rng.next() % 100_000))
            })))
        }
        DataType::Dictionary(_, _) => {
            let names = ["aten::mm", "cudaLaunchKernel", "ncclKernel", "Memcpy HtoD"];
            Arc::new(DictionaryArray::<Int32Type>::from_iter((0..rows).map(
                |_| (!null(rng)).then(|| names[(rng.next() % names.len() as u64) as usize]),
            )))
        }
        other => panic!("no generator for {other:?}"),
    }
}

fn batch(table: EvidenceTable, rows: usize, rng: &mut Seeded) -> RecordBatch {
    let schema = table.schema();
    let columns = schema
        .fields()
        .iter()
        .map(|f| column(f.data_type(), f.is_nullable(), rows, rng))
        .collect();
    RecordBatch::try_new(schema, columns).unwrap()
}

#[test]
fn files_are_byte_identical_to_arrow_writer() {
    let dir = tempfile::tempdir().unwrap();
    for table in EvidenceTable::ALL {
        let mut rng = Seeded(0x2545_F491_4F6C_DD1D ^ table as u64);
        // Batches that straddle the 64 Ki-row boundary, tiny ones included.
        let batches: Vec<RecordBatch> = [50_000, 3, 20_000, 70_000, 1, 8_192]
            .iter()
            .map(|&rows| batch(table, rows, &mut rng))
            .collect();
        let reference = dir.path().join(format!("{}-arrow.parquet", table.name()));
        let parallel = dir
            .path()
            .join(format!("{}-parallel.parquet", table.name()));
        let props = writer_properties(table).unwrap();
        let mut writer = ArrowWriter::try_new(
            File::create(&reference).unwrap(),
            table.schema(),
            Some(props),
        )
        .unwrap();
        for b in &batches {
            writer.write(b).unwrap();
        }
        writer.close().unwrap();
        let props = writer_properties(table).unwrap();
        let mut writer =
            RowGroupWriter::try_new(File::create(&parallel).unwrap(), table.schema(), props)
                .unwrap();
        for b in &batches {
            writer.write(b).unwrap();
        }
        assert_eq!(
            writer.row_groups,
            2,
            "{}: full row groups so far",
            table.name()
        );
        writer.into_inner().unwrap();
        let (a, b) = (
            std::fs::read(&reference).unwrap(),
            std::fs::read(&parallel).unwrap(),
        );
        assert!(a.len() > 100_000, "{}: {} bytes", table.name(), a.len());
        assert!(a == b, "{}: the files differ", table.name());
    }
}
