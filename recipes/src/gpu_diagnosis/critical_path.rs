//! Critical-path section: an artifact's (= rank's) host calls, device work
//! and sync rows from `trace_events` in, [`critical_path_graph`]'s path out.
//!
//! - Host events (HTA: categories cpu_op, cuda_runtime, cuda_driver): kinds
//!   `cpu_op`, `runtime_api`, `driver_api` (ROCm's carry a stream), stream-less
//!   `graph_launch`, and `communication` of category cpu_op (not the `nccl:*`
//!   annotations); terminated. Annotations and Python frames are walked
//!   through: parent = nearest host-event ancestor by `parent_event_id`, same
//!   track. `blocking`: HTA's list, Nsight's `_vNNNN` names too.
//! - Device events: kernels (NCCL's as communication), memcpy, memset, as
//!   `accelerator::device_work_rows`; queue = (device, stream).
//! - Syncs: kind `sync`, never by nesting (Kineto's sit on stream tracks and
//!   may parent copies). Kineto: `cuda_sync_kind` and its args; Nsight: the
//!   call with the same correlation (device, stream synchronize; its event
//!   syncs and stream waits name no record call: left out).
//! - Window: `params.window` (inclusive, HTA's), else the artifact's span.
//!   Rows are read one window length (≥ [`MIN_MARGIN_NS`]) either side:
//!   queue lengths, launches and records around the window decide edges in
//!   it; device rows also later, by the correlations of the window's calls
//!   (a device behind the host runs the window's work long after it).
//! - Caveats, not errors: over `CpLimits::default()` (rows read or graph):
//!   no path; no sync rows (the device then never delays the host: HTA's
//!   warning); device work without a launch; rows left out.

use std::collections::HashMap;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::logical_expr::{Expr, col, lit};
use datafusion::prelude::SessionContext;
use flameox_extractors::nsight::api_base;
use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::critical_path_graph::{
    Bound, CpError, CpLimits, CriticalPath, DeviceClass, DeviceEvent, EventRef, HostEvent,
    StepGraphInput, SyncRecord, critical_path,
};
use super::params::DiagnosisParams;
use crate::common::{ArtifactScope, RecipeResult, as_utf8, column, table, utf8};
use crate::device_pass::{Interner, ints};
use crate::gpu_breakdown_params::DeviceKey;
use crate::kernel_family::readable_name;

/// Least margin read before and after a window.
pub const MIN_MARGIN_NS: i64 = 10_000_000;
/// HTA's `BLOCKING_SYNC_CALLS`: their exit edge is a wait, not CPU work.
const BLOCKING: &str = "cudaDeviceSynchronize cudaStreamSynchronize cudaEventQuery \
    cudaEventSynchronize cudaMemcpy cudaMemcpyAsync";
/// Host events and what they nest in; device work; syncs.
const HOST_KINDS: &str = "cpu_op runtime_api driver_api graph_launch communication \
    user_annotation python_function cpu_slice nvtx_range profiler_span";
const DEVICE_KINDS: &str = "kernel memcpy memset communication";
const COLUMNS: &str = "event_id parent_event_id ts_ns dur_ns name kind category track_id \
    device stream correlation_id args_json";
/// [`PathEvent::kind`] by [`DeviceClass`].
const KIND_OF: [&str; 3] = ["kernel", "communication", "memory"];
/// Ancestors walked before a parent is given up (nesting is never deeper).
const MAX_WALK: usize = 1024;

