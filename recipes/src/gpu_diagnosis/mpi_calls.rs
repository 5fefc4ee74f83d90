//! MPI calls beside the collective kernels: Nsight's MPI trace (NVTX
//! ranges in domain `MPI`, `MPI_Send`, `MPI_Allreduce`, …) and any host
//! range named `MPI_*`. Per artifact (rank) and operation: calls, time,
//! median, and how much of the call time the rank's device kept working
//! (overlapped) or sat idle (exposed). Across ranks, the n-th call of one
//! operation is matched on every rank that made it; the spread of its
//! starts is how long the first rank waited for the last. The exports
//! carry no message sizes, so there is no bandwidth.

use std::collections::BTreeMap;

use datafusion::logical_expr::{col, lit};
use datafusion::prelude::SessionContext;
use serde::{Deserialize, Serialize};

use super::device_rows::WorkRows;
use super::params::{DiagnosisParams, median_i64};
use super::unions::UnionsByDevice;
use crate::common::{ArtifactScope, RecipeResult, column, table, utf8};
use crate::device_pass::{Interner, for_each_batch, ints};
use crate::time_accounting::intervals::{covered_in, union_segments};

/// One rank's calls of one MPI operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MpiRow {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<i64>,
    pub artifact_id: String,
    pub operation: String,
    pub calls: i64,
    pub time_ns: i64,
    pub median_ns: i64,
    /// Call time during which the rank's device ran a kernel, copy or set.
    pub overlapped_ns: i64,
    /// Call time with the rank's device idle.
    pub exposed_ns: i64,
    /// Median over calls matched on other ranks of (latest start −
    /// earliest start): how long the first rank waited for the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_spread_median_ns: Option<i64>,
}

/// The MPI part of the collectives section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MpiCalls {
    pub calls: i64,
    pub time_ns: i64,
    pub exposed_ns: i64,
    /// Most time first, at most `limit` per artifact of 4 artifacts.
    pub rows: Vec<MpiRow>,
    pub rows_total: usize,
}

/// One call: (artifact, operation, start, end).
type Call = (u32, u32, i64, i64);

