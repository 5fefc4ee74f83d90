//! rocprofv3's CSV output as evidence: one table file streamed
//! ([`extract_rocprof_csv`]), or the output folder, stored as one archive,
//! its tables read in place ([`extract_rocprof_csv_dir`]: agents first,
//! so kernels and copies are numbered by GPU; statistics files counted,
//! not read).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::json;

use crate::api::{BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary};
use crate::format_kind::FormatKind;
use crate::trace_events::builder::TraceBuilder;
use crate::ustar;

use super::csv_tables::{Agents, Table, read_table};
use super::evidence::{Counts, RunFacts, finish};

pub const ROCPROF_CSV_EXTRACTOR_NAME: &str = "rocprofv3_csv";
/// Bumped whenever the rows produced for the same input change.
pub const ROCPROF_CSV_EXTRACTOR_VERSION: &str = "2";

fn new_trace(options: &ExtractOptions) -> TraceBuilder {
    let mut trace = TraceBuilder::default();
    trace.store.arena = crate::trace_events::args_arena::ArgsArena::new(options.spill_dir.clone());
    trace
}

fn facts(format: FormatKind, agents: &Agents, tables: BTreeMap<String, String>) -> RunFacts {
    let mut metadata = BTreeMap::new();
    metadata.insert("tables".to_owned(), json!(tables));
    if !agents.gpus.is_empty() {
        let gpus: Vec<_> = (agents.gpus.iter().enumerate())
            .map(|(id, (name, cus))| json!({"id": id, "name": name, "sm_count": cus}))
            .collect();
        metadata.insert("gpus".to_owned(), json!(gpus));
    }
    RunFacts {
        extractor: ROCPROF_CSV_EXTRACTOR_NAME,
        version: ROCPROF_CSV_EXTRACTOR_VERSION,
        format,
        metadata,
    }
}

fn table_name(table: Table) -> &'static str {
    match table {
        Table::Kernels => "kernel_trace",
        Table::Copies => "memory_copy_trace",
        Table::ApiCalls => "api_trace",
        Table::Agents => "agent_info",
    }
}

/// Extracts one rocprofv3 CSV table file.
pub fn extract_rocprof_csv<R: BufRead>(
    reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let mut trace = new_trace(options);
    let (mut agents, mut counts) = (Agents::default(), Counts::default());
    let cancelled = || observer.cancelled();
    let table = read_table(reader, &mut trace, &mut agents, &mut counts, &cancelled)?
        .ok_or_else(|| ExtractError::Parse {
            message: "the CSV header is not one of rocprofv3's tables (kernel_trace, memory_copy_trace, *_api_trace, agent_info)".to_owned(),
            offset: Some(0),
        })?;
    if table != Table::Kernels {
        trace.log.note("one_table_of_several", || {
            "this is one table of a rocprofv3 output folder; import the folder to read kernels, copies and API calls together".to_owned()
        });
    }
    let tables = BTreeMap::from([("input".to_owned(), table_name(table).to_owned())]);
    let facts = facts(FormatKind::RocprofCsv, &agents, tables);
    finish(trace, counts, facts, options, sink, observer)
}

/// A member's bytes, read in place from the archive.
fn member_reader(archive: &Path, member: &ustar::Member) -> Result<impl Read, ExtractError> {
    let mut file = File::open(archive)?;
    file.seek(SeekFrom::Start(member.offset))?;
    Ok(std::io::BufReader::new(file.take(member.len)))
}

/// Extracts a stored rocprofv3 CSV output folder.
pub fn extract_rocprof_csv_dir(
    archive: &Path,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let mut members = ustar::index(&mut File::open(archive)?)?;
    // Agents first: they number the GPUs the other tables name.
    members.sort_by_key(|m| (!m.name.ends_with("agent_info.csv"), m.name.clone()));
    let mut trace = new_trace(options);
    let (mut agents, mut counts) = (Agents::default(), Counts::default());
    let cancelled = || observer.cancelled();
    let mut tables = BTreeMap::new();
    for member in &members {
        let input = member_reader(archive, member)?;
        let read = read_table(input, &mut trace, &mut agents, &mut counts, &cancelled)?;
        let what = read.map_or("not read (statistics or other)", table_name);
        tables.insert(member.name.clone(), what.to_owned());
    }
    let facts = facts(FormatKind::RocprofCsvDir, &agents, tables);
    finish(trace, counts, facts, options, sink, observer)
}
