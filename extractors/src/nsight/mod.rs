//! The NVIDIA Nsight Systems extractor: `nsys export --type sqlite` files
//! and `--type parquetdir` / `arrowdir` folders (stored as one archive).
//!
//! Both are path-based: SQLite is opened read-only (`immutable=1`, no
//! writes, no journal); a folder archive is read member by member in place
//! ([`export_dir`]). The per-table readers see rows ([`row`]) through
//! [`source`], so the same tables give the same evidence from either. Each
//! CUPTI and NVTX table is streamed row by row into the shared
//! [`crate::trace_events`] builder; at the end its nesting, emission and
//! slice reductions write the tables (as for Chrome JSON and Perfetto).
//!
//! What goes where:
//! - `CUPTI_ACTIVITY_KIND_KERNEL` → `kernel` rows on a GPU stream track per
//!   `(process, device, context, stream)`; name = demangled name (short name,
//!   grid/block, registers and shared memory in `args_json`).
//! - `_RUNTIME` / `_DRIVER` → `runtime_api` / `driver_api` (`graph_launch`
//!   for `*GraphLaunch`) on the calling thread's track.
//! - `_MEMCPY` / `_MEMSET` → `memcpy` / `memset` on the stream track, with
//!   `bytes`.
//! - `_SYNCHRONIZATION` → `sync` on a separate per-stream synchronization
//!   track (a host wait overlaps the kernels it waits for, so it must not
//!   become their parent on the stream track).
//! - `_GRAPH_TRACE` (whole-graph tracing) → `graph_launch` device activity
//!   on the stream track, named `CUDA graph <graphId>`.
//! - `NVTX_EVENTS` → push/pop ranges as `nvtx_range` slices on the
//!   thread's track, start/end ranges on a per-thread NVTX async track,
//!   marks as instants; without `ProfilerStep#N`, the outermost range on a
//!   thread is the phase of what it contains (kernels through correlation).
//!
//! pid = `(globalTid >> 24) & 0xFFFFFF`, tid = `globalTid & 0xFFFFFF`.

mod args;
pub mod export_dir;
pub mod formats;
mod host_tables;
mod interrupt;
mod ipc_check;
mod lookups;
mod names;
mod read_ahead;
mod row;
pub mod schema;
mod source;
#[cfg(test)]
mod spill_tests;
mod summary;
mod tables;

use std::collections::BTreeMap;

use crate::{FastHashMap, FastHashSet};
use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use serde_json::{Map, Value, json};

use args::ArgsJson;
pub use names::api_base;
use names::{LabelKey, copy_kind, mem_kind, sync_name};

use crate::api::{
    ARGS_TRUNCATED_MARKER, BatchSink, ExtractError, ExtractObserver, ExtractOptions,
    ExtractionSummary,
};
use crate::format_kind::FormatKind;
use crate::trace_events::args_arena::bound_args;
use crate::trace_events::builder::TraceBuilder;
use crate::trace_events::device_columns::DeviceFields;
use crate::trace_events::emit;
use crate::trace_events::emitter::Emitter;
use crate::trace_events::external::{SliceReductions, Spill};
use crate::trace_events::ids::{NO_ID, NONE};
use crate::trace_events::in_memory::{RangePhases, in_memory_events};
use crate::trace_events::kinds::{EventKind, classify};
use crate::trace_events::spill_phases::PhaseCollector;
use crate::trace_events::store::NewEvent;
use crate::trace_events::tracks::{Ident, TrackKind, Tracks};
use export_dir::ExportDirTables;
use row::{Cell, RowView, int, text};
use schema::{Schema, Table};
use source::TableSource;
use summary::ExportFacts;

pub const NSIGHT_EXTRACTOR_NAME: &str = "nsight_systems_sqlite";
/// The same readers over a stored parquetdir/arrowdir folder (same version).
pub const NSIGHT_EXPORT_DIR_EXTRACTOR_NAME: &str = "nsight_systems_export_dir";
/// Bumped whenever the rows or the metadata produced for the same input
/// change (a new version supersedes; the same one reuses the generation).
pub const NSIGHT_EXTRACTOR_VERSION: &str = "4";