/// The MPI calls over `scope`, or None when there are none.
pub async fn mpi_calls(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    work: &WorkRows,
    unions: &UnionsByDevice,
    params: &DiagnosisParams,
) -> RecipeResult<Option<MpiCalls>> {
    let mut strings = Interner::default();
    let calls = read(ctx, scope, params.window, &mut strings).await?;
    if calls.is_empty() {
        return Ok(None);
    }
    // Each artifact's device work as one union (all its devices).
    let mut busy: BTreeMap<&str, Vec<(i64, i64)>> = BTreeMap::new();
    for ((artifact, _), u) in unions {
        busy.entry(work.strings.get(*artifact))
            .or_default()
            .extend(u.all.iter().copied());
    }
    let busy: BTreeMap<&str, Vec<(i64, i64)>> = busy
        .into_iter()
        .map(|(a, s)| (a, union_segments(s)))
        .collect();
    // The n-th call of each operation per artifact, for matching.
    let mut by_op: BTreeMap<(u32, u32), Vec<(i64, i64)>> = BTreeMap::new();
    for &(a, op, s, e) in &calls {
        by_op.entry((a, op)).or_default().push((s, e));
    }
    let mut spreads: BTreeMap<(u32, u32), Vec<i64>> = BTreeMap::new();
    let artifacts: Vec<u32> = by_op
        .keys()
        .map(|k| k.0)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if artifacts.len() > 1 {
        let ops: std::collections::BTreeSet<u32> = by_op.keys().map(|k| k.1).collect();
        for op in ops {
            let lists: Vec<(u32, &Vec<(i64, i64)>)> = artifacts
                .iter()
                .filter_map(|a| by_op.get(&(*a, op)).map(|l| (*a, l)))
                .collect();
            let n = lists.iter().map(|l| l.1.len()).max().unwrap_or(0);
            for i in 0..n {
                let starts: Vec<(u32, i64)> = lists
                    .iter()
                    .filter_map(|(a, l)| l.get(i).map(|c| (*a, c.0)))
                    .collect();
                if starts.len() < 2 {
                    continue;
                }
                let latest = starts.iter().map(|s| s.1).max().unwrap_or(0);
                let earliest = starts.iter().map(|s| s.1).min().unwrap_or(0);
                for (a, _) in starts {
                    spreads.entry((a, op)).or_default().push(latest - earliest);
                }
            }
        }
    }
    let mut rows: Vec<MpiRow> = by_op
        .iter()
        .map(|(&(a, op), list)| {
            let artifact = strings.get(a);
            let segments = busy.get(artifact).map(Vec::as_slice).unwrap_or(&[]);
            let durs: Vec<i64> = list.iter().map(|(s, e)| e - s).collect();
            let overlapped: i64 = list.iter().map(|(s, e)| covered_in(segments, *s, *e)).sum();
            let time: i64 = durs.iter().sum();
            MpiRow {
                rank: params.rank(artifact),
                artifact_id: artifact.to_owned(),
                operation: strings.get(op).to_owned(),
                calls: list.len() as i64,
                time_ns: time,
                median_ns: median_i64(&durs).unwrap_or(0),
                overlapped_ns: overlapped,
                exposed_ns: time - overlapped,
                start_spread_median_ns: spreads.get(&(a, op)).and_then(|s| median_i64(s)),
            }
        })
        .collect();
    let out = MpiCalls {
        calls: rows.iter().map(|r| r.calls).sum(),
        time_ns: rows.iter().map(|r| r.time_ns).sum(),
        exposed_ns: rows.iter().map(|r| r.exposed_ns).sum(),
        rows_total: rows.len(),
        rows: Vec::new(),
    };
    rows.sort_by(|x, y| {
        (x.rank, &x.artifact_id)
            .cmp(&(y.rank, &y.artifact_id))
            .then_with(|| y.time_ns.cmp(&x.time_ns))
            .then_with(|| x.operation.cmp(&y.operation))
    });
    let mut per: BTreeMap<String, usize> = BTreeMap::new();
    let mut kept = Vec::new();
    for row in rows {
        let shown = per.len();
        let n = per.entry(row.artifact_id.clone()).or_default();
        if *n < params.limit && (shown < 4 || *n > 0) {
            *n += 1;
            kept.push(row);
        }
    }
    Ok(Some(MpiCalls { rows: kept, ..out }))
}

/// Host rows named `MPI_*` (no stream), terminated, in the window.
async fn read(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    window: Option<(i64, i64)>,
    strings: &mut Interner,
) -> RecipeResult<Vec<Call>> {
    let mut filter = scope
        .filter()
        .and(utf8("name").like(lit("MPI\\_%")))
        .and(col("stream").is_null())
        .and(col("dur_ns").gt_eq(lit(0i64)));
    if let Some((a, b)) = window {
        filter = filter
            .and(col("ts_ns").gt_eq(lit(a)))
            .and(col("ts_ns").lt(lit(b)));
    }
    let df = table(ctx, "trace_events")
        .await?
        .filter(filter)?
        .select(["artifact_id", "name", "ts_ns", "dur_ns"].map(col).to_vec())?;
    let mut calls: Vec<Call> = Vec::new();
    for_each_batch(df, |batch| {
        let artifact = strings.column(column(batch, "artifact_id")?)?;
        let name = strings.column(column(batch, "name")?)?;
        let (ts, dur) = (
            ints(column(batch, "ts_ns")?)?,
            ints(column(batch, "dur_ns")?)?,
        );
        for i in 0..batch.num_rows() {
            if let (Some(a), Some(n), Some(t), Some(d)) = (artifact[i], name[i], ts[i], dur[i]) {
                calls.push((a, n, t, t.saturating_add(d)));
            }
        }
        Ok(())
    })
    .await?;
    calls.sort_unstable_by_key(|c| (c.0, c.1, c.2));
    Ok(calls)
}
