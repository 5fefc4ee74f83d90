//! Counts a trace window's rows from Parquet footers instead of scanning
//! the artifact: the first page of `trace window` reports the window's
//! `total`, and `count_rows` over the window filter reads every row.
//!
//! `trace_events` files are sorted by `ts_ns` in row groups of 64 Ki rows
//! with min/max statistics (engine/src/staging.rs). A row group whose
//! `ts_ns` range lies inside `[start, end)` counts all its rows; one that
//! ends before the pruning bound (or before `start`, counting `dur_ns`'s
//! maximum) or starts at `end` counts none; only the rest — the boundary
//! groups — are read, two columns of them, and masked with the exact
//! predicate of `flameox_recipes::window`. The answer equals
//! `count_rows` or there is none (`None`: the caller counts with the
//! query), e.g. when the request filters by kind, name or track, a file
//! holds rows of another artifact, or a footer cannot be read.
//!
//! Only the files of the artifact's generations are read: one extraction
//! writes one artifact's rows (`ExtractOptions::artifact_id`), and each
//! row group's `artifact_id` statistics are checked to be that artifact's
//! (see `holds_only` for what truncated statistics prove).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{BooleanArray, Datum, Int64Array};
use datafusion::arrow::compute::kernels::boolean::{and_kleene, or_kleene};
use datafusion::arrow::compute::kernels::cmp::{gt, gt_eq, lt};
use datafusion::arrow::compute::kernels::numeric::add_wrapping;
use datafusion::arrow::error::ArrowError;
use datafusion::parquet::arrow::ProjectionMask;
use datafusion::parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use datafusion::parquet::file::metadata::{
    ParquetMetaData, ParquetMetaDataReader, RowGroupMetaData,
};
use datafusion::parquet::file::statistics::Statistics;
use flameox_extractors::EvidenceTable;
use flameox_recipes::window::WindowQuery;

use crate::catalog::Snapshot;
use crate::staging::ROW_GROUP_ROWS;

/// The window's row count from footers and boundary row groups, or `None`
/// when only the query can say it exactly.
pub fn count_from_footers(dir: &Path, snapshot: &Snapshot, query: &WindowQuery) -> Option<u64> {
    if query.kind.is_some()
        || query.name.is_some()
        || query.track_id.is_some()
        || query.stream.is_some()
        || query.correlation_id.is_some()
    {
        return None;
    }
    let mut total = 0u64;
    for path in trace_event_files(dir, snapshot, &query.artifact_id) {
        total += count_file(&path, query)?;
    }
    Some(total)
}

/// The artifact's longest `dur_ns` from row-group statistics, or `None`
/// (the query's `max(dur_ns)` decides): for artifacts imported before the
/// extraction summary recorded it (`max_event_dur_ns`).
pub fn longest_from_footers(dir: &Path, snapshot: &Snapshot, artifact_id: &str) -> Option<i64> {
    let mut longest = None;
    for path in trace_event_files(dir, snapshot, artifact_id) {
        longest = longest.max(Some(longest_in_file(&path, artifact_id)?));
    }
    longest
}

fn trace_event_files<'a>(
    dir: &'a Path,
    snapshot: &'a Snapshot,
    artifact_id: &'a str,
) -> impl Iterator<Item = PathBuf> + 'a {
    snapshot
        .generations_for(artifact_id)
        .flat_map(|g| g.files.iter())
        .filter(|f| f.table == EvidenceTable::TraceEvents.name())
        .map(move |f| dir.join(&f.path))
}

fn read_footer(file: &File) -> Option<(ParquetMetaData, Columns)> {
    let metadata = ParquetMetaDataReader::new().parse_and_finish(file).ok()?;
    let columns = Columns::of(&metadata)?;
    Some((metadata, columns))
}

/// The longest `dur_ns` of a file holding only `artifact_id` (`None` for a
/// file without rows, too: the query answers then).
fn longest_in_file(path: &Path, artifact_id: &str) -> Option<i64> {
    let (metadata, columns) = read_footer(&File::open(path).ok()?)?;
    let mut longest = None;
    for group in metadata.row_groups() {
        if !holds_only(group, columns.artifact_id, artifact_id) {
            return None;
        }
        let Statistics::Int64(durations) = group.column(columns.dur_ns).statistics()? else {
            return None;
        };
        longest = longest.max(Some(*durations.max_opt()?));
    }
    longest
}

/// Leaf column positions of the columns the count reads.
struct Columns {
    artifact_id: usize,
    ts_ns: usize,
    dur_ns: usize,
}

impl Columns {
    fn of(metadata: &ParquetMetaData) -> Option<Columns> {
        let leaves = metadata.file_metadata().schema_descr().columns();
        let find = |name: &str| leaves.iter().position(|c| c.path().string() == name);
        Some(Columns {
            artifact_id: find("artifact_id")?,
            ts_ns: find("ts_ns")?,
            dur_ns: find("dur_ns")?,
        })
    }
}