/// Rows between cancellation polls.
const POLL_EVERY: u64 = 4096;

pub const KERNEL_TABLE: &str = "CUPTI_ACTIVITY_KIND_KERNEL";
pub const RUNTIME_TABLE: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";
pub const DRIVER_TABLE: &str = "CUPTI_ACTIVITY_KIND_DRIVER";
pub const MEMCPY_TABLE: &str = "CUPTI_ACTIVITY_KIND_MEMCPY";
pub const MEMSET_TABLE: &str = "CUPTI_ACTIVITY_KIND_MEMSET";
pub const SYNC_TABLE: &str = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
pub const GRAPH_TRACE_TABLE: &str = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE";
pub const NVTX_TABLE: &str = "NVTX_EVENTS";

/// The activity tables, in reading order; all but the first two are
/// optional (an export may lack them without losing kernels or launches).
const ACTIVITY_TABLES: [&str; 8] = [
    KERNEL_TABLE,
    RUNTIME_TABLE,
    DRIVER_TABLE,
    MEMCPY_TABLE,
    MEMSET_TABLE,
    SYNC_TABLE,
    GRAPH_TRACE_TABLE,
    NVTX_TABLE,
];

/// Tables read besides [`ACTIVITY_TABLES`], or deliberately skipped as
/// descriptive (enums, target info, export metadata).
const OTHER_READ_TABLES: [&str; 9] = [
    host_tables::OSRT_TABLE,
    host_tables::SAMPLES_TABLE,
    host_tables::CALLCHAINS_TABLE,
    "StringIds",
    "ThreadNames",
    "PROCESSES",
    "TARGET_INFO_GPU",
    "TARGET_INFO_CUDA_DEVICE",
    "META_DATA_EXPORT",
];
const DESCRIPTIVE_PREFIXES: [&str; 10] = [
    "ENUM_",
    "TARGET_INFO_",
    "META_DATA_",
    "EXPORT_META_DATA",
    "ANALYSIS_",
    "PROFILER_OVERHEAD",
    "DIAGNOSTIC_EVENT",
    "PROCESSSTREAMS",
    "UNWINDMETHODTYPE",
    "SQLITE_",
];

/// NVTX `eventType` codes (`ENUM_NSYS_EVENT_TYPE`; the public ones are
/// also what the benches' export generator writes).
pub const NVTX_MARK: i64 = 34;
const NVTX_THREAD: i64 = 39;
pub const NVTX_PUSH_POP: i64 = 59;
const NVTX_START_END: i64 = 60;
const NVTXT_PUSH_POP: i64 = 70;
const NVTXT_START_END: i64 = 71;
pub const NVTX_DOMAIN_CREATE: i64 = 75;

impl From<rusqlite::Error> for ExtractError {
    fn from(e: rusqlite::Error) -> Self {
        ExtractError::Parse {
            message: format!("reading the Nsight Systems SQLite export failed: {e}"),
            offset: None,
        }
    }
}

/// `pid` of a `globalTid` / `globalPid`.
pub fn pid_of(global: i64) -> i64 {
    (global >> 24) & 0xFF_FFFF
}

/// `tid` of a `globalTid`.
pub fn tid_of(global: i64) -> i64 {
    global & 0xFF_FFFF
}

/// `file:` URI of a path, percent-encoded, opened immutable.
fn immutable_uri(path: &Path) -> String {
    let mut out = String::from("file:");
    for &b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out.push_str("?mode=ro&immutable=1");
    out
}

/// Opens an export read-only, never writing or creating anything.
pub fn open_readonly(path: &Path) -> Result<Connection, ExtractError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(immutable_uri(path), flags).map_err(|e| {
        ExtractError::Parse {
            message: format!("not a readable SQLite database: {e}"),
            offset: Some(0),
        }
    })?;
    // The header alone does not prove the file is a database.
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    })
    .map_err(|e| ExtractError::Parse {
        message: format!("not a readable SQLite database: {e}"),
        offset: Some(0),
    })?;
    Ok(conn)
}