/// Critical path of one artifact over a window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathOfArtifact {
    #[serde(flatten)]
    pub key: DeviceKey,
    pub window_ns: (i64, i64),
    pub length_ns: i64,
    /// Σ edge weight per bound on the path (zero ones left out), largest first.
    pub by_bound: Vec<BoundShare>,
    /// The events the path's time is attributed to, most time first.
    pub top: Vec<PathEvent>,
    pub nodes: usize,
    pub edges: usize,
    pub sync_edges: usize,
    pub syncs_unresolved: usize,
    pub negative_weights_clamped: usize,
    /// No sync rows, events left out, or why there is no path.
    pub caveats: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoundShare {
    /// [`bound_name`].
    pub bound: String,
    pub ns: i64,
    pub pct_of_path: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathEvent {
    pub name: String,
    /// `host`, `kernel`, `memory` or `communication`.
    pub kind: String,
    pub bound: String,
    pub ns: i64,
    /// Path edges attributed to this name, kind and bound.
    pub count: usize,
}

/// In [`Bound::ALL`] order.
const BOUND_NAMES: &str = "cpu gpu_compute gpu_communication gpu_memory kernel_launch_delay \
    kernel_kernel_delay dependency";

pub fn bound_name(b: Bound) -> &'static str {
    BOUND_NAMES.split_whitespace().nth(b as usize).unwrap_or("")
}

/// The critical path of each artifact of `scope` over `params.window`.
pub async fn critical_paths(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    params: &DiagnosisParams,
) -> RecipeResult<Vec<PathOfArtifact>> {
    let paths = futures::stream::iter(&scope.artifact_ids).then(|a| path_of(ctx, a, params));
    paths.try_collect().await
}

/// Which rows a read keeps.
#[derive(Clone, Copy, PartialEq)]
enum Pass {
    Hosts,
    Devices,
    Syncs,
}

async fn path_of(
    ctx: &SessionContext,
    artifact: &str,
    params: &DiagnosisParams,
) -> RecipeResult<PathOfArtifact> {
    let limits = CpLimits::default();
    let (mut ev, mut range) = (Evidence::default(), lit(true));
    ev.window_ns = params.window.unwrap_or_default();
    if let Some((a, b)) = params.window {
        let m = b.saturating_sub(a).max(MIN_MARGIN_NS);
        ev.window = Some((a, b));
        ev.range = (a.saturating_sub(m), b.saturating_add(m));
        range = col("ts_ns").between(lit(ev.range.0), lit(ev.range.1));
    }
    for pass in [Pass::Hosts, Pass::Devices, Pass::Syncs] {
        let (kinds, filter) = match pass {
            Pass::Hosts => (HOST_KINDS, range.clone()),
            Pass::Devices => (DEVICE_KINDS, ev.device_range()),
            Pass::Syncs => ("sync", range.clone()),
        };
        let kinds = kinds.split_whitespace().map(lit).collect();
        let filter = (ArtifactScope::one(artifact).filter())
            .and(utf8("kind").in_list(kinds, false))
            .and(filter);
        let columns = COLUMNS.split(' ').filter(|c| !c.is_empty());
        let columns = columns.filter(|&c| pass == Pass::Syncs || c != "args_json");
        let df = (table(ctx, "trace_events").await?)
            .filter(filter)?
            .select(columns.map(col).collect::<Vec<Expr>>())?;
        let mut stream = df.execute_stream().await?;
        while let Some(batch) = stream.next().await {
            ev.push(&batch?, pass)?;
            let n = limits.max_nodes;
            if ev.hosts.len() + ev.devices.len() > n || ev.ancestors.len() > n {
                ev.caveats.push(format!("refused: more than {n} host and device rows (or ancestors) in and around the window; narrow the window"));
                return Ok(answer(&ev, params.key(artifact, None), None));
            }
        }
        if pass == Pass::Hosts {
            ev.resolve_parents();
        }
    }
    let window = params.window.or(ev.span).unwrap_or((0, 0));
    (ev.window_ns, ev.limit) = (window, params.limit);
    let launched = |d: &&DeviceEvent| d.correlation.is_some_and(|c| ev.calls.contains_key(&c));
    let unlaunched = (ev.devices.iter())
        .filter(|d| ev.in_window(d.ts) && !launched(d))
        .count();
    let notes = [
        (ev.hosts.is_empty() && ev.devices.is_empty(), "no host calls or device work in the window".to_owned()),
        (ev.sync_rows == 0 && !ev.devices.is_empty(), "no sync rows: device work can never delay the host on this path, so CPU shares are an upper bound (HTA's caveat; Kineto records them with enable_cuda_sync_events)".to_owned()),
        (unlaunched > 0, format!("{unlaunched} device events in the window have no launch call in the rows read: kept, without a launch edge")),
        (ev.unterminated > 0, format!("{} unterminated host calls in the window left out", ev.unterminated)),
        (ev.unclassified > 0, format!("{} sync rows in the window left out: kind unknown, or an Nsight event sync / stream wait (no record call in the evidence)", ev.unclassified)),
    ];
    ev.caveats
        .extend(notes.into_iter().filter(|n| n.0).map(|n| n.1));
    let input = StepGraphInput {
        hosts: &ev.hosts,
        devices: &ev.devices,
        syncs: &ev.syncs,
        window,
    };
    let cp = critical_path(&input, &limits).map_err(|e| match e {
        CpError::TooManyNodes { .. } | CpError::TooManyEdges { .. } => format!("refused: {e}"),
        e => format!("no path: invalid graph ({e})"),
    });
    let cp = cp.map_err(|e| ev.caveats.push(e)).ok();
    Ok(answer(&ev, params.key(artifact, None), cp.as_ref()))
}

