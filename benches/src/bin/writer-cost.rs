//! The Parquet writer's CPU for one evidence file: the file's batches
//! written as flameox writes them (dictionary strings), then with every
//! dictionary column stored as its integer keys (the "interned evidence"
//! layout), each three times; with `PER_COLUMN=1`, each column alone.
//!
//! `writer-cost FILE.parquet [scope]`: `scope` also turns `run_id` and
//! `artifact_id` into keys. Output files go to the system temp folder.
//! `STATS=none|chunk|page` sets the statistics level (flameox writes
//! `page`); `NO_STATS=a,b` turns them off for the named columns.

use std::error::Error;
use std::fs::File;
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{Array, ArrayRef, AsArray, Int32Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Int32Type, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The `trace_events` properties of `engine/src/staging.rs`, with
/// statistics off for the `ids` columns.
fn props(ids: &[String]) -> Result<WriterProperties> {
    let level = match std::env::var("STATS").as_deref() {
        Ok("none") => EnabledStatistics::None,
        Ok("chunk") => EnabledStatistics::Chunk,
        _ => EnabledStatistics::Page,
    };
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1)?))
        .set_statistics_enabled(level)
        .set_max_row_group_row_count(Some(64 * 1024));
    for name in ["ts_ns", "dur_ns", "self_ns"] {
        let c = ColumnPath::from(name);
        b = b
            .set_column_dictionary_enabled(c.clone(), false)
            .set_column_encoding(c.clone(), Encoding::DELTA_BINARY_PACKED)
            .set_column_compression(c, Compression::UNCOMPRESSED);
    }
    for name in [
        "event_id",
        "parent_event_id",
        "correlation_id",
        "external_id",
        "args_json",
    ] {
        b = b.set_column_dictionary_enabled(ColumnPath::from(name), false);
    }
    let unstated = std::env::var("NO_STATS").unwrap_or_default();
    let unstated = unstated
        .split(',')
        .filter(|n| !n.is_empty())
        .map(str::to_string);
    for name in ids.iter().cloned().chain(unstated) {
        b = b.set_column_statistics_enabled(
            ColumnPath::from(name.as_str()),
            EnabledStatistics::None,
        );
    }
    Ok(b.build())
}

/// Writes `batches` once; seconds taken and bytes written.
fn write(
    schema: SchemaRef,
    batches: &[RecordBatch],
    props: WriterProperties,
) -> Result<(f64, u64)> {
    let path = std::env::temp_dir().join("flameox-writer-cost.parquet");
    let start = Instant::now();
    let mut w = ArrowWriter::try_new(File::create(&path)?, schema, Some(props))?;
    for b in batches {
        w.write(b)?;
    }
    w.close()?;
    let seconds = start.elapsed().as_secs_f64();
    Ok((seconds, std::fs::metadata(&path)?.len()))
}

/// The batches with the `interned` columns replaced by their keys.
fn as_keys(batches: &[RecordBatch], interned: &[usize]) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let Some(first) = batches.first() else {
        return Err("the file has no rows".into());
    };
    let fields: Vec<Field> = first
        .schema()
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| match interned.contains(&i) {
            true => Field::new(f.name(), DataType::Int32, f.is_nullable()),
            false => f.as_ref().clone(),
        })
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let mut out = Vec::new();
    for b in batches {
        let mut columns: Vec<ArrayRef> = Vec::new();
        for (i, c) in b.columns().iter().enumerate() {
            if interned.contains(&i) {
                let d = c.as_dictionary::<Int32Type>();
                let keys = Int32Array::new(d.keys().values().clone(), d.keys().nulls().cloned());
                columns.push(Arc::new(keys));
            } else {
                columns.push(c.clone());
            }
        }
        out.push(RecordBatch::try_new(schema.clone(), columns)?);
    }
    Ok((schema, out))
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        return Err("usage: writer-cost FILE.parquet [scope]".into());
    };
    let scope = args.get(2).is_some_and(|s| s == "scope");
    let batches: Vec<RecordBatch> = ParquetRecordBatchReaderBuilder::try_new(File::open(path)?)?
        .build()?
        .collect::<std::result::Result<_, _>>()?;
    let Some(first) = batches.first() else {
        return Err("the file has no rows".into());
    };
    let schema = first.schema();
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let interned: Vec<usize> = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| matches!(f.data_type(), DataType::Dictionary(_, _)))
        .filter(|(_, f)| scope || !matches!(f.name().as_str(), "run_id" | "artifact_id"))
        .map(|(i, _)| i)
        .collect();
    let names: Vec<String> = interned
        .iter()
        .map(|&i| schema.field(i).name().clone())
        .collect();
    let (key_schema, key_batches) = as_keys(&batches, &interned)?;
    println!("{rows} rows; as keys: {names:?}");
    for round in 1..=3 {
        let (s, bytes) = write(schema.clone(), &batches, props(&[])?)?;
        println!("round {round} strings {s:.3} s {bytes} B");
        let (s, bytes) = write(key_schema.clone(), &key_batches, props(&names)?)?;
        println!("round {round} keys    {s:.3} s {bytes} B");
    }
    if std::env::var_os("PER_COLUMN").is_some() {
        for (i, f) in schema.fields().iter().enumerate() {
            let one = Arc::new(Schema::new(vec![f.as_ref().clone()]));
            let columns = batches
                .iter()
                .map(|b| RecordBatch::try_new(one.clone(), vec![b.column(i).clone()]))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            let mut best = f64::MAX;
            let mut size = 0;
            for _ in 0..3 {
                let (s, bytes) = write(one.clone(), &columns, props(&[])?)?;
                best = best.min(s);
                size = bytes;
            }
            println!("{:>20} {best:.3} s {size} B", f.name());
        }
    }
    Ok(())
}
