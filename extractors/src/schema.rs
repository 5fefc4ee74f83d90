//! The evidence tables, declared in one place.
//!
//! Every extractor writes these tables and every recipe reads them, so the
//! column names and Arrow types live here and nowhere else. A change to any
//! schema bumps [`SCHEMA_VERSION`]; files written by a newer version, or
//! older than [`OLDEST_READ_SCHEMA_VERSION`], are refused by readers with
//! `EVIDENCE_SCHEMA_MISMATCH`.

use std::sync::{Arc, LazyLock};

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

/// Version of every evidence table schema. Stored in each Parquet file's
/// key-value metadata (`flameox.schema_version`) and in generation manifests.
///
/// 2: `frames` and `frame_totals` carry `category` (a trace slice's
/// category, which version 1 kept in `module`); `module` holds a real
/// module (a library, a Python module) only. Version-1 files read with a
/// null `category` ([`EvidenceTable::columns_at`]); a re-import extracts
/// them again (the version is part of an extraction's identity).
pub const SCHEMA_VERSION: u32 = 2;

/// The oldest evidence schema version this build reads.
pub const OLDEST_READ_SCHEMA_VERSION: u32 = 1;

/// The evidence tables that extractors produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EvidenceTable {
    TraceEvents,
    Tracks,
    Counters,
    Frames,
    StackNodes,
    Samples,
    FrameTotals,
    CallEdges,
    StreamGaps,
    LaunchLatency,
    Measurements,
}

impl EvidenceTable {
    /// All tables, in a fixed order (the order manifests list them in).
    pub const ALL: [EvidenceTable; 11] = [
        EvidenceTable::TraceEvents,
        EvidenceTable::Tracks,
        EvidenceTable::Counters,
        EvidenceTable::Frames,
        EvidenceTable::StackNodes,
        EvidenceTable::Samples,
        EvidenceTable::FrameTotals,
        EvidenceTable::CallEdges,
        EvidenceTable::StreamGaps,
        EvidenceTable::LaunchLatency,
        EvidenceTable::Measurements,
    ];

    /// The table's name on disk and in query sessions.
    pub fn name(self) -> &'static str {
        match self {
            EvidenceTable::TraceEvents => "trace_events",
            EvidenceTable::Tracks => "tracks",
            EvidenceTable::Counters => "counters",
            EvidenceTable::Frames => "frames",
            EvidenceTable::StackNodes => "stack_nodes",
            EvidenceTable::Samples => "samples",
            EvidenceTable::FrameTotals => "frame_totals",
            EvidenceTable::CallEdges => "call_edges",
            EvidenceTable::StreamGaps => "stream_gaps",
            EvidenceTable::LaunchLatency => "launch_latency",
            EvidenceTable::Measurements => "measurements",
        }
    }

    /// Looks a table up by its name.
    pub fn from_name(name: &str) -> Option<EvidenceTable> {
        EvidenceTable::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The Arrow schema of the table.
    pub fn schema(self) -> SchemaRef {
        match self {
            EvidenceTable::TraceEvents => TRACE_EVENTS.clone(),
            EvidenceTable::Tracks => TRACKS.clone(),
            EvidenceTable::Counters => COUNTERS.clone(),
            EvidenceTable::Frames => FRAMES.clone(),
            EvidenceTable::StackNodes => STACK_NODES.clone(),
            EvidenceTable::Samples => SAMPLES.clone(),
            EvidenceTable::FrameTotals => FRAME_TOTALS.clone(),
            EvidenceTable::CallEdges => CALL_EDGES.clone(),
            EvidenceTable::StreamGaps => STREAM_GAPS.clone(),
            EvidenceTable::LaunchLatency => LAUNCH_LATENCY.clone(),
            EvidenceTable::Measurements => MEASUREMENTS.clone(),
        }
    }

    /// The column names files of schema `version` have: the current
    /// schema's, less the columns later versions added (version 1 had no
    /// `category` in `frames` and `frame_totals`). Readers fill a missing
    /// column with nulls.
    pub fn columns_at(self, version: u32) -> Vec<String> {
        self.schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .filter(|name| {
                let added_in_2 = matches!(self, EvidenceTable::Frames | EvidenceTable::FrameTotals)
                    && name == "category";
                !(version < 2 && added_in_2)
            })
            .collect()
    }

    /// Columns the table's files are sorted by (empty when unordered).
    /// Event tables are sorted by `(artifact_id, ts_ns)` so time windows
    /// prune row groups; within one artifact `event_id` breaks ties.
    pub fn sort_columns(self) -> &'static [&'static str] {
        match self {
            EvidenceTable::TraceEvents => &["artifact_id", "ts_ns", "event_id"],
            EvidenceTable::Counters => &["artifact_id", "ts_ns"],
            _ => &[],
        }
    }
}

