//! What the kernel scheduler says about a thread: **on CPU** (its
//! `sched_slice` rows on the CPU tracks: it ran on a CPU, whatever it did
//! there — one task per CPU at a time, so the sum never passes CPUs × the
//! span even when a switch-out was lost) and
//! **runnable** (its `Runnable` / `Runnable (Preempted)` states: ready and
//! waiting for a CPU — CPU contention), from the `thread_state` rows that
//! system traces (Perfetto, ftrace text, trace-cmd, perf.data tracepoints)
//! carry. Not the same thing as *busy* ([`super::threads`]: in traced
//! calls); both are reported, each under its own name. An open state
//! (`dur_ns` = -1, still running at the end) counts nothing.
//!
//! Interrupt handlers (`interrupt` rows: hard irq and softirq) run ahead
//! of whatever the CPU was doing — inside a task's `sched_slice`, or on
//! an idle CPU; their time is summed on its own, never taken from a
//! thread's.
//!
//! The CPUs are the scope's `cpu` tracks (one per CPU that ran a task), so
//! on-CPU time has a capacity to be a share of: CPUs × the trace's span.

use std::collections::BTreeMap;

use datafusion::functions_aggregate::expr_fn::{count_distinct, sum};
use datafusion::logical_expr::{col, lit, when};
use datafusion::prelude::SessionContext;

use crate::common::{ArtifactScope, RecipeResult, column, i64_at, string_at, table};
use crate::device_pass::for_each_batch;

/// One thread's scheduler time, ns.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SchedulerTime {
    pub on_cpu_ns: i64,
    pub runnable_ns: i64,
}

/// Time the CPUs spent in interrupt handlers, ns (closed handlers only).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct InterruptTime {
    /// Hard interrupt handlers (`irq_handler_entry` to `_exit`).
    pub irq_ns: i64,
    /// Softirqs (`softirq_entry` to `_exit`).
    pub softirq_ns: i64,
}

/// Scheduler time per `(artifact, tid)`, the CPUs seen per artifact, and
/// the interrupt time over the scope (None without `interrupt` rows).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchedulerTimes {
    pub threads: BTreeMap<(String, i64), SchedulerTime>,
    pub cpus: BTreeMap<String, i64>,
    pub interrupts: Option<InterruptTime>,
}

impl SchedulerTimes {
    /// CPUs over the whole scope (artifacts of one run are one machine's
    /// ranks or captures; their largest CPU count is the capacity's).
    pub fn cpus(&self) -> Option<i64> {
        self.cpus.values().copied().max()
    }
}

/// Reads the scope's scheduler time.
pub async fn scheduler_times(
    ctx: &SessionContext,
    scope: &ArtifactScope,
) -> RecipeResult<SchedulerTimes> {
    let mut out = SchedulerTimes::default();
    let positive = |name_matches: datafusion::logical_expr::Expr| {
        when(name_matches.and(col("dur_ns").gt(lit(0i64))), col("dur_ns")).otherwise(lit(0i64))
    };
    let states = table(ctx, "trace_events")
        .await?
        .filter(
            scope
                .filter()
                .and(
                    col("kind")
                        .eq(lit("thread_state"))
                        .or(col("kind").eq(lit("sched_slice"))),
                )
                .and(col("tid").is_not_null()),
        )?
        .aggregate(
            vec![col("artifact_id"), col("tid")],
            vec![
                sum(positive(col("kind").eq(lit("sched_slice")))?).alias("on_cpu_ns"),
                sum(positive(
                    col("kind")
                        .eq(lit("thread_state"))
                        .and(col("name").like(lit("Runnable%"))),
                )?)
                .alias("runnable_ns"),
            ],
        )?;
    for_each_batch(states, |batch| {
        for i in 0..batch.num_rows() {
            let (Some(artifact), Some(tid)) = (
                string_at(column(batch, "artifact_id")?, i),
                i64_at(column(batch, "tid")?, i),
            ) else {
                continue;
            };
            out.threads.insert(
                (artifact, tid),
                SchedulerTime {
                    on_cpu_ns: i64_at(column(batch, "on_cpu_ns")?, i).unwrap_or(0),
                    runnable_ns: i64_at(column(batch, "runnable_ns")?, i).unwrap_or(0),
                },
            );
        }
        Ok(())
    })
    .await?;
    out.interrupts = interrupt_time(ctx, scope).await?;
    if out.threads.is_empty() {
        return Ok(out);
    }
    let cpus = table(ctx, "tracks")
        .await?
        .filter(scope.filter().and(col("kind").eq(lit("cpu"))))?
        .aggregate(
            vec![col("artifact_id")],
            vec![count_distinct(col("name")).alias("cpus")],
        )?;
    for_each_batch(cpus, |batch| {
        for i in 0..batch.num_rows() {
            if let (Some(artifact), Some(n)) = (
                string_at(column(batch, "artifact_id")?, i),
                i64_at(column(batch, "cpus")?, i),
            ) {
                out.cpus.insert(artifact, n);
            }
        }
        Ok(())
    })
    .await?;
    Ok(out)
}

/// The scope's hard-irq and softirq time: the `interrupt` rows by
/// category (an open handler, `dur_ns` -1, counts nothing).
async fn interrupt_time(
    ctx: &SessionContext,
    scope: &ArtifactScope,
) -> RecipeResult<Option<InterruptTime>> {
    let rows = table(ctx, "trace_events")
        .await?
        .filter(scope.filter().and(col("kind").eq(lit("interrupt"))))?
        .aggregate(
            vec![col("category")],
            vec![
                sum(when(col("dur_ns").gt(lit(0i64)), col("dur_ns")).otherwise(lit(0i64))?)
                    .alias("ns"),
            ],
        )?;
    let mut out: Option<InterruptTime> = None;
    for_each_batch(rows, |batch| {
        for i in 0..batch.num_rows() {
            let time = out.get_or_insert_with(InterruptTime::default);
            let ns = i64_at(column(batch, "ns")?, i).unwrap_or(0);
            match string_at(column(batch, "category")?, i).as_deref() {
                Some("softirq") => time.softirq_ns += ns,
                _ => time.irq_ns += ns,
            }
        }
        Ok(())
    })
    .await?;
    Ok(out)
}
