//! Memory over a trace: every counter series in bytes (Kineto's per-device
//! `Total Allocated` / `Total Reserved`, Perfetto's `mem.rss*` / `mem.swap`
//! per process, any other counter whose unit is `bytes`) with its first,
//! peak, minimum and last value, what was retained at the end and the
//! growth over each phase (`ProfilerStep#N`); and Kineto's allocation
//! events (`[memory]` instants, `bytes` = signed size) with the totals per
//! device and the sites (enclosing slice) that allocated the most
//! ([`crate::memory_allocations`]); and the heap of heap profiles (memray
//! captures, pprof heap profiles): peak, still allocated at the end, total
//! allocated, and the sites holding the most ([`crate::memory_sites`]).
//!
//! Samples at one timestamp are ordered by value, so `first` / `last` are
//! deterministic (counters have no sequence column to break the tie).

use std::collections::{HashMap, HashSet};

use datafusion::functions_aggregate::expr_fn::{count, max, min};
use datafusion::functions_aggregate::first_last::{first_value_udaf, last_value_udaf};
use datafusion::logical_expr::{Expr, ExprFunctionExt, JoinType, SortExpr, col, lit};
use datafusion::prelude::{DataFrame, SessionContext};
use serde::{Deserialize, Serialize};

use crate::common::{
    ArtifactScope, RecipeResult, collect, column, f64_at, i64_at, string_at, table, utf8,
};
use crate::device_pass::{Interner, for_each_batch, ints};

pub use crate::memory_allocations::{ALLOCATION_EVENT, AllocationSite, AllocationTotals};
use crate::memory_allocations::{allocation_sites, allocation_totals};
use crate::memory_sites::heap_sites;
pub use crate::memory_sites::{HeapAnswer, HeapSite, HeapSiteList, HeapTotals};

/// Value over one phase of a series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseGrowth {
    pub phase: String,
    pub start_ns: i64,
    pub end_ns: i64,
    /// The last sample at or before the phase start, else the first inside.
    pub start_value: f64,
    /// The last sample at or before the phase end.
    pub end_value: f64,
    pub growth: f64,
    /// Highest sample inside the phase (None when none falls inside).
    pub peak_in_phase: Option<f64>,
    pub samples_in_phase: i64,
}

/// One counter series in bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemorySeries {
    pub artifact_id: String,
    pub track_id: i64,
    /// The counter track's name (`[memory] device 0`, `mem.rss`, …).
    pub track: Option<String>,
    /// The series name (`Total Allocated`, `mem.rss`, …).
    pub series: String,
    pub pid: Option<i64>,
    pub device: Option<i64>,
    pub unit: String,
    pub samples: i64,
    pub first: f64,
    pub first_ns: i64,
    pub peak: f64,
    /// When the peak was first reached.
    pub peak_ns: i64,
    pub min: f64,
    pub last: f64,
    pub last_ns: i64,
    /// `last − first`: what the trace kept at its end.
    pub retained: f64,
    /// Phases with samples (growth was computed for all of them).
    pub phases_found: u64,
    /// The `limit` phases with the largest |growth|, in time order.
    pub phases: Vec<PhaseGrowth>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryAnswer {
    /// Series in bytes, all of them.
    pub series_found: u64,
    /// The `limit` highest peaks first.
    pub series: Vec<MemorySeries>,
    pub allocations: Vec<AllocationTotals>,
    pub sites_found: u64,
    /// The `limit` sites that allocated the most bytes.
    pub sites: Vec<AllocationSite>,
    /// Heap profiles' peak, leaks and sites (absent without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heap: Option<HeapAnswer>,
}

fn by_time() -> Vec<SortExpr> {
    vec![
        col("s_ts").sort(true, false),
        col("s_value").sort(true, false),
    ]
}

pub(crate) fn first_by(
    value: Expr,
    order: Vec<SortExpr>,
    filter: Option<Expr>,
) -> RecipeResult<Expr> {
    let f = first_value_udaf().call(vec![value]).order_by(order);
    Ok(match filter {
        Some(c) => f.filter(c).build()?,
        None => f.build()?,
    })
}

pub(crate) fn last_by(
    value: Expr,
    order: Vec<SortExpr>,
    filter: Option<Expr>,
) -> RecipeResult<Expr> {
    let f = last_value_udaf().call(vec![value]).order_by(order);
    Ok(match filter {
        Some(c) => f.filter(c).build()?,
        None => f.build()?,
    })
}