/// A dictionary-encoded string column (few distinct values).
fn dict(name: &str, nullable: bool) -> Field {
    Field::new(
        name,
        DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
        nullable,
    )
}

fn col(name: &str, data_type: DataType, nullable: bool) -> Field {
    Field::new(name, data_type, nullable)
}

/// The two scope columns every table starts with.
fn scoped(mut fields: Vec<Field>) -> SchemaRef {
    let mut all = vec![dict("run_id", false), dict("artifact_id", false)];
    all.append(&mut fields);
    Arc::new(Schema::new(all))
}

static TRACE_EVENTS: LazyLock<SchemaRef> = LazyLock::new(|| {
    use DataType::*;
    scoped(vec![
        col("event_id", UInt64, false),
        col("parent_event_id", UInt64, true),
        col("depth", Int32, false),
        col("ts_ns", Int64, false),
        col("dur_ns", Int64, false),
        col("self_ns", Int64, false),
        dict("name", false),
        dict("category", true),
        dict("kind", false),
        col("track_id", UInt64, false),
        col("pid", Int64, true),
        col("tid", Int64, true),
        col("device", Int64, true),
        col("context", Int64, true),
        col("stream", Int64, true),
        col("correlation_id", Int64, true),
        col("external_id", Int64, true),
        col("graph_id", Int64, true),
        col("graph_node_id", Int64, true),
        col("bytes", Int64, true),
        dict("phase", true),
        dict("phase_source", true),
        col("args_json", Utf8, true),
    ])
});

static TRACKS: LazyLock<SchemaRef> = LazyLock::new(|| {
    use DataType::*;
    scoped(vec![
        col("track_id", UInt64, false),
        dict("kind", false),
        col("name", Utf8, true),
        col("pid", Int64, true),
        col("tid", Int64, true),
        col("process_name", Utf8, true),
        col("thread_name", Utf8, true),
        col("device", Int64, true),
        col("stream", Int64, true),
        col("parent_track_id", UInt64, true),
    ])
});

static COUNTERS: LazyLock<SchemaRef> = LazyLock::new(|| {
    use DataType::*;
    scoped(vec![
        col("track_id", UInt64, false),
        col("ts_ns", Int64, false),
        col("value", Float64, false),
        dict("name", false),
        dict("unit", true),
    ])
});

static FRAMES: LazyLock<SchemaRef> = LazyLock::new(|| {
    use DataType::*;
    scoped(vec![
        col("frame_id", UInt64, false),
        col("logical_key", Utf8, false),
        col("function", Utf8, false),
        col("file", Utf8, true),
        col("line", Int64, true),
        col("module", Utf8, true),
        dict("language", false),
        col("symbolized", Boolean, false),
        dict("category", true),
    ])
});

static STACK_NODES: LazyLock<SchemaRef> = LazyLock::new(|| {
    use DataType::*;
    scoped(vec![
        col("stack_id", UInt64, false),
        col("parent_stack_id", UInt64, true),
        col("frame_id", UInt64, false),
        col("depth", Int32, false),
    ])
});

static SAMPLES: LazyLock<SchemaRef> = LazyLock::new(|| {
    use DataType::*;
    scoped(vec![
        col("ts_ns", Int64, true),
        col("stack_id", UInt64, false),
        col("pid", Int64, true),
        col("tid", Int64, true),
        col("weight", Int64, false),
        dict("weight_unit", false),
        col("count", Int64, false),
        dict("metric", false),
    ])
});

static FRAME_TOTALS: LazyLock<SchemaRef> = LazyLock::new(|| {
    use DataType::*;
    scoped(vec![
        col("logical_key", Utf8, false),
        col("function", Utf8, false),
        col("file", Utf8, true),
        col("line", Int64, true),
        col("module", Utf8, true),
        dict("metric", false),
        col("self_value", Int64, false),
        col("inclusive_value", Int64, false),
        col("sample_count", Int64, false),
        dict("unit", false),
        col("pid", Int64, true),
        col("tid", Int64, true),
        dict("thread_name", true),
        dict("process_name", true),
        dict("category", true),
    ])
});

static CALL_EDGES: LazyLock<SchemaRef> = LazyLock::new(|| {
    use DataType::*;
    scoped(vec![
        col("parent_key", Utf8, false),
        col("child_key", Utf8, false),
        dict("metric", false),
        col("weight", Int64, false),
        col("count", Int64, false),
    ])
});

