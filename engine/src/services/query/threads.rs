//! `list_threads`: the processes, threads and GPU streams of a target with
//! their busy time and share of the trace's span, busiest first — so a
//! question can name one thread, and see when a name is shared.

use std::collections::BTreeMap;

use flameox_recipes::ArtifactScope;
use flameox_recipes::threads::{self, ThreadQuery, ThreadRow};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::query::run_budgeted;
use crate::services::{EvidenceStatus, QueryContext, ResolvedScope, answer_status, resolve_scope};

/// What `list_threads` asks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ThreadsRequest {
    /// Run id (UUID) or artifact id (sha256:…).
    #[schemars(length(min = 1, max = 200))]
    pub target: String,
    /// Only this process: pid or exact name.
    #[schemars(length(min = 1, max = 200))]
    pub process: Option<String>,
    /// Rows to return (default 20).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

/// A thread with its share of the trace's span.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadEntry {
    #[serde(flatten)]
    pub thread: ThreadRow,
    /// `busy_ns` as a percentage of the trace's span (`span_ns`: its first
    /// event start to its last event end); null when busy is unknown.
    pub busy_pct_of_trace: Option<f64>,
    /// `samples` as a percentage of every sample in scope.
    pub samples_pct_of_scope: f64,
    /// `on_cpu_ns` as a percentage of the trace's span (system traces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_cpu_pct_of_trace: Option<f64>,
}

/// A name shared by several threads (in different processes, or one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharedName {
    pub thread_name: String,
    /// The threads that carry it, as `label` / tid (the first
    /// [`SHARED_THREADS_SHOWN`]).
    pub threads: Vec<String>,
    /// How many threads carry it.
    pub threads_total: usize,
}

/// Shared names listed, those of the busiest threads first (a system
/// trace has hundreds).
pub const SHARED_NAMES_SHOWN: usize = 8;
/// Threads named per shared name.
pub const SHARED_THREADS_SHOWN: usize = 4;

/// The answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadsResult {
    pub scope: ResolvedScope,
    pub commit_id: String,
    /// First event start to last event end over the target, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span_ns: Option<(i64, i64)>,
    /// CPUs that ran a task (system traces): on-CPU time's capacity is
    /// CPUs × the span.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<i64>,
    /// Every thread's time on a CPU, summed (system traces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_cpu_total_ns: Option<i64>,
    /// Every thread's time ready and waiting for a CPU, summed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runnable_total_ns: Option<i64>,
    /// The CPUs' time in hard interrupt handlers (cutting into a task's
    /// time on CPU or an idle CPU's), when the trace records interrupts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_total_ns: Option<i64>,
    /// The CPUs' time in softirqs, likewise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub softirq_total_ns: Option<i64>,
    pub rows: Vec<ThreadEntry>,
    /// Threads and streams in scope (all, not only the rows).
    pub total: u64,
    pub returned: usize,
    pub truncated: bool,
    /// Thread names that more than one thread carries: filtering by such a
    /// name merges them (use the tid instead).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shared_names: Vec<SharedName>,
    /// Names shared by several threads, all of them (`shared_names` lists
    /// the most-shared [`SHARED_NAMES_SHOWN`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shared_names_total: usize,
    pub evidence: EvidenceStatus,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Rows when the request names no limit.
pub const DEFAULT_LIMIT: usize = 20;

/// Lists the target's threads, busiest first.
pub async fn list_threads(qc: &QueryContext<'_>, req: &ThreadsRequest) -> Result<ThreadsResult> {
    let limit = qc
        .ws
        .config
        .row_limit(Some(req.limit.unwrap_or(DEFAULT_LIMIT)))?;
    let session = qc.session(None)?;
    let scope = resolve_scope(qc.ws, &session.snapshot, &req.target)?;
    let query = ThreadQuery {
        scope: ArtifactScope {
            artifact_ids: scope.artifact_ids.clone(),
        },
        process: req.process.clone(),
    };
    let answer = run_budgeted(&session, threads::threads(&session.ctx, &query)).await?;
    let span = answer
        .span_ns
        .map(|(a, b)| b.saturating_sub(a))
        .unwrap_or(0);
    let mut by_name: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    // Where each name first appears in the busiest-first listing: the
    // names of the threads an answer is about come first.
    let mut first_at: BTreeMap<&str, usize> = BTreeMap::new();
    for (at, row) in answer.rows.iter().enumerate() {
        if let Some(name) = row.thread_name.as_deref() {
            first_at.entry(name).or_insert(at);
            let who = match row.tid {
                Some(tid) => format!("{} tid {tid}", row.label),
                None => row.label.clone(),
            };
            by_name.entry(name).or_default().push(who);
        }
    }
    let mut shared: Vec<(&str, Vec<String>)> =
        by_name.into_iter().filter(|(_, t)| t.len() > 1).collect();
    let shared_names_total = shared.len();
    shared.sort_by_key(|(name, _)| first_at.get(name).copied().unwrap_or(usize::MAX));
    let shared_names = shared
        .into_iter()
        .take(SHARED_NAMES_SHOWN)
        .map(|(name, mut threads)| SharedName {
            thread_name: name.to_owned(),
            threads_total: threads.len(),
            threads: {
                threads.truncate(SHARED_THREADS_SHOWN);
                threads
            },
        })
        .collect();
    let total = answer.rows.len() as u64;
    let all_samples: i64 = answer.rows.iter().map(|r| r.samples).sum();
    let pct = |part: i64, whole: i64| {
        if whole > 0 {
            (part as f64 * 10_000.0 / whole as f64).round() / 100.0
        } else {
            0.0
        }
    };
    let rows: Vec<ThreadEntry> = answer
        .rows
        .into_iter()
        .take(limit)
        .map(|thread| ThreadEntry {
            busy_pct_of_trace: thread.busy_ns.map(|b| pct(b, span)),
            on_cpu_pct_of_trace: thread.on_cpu_ns.map(|b| pct(b, span)),
            samples_pct_of_scope: pct(thread.samples, all_samples),
            thread,
        })
        .collect();
    let evidence = answer_status(
        &session.snapshot,
        &scope,
        !rows.is_empty(),
        req.process.is_some(),
    );
    Ok(ThreadsResult {
        commit_id: session.snapshot.commit_id().to_owned(),
        scope,
        span_ns: answer.span_ns,
        cpus: answer.cpus,
        on_cpu_total_ns: answer.on_cpu_total_ns,
        runnable_total_ns: answer.runnable_total_ns,
        irq_total_ns: answer.irq_total_ns,
        softirq_total_ns: answer.softirq_total_ns,
        returned: rows.len(),
        truncated: (rows.len() as u64) < total,
        rows,
        total,
        shared_names,
        shared_names_total,
        evidence,
    })
}