/// The algorithm's input for one artifact, and what was left out.
#[derive(Default)]
struct Evidence {
    /// `params.window`, the rows' range around it, the path's window.
    window: Option<(i64, i64)>,
    range: (i64, i64),
    window_ns: (i64, i64),
    limit: usize,
    caveats: Vec<String>,
    strings: Interner,
    hosts: Vec<HostEvent>,
    /// Per host: (event id, parent event id).
    host_ids: Vec<(i64, Option<i64>)>,
    /// Rows host events may nest in: event id → parent event id.
    ancestors: HashMap<i64, Option<i64>>,
    devices: Vec<DeviceEvent>,
    syncs: Vec<SyncRecord>,
    threads: HashMap<i64, u32>,
    queues: HashMap<(Option<i64>, Option<i64>), u32>,
    /// Host call name by correlation (Nsight syncs).
    calls: HashMap<i64, u32>,
    /// Of the host and device events.
    span: Option<(i64, i64)>,
    unterminated: usize,
    sync_rows: usize,
    unclassified: usize,
}

impl Evidence {
    fn in_window(&self, ts: i64) -> bool {
        self.window.is_none_or(|(a, b)| ts >= a && ts <= b)
    }

    /// Device rows to read: from the range's start, up to its end or with
    /// the correlation of a call in the window.
    fn device_range(&self) -> Expr {
        let calls = self.hosts.iter().filter(|h| self.in_window(h.ts));
        let corr = calls.filter_map(|h| h.correlation);
        let later = match (corr.clone().min(), corr.max()) {
            (Some(a), Some(b)) => col("correlation_id").between(lit(a), lit(b)),
            _ => lit(false),
        };
        let (start, end, ts) = (lit(self.range.0), lit(self.range.1), || col("ts_ns"));
        let range = ts().gt_eq(start).and(ts().lt_eq(end).or(later));
        self.window.map_or(lit(true), |_| range)
    }

    fn queue(&mut self, device: Option<i64>, stream: Option<i64>) -> u32 {
        let next = self.queues.len() as u32;
        *self.queues.entry((device, stream)).or_insert(next)
    }

