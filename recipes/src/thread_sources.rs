//! Where a thread row's figures come from besides its tracks: each GPU
//! stream's busy time, each sampled thread's sample count and names, and
//! the merge of a scheduler-only thread into the row of its tid
//! ([`crate::threads`] assembles the rows).

use std::collections::BTreeMap;

use datafusion::functions_aggregate::expr_fn::{max, min, sum};
use datafusion::logical_expr::{col, lit};

use crate::common::{ArtifactScope, RecipeResult, collect, column, i64_at, string_at, table};
use crate::device_pass::DeviceOps;
use crate::threads::{RowKey, ThreadRow, merge_span, short_process_name};
use crate::time_accounting::intervals::{total, union_segments};

/// A thread whose scheduler track has no pid (ftrace without tgids) is the
/// thread of the same tid that has one, when exactly one row has it; else,
/// when a process has that tid as its pid, that process's main thread.
pub(crate) fn merge_pidless_threads(rows: &mut BTreeMap<RowKey, ThreadRow>) {
    let pidless: Vec<RowKey> = rows
        .keys()
        .filter(|k| k.0 == "thread" && k.1.is_none() && k.2.is_some())
        .cloned()
        .collect();
    for key in pidless {
        let mut owners = rows
            .keys()
            .filter(|k| k.0 == "thread" && k.1.is_some() && k.2 == key.2);
        let owner = match (owners.next().cloned(), owners.next()) {
            (Some(owner), None) => owner,
            (None, _) if rows.keys().any(|k| k.0 == "thread" && k.1 == key.2) => {
                // No thread row of that tid, but a process of that pid: its
                // main thread (tid = pid) known only to the scheduler.
                let Some(mut row) = rows.remove(&key) else {
                    continue;
                };
                row.pid = key.2;
                let process = rows
                    .iter()
                    .find(|(k, _)| k.0 == "thread" && k.1 == key.2)
                    .and_then(|(_, r)| r.process_name.clone());
                if let Some(name) = process {
                    row.label = match row.pid {
                        Some(p) => format!("{} (pid {p})", short_process_name(&name)),
                        None => short_process_name(&name),
                    };
                    row.process_name = Some(name);
                }
                rows.insert(("thread".to_owned(), key.2, key.2, None), row);
                continue;
            }
            _ => continue,
        };
        let Some(from) = rows.remove(&key) else {
            continue;
        };
        if let Some(into) = rows.get_mut(&owner) {
            into.events += from.events;
            into.samples += from.samples;
            let add = |a: Option<i64>, b: Option<i64>| match (a, b) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
            };
            into.on_cpu_ns = add(into.on_cpu_ns, from.on_cpu_ns);
            into.runnable_ns = add(into.runnable_ns, from.runnable_ns);
            into.first_ts_ns = merge_span(into.first_ts_ns, from.first_ts_ns, i64::min);
            into.last_end_ns = merge_span(into.last_end_ns, from.last_end_ns, i64::max);
            if into.thread_name.is_none() {
                into.thread_name = from.thread_name;
            }
        }
    }
}

/// (artifact, device, stream).
pub(crate) type StreamKey = (String, Option<i64>, Option<i64>);

/// Busy time of each (artifact, device, stream): the union of its kernels,
/// copies and memsets.
pub(crate) async fn stream_busy(
    ctx: &datafusion::prelude::SessionContext,
    scope: &ArtifactScope,
) -> RecipeResult<BTreeMap<StreamKey, i64>> {
    let ops = DeviceOps::read(ctx, scope).await?;
    let mut intervals: BTreeMap<StreamKey, Vec<(i64, i64)>> = BTreeMap::new();
    for op in &ops.rows {
        intervals
            .entry((
                ops.strings.get(op.artifact).to_owned(),
                op.device,
                op.stream,
            ))
            .or_default()
            .push((op.ts, op.end));
    }
    Ok(intervals
        .into_iter()
        .map(|(k, list)| (k, total(&union_segments(list))))
        .collect())
}

/// The thread and process names the stacks of each sampled (pid, tid)
/// carry (`frame_totals`, one row per frame and thread: small).
pub(crate) async fn sample_thread_names(
    ctx: &datafusion::prelude::SessionContext,
    scope: &ArtifactScope,
) -> RecipeResult<BTreeMap<(Option<i64>, Option<i64>), (Option<String>, Option<String>)>> {
    let df = table(ctx, "frame_totals")
        .await?
        .filter(scope.filter())?
        .aggregate(
            vec![col("pid"), col("tid")],
            vec![
                min(col("thread_name")).alias("thread_name"),
                min(col("process_name")).alias("process_name"),
            ],
        )?;
    let mut out = BTreeMap::new();
    for batch in collect(df).await? {
        for i in 0..batch.num_rows() {
            out.insert(
                (
                    i64_at(column(&batch, "pid")?, i),
                    i64_at(column(&batch, "tid")?, i),
                ),
                (
                    string_at(column(&batch, "thread_name")?, i),
                    string_at(column(&batch, "process_name")?, i),
                ),
            );
        }
    }
    Ok(out)
}

/// Samples per (pid, tid).
pub(crate) async fn sample_counts(
    ctx: &datafusion::prelude::SessionContext,
    scope: &ArtifactScope,
) -> RecipeResult<BTreeMap<(Option<i64>, Option<i64>), i64>> {
    let df = table(ctx, "samples")
        .await?
        // `trace.*` weights are slices seen as stacks, not samples taken.
        .filter(scope.filter().and(col("metric").not_like(lit("trace.%"))))?
        .aggregate(
            vec![col("pid"), col("tid"), col("metric")],
            vec![sum(col("count")).alias("n")],
        )?;
    // Each metric of a profile counts the same samples: take the largest.
    let mut out: BTreeMap<(Option<i64>, Option<i64>), i64> = BTreeMap::new();
    for batch in collect(df).await? {
        for i in 0..batch.num_rows() {
            let pid = i64_at(column(&batch, "pid")?, i);
            let tid = i64_at(column(&batch, "tid")?, i);
            let n = i64_at(column(&batch, "n")?, i).unwrap_or(0);
            let slot = out.entry((pid, tid)).or_insert(0);
            *slot = (*slot).max(n);
        }
    }
    Ok(out)
}

/// First and last timed sample (`trace.*` weights aside): the span of a
/// profile with samples and no events (perf.data, a Perfetto perf trace).
pub(crate) async fn sample_span(
    ctx: &datafusion::prelude::SessionContext,
    scope: &ArtifactScope,
) -> RecipeResult<Option<(i64, i64)>> {
    let df = table(ctx, "samples")
        .await?
        .filter(
            scope
                .filter()
                .and(col("metric").not_like(lit("trace.%")))
                .and(col("ts_ns").is_not_null()),
        )?
        .aggregate(
            vec![],
            vec![
                min(col("ts_ns")).alias("first"),
                max(col("ts_ns")).alias("last"),
            ],
        )?;
    for batch in collect(df).await? {
        if batch.num_rows() > 0 {
            let first = i64_at(column(&batch, "first")?, 0);
            let last = i64_at(column(&batch, "last")?, 0);
            return Ok(first.zip(last));
        }
    }
    Ok(None)
}
