//! What the accelerator-launch recipe answers, and the helpers that build
//! its parts from rows: per-region launch and kernel counts with latency
//! percentiles ([`Region`]), per-stream use ([`StreamUse`]). Shared by the
//! event path ([`crate::accelerator`]) and the path over stored reductions
//! ([`crate::accelerator_reduced`]).

use datafusion::arrow::array::RecordBatch;
use serde::{Deserialize, Serialize};

use crate::common::{RecipeResult, column, i64_at, string_at};
use flameox_extractors::schema::GAP_BUCKET_COLUMNS;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CountTime {
    pub count: i64,
    pub time_ns: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Kernels whose launch was found.
    pub n: u64,
    pub p50_ns: i64,
    pub p90_ns: i64,
    pub p99_ns: i64,
    pub max_ns: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Region {
    /// The phase (`ProfilerStep#N`, NVTX range…), or `(all)` when none.
    pub region: String,
    pub direct_launches: CountTime,
    pub graph_launches: CountTime,
    pub kernels: CountTime,
    /// Kernels with a host launch of the same correlation id, 0..=1.
    pub correlation_coverage: f64,
    pub launch_latency: Option<Latency>,
}

impl Region {
    /// A region with nothing counted yet.
    pub fn empty(name: &str) -> Region {
        Region {
            region: name.to_owned(),
            direct_launches: CountTime::default(),
            graph_launches: CountTime::default(),
            kernels: CountTime::default(),
            correlation_coverage: 0.0,
            launch_latency: None,
        }
    }
}

/// `(all regions)`: the launch and kernel counts of `regions` summed
/// (coverage and latency are filled by the caller from all kernels).
pub(crate) fn sum_regions<'a>(regions: impl Iterator<Item = &'a Region>) -> Region {
    let mut overall = Region::empty("(all regions)");
    for r in regions {
        for (sum_into, part) in [
            (&mut overall.direct_launches, &r.direct_launches),
            (&mut overall.graph_launches, &r.graph_launches),
            (&mut overall.kernels, &r.kernels),
        ] {
            sum_into.count += part.count;
            sum_into.time_ns += part.time_ns;
        }
    }
    overall
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamUse {
    /// The artifact (one rank's file in a multi-rank run).
    pub artifact_id: String,
    pub device: Option<i64>,
    pub stream: Option<i64>,
    pub kernels: i64,
    pub busy_ns: i64,
    pub span_ns: i64,
    pub utilization: f64,
    pub gaps: i64,
    pub gap_total_ns: i64,
    pub gap_max_ns: i64,
    /// Gap counts below each of [`GAP_BUCKETS_NS`], then the rest.
    pub gap_histogram: Vec<i64>,
}

/// Streams an answer lists (a ROCm run may use hundreds).
pub const STREAMS_SHOWN: usize = 16;

impl AcceleratorAnswer {
    /// Keeps the [`STREAMS_SHOWN`] busiest streams, counting all of them.
    pub fn keep_busiest_streams(&mut self) {
        self.streams_total = self.streams.len();
        let streams = std::mem::take(&mut self.streams);
        self.streams = keep_top(streams, STREAMS_SHOWN, |s| s.busy_ns);
    }
}

/// The `n` rows with the largest `key`, in their original order (ties:
/// the earlier row); all rows when there are at most `n`.
pub fn keep_top<T>(rows: Vec<T>, n: usize, key: impl Fn(&T) -> i64) -> Vec<T> {
    if rows.len() <= n {
        return rows;
    }
    let mut order: Vec<(usize, i64)> = rows.iter().map(&key).enumerate().collect();
    order.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut keep: Vec<usize> = order.into_iter().take(n).map(|(i, _)| i).collect();
    keep.sort_unstable();
    let mut keep = keep.into_iter().peekable();
    rows.into_iter()
        .enumerate()
        .filter_map(|(i, row)| {
            (keep.peek() == Some(&i)).then(|| {
                keep.next();
                row
            })
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcceleratorAnswer {
    /// Every region together (`(all regions)`): sums, and coverage and
    /// latency percentiles over all kernels.
    pub overall: Region,
    pub regions: Vec<Region>,
    /// The busiest streams (all of them up to [`STREAMS_SHOWN`]).
    pub streams: Vec<StreamUse>,
    /// Streams with kernels, all of them (`streams` lists the busiest).
    #[serde(default)]
    pub streams_total: usize,
    /// Whether host launches and device kernels were both present.
    pub has_launches: bool,
    pub has_kernels: bool,
}

pub(crate) fn percentiles(sorted: &[i64]) -> Option<Latency> {
    let last = sorted.len().checked_sub(1)?;
    // Nearest rank.
    let at =
        |q: f64| sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1];
    Some(Latency {
        n: sorted.len() as u64,
        p50_ns: at(0.50),
        p90_ns: at(0.90),
        p99_ns: at(0.99),
        max_ns: sorted[last],
    })
}

/// [`StreamUse`]s from per-stream summary rows named as `stream_gaps`
/// names them (`count`, `first_ts_ns`, `last_end_ns`, `gaps`,
/// `gap_total_ns`, `gap_max_ns`, the histogram columns).
pub(crate) fn stream_uses(batches: &[RecordBatch]) -> RecipeResult<Vec<StreamUse>> {
    let mut out = Vec::new();
    for batch in batches {
        for i in 0..batch.num_rows() {
            let get =
                |c: &str| -> RecipeResult<i64> { Ok(i64_at(column(batch, c)?, i).unwrap_or(0)) };
            let span = get("last_end_ns")? - get("first_ts_ns")?;
            let gap_total = get("gap_total_ns")?;
            let busy = span - gap_total;
            out.push(StreamUse {
                artifact_id: string_at(column(batch, "artifact_id")?, i).unwrap_or_default(),
                device: i64_at(column(batch, "device")?, i),
                stream: i64_at(column(batch, "stream")?, i),
                kernels: get("count")?,
                busy_ns: busy,
                span_ns: span,
                utilization: if span > 0 {
                    busy as f64 / span as f64
                } else {
                    0.0
                },
                gaps: get("gaps")?,
                gap_total_ns: gap_total,
                gap_max_ns: get("gap_max_ns")?,
                gap_histogram: GAP_BUCKET_COLUMNS
                    .iter()
                    .map(|c| get(c))
                    .collect::<RecipeResult<_>>()?,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod keep_top_tests {
    use super::keep_top;

    #[test]
    fn the_largest_rows_stay_in_their_order() {
        assert_eq!(keep_top(vec![5, 1, 9, 3, 9], 3, |v| *v), vec![5, 9, 9]);
        assert_eq!(keep_top(vec![1, 2], 3, |v| *v), vec![1, 2]);
        assert_eq!(keep_top(vec![4, 4, 4], 2, |v| *v), vec![4, 4]);
    }
}