fn count_file(path: &Path, query: &WindowQuery) -> Option<u64> {
    let file = File::open(path).ok()?;
    let (metadata, columns) = read_footer(&file)?;
    let mut total = 0u64;
    let mut boundary = Vec::new();
    for (index, group) in metadata.row_groups().iter().enumerate() {
        if !holds_only(group, columns.artifact_id, &query.artifact_id) {
            return None;
        }
        match count_by_statistics(group, &columns, query) {
            Some(rows) => total += rows,
            None => boundary.push(index),
        }
    }
    if !boundary.is_empty() {
        total += count_boundary_rows(file, Arc::new(metadata), boundary, query)?;
    }
    Some(total)
}

/// Bytes of an artifact id that parquet keeps in truncated statistics
/// (its default): `sha256:` and 57 of the 64 hex digits.
const TRUNCATED_ID_BYTES: usize = 64;

/// Whether the group's `artifact_id` statistics say every row is `id`.
/// Parquet truncates string statistics at 64 bytes (ids are 71): a min of
/// `id[..64]` and a max of `id[..64]` with its last byte incremented leave
/// room only for values beginning with those 64 bytes (228 bits of the
/// digest), i.e. this artifact.
///
/// The statistics are not made exact (a longer truncation length) on
/// purpose: with exact ones DataFusion 55 proves row groups fully matched
/// by the window filter and its limit pruning (apache/datafusion#24272,
/// fetch pushed below a `SortPreservingMergeExec`) then skips the row
/// groups holding a page's first rows
/// (tests/tests/window_count.rs pages through a whole trace).
fn holds_only(group: &RowGroupMetaData, column: usize, id: &str) -> bool {
    let Some(stats) = group.column(column).statistics() else {
        return false;
    };
    let (Some(min), Some(max)) = (stats.min_bytes_opt(), stats.max_bytes_opt()) else {
        return false;
    };
    let id = id.as_bytes();
    let truncated_prefix =
        |bound: &[u8]| bound.len() >= TRUNCATED_ID_BYTES && id.starts_with(bound);
    let min_is_id = if stats.min_is_exact() {
        min == id
    } else {
        truncated_prefix(min)
    };
    let max_is_id = if stats.max_is_exact() {
        max == id
    } else {
        max.split_last().is_some_and(|(&last, head)| {
            let prefix = [head, &[last.wrapping_sub(1)]].concat();
            last > 0 && truncated_prefix(&prefix)
        })
    };
    stats.null_count_opt() == Some(0) && min_is_id && max_is_id
}

/// `(min, max)` of an `Int64` column chunk without nulls.
fn int_range(group: &RowGroupMetaData, column: usize) -> Option<(i64, i64)> {
    match group.column(column).statistics()? {
        Statistics::Int64(s) if s.null_count_opt() == Some(0) => {
            Some((*s.min_opt()?, *s.max_opt()?))
        }
        _ => None,
    }
}

/// The group's window rows when its statistics decide them (all or none),
/// `None` for a boundary group.
fn count_by_statistics(
    group: &RowGroupMetaData,
    columns: &Columns,
    q: &WindowQuery,
) -> Option<u64> {
    let all = u64::try_from(group.num_rows()).ok()?;
    let (lower, start, end) = (q.lower_ns(), q.start_ns, q.end_ns);
    let (min_ts, max_ts) = int_range(group, columns.ts_ns)?;
    if min_ts >= end || max_ts < lower {
        return Some(0);
    }
    if min_ts >= start && max_ts < end {
        return Some(all);
    }
    // Every row's end `ts_ns + dur_ns` lies in `[first_end, last_end]`
    // (no overflow: both sums fit).
    let (min_dur, max_dur) = int_range(group, columns.dur_ns)?;
    let first_end = min_ts.checked_add(min_dur)?;
    let last_end = max_ts.checked_add(max_dur)?;
    if max_ts < start && last_end <= start {
        return Some(0);
    }
    if min_ts >= lower && max_ts < end && first_end > start {
        return Some(all);
    }
    None
}

/// Reads `ts_ns` and `dur_ns` of the boundary groups and counts the rows
/// the window predicate keeps.
fn count_boundary_rows(
    file: File,
    metadata: Arc<ParquetMetaData>,
    groups: Vec<usize>,
    query: &WindowQuery,
) -> Option<u64> {
    // Skipping the embedded Arrow schema: only two Int64 columns are read.
    let options = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
    let metadata = ArrowReaderMetadata::try_new(metadata, options).ok()?;
    let mask = ProjectionMask::columns(metadata.parquet_schema(), ["ts_ns", "dur_ns"]);
    let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, metadata)
        .with_row_groups(groups)
        .with_projection(mask)
        .with_batch_size(ROW_GROUP_ROWS)
        .build()
        .ok()?;
    let mut total = 0u64;
    for batch in reader {
        let batch = batch.ok()?;
        let (ts, dur) = (
            batch.column_by_name("ts_ns")?,
            batch.column_by_name("dur_ns")?,
        );
        total += window_mask(ts, dur, query).ok()?.true_count() as u64;
    }
    Some(total)
}