/// Accelerator reductions (see [`crate::stream_gaps`]): one `artifact`
/// row saying the reduction ran, `stream` rows (busy summary per stream, and
/// per stream and phase when `by_phase`), `gap` rows (each idle gap of the
/// whole stream) and `launches` rows (direct / graph launch count and time
/// per phase).
static STREAM_GAPS: LazyLock<SchemaRef> = LazyLock::new(|| {
    use DataType::*;
    let mut fields = vec![
        dict("row_kind", false),
        col("by_phase", Boolean, false),
        dict("phase", true),
        col("device", Int64, true),
        col("stream", Int64, true),
        dict("launch_kind", true),
        col("count", Int64, true),
        col("time_ns", Int64, true),
        col("first_ts_ns", Int64, true),
        col("last_end_ns", Int64, true),
        col("gaps", Int64, true),
        col("gap_total_ns", Int64, true),
        col("gap_max_ns", Int64, true),
    ];
    for bucket in GAP_BUCKET_COLUMNS {
        fields.push(col(bucket, Int64, true));
    }
    fields.extend([
        col("gap_start_ns", Int64, true),
        col("gap_ns", Int64, true),
        col("prev_event_id", UInt64, true),
        col("next_event_id", UInt64, true),
    ]);
    scoped(fields)
});

/// `stream_gaps` columns counting gaps per histogram bucket
/// ([`crate::device_work::GAP_BUCKETS_NS`], then the rest).
pub const GAP_BUCKET_COLUMNS: [&str; 6] = [
    "gaps_below_1us",
    "gaps_below_10us",
    "gaps_below_100us",
    "gaps_below_1ms",
    "gaps_below_10ms",
    "gaps_10ms_or_more",
];

/// One row per kernel: its phase and the distance from its host launch
/// (null when no launch with its correlation id was recorded).
static LAUNCH_LATENCY: LazyLock<SchemaRef> = LazyLock::new(|| {
    use DataType::*;
    scoped(vec![dict("phase", true), col("latency_ns", Int64, true)])
});

/// One measured value: a benchmark sample (pyperf, hyperfine, criterion,
/// Google Benchmark) or a resource reading of an executed run (wall time,
/// peak RSS, CPU time). The input of scaling fits and run-set comparisons.
static MEASUREMENTS: LazyLock<SchemaRef> = LazyLock::new(|| {
    use DataType::*;
    scoped(vec![
        // Digest of (artifact, name, parameters_json, variant, sample_index):
        // unique in the table, stable across re-extraction.
        col("measurement_id", Utf8, false),
        // `wall_time`, `peak_rss`, `cpu_time`, `pyperf.<bench>`, …
        dict("name", false),
        col("value", Float64, false),
        // `ns`, `bytes`, `count`, … as the producer meant the value.
        dict("unit", false),
        // Position of the sample within its benchmark (warmups included).
        col("sample_index", Int64, false),
        col("is_warmup", Boolean, false),
        dict("trial_id", true),
        dict("variant", true),
        // Workload / benchmark parameters as a canonical JSON object.
        col("parameters_json", Utf8, true),
    ])
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_has_scope_columns_first_and_a_unique_name() {
        let mut names = std::collections::BTreeSet::new();
        for table in EvidenceTable::ALL {
            let schema = table.schema();
            assert_eq!(schema.field(0).name(), "run_id");
            assert_eq!(schema.field(1).name(), "artifact_id");
            assert!(names.insert(table.name()));
            assert_eq!(EvidenceTable::from_name(table.name()), Some(table));
            for column in table.sort_columns() {
                assert!(schema.field_with_name(column).is_ok(), "{column}");
            }
        }
    }

    /// Columns a version added are nullable and last, so older files read
    /// with nulls in them; version 1 frames had no category.
    #[test]
    fn older_versions_lack_only_trailing_nullable_columns() {
        for table in EvidenceTable::ALL {
            let now = table.columns_at(SCHEMA_VERSION);
            let fields = table.schema();
            assert_eq!(now.len(), fields.fields().len());
            for version in OLDEST_READ_SCHEMA_VERSION..SCHEMA_VERSION {
                let then = table.columns_at(version);
                assert_eq!(now[..then.len()], then[..], "{}", table.name());
                for added in &now[then.len()..] {
                    assert!(fields.field_with_name(added).is_ok_and(|f| f.is_nullable()));
                }
            }
        }
        assert!(
            !EvidenceTable::Frames
                .columns_at(1)
                .contains(&"category".to_owned())
        );
        assert!(
            EvidenceTable::Frames
                .columns_at(2)
                .contains(&"category".to_owned())
        );
    }
}