/// Whether a SQLite file whose first 64 KiB did not show Nsight tables is
/// an Nsight export after all (its schema lies further in): its tables
/// are read. A file SQLite cannot read (truncated, corrupt) is a parse
/// error, not "some other SQLite database".
pub fn sqlite_is_nsys_export(path: &Path) -> Result<bool, ExtractError> {
    let conn = open_readonly(path)?;
    let mut names = Vec::new();
    let mut stmt = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        names.push(row.get::<_, String>(0)?);
    }
    Ok(export_dir::is_nsys_table_set(
        names.iter().map(String::as_str),
    ))
}

/// One row about to enter the store.
struct Ev {
    ts: Option<i64>,
    end: Option<i64>,
    instant: bool,
    name: u32,
    cat: u32,
    kind: EventKind,
    track: u32,
    device_activity: bool,
    device: Option<i64>,
    context: Option<i64>,
    stream: Option<i64>,
    correlation: Option<i64>,
    graph_id: Option<i64>,
    graph_node_id: Option<i64>,
    bytes: Option<i64>,
}

impl Ev {
    /// A host slice from fields 0 (start) and 1 (end) of `row`, with no
    /// device, stream, correlation, graph or bytes (callers add theirs).
    fn at(row: &dyn RowView, name: u32, cat: u32, kind: EventKind, track: u32) -> Ev {
        Ev {
            ts: int(row, 0),
            end: int(row, 1),
            instant: false,
            name,
            cat,
            kind,
            track,
            device_activity: false,
            device: None,
            context: None,
            stream: None,
            correlation: None,
            graph_id: None,
            graph_node_id: None,
            bytes: None,
        }
    }
}

struct Reader<'a> {
    source: &'a TableSource<'a>,
    schema: Schema,
    observer: &'a dyn ExtractObserver,
    max_args: usize,
    p: TraceBuilder,
    /// `StringIds.id` → interned string.
    ids: FastHashMap<i64, u32>,
    gpu_tracks: FastHashMap<(i64, i64, i64, i64), u32>,
    sync_tracks: FastHashMap<(i64, i64, i64, i64), u32>,
    range_tracks: FastHashMap<(i64, i64), u32>,
    /// CUDA device id → device name.
    device_names: FastHashMap<i64, String>,
    next_event: u64,
    /// Rows read per table.
    read: BTreeMap<String, u64>,
    cats: FastHashMap<&'static str, u32>,
    /// `(category, name)` → kind, classified once per pair.
    kinds: FastHashMap<(u32, u32), EventKind>,
    /// Row names built from enum columns, built once per distinct key.
    labels: FastHashMap<LabelKey, u32>,
    /// Where and after how many events the store goes to spill runs.
    spill_to: Option<(&'a Path, usize)>,
    spill: Option<Spill>,
    /// The `kernel` category once interned.
    kernel_cat: u32,
    /// Correlation ids of runtime / driver launches and of kernels, for
    /// the count of kernels tied to their launch (8 bytes each).
    launch_correlations: Vec<i64>,
    kernel_correlations: Vec<i64>,
}

impl<'a> Reader<'a> {
    /// Polls cancellation, and writes a spill run when the store is full.
    fn poll(&mut self) -> Result<(), ExtractError> {
        if self.next_event.is_multiple_of(POLL_EVERY) && self.observer.cancelled() {
            return Err(ExtractError::Cancelled);
        }
        if let Some((dir, budget)) = self.spill_to
            && self.p.store.len() >= budget
        {
            let spill = match &mut self.spill {
                Some(spill) => spill,
                None => self.spill.insert(Spill::create(
                    dir,
                    budget,
                    PhaseCollector::with_ranges(EventKind::NvtxRange),
                )?),
            };
            if spill.due(&self.p.store) {
                spill.write_run(&mut self.p, false)?;
            }
        }
        Ok(())
    }