/// The window filter of `flameox_recipes::window` (kind, name and track
/// aside) over one batch, with SQL semantics: `ts_ns + dur_ns` wraps like
/// DataFusion's integer `+`, and a null operand makes a null, which the
/// count does not keep.
fn window_mask(
    ts: &dyn Datum,
    dur: &dyn Datum,
    q: &WindowQuery,
) -> Result<BooleanArray, ArrowError> {
    let scalar = |v: i64| Int64Array::new_scalar(v);
    let ends = add_wrapping(ts, dur)?;
    let in_range = and_kleene(
        &lt(ts, &scalar(q.end_ns))?,
        &gt_eq(ts, &scalar(q.lower_ns()))?,
    )?;
    let reaches_start = or_kleene(
        &gt_eq(ts, &scalar(q.start_ns))?,
        &gt(&ends, &scalar(q.start_ns))?,
    )?;
    and_kleene(&in_range, &reaches_start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, DictionaryArray, Int64Array};
    use datafusion::arrow::datatypes::{DataType, Field, Int32Type, Schema};
    use datafusion::arrow::record_batch::RecordBatch;
    use datafusion::parquet::arrow::ArrowWriter;
    use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties};

    /// An artifact id of the real length (71 bytes).
    const ID: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    /// Differs from `ID` in the last byte truncated statistics keep.
    const NEAR: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaabaaaaaaa";
    const OTHER: &str = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    /// Sorted rows `(ts_ns, dur_ns)`: the first 80 long (400–450 ns, two
    /// row groups of long slices whose first row ends first, so statistics
    /// bounds are reached), then short ones (< 12 ns) but for one of 900 ns
    /// at row 150; some rows start at the same time.
    fn rows() -> Vec<(i64, i64)> {
        let mut state = 7u64;
        let mut next = move |bound: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % bound) as i64
        };
        let mut ts = 1_000;
        (0..600)
            .map(|i| {
                ts += next(4);
                let dur = match i {
                    0 | 40 => 400,
                    1..80 => 401 + next(50),
                    150 => 900,
                    _ => next(12),
                };
                (ts, dur)
            })
            .collect()
    }

    /// Writes `rows` in row groups of 40 rows, `artifact_id` per row, with
    /// string statistics truncated at `truncate` bytes (parquet's default 64
    /// as the engine writes them, or longer: exact).
    fn write(
        path: &Path,
        rows: &[(i64, i64)],
        truncate: usize,
        artifact_of: impl Fn(usize) -> &'static str,
    ) {
        let schema = Arc::new(Schema::new(vec![
            Field::new(
                "artifact_id",
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                false,
            ),
            Field::new("ts_ns", DataType::Int64, false),
            Field::new("dur_ns", DataType::Int64, false),
        ]));
        let ids: DictionaryArray<Int32Type> = (0..rows.len()).map(&artifact_of).collect();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(ids),
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
            ],
        )
        .unwrap();
        let props = WriterProperties::builder()
            .set_statistics_enabled(EnabledStatistics::Page)
            .set_max_row_group_row_count(Some(40))
            .set_statistics_truncate_length(Some(truncate))
            .build();
        let mut writer =
            ArrowWriter::try_new(File::create(path).unwrap(), schema, Some(props)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
    }

    /// The window filter for one row, written out (the reference).
    fn keeps(q: &WindowQuery, ts: i64, dur: Option<i64>) -> bool {
        let ends_after_start = dur.is_some_and(|d| ts.wrapping_add(d) > q.start_ns);
        ts < q.end_ns && ts >= q.lower_ns() && (ts >= q.start_ns || ends_after_start)
    }

    fn query(start_ns: i64, end_ns: i64, max_dur_ns: i64) -> WindowQuery {
        WindowQuery {
            artifact_id: ID.into(),
            start_ns,
            end_ns,
            max_dur_ns,
            kind: None,
            name: None,
            track_id: None,
            stream: None,
            correlation_id: None,
            limit: 10,
            after: None,
            known_total: None,
        }
    }

    /// Every window over a file of 15 row groups (edges on, inside and
    /// between groups, inside long slices, empty, whole) counts what the
    /// predicate keeps row by row — also with a pruning bound narrower
    /// than the longest slice, which the query would apply too.
    #[test]
    fn footer_counts_equal_the_row_by_row_predicate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let rows = rows();
        write(&path, &rows, 64, |_| ID);
        let longest = rows.iter().map(|r| r.1).max().unwrap();
        let (first, last) = (rows[0].0, rows[rows.len() - 1].0);
        let mut checked = 0;
        let mut decided_by_statistics = 0;
        for start in first - 50..last + 50 {
            for width in [1, 40, 700, 2_000] {
                for max_dur in [longest, longest / 3] {
                    let q = query(start, start + width, max_dur);
                    let expected = rows.iter().filter(|r| keeps(&q, r.0, Some(r.1))).count();
                    assert_eq!(
                        count_file(&path, &q),
                        Some(expected as u64),
                        "{start}+{width}"
                    );
                    checked += 1;
                }
            }
        }
        let metadata = ParquetMetaDataReader::new()
            .parse_and_finish(&File::open(&path).unwrap())
            .unwrap();
        assert_eq!(metadata.num_row_groups(), 15);
        let columns = Columns::of(&metadata).unwrap();
        let whole = query(first, last + 1, longest);
        for group in metadata.row_groups() {
            if count_by_statistics(group, &columns, &whole).is_some() {
                decided_by_statistics += 1;
            }
        }
        assert!(checked > 5_000);
        // The whole trace needs no row read at all.
        assert_eq!(decided_by_statistics, 15);
    }

    /// A file holding another artifact's rows too gives no count (the
    /// query counts instead), as does a file of another artifact only; a
    /// file of the artifact counts with truncated or exact statistics.
    #[test]
    fn a_file_not_only_of_the_artifact_is_not_counted() {
        let dir = tempfile::tempdir().unwrap();
        let rows = rows();
        let file = |name: &str, truncate: usize, artifact_of: fn(usize) -> &'static str| {
            let path = dir.path().join(name);
            write(&path, &rows, truncate, artifact_of);
            path
        };
        let whole = query(0, i64::MAX, 1_000);
        for truncate in [64, 128] {
            let mixed = file(
                "mixed.parquet",
                truncate,
                |i| if i < 300 { ID } else { OTHER },
            );
            assert_eq!(count_file(&mixed, &whole), None);
            let other = file("other.parquet", truncate, |_| OTHER);
            assert_eq!(count_file(&other, &whole), None);
            let near = file("near.parquet", truncate, |_| NEAR);
            assert_eq!(count_file(&near, &whole), None);
            let own = file("own.parquet", truncate, |_| ID);
            assert_eq!(count_file(&own, &whole), Some(rows.len() as u64));
        }
        // Ids truncated to fewer bytes prove nothing.
        let short = file("short.parquet", 16, |_| ID);
        assert_eq!(count_file(&short, &whole), None);
        assert_eq!(
            count_file(&dir.path().join("missing.parquet"), &whole),
            None
        );
    }

    /// Null `dur_ns` and wrapping `ts_ns + dur_ns` count as the query
    /// counts them.
    #[test]
    fn the_batch_mask_keeps_what_the_row_predicate_keeps() {
        let q = query(10, 20, i64::MAX);
        let rows = [
            (5, Some(20)),
            (15, None),
            (5, None),
            (20, Some(1)),
            (9, Some(1)),
            (9, Some(2)),
            (-3, Some(i64::MAX)),
            // At the pruning bound; the end wraps past i64::MIN to a large value.
            (i64::MIN + 11, Some(-12)),
            (i64::MIN + 5, Some(i64::MAX)),
        ];
        let ts = Int64Array::from_iter_values(rows.iter().map(|r| r.0));
        let dur: Int64Array = rows.iter().map(|r| r.1).collect();
        let mask = window_mask(&ts, &dur, &q).unwrap();
        let kept: Vec<bool> = (0..rows.len())
            .map(|i| mask.is_valid(i) && mask.value(i))
            .collect();
        let expected: Vec<bool> = rows.iter().map(|r| keeps(&q, r.0, r.1)).collect();
        assert_eq!(kept, expected);
        assert_eq!(
            expected,
            [true, true, false, false, false, true, true, true, false]
        );
        assert_eq!(mask.true_count(), 5);
    }

    /// The longest slice from statistics equals the rows' longest, and a
    /// file not only of the artifact gives none.
    #[test]
    fn the_longest_slice_comes_from_statistics() {
        let dir = tempfile::tempdir().unwrap();
        let rows = rows();
        let own = dir.path().join("own.parquet");
        write(&own, &rows, 64, |_| ID);
        let longest = rows.iter().map(|r| r.1).max();
        assert_eq!(longest, Some(900));
        assert_eq!(longest_in_file(&own, ID), longest);
        let mixed = dir.path().join("mixed.parquet");
        write(&mixed, &rows, 64, |i| if i < 300 { ID } else { OTHER });
        assert_eq!(longest_in_file(&mixed, ID), None);
    }
}
