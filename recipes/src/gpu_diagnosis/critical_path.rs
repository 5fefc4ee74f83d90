//! Critical-path section: reads an artifact's host calls, device work and
//! sync rows from `trace_events` into [`critical_path_graph`]'s input, per
//! artifact (= rank), and answers which bound sets the window's length
//! (HTA's critical path analysis; graph rules in that module).
//!
//! - Host events (HTA: categories cpu_op, cuda_runtime, cuda_driver): kinds
//!   `cpu_op`, `runtime_api`, `driver_api` (stream or not: ROCm launches
//!   carry one), `graph_launch` and `communication` without a stream
//!   (`nccl:*`, `record_param_comms` ops); terminated only. Annotations and
//!   Python frames are not events (HTA: neither) but are walked through:
//!   parent = nearest host-event ancestor by `parent_event_id`, same track.
//!   `blocking`: HTA's list, Nsight's `_vNNNN` names included.
//! - Device events: `accelerator::device_work_rows` (kernels, NCCL kernels,
//!   memcpy, memset); queue = (device, stream).
//! - Syncs: rows of kind `sync`, never by nesting (Kineto's sit on stream
//!   tracks and may parent copies). Kineto: `cuda_sync_kind` and its args.
//!   Nsight: by the runtime call with the same correlation (device and
//!   stream synchronize); its event syncs and stream waits name no record
//!   call and are left out, counted in a caveat.
//! - Window: `params.window` (inclusive, HTA's), else the artifact's span.
//!   Rows are read within one window length (at least [`MIN_MARGIN_NS`])
//!   either side, since queue lengths, launches and event records before
//!   and after the window decide edges inside it.
//! - Bounds: more than `CpLimits::default().max_nodes` host and device rows
//!   (or as many walked-through ancestors) read, or a graph over the
//!   limits, gives a caveat and no path, not an error.
//! - Caveats: no sync rows (the device can then never delay the host on
//!   the path: HTA's own warning), device work without a launch, rows left
//!   out (unterminated calls, unclassified syncs), refusals.

use std::collections::HashMap;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::logical_expr::{Expr, col, lit};
use datafusion::prelude::{DataFrame, SessionContext};
use flameox_extractors::nsight::api_base;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::critical_path_graph::{
    Bound, CpError, CpLimits, CriticalPath, DeviceClass, DeviceEvent, EventRef, HostEvent,
    StepGraphInput, SyncRecord, critical_path,
};
use super::{DeviceKey, DiagnosisParams};
use crate::common::{ArtifactScope, RecipeResult, as_utf8, column, table, utf8};
use crate::device_pass::{Interner, ints};
use crate::kernel_family::readable_name;

/// Least margin read before and after a window.
pub const MIN_MARGIN_NS: i64 = 10_000_000;
/// HTA's `BLOCKING_SYNC_CALLS`: their exit edge is a wait, not CPU work.
const BLOCKING: [&str; 6] = [
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventQuery",
    "cudaEventSynchronize",
    "cudaMemcpy",
    "cudaMemcpyAsync",
];
/// Kinds read: host events, device work, and what host events nest in.
const KINDS: [&str; 13] = [
    "cpu_op",
    "runtime_api",
    "driver_api",
    "graph_launch",
    "communication",
    "kernel",
    "memcpy",
    "memset",
    "user_annotation",
    "python_function",
    "cpu_slice",
    "nvtx_range",
    "profiler_span",
];
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
    /// `cpu`, `gpu_compute`, `gpu_communication`, `gpu_memory`,
    /// `kernel_launch_delay`, `kernel_kernel_delay`, `dependency`.
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

pub fn bound_name(b: Bound) -> &'static str {
    match b {
        Bound::Cpu => "cpu",
        Bound::GpuCompute => "gpu_compute",
        Bound::GpuCommunication => "gpu_communication",
        Bound::GpuMemory => "gpu_memory",
        Bound::KernelLaunchDelay => "kernel_launch_delay",
        Bound::KernelKernelDelay => "kernel_kernel_delay",
        Bound::Dependency => "dependency",
    }
}