    fn cat(&mut self, name: &'static str) -> u32 {
        if let Some(&c) = self.cats.get(name) {
            return c;
        }
        let c = self.p.strings.intern(name);
        self.cats.insert(name, c);
        if name == "kernel" {
            self.kernel_cat = c;
        }
        c
    }

    /// A name column: a `StringIds` id or inline text.
    fn name_at(&mut self, row: &dyn RowView, i: usize) -> Option<u32> {
        match row.cell(i) {
            Cell::Int(id) => self.ids.get(&id).copied(),
            Cell::Text(t) if !t.is_empty() => {
                Some(self.p.strings.intern(&String::from_utf8_lossy(t)))
            }
            _ => None,
        }
    }

    fn thread_track(&mut self, global_tid: Option<i64>) -> u32 {
        match global_tid {
            Some(g) => self
                .p
                .tracks
                .thread(Ident::Int(pid_of(g)), Ident::Int(tid_of(g))),
            None => self.p.tracks.thread(Ident::None, Ident::None),
        }
    }

    fn device_label(&self, device: i64) -> String {
        match self.device_names.get(&device) {
            Some(name) => format!("GPU {device} ({name})"),
            None => format!("GPU {device}"),
        }
    }

    /// The track of one device stream (`sync` = its synchronization track:
    /// host waits overlap the kernels they wait for, so they cannot share
    /// the stream's nesting).
    fn stream_track(
        &mut self,
        sync: bool,
        global_pid: Option<i64>,
        device: i64,
        context: i64,
        stream: i64,
    ) -> u32 {
        let pid = global_pid.map_or(NONE, pid_of);
        let key = (pid, device, context, stream);
        let known = if sync {
            &self.sync_tracks
        } else {
            &self.gpu_tracks
        };
        if let Some(&t) = known.get(&key) {
            return t;
        }
        let label = format!(
            "{}{} context {} stream {}",
            if sync { "CUDA synchronization: " } else { "" },
            self.device_label(device),
            show(context),
            show(stream)
        );
        let name = self.p.strings.intern(&label);
        let pid_ident = if pid == NONE {
            Ident::None
        } else {
            Ident::Int(pid)
        };
        let kind = if sync {
            TrackKind::Async
        } else {
            TrackKind::GpuStream
        };
        let t = self.p.tracks.add_named(kind, pid_ident, Ident::None, name);
        let track = &mut self.p.tracks.list[t as usize];
        track.device = device;
        track.stream = stream;
        if sync {
            self.sync_tracks.insert(key, t);
        } else {
            self.gpu_tracks.insert(key, t);
        }
        t
    }

    fn range_track(&mut self, global_tid: Option<i64>) -> u32 {
        let key = global_tid.map_or((NONE, NONE), |g| (pid_of(g), tid_of(g)));
        if let Some(&t) = self.range_tracks.get(&key) {
            return t;
        }
        let label = match global_tid {
            Some(g) => format!("NVTX start/end ranges (thread {})", tid_of(g)),
            None => "NVTX start/end ranges".to_string(),
        };
        let name = self.p.strings.intern(&label);
        let pid_ident = if key.0 == NONE {
            Ident::None
        } else {
            Ident::Int(key.0)
        };
        let t = self
            .p
            .tracks
            .add_named(TrackKind::Async, pid_ident, Ident::None, name);
        self.range_tracks.insert(key, t);
        t
    }