async fn samples(ctx: &SessionContext, scope: &ArtifactScope) -> RecipeResult<DataFrame> {
    Ok(table(ctx, "counters")
        .await?
        .filter(scope.filter().and(utf8("unit").eq(lit("bytes"))))?
        .select(vec![
            utf8("artifact_id").alias("s_artifact"),
            col("track_id").alias("s_track"),
            utf8("name").alias("s_name"),
            utf8("unit").alias("s_unit"),
            col("ts_ns").alias("s_ts"),
            col("value").alias("s_value"),
        ])?)
}

/// The memory answer: `limit` series and Kineto sites, `heap_limit` heap
/// sites per list.
pub async fn memory(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    limit: usize,
    heap_limit: usize,
) -> RecipeResult<MemoryAnswer> {
    let (series_found, mut series) = series_stats(ctx, scope, limit).await?;
    if !series.is_empty() {
        for (key, growth) in phase_growth(ctx, scope).await? {
            if let Some(s) = series
                .iter_mut()
                .find(|s| (&s.artifact_id, s.track_id, &s.series) == (&key.0, key.1, &key.2))
            {
                s.phases.push(growth);
            }
        }
        for s in &mut series {
            s.phases_found = s.phases.len() as u64;
            keep_largest_growth(&mut s.phases, limit);
        }
    }
    let allocations = allocation_totals(ctx, scope).await?;
    let (sites_found, sites) = if allocations.is_empty() {
        (0, Vec::new())
    } else {
        allocation_sites(ctx, scope, limit).await?
    };
    let heap = heap_sites(ctx, scope, heap_limit).await?;
    Ok(MemoryAnswer {
        series_found,
        series,
        allocations,
        sites_found,
        sites,
        heap,
    })
}

/// Bounds a series' phases to the `limit` with the largest |growth| (a
/// 10 M-event trace has ~40,000 steps), kept in time order; records how
/// many there were in `phases_found` first.
fn keep_largest_growth(phases: &mut Vec<PhaseGrowth>, limit: usize) {
    if phases.len() <= limit {
        return;
    }
    phases.sort_by(|a, b| {
        b.growth
            .abs()
            .total_cmp(&a.growth.abs())
            .then(a.start_ns.cmp(&b.start_ns))
    });
    phases.truncate(limit);
    phases.sort_by(|a, b| (a.start_ns, &a.phase).cmp(&(b.start_ns, &b.phase)));
}

async fn series_stats(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    limit: usize,
) -> RecipeResult<(u64, Vec<MemorySeries>)> {
    let peak_first = vec![
        col("s_value").sort(false, false),
        col("s_ts").sort(true, false),
    ];
    let stats = samples(ctx, scope).await?.aggregate(
        vec![col("s_artifact"), col("s_track"), col("s_name")],
        vec![
            count(lit(1)).alias("samples"),
            min(col("s_unit")).alias("unit"),
            min(col("s_ts")).alias("first_ns"),
            max(col("s_ts")).alias("last_ns"),
            first_by(col("s_value"), by_time(), None)?.alias("first"),
            last_by(col("s_value"), by_time(), None)?.alias("last"),
            max(col("s_value")).alias("peak"),
            min(col("s_value")).alias("min"),
            first_by(col("s_ts"), peak_first, None)?.alias("peak_ns"),
        ],
    )?;
    let tracks = table(ctx, "tracks").await?.select(vec![
        utf8("artifact_id").alias("t_artifact"),
        col("track_id").alias("t_track"),
        col("name").alias("t_name"),
        col("pid").alias("t_pid"),
        col("device").alias("t_device"),
    ])?;
    let joined = stats
        .join(
            tracks,
            JoinType::Left,
            &["s_artifact", "s_track"],
            &["t_artifact", "t_track"],
            None,
        )?
        .sort(vec![
            col("peak").sort(false, false),
            col("s_artifact").sort(true, false),
            col("s_track").sort(true, false),
            col("s_name").sort(true, false),
        ])?
        .cache()
        .await?;
    let found = joined.clone().count().await? as u64;
    let mut out = Vec::new();
    for batch in collect(joined.limit(0, Some(limit))?).await? {
        for i in 0..batch.num_rows() {
            let int = |c: &str| -> RecipeResult<Option<i64>> { Ok(i64_at(column(&batch, c)?, i)) };
            let float =
                |c: &str| -> RecipeResult<f64> { Ok(f64_at(column(&batch, c)?, i).unwrap_or(0.0)) };
            let (first, last) = (float("first")?, float("last")?);
            out.push(MemorySeries {
                artifact_id: string_at(column(&batch, "s_artifact")?, i).unwrap_or_default(),
                track_id: int("s_track")?.unwrap_or(0),
                track: string_at(column(&batch, "t_name")?, i),
                series: string_at(column(&batch, "s_name")?, i).unwrap_or_default(),
                pid: int("t_pid")?,
                device: int("t_device")?,
                unit: string_at(column(&batch, "unit")?, i).unwrap_or_default(),
                samples: int("samples")?.unwrap_or(0),
                first,
                first_ns: int("first_ns")?.unwrap_or(0),
                peak: float("peak")?,
                peak_ns: int("peak_ns")?.unwrap_or(0),
                min: float("min")?,
                last,
                last_ns: int("last_ns")?.unwrap_or(0),
                retained: last - first,
                phases_found: 0,
                phases: Vec::new(),
            });
        }
    }
    Ok((found, out))
}