/// The critical path of each artifact of `scope` over `params.window`.
pub async fn critical_paths(
    ctx: &SessionContext,
    scope: &ArtifactScope,
    params: &DiagnosisParams,
) -> RecipeResult<Vec<PathOfArtifact>> {
    let mut out = Vec::with_capacity(scope.artifact_ids.len());
    for artifact in &scope.artifact_ids {
        out.push(path_of(ctx, artifact, params).await?);
    }
    Ok(out)
}

async fn path_of(
    ctx: &SessionContext,
    artifact: &str,
    params: &DiagnosisParams,
) -> RecipeResult<PathOfArtifact> {
    let limits = CpLimits::default();
    let range = params.window.map(|(a, b)| {
        let m = b.saturating_sub(a).max(MIN_MARGIN_NS);
        (a.saturating_sub(m), b.saturating_add(m))
    });
    let mut ev = Evidence::default();
    let mut answer = PathOfArtifact {
        key: params.key(artifact, None),
        window_ns: params.window.unwrap_or((0, 0)),
        length_ns: 0,
        by_bound: Vec::new(),
        top: Vec::new(),
        nodes: 0,
        edges: 0,
        sync_edges: 0,
        syncs_unresolved: 0,
        negative_weights_clamped: 0,
        caveats: Vec::new(),
    };
    let kinds = KINDS.iter().map(|k| lit(*k)).collect();
    let df = rows(ctx, artifact, range, kinds, false).await?;
    let mut stream = df.execute_stream().await?;
    while let Some(batch) = stream.next().await {
        ev.push_rows(&batch?, params.window)?;
        if ev.hosts.len() + ev.devices.len() > limits.max_nodes
            || ev.ancestors.len() > limits.max_nodes
        {
            answer.caveats.push(format!(
                "refused: more than {} host and device rows (or ancestors) in and around the window; narrow the window",
                limits.max_nodes
            ));
            return Ok(answer);
        }
    }
    let window = params.window.or(ev.span).unwrap_or((0, 0));
    answer.window_ns = window;
    ev.resolve_parents();
    let df = rows(ctx, artifact, range, vec![lit("sync")], true).await?;
    let (mut sync_rows, mut unclassified) = (0usize, 0usize);
    let mut stream = df.execute_stream().await?;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        sync_rows += batch.num_rows();
        unclassified += ev.push_syncs(&batch, window)?;
    }
    let input = StepGraphInput {
        hosts: &ev.hosts,
        devices: &ev.devices,
        syncs: &ev.syncs,
        window,
    };
    let in_window = |ts: i64| ts >= window.0 && ts <= window.1;
    let caveats = &mut answer.caveats;
    if ev.hosts.is_empty() && ev.devices.is_empty() {
        caveats.push("no host calls or device work in the window".into());
    }
    if sync_rows == 0 && !ev.devices.is_empty() {
        caveats.push("no sync rows: device work can never delay the host on this path, so CPU shares are an upper bound (HTA's caveat; Kineto records them with enable_cuda_sync_events)".into());
    }
    let launched: std::collections::HashSet<i64> =
        ev.hosts.iter().filter_map(|h| h.correlation).collect();
    let unlaunched = (ev.devices.iter())
        .filter(|d| in_window(d.ts) && !d.correlation.is_some_and(|c| launched.contains(&c)))
        .count();
    if unlaunched > 0 {
        caveats.push(format!("{unlaunched} device events in the window have no launch call in the rows read: kept, without a launch edge"));
    }
    if ev.unterminated > 0 {
        caveats.push(format!(
            "{} unterminated host calls in the window left out",
            ev.unterminated
        ));
    }
    if unclassified > 0 {
        caveats.push(format!("{unclassified} sync rows in the window left out: kind unknown, or an Nsight event sync / stream wait (no record call in the evidence)"));
    }
    match critical_path(&input, &limits) {
        Ok(cp) => fill(&mut answer, &cp, &ev, params.limit),
        Err(CpError::TooManyNodes { nodes, limit }) => answer.caveats.push(format!(
            "refused: the window's graph has {nodes} nodes, more than {limit}; narrow the window"
        )),
        Err(CpError::TooManyEdges { limit }) => answer.caveats.push(format!(
            "refused: the window's graph has more than {limit} edges; narrow the window"
        )),
        Err(e) => answer.caveats.push(format!("no path: invalid graph ({e})")),
    }
    Ok(answer)
}