    /// Adds one row with its `args_json` text (`None`: no args).
    fn push(&mut self, e: Ev, args: Option<&str>) {
        let Some(ts) = e.ts else {
            self.p.log.note("missing_timestamp", || {
                "a row has no start time and was skipped".to_string()
            });
            return;
        };
        let dur = if e.instant {
            0
        } else {
            match e.end {
                None => {
                    self.p.log.note("unterminated_slice", || {
                        "a row has no end time; kept with dur_ns = -1".to_string()
                    });
                    -1
                }
                Some(end) if end < ts => {
                    self.p.log.note("negative_duration", || {
                        "a row ends before it starts; duration clamped to 0".to_string()
                    });
                    0
                }
                Some(end) => end.saturating_sub(ts),
            }
        };
        let args = args.map(|t| bound_args(t, self.max_args, ARGS_TRUNCATED_MARKER));
        if let Some(c) = e.correlation {
            if !e.device_activity && e.kind.is_launch() {
                self.launch_correlations.push(c);
            }
            if e.cat == self.kernel_cat {
                self.kernel_correlations.push(c);
            }
        }
        let o = |v: Option<i64>| v.unwrap_or(NONE);
        let event_id = self.next_event;
        self.next_event += 1;
        self.p.store.push(
            NewEvent {
                event_id,
                ts,
                dur,
                name: e.name,
                cat: e.cat,
                kind: e.kind,
                track: e.track,
                device_activity: e.device_activity,
                fields: DeviceFields {
                    device: o(e.device),
                    context: o(e.context),
                    stream: o(e.stream),
                    correlation: o(e.correlation),
                    external: NONE,
                    graph_id: o(e.graph_id),
                    graph_node_id: o(e.graph_node_id),
                    bytes: o(e.bytes),
                },
            },
            e.instant,
            args.as_deref(),
        );
    }

    fn count(&mut self, table: &str, n: u64) {
        *self.read.entry(table.to_string()).or_insert(0) += n;
    }
}

/// A table ready to be read, under the name its rows are counted as.
struct TableSel {
    name: &'static str,
    table: Table,
}

fn show(v: i64) -> String {
    if v == NONE {
        "?".to_string()
    } else {
        v.to_string()
    }
}

/// Extracts an Nsight Systems SQLite export at `path`.
pub fn extract_nsight_sqlite(
    path: &Path,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let file_len = std::fs::metadata(path)?.len();
    let interrupts = interrupt::SqliteInterrupts::default();
    let conn = open_readonly(path)?;
    interrupts.register(&conn);
    let source = TableSource::Sqlite {
        conn,
        path: path.to_path_buf(),
        interrupts: &interrupts,
    };
    let input = Input {
        extractor: NSIGHT_EXTRACTOR_NAME,
        format: FormatKind::NsightSqlite,
        bytes: file_len,
    };
    let result = interrupts.watch(observer, || {
        extract_tables(&source, input, options, sink, observer)
    });
    match result {
        // An interrupted statement fails with SQLite's own error.
        Err(_) if interrupts.stopped() => Err(ExtractError::Cancelled),
        other => other.map(|(summary, _)| summary),
    }
}

/// Extracts a stored `nsys export --type parquetdir` / `arrowdir` folder:
/// `archive` is the ustar archive the engine kept it as
/// ([`crate::ustar`]); its members are read in place.
pub fn extract_nsight_export_dir(
    archive: &Path,
    format: FormatKind,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let file_len = std::fs::metadata(archive)?.len();
    let source = TableSource::ExportDir(ExportDirTables::open(archive)?);
    let input = Input {
        extractor: NSIGHT_EXPORT_DIR_EXTRACTOR_NAME,
        format,
        bytes: file_len,
    };
    extract_tables(&source, input, options, sink, observer).map(|(summary, _)| summary)
}

/// What is being read, for the summary.
struct Input {
    extractor: &'static str,
    format: FormatKind,
    bytes: u64,
}