    fn push(&mut self, batch: &RecordBatch, pass: Pass) -> RecipeResult<()> {
        let name = self.strings.column(column(batch, "name")?)?;
        let kind = self.strings.column(column(batch, "kind")?)?;
        let category = self.strings.column(column(batch, "category")?)?;
        let c = |name: &str| column(batch, name).and_then(ints);
        let (id, parent) = (c("event_id")?, c("parent_event_id")?);
        let (ts, dur, track) = (c("ts_ns")?, c("dur_ns")?, c("track_id")?);
        let (device, stream, correlation) = (c("device")?, c("stream")?, c("correlation_id")?);
        if pass == Pass::Syncs {
            let args = as_utf8(column(batch, "args_json")?)?;
            let args = args.as_string::<i32>();
            for i in 0..batch.num_rows() {
                let text = Some(i)
                    .filter(|&i| args.is_valid(i))
                    .map_or("null", |i| args.value(i));
                let inside = ts[i].is_some_and(|t| self.in_window(t));
                match self.sync_record(text, [device[i], stream[i], correlation[i]]) {
                    Some(r) => self.syncs.push(r),
                    None => self.unclassified += usize::from(inside),
                }
            }
            self.sync_rows += batch.num_rows();
            return Ok(());
        }
        for i in 0..batch.num_rows() {
            let no_stream = stream[i].is_none();
            let (class, host) = {
                let k = kind[i].map_or("", |v| self.strings.get(v));
                let cat = category[i].map_or("", |v| self.strings.get(v));
                let device_comm = !no_stream && matches!(cat, "kernel" | "Kernel");
                match k {
                    "kernel" => (Some(DeviceClass::Compute), false),
                    "memcpy" | "memset" => (Some(DeviceClass::Memory), false),
                    "communication" if device_comm => (Some(DeviceClass::Communication), false),
                    "cpu_op" | "runtime_api" | "driver_api" => (None, true),
                    "graph_launch" => (None, no_stream),
                    "communication" => (None, no_stream && matches!(cat, "cpu_op" | "Operator")),
                    _ => (None, false),
                }
            };
            let (start, d) = (ts[i].unwrap_or(0), dur[i].unwrap_or(-1));
            let (end, name) = (start.saturating_add(d), name[i].unwrap_or(0));
            match (pass, class) {
                (Pass::Devices, Some(class)) if d >= 0 => {
                    let queue = self.queue(device[i], stream[i]);
                    self.devices.push(DeviceEvent {
                        queue,
                        ts: start,
                        end,
                        correlation: correlation[i],
                        class,
                        name,
                    });
                }
                (Pass::Hosts, None) if host && d >= 0 => {
                    let next = self.threads.len() as u32;
                    let thread = *self.threads.entry(track[i].unwrap_or(-1)).or_insert(next);
                    let blocking = (BLOCKING.split_whitespace())
                        .any(|b| b == api_base(self.strings.get(name)));
                    correlation[i].map(|c| self.calls.entry(c).or_insert(name));
                    self.host_ids.push((id[i].unwrap_or(-1), parent[i]));
                    self.hosts.push(HostEvent {
                        thread,
                        ts: start,
                        end,
                        parent: None,
                        blocking,
                        correlation: correlation[i],
                        name,
                    });
                }
                (Pass::Hosts, None) if no_stream => {
                    id[i].map(|e| self.ancestors.insert(e, parent[i]));
                    self.unterminated += usize::from(host && d < 0 && self.in_window(start));
                    continue;
                }
                _ => continue,
            }
            let span = self.span.get_or_insert((start, end));
            *span = (span.0.min(start), span.1.max(end));
        }
        Ok(())
    }

    /// Each host's parent: its nearest host-event ancestor on its track.
    fn resolve_parents(&mut self) {
        let index: HashMap<i64, usize> = (self.host_ids.iter().enumerate())
            .map(|(h, &(id, _))| (id, h))
            .collect();
        for h in 0..self.hosts.len() {
            let mut up = self.host_ids[h].1;
            for _ in 0..MAX_WALK {
                let Some(id) = up else { break };
                if let Some(&p) = index.get(&id) {
                    let same = p != h && self.hosts[p].thread == self.hosts[h].thread;
                    self.hosts[h].parent = same.then_some(p);
                    break;
                }
                up = self.ancestors.get(&id).copied().flatten();
            }
        }
    }