/// Each phase's span: the extent of the host slices named like a phase the
/// trace labels rows with (device copies of `ProfilerStep#N` — GPU user
/// annotations — are left out: they run later than the host step). Two
/// streamed scans (the phase labels, then the host slices) with the
/// extents kept in Rust: the join and GROUP BY they replace held millions
/// of cast names (1.5 GB RSS at 10 M events).
async fn phase_spans(ctx: &SessionContext, scope: &ArtifactScope) -> RecipeResult<Vec<PhaseSpan>> {
    let mut strings = Interner::default();
    let labelled = table(ctx, "trace_events")
        .await?
        .filter(scope.filter().and(col("phase").is_not_null()))?
        .select(vec![col("artifact_id"), col("phase")])?;
    let mut phases: HashSet<(u32, u32)> = HashSet::new();
    for_each_batch(labelled, |batch| {
        let artifact = strings.column(column(batch, "artifact_id")?)?;
        let phase = strings.column(column(batch, "phase")?)?;
        phases.extend(
            artifact
                .into_iter()
                .zip(phase)
                .filter_map(|(a, p)| a.zip(p)),
        );
        Ok(())
    })
    .await?;
    if phases.is_empty() {
        return Ok(Vec::new());
    }
    let device_kinds = [
        "kernel",
        "memcpy",
        "memset",
        "gpu_user_annotation",
        "instant",
    ]
    .iter()
    .map(|k| lit(*k))
    .collect();
    let host = table(ctx, "trace_events")
        .await?
        .filter(
            scope
                .filter()
                .and(col("dur_ns").gt_eq(lit(0i64)))
                .and(col("stream").is_null())
                .and(col("kind").in_list(device_kinds, true)),
        )?
        .select(vec![
            col("artifact_id"),
            col("name"),
            col("ts_ns"),
            col("dur_ns"),
        ])?;
    let mut extents: HashMap<(u32, u32), (i64, i64)> = HashMap::new();
    for_each_batch(host, |batch| {
        let artifact = strings.column(column(batch, "artifact_id")?)?;
        let name = strings.column(column(batch, "name")?)?;
        let ts = ints(column(batch, "ts_ns")?)?;
        let dur = ints(column(batch, "dur_ns")?)?;
        for i in 0..batch.num_rows() {
            let (Some(key), Some(start)) = (artifact[i].zip(name[i]), ts[i]) else {
                continue;
            };
            if phases.contains(&key) {
                let end = start + dur[i].unwrap_or(0);
                let extent = extents.entry(key).or_insert((start, end));
                *extent = (extent.0.min(start), extent.1.max(end));
            }
        }
        Ok(())
    })
    .await?;
    Ok(extents
        .into_iter()
        .map(|((artifact, name), (start, end))| PhaseSpan {
            artifact: strings.get(artifact).to_owned(),
            name: strings.get(name).to_owned(),
            start,
            end,
        })
        .collect())
}

type SeriesKey = (String, i64, String);

/// One phase's span within an artifact.
struct PhaseSpan {
    artifact: String,
    name: String,
    start: i64,
    end: i64,
}