/// Reads every known table of `source` into evidence.
/// Reads the tables into `sink`; also returns how many events went
/// through spill runs ([`crate::trace_events::external`]).
fn extract_tables(
    source: &TableSource,
    input: Input,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<(ExtractionSummary, u64), ExtractError> {
    let file_len = input.bytes;
    let schema = source.schema()?;
    let mut p = TraceBuilder::default();
    p.store.arena = crate::trace_events::args_arena::ArgsArena::new(options.spill_dir.clone());
    let mut r = Reader {
        source,
        schema,
        observer,
        max_args: options.max_args_bytes,
        p,
        ids: FastHashMap::default(),
        gpu_tracks: FastHashMap::default(),
        sync_tracks: FastHashMap::default(),
        range_tracks: FastHashMap::default(),
        device_names: FastHashMap::default(),
        next_event: 0,
        read: BTreeMap::new(),
        cats: FastHashMap::default(),
        kinds: FastHashMap::default(),
        labels: FastHashMap::default(),
        spill_to: options
            .spill_dir
            .as_deref()
            .map(|dir| (dir, options.spill_after_events)),
        spill: None,
        kernel_cat: NO_ID,
        launch_correlations: Vec::new(),
        kernel_correlations: Vec::new(),
    };
    r.read_strings()?;
    r.read_names()?;
    let gpus = r.read_devices()?;
    let mut present: BTreeMap<&'static str, bool> = BTreeMap::new();
    for table in ACTIVITY_TABLES {
        let Some(t) = r.schema.table(table) else {
            present.insert(table, false);
            continue;
        };
        present.insert(table, true);
        let sel = TableSel {
            name: table,
            table: t,
        };
        match table {
            KERNEL_TABLE => r.read_kernels(&sel)?,
            RUNTIME_TABLE => r.read_calls(&sel, "cuda_runtime")?,
            DRIVER_TABLE => r.read_calls(&sel, "cuda_driver")?,
            MEMCPY_TABLE => r.read_memcpy(&sel)?,
            MEMSET_TABLE => r.read_memset(&sel)?,
            SYNC_TABLE => r.read_sync(&sel)?,
            GRAPH_TRACE_TABLE => r.read_graph_trace(&sel)?,
            _ => r.read_nvtx(&sel)?,
        }
    }
    let os_runtime = match r.schema.table(host_tables::OSRT_TABLE) {
        Some(table) => {
            r.read_calls(
                &TableSel {
                    name: host_tables::OSRT_TABLE,
                    table,
                },
                "os_runtime",
            )?;
            true
        }
        None => false,
    };
    let mut cpu_samples = host_tables::CpuSamples::default();
    if let (Some(chains), Some(samples)) = (
        r.schema.table(host_tables::CALLCHAINS_TABLE),
        r.schema.table(host_tables::SAMPLES_TABLE),
    ) {
        let chains = TableSel {
            name: host_tables::CALLCHAINS_TABLE,
            table: chains,
        };
        let samples = TableSel {
            name: host_tables::SAMPLES_TABLE,
            table: samples,
        };
        r.read_cpu_samples(&chains, &samples, &mut cpu_samples)?;
    }
    observer.bytes_read(file_len);
    if observer.cancelled() {
        return Err(ExtractError::Cancelled);
    }
    let export = r.export_metadata()?;
    let not_extracted = r.tables_not_extracted()?;
    let kernel_cols = r.schema.table(KERNEL_TABLE).map(|t| {
        (
            t.has(&["correlationId"]),
            t.has(&["streamId"]),
            t.has(&["gridX"]),
        )
    });
    let fingerprint = r.schema.fingerprint();
    r.p.store.arena.finish_writes()?;
    let rows_read = std::mem::take(&mut r.read);
    let device_names: BTreeMap<i64, String> = r.device_names.drain().collect();
    let range_tracks = std::mem::take(&mut r.range_tracks);
    let correlated = summary::correlated_kernels(
        std::mem::take(&mut r.launch_correlations),
        &std::mem::take(&mut r.kernel_correlations),
    );
    let spill = r.spill.take();
    let mut p = r.p;

    // Reading is over: what follows is nesting and emission.
    let _phase = crate::phase_cpu::enter(crate::phase_cpu::Phase::Nest);
    let thread_of_track = thread_of_track(&p.tracks, &range_tracks);
    let mut em = Emitter::new(options, sink);
    let events = match spill {
        // The reductions come back unwritten: CPU samples may join them.
        Some(spill) => spill.finish_with(
            &mut p,
            &mut em,
            observer,
            &thread_of_track,
            Some(SliceReductions::default()),
        )?,
        None => {
            let ranges = RangePhases {
                kind: EventKind::NvtxRange,
                thread_of_track: &thread_of_track,
            };
            in_memory_events(&mut p, &mut em, observer, Some(ranges))?
        }
    };
    emit::emit_tracks(&mut em, &p)?;
    emit::emit_counters(&mut em, &p)?;
    let sampled = !cpu_samples.is_empty();
    let agg = match events.agg {
        Some(agg) => Some(agg),
        // Samples without slices still get their reductions.
        None if sampled => Some(crate::stacks::StackAggregator::new()),
        None => None,
    };
    if let Some(mut agg) = agg {
        if sampled {
            host_tables::aggregate_cpu_samples(&mut agg, &mut p, cpu_samples);
        }
        emit::write_slice_reductions(&mut em, agg)?;
    }
    let (span, has_phases, spilled_events) =
        (events.span, events.has_phases, events.spilled_events);
    let rows = em.into_rows();

    let facts = ExportFacts {
        present: &present,
        kernel_cols,
        not_extracted: &not_extracted,
    };
    let mut coverage = summary::coverage(
        &facts,
        &rows_read,
        !p.tracks.thread_names.is_empty(),
        !device_names.is_empty(),
        has_phases,
    );
    coverage.insert(
        "os_runtime".to_string(),
        os_runtime
            && rows_read
                .get(host_tables::OSRT_TABLE)
                .is_some_and(|n| *n > 0),
    );
    coverage.insert("cpu_samples".to_string(), sampled);
    summary::note_missing_tables(&facts, &mut p.log);
    let metadata = summary::metadata(
        &facts,
        &fingerprint,
        &rows_read,
        correlated,
        &gpus,
        &device_names,
        &export,
    );
    let mut metadata = metadata;
    if sampled {
        // Kernels and CUDA calls are what an export is read for; the CPU
        // samples are offered beside them.
        metadata.insert("primary_metric".into(), json!("trace.wall_ns"));
    }
    let input_events = rows_read
        .iter()
        .filter(|(t, _)| {
            t.starts_with("CUPTI_") || [NVTX_TABLE, host_tables::OSRT_TABLE].contains(&t.as_str())
        })
        .map(|(_, n)| n)
        .sum();
    let summary = ExtractionSummary {
        extractor: input.extractor.to_string(),
        extractor_version: NSIGHT_EXTRACTOR_VERSION.to_string(),
        format: input.format.name().to_string(),
        producer: options
            .producer
            .clone()
            .unwrap_or_else(|| "nsys".to_string()),
        rows,
        time_span_ns: span,
        tracks: p.tracks.list.len() as u64,
        coverage,
        limitations: p.log.into_limitations(),
        metadata,
        input_bytes: file_len,
        input_events,
        max_event_dur_ns: None,
    };
    Ok((summary, spilled_events))
}

/// Each track's thread `(pid, tid)`: thread tracks by their ids, the
/// per-thread NVTX start/end range tracks by the thread they were opened
/// on; `None` for device streams, counters and unknown threads.
fn thread_of_track(
    tracks: &Tracks,
    range_tracks: &FastHashMap<(i64, i64), u32>,
) -> Vec<Option<(i64, i64)>> {
    let mut out: Vec<Option<(i64, i64)>> = tracks
        .list
        .iter()
        .map(|t| match (t.kind, t.pid, t.tid) {
            (TrackKind::Thread, Ident::Int(pid), Ident::Int(tid)) => Some((pid, tid)),
            _ => None,
        })
        .collect();
    for (&(pid, tid), &t) in range_tracks {
        if let Some(slot) = out.get_mut(t as usize)
            && pid != NONE
        {
            *slot = Some((pid, tid));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_suffixes_and_global_ids() {
        assert_eq!(api_base("cudaGraphLaunch_v10000"), "cudaGraphLaunch");
        assert_eq!(api_base("cudaLaunchKernel"), "cudaLaunchKernel");
        assert_eq!(api_base("cuda_vx"), "cuda_vx");
        assert_eq!(api_base("x_v"), "x_v");
        assert_eq!(pid_of(302119224788637), 1230493);
        assert_eq!(tid_of(302119224788637), 1230493);
        assert_eq!(pid_of(310028053512192), 1701896);
        assert!(immutable_uri(Path::new("/a b/c%.sqlite")).starts_with("file:/a%20b/c%25.sqlite?"));
    }
}
