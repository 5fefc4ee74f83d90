//! `nsys export --type parquetdir` / `arrowdir` folders made from a SQLite
//! export, independently of production code (rusqlite → Arrow →
//! `<TABLE>.parquet` / `<TABLE>.arrow`): the export-folder tests compare
//! their imports with the SQLite one, and the fuzz campaign damages them.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::ipc::writer::{FileWriter, StreamWriter};
use parquet::arrow::ArrowWriter;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

#[derive(Clone, Copy, PartialEq)]
enum Affinity {
    Int,
    Real,
    Text,
}

/// SQLite's affinity rules for a declared column type.
fn affinity(declared: &str) -> Affinity {
    let d = declared.to_ascii_uppercase();
    if d.contains("INT") {
        Affinity::Int
    } else if d.contains("CHAR") || d.contains("CLOB") || d.contains("TEXT") {
        Affinity::Text
    } else {
        Affinity::Real
    }
}

/// Opens an export read-only.
pub fn open(path: &Path) -> Connection {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open export")
}

/// Every table of the export, as sqlite_master lists them.
fn tables(c: &Connection) -> Vec<String> {
    let mut stmt = c
        .prepare("SELECT name FROM sqlite_master WHERE type IN ('table','view') ORDER BY name")
        .expect("list tables");
    stmt.query_map([], |r| r.get(0))
        .expect("query")
        .map(|r| r.expect("name"))
        .collect()
}

/// One table as an Arrow batch: INTEGER → Int64 (or Int32 when `narrow`
/// and every value fits, as real nsys Parquet exports do), REAL → Float64,
/// TEXT → Utf8 (invalid UTF-8 replaced), NULLs kept. A value of another
/// storage class fails.
fn table_batch(c: &Connection, table: &str, narrow: bool) -> RecordBatch {
    let mut info = c
        .prepare(&format!("PRAGMA table_info(\"{table}\")"))
        .expect("table_info");
    let cols: Vec<(String, Affinity)> = info
        .query_map([], |r| Ok((r.get::<_, String>(1)?, r.get::<_, String>(2)?)))
        .expect("columns")
        .map(|r| r.expect("column"))
        .map(|(n, t)| (n, affinity(&t)))
        .collect();
    let quoted: Vec<String> = cols.iter().map(|(n, _)| format!("\"{n}\"")).collect();
    let mut stmt = c
        .prepare(&format!("SELECT {} FROM \"{table}\"", quoted.join(", ")))
        .expect("select");
    let mut ints: Vec<Vec<Option<i64>>> = vec![Vec::new(); cols.len()];
    let mut reals: Vec<Vec<Option<f64>>> = vec![Vec::new(); cols.len()];
    let mut texts: Vec<Vec<Option<String>>> = vec![Vec::new(); cols.len()];
    let mut rows = stmt.query([]).expect("rows");
    while let Some(row) = rows.next().expect("row") {
        for (i, (name, aff)) in cols.iter().enumerate() {
            let v = row.get_ref(i).expect("cell");
            match (aff, v) {
                (Affinity::Int, ValueRef::Integer(x)) => ints[i].push(Some(x)),
                (Affinity::Int, ValueRef::Null) => ints[i].push(None),
                (Affinity::Real, ValueRef::Real(x)) => reals[i].push(Some(x)),
                (Affinity::Real, ValueRef::Null) => reals[i].push(None),
                // Arrow strings are UTF-8; a stored invalid byte becomes
                // U+FFFD, as the extractor reads it from SQLite too.
                (Affinity::Text, ValueRef::Text(t)) => {
                    texts[i].push(Some(String::from_utf8_lossy(t).into_owned()))
                }
                (Affinity::Text, ValueRef::Null) => texts[i].push(None),
                (_, other) => panic!("{table}.{name}: {other:?} does not match its type"),
            }
        }
    }
    let mut fields = Vec::new();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for (i, (name, aff)) in cols.iter().enumerate() {
        let (ty, array): (DataType, ArrayRef) = match aff {
            Affinity::Int
                if narrow && ints[i].iter().flatten().all(|&v| i32::try_from(v).is_ok()) =>
            {
                let narrowed = ints[i].iter().map(|v| v.map(|x| x as i32));
                (DataType::Int32, Arc::new(narrowed.collect::<Int32Array>()))
            }
            Affinity::Int => (DataType::Int64, Arc::new(Int64Array::from(ints[i].clone()))),
            Affinity::Real => (
                DataType::Float64,
                Arc::new(Float64Array::from(reals[i].clone())),
            ),
            Affinity::Text => (
                DataType::Utf8,
                Arc::new(StringArray::from(texts[i].clone())),
            ),
        };
        fields.push(Field::new(name, ty, true));
        arrays.push(array);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).expect("batch")
}

/// `<TABLE>.parquet` for every table.
pub fn write_parquetdir(sqlite: &Path, dir: &Path) {
    let c = open(sqlite);
    std::fs::create_dir_all(dir).expect("mkdir");
    for table in tables(&c) {
        let batch = table_batch(&c, &table, false);
        let file = File::create(dir.join(format!("{table}.parquet"))).expect("create");
        let mut w = ArrowWriter::try_new(file, batch.schema(), None).expect("parquet writer");
        w.write(&batch).expect("write");
        w.close().expect("close");
    }
}

/// `<TABLE>.arrow` for every table, alternating the IPC file and stream
/// forms and narrowing integers that fit in Int32, so one import exercises
/// both IPC readers and the integer widening.
pub fn write_arrowdir(sqlite: &Path, dir: &Path) {
    let c = open(sqlite);
    std::fs::create_dir_all(dir).expect("mkdir");
    for (i, table) in tables(&c).into_iter().enumerate() {
        let batch = table_batch(&c, &table, true);
        let file = File::create(dir.join(format!("{table}.arrow"))).expect("create");
        if i % 2 == 0 {
            let mut w = FileWriter::try_new(file, &batch.schema()).expect("ipc file");
            w.write(&batch).expect("write");
            w.finish().expect("finish");
        } else {
            let mut w = StreamWriter::try_new(file, &batch.schema()).expect("ipc stream");
            w.write(&batch).expect("write");
            w.finish().expect("finish");
        }
    }
}