/// Terminated or not, rows of `kinds` of one artifact, starting in `range`.
async fn rows(
    ctx: &SessionContext,
    artifact: &str,
    range: Option<(i64, i64)>,
    kinds: Vec<Expr>,
    with_args: bool,
) -> RecipeResult<DataFrame> {
    let mut filter = ArtifactScope::one(artifact)
        .filter()
        .and(utf8("kind").in_list(kinds, false));
    if let Some((start, end)) = range {
        filter = filter
            .and(col("ts_ns").gt_eq(lit(start)))
            .and(col("ts_ns").lt_eq(lit(end)));
    }
    let columns: Vec<Expr> = [
        "event_id",
        "parent_event_id",
        "ts_ns",
        "dur_ns",
        "name",
        "kind",
        "category",
        "track_id",
        "device",
        "stream",
        "correlation_id",
        "args_json",
    ]
    .into_iter()
    .take(if with_args { 12 } else { 11 })
    .map(col)
    .collect();
    Ok(table(ctx, "trace_events")
        .await?
        .filter(filter)?
        .select(columns)?)
}

/// The algorithm's input for one artifact, and what was left out.
#[derive(Default)]
struct Evidence {
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
    /// Min start and max end of the host and device events.
    span: Option<(i64, i64)>,
    unterminated: usize,
    /// Host call name by correlation (Nsight sync classification).
    calls: HashMap<i64, u32>,
}

impl Evidence {
    fn queue(&mut self, device: Option<i64>, stream: Option<i64>) -> u32 {
        let next = self.queues.len() as u32;
        *self.queues.entry((device, stream)).or_insert(next)
    }

