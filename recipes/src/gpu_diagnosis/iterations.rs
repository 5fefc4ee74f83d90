//! Iterations without markers: per stream, the period of its sequence of
//! device operations — kernels, copies and sets, by name
//! ([`super::period`]) — turns a program without `ProfilerStep` markers
//! (an MPI code's copy → kernel → copy, a C++ solver) into steps: how
//! many, how long each took from its first operation's start to the next
//! one's, and how much they vary. The busiest streams of each artifact are read; a trace with
//! markers shows both so they can be checked against each other.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::device_rows::WorkRows;
use super::params::{DiagnosisParams, median_i64};
use super::period::{PeriodLimits, detect_period};
use crate::gpu_breakdown_params::DeviceKey;
use crate::kernel_family::readable_name;

/// Streams examined per artifact (most kernels first).
const STREAMS_PER_ARTIFACT: usize = 2;
/// Operations of one stream examined, at most (the first ones).
const MAX_OPERATIONS: usize = 2_000_000;
/// Streams an answer lists.
const STREAMS_SHOWN: usize = 4;
/// Slowest iterations listed.
const SLOWEST: usize = 3;

/// One iteration found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Iteration {
    /// 0-based, in time order.
    pub index: usize,
    pub start_ns: i64,
    pub duration_ns: i64,
}

/// The repeating structure of one stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamIterations {
    #[serde(flatten)]
    pub key: DeviceKey,
    pub stream: Option<i64>,
    /// Kernels, copies and sets of the stream.
    pub operations: usize,
    /// Operations per iteration, and the share of positions that repeat
    /// one period later (≥ 0.9 to count).
    pub period_operations: usize,
    pub match_ratio: f64,
    pub iterations: usize,
    /// The operation that starts every iteration.
    pub anchor: String,
    /// Operations before the first iteration (warm-up).
    pub before_first: usize,
    /// Durations of the iterations another one follows (all of them when
    /// fewer than 2 are): start to the next one's start. The last one ends
    /// at its period's last operation and is in `slowest` only.
    pub min_ns: i64,
    pub median_ns: i64,
    pub max_ns: i64,
    /// Standard deviation over the mean, in percent.
    pub variation_pct: f64,
    pub slowest: Vec<Iteration>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Iterations {
    pub streams: Vec<StreamIterations>,
    /// Streams examined in which no period held.
    pub streams_without_period: usize,
    /// Streams whose operations past the first 2,000,000 were not examined.
    pub streams_cut: usize,
}

/// (device, stream).
type StreamKey = (Option<i64>, Option<i64>);

pub fn iterations(work: &WorkRows, params: &DiagnosisParams) -> Iterations {
    let mut streams: BTreeMap<(u32, Option<i64>, Option<i64>), Vec<usize>> = BTreeMap::new();
    for (i, r) in work.rows.iter().enumerate() {
        streams
            .entry((r.artifact, r.device, r.stream))
            .or_default()
            .push(i);
    }
    // The busiest streams of each artifact.
    let mut per_artifact: BTreeMap<u32, Vec<(StreamKey, Vec<usize>)>> = BTreeMap::new();
    for ((a, device, stream), rows) in streams {
        per_artifact
            .entry(a)
            .or_default()
            .push(((device, stream), rows));
    }
    let mut out = Iterations {
        streams: Vec::new(),
        streams_without_period: 0,
        streams_cut: 0,
    };
    for (artifact, mut list) in per_artifact {
        list.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
        for ((device, stream), mut rows) in list.into_iter().take(STREAMS_PER_ARTIFACT) {
            rows.sort_by_key(|i| (work.rows[*i].ts, *i));
            if rows.len() > MAX_OPERATIONS {
                rows.truncate(MAX_OPERATIONS);
                out.streams_cut += 1;
            }
            let names: Vec<u32> = rows.iter().map(|i| work.rows[*i].name).collect();
            let Some(p) = detect_period(&names, &PeriodLimits::default()) else {
                out.streams_without_period += 1;
                continue;
            };
            let row = |k: usize| &work.rows[rows[k]];
            let mut found: Vec<Iteration> = Vec::new();
            for (index, w) in p.starts.iter().enumerate() {
                let start = row(*w).ts;
                let end = match p.starts.get(index + 1) {
                    Some(next) => row(*next).ts,
                    None => match rows.get(w + p.length - 1) {
                        Some(_) => (*w..w + p.length)
                            .map(|k| row(k).end)
                            .max()
                            .unwrap_or(start),
                        None => continue, // a partial last iteration
                    },
                };
                found.push(Iteration {
                    index,
                    start_ns: start,
                    duration_ns: end - start,
                });
            }
            // Statistics over the iterations another one follows: the last
            // one ends at its last operation, without the host work that
            // closes the others (an MPI exchange), unless too few remain.
            let followed = found.len().saturating_sub(1);
            let compared = if followed >= 2 {
                &found[..followed]
            } else {
                &found[..]
            };
            let durations: Vec<i64> = compared.iter().map(|i| i.duration_ns).collect();
            let n = durations.len().max(1) as f64;
            let mean = durations.iter().sum::<i64>() as f64 / n;
            let var = durations
                .iter()
                .map(|d| (*d as f64 - mean).powi(2))
                .sum::<f64>()
                / (n - 1.0).max(1.0);
            let mut slowest = found.clone();
            slowest.sort_by(|a, b| {
                b.duration_ns
                    .cmp(&a.duration_ns)
                    .then(a.index.cmp(&b.index))
            });
            slowest.truncate(SLOWEST);
            out.streams.push(StreamIterations {
                key: params.key(work.strings.get(artifact), device),
                stream,
                operations: rows.len(),
                period_operations: p.length,
                match_ratio: p.match_ratio,
                iterations: found.len(),
                anchor: readable_name(work.strings.get(p.anchor)),
                before_first: p.starts.first().copied().unwrap_or(0),
                min_ns: durations.iter().copied().min().unwrap_or(0),
                median_ns: median_i64(&durations).unwrap_or(0),
                max_ns: durations.iter().copied().max().unwrap_or(0),
                variation_pct: if mean > 0.0 {
                    var.sqrt() * 100.0 / mean
                } else {
                    0.0
                },
                slowest,
            });
        }
    }
    // Ranks repeat one another: at most `limit`, and 4, streams, in rank
    // order (not the order the rows happened to be read in).
    out.streams
        .sort_by(|a, b| (&a.key, a.stream).cmp(&(&b.key, b.stream)));
    out.streams.truncate(params.limit.clamp(1, STREAMS_SHOWN));
    out
}