    /// A Kineto sync row from its args, an Nsight one from its call.
    fn sync_record(&mut self, args: &str, row: [Option<i64>; 3]) -> Option<SyncRecord> {
        let ([device, stream, correlation], a) =
            (row, serde_json::from_str::<Value>(args).unwrap_or_default());
        let get = |key: &str| Value::get(&a, key).and_then(Value::as_i64);
        let (device, stream) = (get("device").or(device), get("stream").or(stream));
        let call_correlation = get("correlation").or(correlation)?;
        let record = get("wait_on_cuda_event_record_corr_id");
        let recorded = get("wait_on_stream");
        let kind = match a.get("cuda_sync_kind").and_then(Value::as_str) {
            Some(kind) => kind,
            None => match api_base(self.strings.get(*self.calls.get(&call_correlation)?)) {
                "cudaDeviceSynchronize" | "cuCtxSynchronize" => "Context Sync",
                "cudaStreamSynchronize" | "cuStreamSynchronize" => "Stream Sync",
                _ => return None,
            },
        };
        Some(match kind {
            "Stream Sync" => SyncRecord::Stream {
                queue: self.queue(device, stream),
                call_correlation,
            },
            "Context Sync" => SyncRecord::Device { call_correlation },
            "Event Sync" => SyncRecord::Event {
                record_correlation: record?,
                recorded_queue: self.queue(device, Some(recorded?)),
                call_correlation,
            },
            "Stream Wait Event" => SyncRecord::StreamWait {
                record_correlation: record?,
                recorded_queue: self.queue(device, Some(recorded?)),
                waiting_queue: self.queue(device, stream),
                wait_call_correlation: call_correlation,
            },
            _ => return None,
        })
    }
}

/// The answer: shares, counts and the top attributed events of `cp`.
fn answer(ev: &Evidence, key: DeviceKey, cp: Option<&CriticalPath>) -> PathOfArtifact {
    let length_ns = cp.map_or(0, |cp| cp.length_ns);
    let pct = |ns: i64| match length_ns > 0 {
        true => ns as f64 * 100.0 / length_ns as f64,
        false => 0.0,
    };
    // Grouped by readable name: a kernel family's instances add up.
    let (mut by_bound, mut top, mut names) = (Vec::new(), HashMap::new(), HashMap::new());
    if let Some(cp) = cp {
        by_bound.extend(cp.by_bound.iter().copied().filter(|b| b.1 > 0));
        for e in &cp.edges {
            let (id, kind) = match e.event {
                EventRef::Host(h) => (ev.hosts[h].name, "host"),
                EventRef::Device(d) => (ev.devices[d].name, KIND_OF[ev.devices[d].class as usize]),
                EventRef::None => continue,
            };
            let name = names
                .entry(id)
                .or_insert_with(|| readable_name(ev.strings.get(id)));
            let slot: &mut (i64, usize) = top.entry((name.clone(), kind, e.bound)).or_default();
            (slot.0, slot.1) = (slot.0 + e.weight_ns, slot.1 + 1);
        }
    }
    by_bound.sort_by_key(|&(b, ns)| (std::cmp::Reverse(ns), b));
    let mut top: Vec<_> = top.into_iter().filter(|t| t.1.0 > 0).collect();
    top.sort_by(|a, b| (b.1.0.cmp(&a.1.0)).then_with(|| a.0.cmp(&b.0)));
    top.truncate(ev.limit);
    let count = |f: fn(&CriticalPath) -> usize| cp.map_or(0, f);
    PathOfArtifact {
        key,
        window_ns: ev.window_ns,
        length_ns,
        by_bound: (by_bound.into_iter())
            .map(|(b, ns)| BoundShare {
                bound: bound_name(b).to_owned(),
                ns,
                pct_of_path: pct(ns),
            })
            .collect(),
        top: (top.into_iter())
            .map(|((name, kind, bound), (ns, count))| PathEvent {
                name,
                kind: kind.to_owned(),
                bound: bound_name(bound).to_owned(),
                ns,
                count,
            })
            .collect(),
        nodes: count(|cp| cp.nodes),
        edges: count(|cp| cp.graph_edges),
        sync_edges: count(|cp| cp.sync_edges),
        syncs_unresolved: count(|cp| cp.syncs_unresolved),
        negative_weights_clamped: count(|cp| cp.negative_weights_clamped),
        caveats: ev.caveats.clone(),
    }
}