    fn push_rows(&mut self, batch: &RecordBatch, window: Option<(i64, i64)>) -> RecipeResult<()> {
        let name = self.strings.column(column(batch, "name")?)?;
        let kind = self.strings.column(column(batch, "kind")?)?;
        let category = self.strings.column(column(batch, "category")?)?;
        let id = ints(column(batch, "event_id")?)?;
        let parent = ints(column(batch, "parent_event_id")?)?;
        let ts = ints(column(batch, "ts_ns")?)?;
        let dur = ints(column(batch, "dur_ns")?)?;
        let track = ints(column(batch, "track_id")?)?;
        let device = ints(column(batch, "device")?)?;
        let stream = ints(column(batch, "stream")?)?;
        let correlation = ints(column(batch, "correlation_id")?)?;
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
                    // `nccl:*` annotations are `communication` too: not HTA's.
                    "communication" => (None, no_stream && matches!(cat, "cpu_op" | "Operator")),
                    _ => (None, false),
                }
            };
            let (Some(start), Some(d)) = (ts[i], dur[i]) else {
                continue;
            };
            let end = start.saturating_add(d);
            let name = name[i].unwrap_or(0);
            if let (Some(class), true) = (class, d >= 0) {
                let queue = self.queue(device[i], stream[i]);
                self.devices.push(DeviceEvent {
                    queue,
                    ts: start,
                    end,
                    correlation: correlation[i],
                    class,
                    name,
                });
            } else if host && d >= 0 {
                let next = self.threads.len() as u32;
                let thread = *self.threads.entry(track[i].unwrap_or(-1)).or_insert(next);
                let blocking = BLOCKING.contains(&api_base(self.strings.get(name)));
                if let Some(c) = correlation[i] {
                    self.calls.entry(c).or_insert(name);
                }
                self.hosts.push(HostEvent {
                    thread,
                    ts: start,
                    end,
                    parent: None,
                    blocking,
                    correlation: correlation[i],
                    name,
                });
                self.host_ids.push((id[i].unwrap_or(-1), parent[i]));
            } else {
                if let Some(e) = id[i].filter(|_| no_stream) {
                    self.ancestors.insert(e, parent[i]);
                }
                let inside = window.is_none_or(|(a, b)| start >= a && start <= b);
                self.unterminated += usize::from(host && d < 0 && inside);
                continue;
            }
            self.span = Some(
                self.span
                    .map_or((start, end), |(a, b)| (a.min(start), b.max(end))),
            );
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

    /// Adds the batch's classified syncs; returns those in `window` left out.
    fn push_syncs(&mut self, batch: &RecordBatch, window: (i64, i64)) -> RecipeResult<usize> {
        let ts = ints(column(batch, "ts_ns")?)?;
        let device = ints(column(batch, "device")?)?;
        let stream = ints(column(batch, "stream")?)?;
        let correlation = ints(column(batch, "correlation_id")?)?;
        let args = as_utf8(column(batch, "args_json")?)?;
        let args = args.as_string::<i32>();
        let mut left_out = 0;
        for i in 0..batch.num_rows() {
            let a: SyncArgs = match args.is_valid(i) {
                true => serde_json::from_str(args.value(i)).unwrap_or_default(),
                false => SyncArgs::default(),
            };
            let record = self.sync_record(&a, device[i], stream[i], correlation[i]);
            match record {
                Some(r) => self.syncs.push(r),
                None => {
                    left_out += usize::from(ts[i].is_some_and(|t| t >= window.0 && t <= window.1))
                }
            }
        }
        Ok(left_out)
    }

    fn sync_record(
        &mut self,
        a: &SyncArgs,
        device: Option<i64>,
        stream: Option<i64>,
        correlation: Option<i64>,
    ) -> Option<SyncRecord> {
        let device = a.device.as_ref().and_then(int).or(device);
        let stream = a.stream.as_ref().and_then(int).or(stream);
        let call = a.correlation.as_ref().and_then(int).or(correlation)?;
        let record = a.wait_on_cuda_event_record_corr_id.as_ref().and_then(int);
        let recorded = a.wait_on_stream.as_ref().and_then(int);
        let Some(kind) = a.cuda_sync_kind.as_deref() else {
            // Nsight: what the call with this correlation was.
            let name = self.strings.get(*self.calls.get(&call)?);
            return match api_base(name) {
                "cudaDeviceSynchronize" | "cuCtxSynchronize" => Some(SyncRecord::Device {
                    call_correlation: call,
                }),
                "cudaStreamSynchronize" | "cuStreamSynchronize" => Some(SyncRecord::Stream {
                    queue: self.queue(device, stream),
                    call_correlation: call,
                }),
                _ => None,
            };
        };
        Some(match kind {
            "Stream Sync" => SyncRecord::Stream {
                queue: self.queue(device, stream),
                call_correlation: call,
            },
            "Context Sync" => SyncRecord::Device {
                call_correlation: call,
            },
            "Event Sync" => SyncRecord::Event {
                record_correlation: record?,
                recorded_queue: self.queue(device, Some(recorded?)),
                call_correlation: call,
            },
            "Stream Wait Event" => SyncRecord::StreamWait {
                record_correlation: record?,
                recorded_queue: self.queue(device, Some(recorded?)),
                waiting_queue: self.queue(device, stream),
                wait_call_correlation: call,
            },
            _ => return None,
        })
    }
}