/// Per (series, phase): the value at the phase's start and end, its peak
/// and sample count inside — by binary search over each series' samples
/// sorted by `(ts, value)`, not by a range join of every sample with every
/// phase (quadratic: 315 k samples × 40 k steps ran for 6 minutes).
async fn phase_growth(
    ctx: &SessionContext,
    scope: &ArtifactScope,
) -> RecipeResult<Vec<(SeriesKey, PhaseGrowth)>> {
    let mut spans = phase_spans(ctx, scope).await?;
    spans.sort_by(|a, b| (a.start, &a.name).cmp(&(b.start, &b.name)));
    let sorted = samples(ctx, scope).await?.sort(vec![
        col("s_artifact").sort(true, false),
        col("s_track").sort(true, false),
        col("s_name").sort(true, false),
        col("s_ts").sort(true, false),
        col("s_value").sort(true, false),
    ])?;
    let mut series: Vec<(SeriesKey, Vec<(i64, f64)>)> = Vec::new();
    for batch in collect(sorted).await? {
        for i in 0..batch.num_rows() {
            let key = (
                string_at(column(&batch, "s_artifact")?, i).unwrap_or_default(),
                i64_at(column(&batch, "s_track")?, i).unwrap_or(0),
                string_at(column(&batch, "s_name")?, i).unwrap_or_default(),
            );
            let point = (
                i64_at(column(&batch, "s_ts")?, i).unwrap_or(0),
                f64_at(column(&batch, "s_value")?, i).unwrap_or(0.0),
            );
            match series.last_mut() {
                Some((last, points)) if *last == key => points.push(point),
                _ => series.push((key, vec![point])),
            }
        }
    }
    let mut out = Vec::new();
    for (key, points) in &series {
        for span in spans.iter().filter(|s| s.artifact == key.0) {
            if let Some(growth) = growth_over(points, span) {
                out.push((key.clone(), growth));
            }
        }
    }
    Ok(out)
}

/// The growth of one series (points sorted by time, then value) over one
/// phase; `None` when no sample falls at or before the phase end.
fn growth_over(points: &[(i64, f64)], span: &PhaseSpan) -> Option<PhaseGrowth> {
    let at_or_before = |t: i64| points.partition_point(|p| p.0 <= t);
    let through_end = at_or_before(span.end);
    let end_value = points.get(through_end.checked_sub(1)?)?.1;
    let first_inside = points.partition_point(|p| p.0 < span.start);
    let inside = &points[first_inside.min(through_end)..through_end];
    let before = at_or_before(span.start)
        .checked_sub(1)
        .and_then(|i| points.get(i))
        .map(|p| p.1);
    let start_value = before.or(inside.first().map(|p| p.1))?;
    Some(PhaseGrowth {
        phase: span.name.clone(),
        start_ns: span.start,
        end_ns: span.end,
        start_value,
        end_value,
        growth: end_value - start_value,
        peak_in_phase: inside.iter().map(|p| p.1).reduce(f64::max),
        samples_in_phase: inside.len() as i64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(start: i64, end: i64) -> PhaseSpan {
        PhaseSpan {
            artifact: "a".into(),
            name: format!("p{start}"),
            start,
            end,
        }
    }

    #[test]
    fn growth_reads_the_value_at_the_start_and_the_end_and_the_peak_inside() {
        let points = [(0, 10.0), (5, 30.0), (5, 40.0), (8, 20.0), (20, 99.0)];
        let g = growth_over(&points, &span(5, 10)).expect("growth");
        // At the start: the last sample at or before 5 (ties by value → 40).
        assert_eq!((g.start_value, g.end_value, g.growth), (40.0, 20.0, -20.0));
        assert_eq!((g.peak_in_phase, g.samples_in_phase), (Some(40.0), 3));
        // Nothing before the phase: the first sample inside starts it.
        let g = growth_over(&points[3..], &span(6, 9)).expect("growth");
        assert_eq!(
            (g.start_value, g.end_value, g.samples_in_phase),
            (20.0, 20.0, 1)
        );
        // No sample at or before the end: no growth row.
        assert!(growth_over(&points[4..], &span(6, 9)).is_none());
        // Nothing inside: the value carried through, no peak.
        let g = growth_over(&points, &span(10, 15)).expect("growth");
        assert_eq!(
            (g.growth, g.peak_in_phase, g.samples_in_phase),
            (0.0, None, 0)
        );
    }

    #[test]
    fn phases_are_bounded_to_the_largest_growth_in_time_order() {
        let phase = |start: i64, growth: f64| PhaseGrowth {
            phase: format!("p{start}"),
            start_ns: start,
            end_ns: start + 1,
            start_value: 0.0,
            end_value: growth,
            growth,
            peak_in_phase: None,
            samples_in_phase: 0,
        };
        let mut phases = vec![
            phase(1, 5.0),
            phase(2, -50.0),
            phase(3, 1.0),
            phase(4, 20.0),
        ];
        keep_largest_growth(&mut phases, 2);
        let kept: Vec<i64> = phases.iter().map(|p| p.start_ns).collect();
        assert_eq!(kept, [2, 4]);
    }
}