/// Kineto `cuda_sync` args.
#[derive(Debug, Default, Deserialize)]
struct SyncArgs {
    cuda_sync_kind: Option<String>,
    wait_on_stream: Option<Value>,
    wait_on_cuda_event_record_corr_id: Option<Value>,
    stream: Option<Value>,
    device: Option<Value>,
    correlation: Option<Value>,
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_u64().map(|u| u as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Shares, counts and the top attributed events of `cp`.
fn fill(answer: &mut PathOfArtifact, cp: &CriticalPath, ev: &Evidence, limit: usize) {
    let length = cp.length_ns;
    let pct = |ns: i64| match length > 0 {
        true => ns as f64 * 100.0 / length as f64,
        false => 0.0,
    };
    let mut by_bound: Vec<(Bound, i64)> = cp.by_bound.iter().copied().filter(|b| b.1 > 0).collect();
    by_bound.sort_by_key(|&(b, ns)| (std::cmp::Reverse(ns), b));
    let mut top: HashMap<(u32, &'static str, Bound), (i64, usize)> = HashMap::new();
    for e in &cp.edges {
        let (name, kind) = match e.event {
            EventRef::Host(h) => (ev.hosts[h].name, "host"),
            EventRef::Device(d) => (
                ev.devices[d].name,
                match ev.devices[d].class {
                    DeviceClass::Compute => "kernel",
                    DeviceClass::Memory => "memory",
                    DeviceClass::Communication => "communication",
                },
            ),
            EventRef::None => continue,
        };
        let slot = top.entry((name, kind, e.bound)).or_default();
        (slot.0, slot.1) = (slot.0 + e.weight_ns, slot.1 + 1);
    }
    let mut top: Vec<_> = top.into_iter().filter(|t| t.1.0 > 0).collect();
    top.sort_by(|a, b| {
        (b.1.0.cmp(&a.1.0))
            .then_with(|| ev.strings.cmp(a.0.0, b.0.0))
            .then_with(|| (a.0.1, a.0.2).cmp(&(b.0.1, b.0.2)))
    });
    top.truncate(limit);
    answer.length_ns = length;
    answer.by_bound = (by_bound.into_iter())
        .map(|(b, ns)| BoundShare {
            bound: bound_name(b).to_owned(),
            ns,
            pct_of_path: pct(ns),
        })
        .collect();
    answer.top = (top.into_iter())
        .map(|((name, kind, bound), (ns, count))| PathEvent {
            name: readable_name(ev.strings.get(name)),
            kind: kind.to_owned(),
            bound: bound_name(bound).to_owned(),
            ns,
            count,
        })
        .collect();
    answer.nodes = cp.nodes;
    answer.edges = cp.graph_edges;
    answer.sync_edges = cp.sync_edges;
    answer.syncs_unresolved = cp.syncs_unresolved;
    answer.negative_weights_clamped = cp.negative_weights_clamped;
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::datasource::MemTable;
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use datafusion::prelude::SessionConfig;

    /// `CP_E2E=parquet|annotation|instance`: the path over the annotation's span.
    #[test]
    fn e2e() {
        let Ok(spec) = std::env::var("CP_E2E") else {
            return;
        };
        let parts: Vec<&str> = spec.split('|').collect();
        let file = std::fs::File::open(parts[0]).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
        let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        let schema = batches[0].schema();
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1));
        ctx.register_table(
            "trace_events",
            std::sync::Arc::new(MemTable::try_new(schema, vec![batches]).unwrap()),
        )
        .unwrap();
        futures::executor::block_on(async {
            let ann = parts[1..parts.len() - 1].join("|");
            let inst: usize = parts[parts.len() - 1].parse().unwrap();
            let df = ctx
                .table("trace_events")
                .await
                .unwrap()
                .filter(utf8("name").like(lit(format!("%{ann}%"))))
                .unwrap()
                .sort(vec![col("ts_ns").sort(true, false)])
                .unwrap();
            let b = df.collect().await.unwrap();
            let art = crate::common::string_at(column(&b[0], "artifact_id").unwrap(), 0).unwrap();
            let all: Vec<(i64, i64)> = b
                .iter()
                .flat_map(|b| {
                    let t = ints(column(b, "ts_ns").unwrap()).unwrap();
                    let d = ints(column(b, "dur_ns").unwrap()).unwrap();
                    (0..b.num_rows())
                        .map(move |i| (t[i].unwrap(), t[i].unwrap() + d[i].unwrap()))
                        .collect::<Vec<_>>()
                })
                .collect();
            let w = all[inst];
            let params = DiagnosisParams {
                sections: vec![],
                limit: 8,
                facts: Default::default(),
                kernel: None,
                window: Some(w),
            };
            let t = std::time::Instant::now();
            let out = critical_paths(&ctx, &ArtifactScope::one(art), &params)
                .await
                .unwrap();
            eprintln!("{:?}", t.elapsed());
            eprintln!("{}", serde_json::to_string_pretty(&out).unwrap());
        });
    }
}
