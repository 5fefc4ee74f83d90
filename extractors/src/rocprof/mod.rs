//! AMD rocprofiler-sdk tool JSON (`rocprofv3 --output-format json`, e.g.
//! `908_results.json`): kernel dispatches, memory copies and HIP / HSA /
//! marker / RCCL API calls with their correlation ids, read into the same
//! device evidence as a CUDA trace — kernels and copies on GPU stream
//! tracks (device = the agent's GPU index, stream = the HIP stream), API
//! calls on their host threads — so `analyze_gpu_summary`,
//! `analyze_gpu_gaps` and the breakdown answer for AMD GPUs.
//!
//! The document is one JSON object, parsed whole ([`model`] keeps only
//! what becomes evidence); the decompressed-input bound caps it. Times
//! are the tool's nanoseconds. rocprofv3's CSV tables (its default
//! output) are read by [`csv_output`] into the same evidence ([`evidence`]).

pub mod csv_output;
pub mod csv_tables;
pub mod evidence;
mod format;
pub mod model;

use std::collections::BTreeMap;
use std::io::BufRead;

use serde_json::json;

use crate::api::{BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary};
use crate::format_kind::FormatKind;
use crate::trace_events::builder::TraceBuilder;
use crate::trace_events::device_columns::DeviceFields;
use crate::trace_events::ids::NONE;
use crate::trace_events::kinds::{EventKind, kernel_kind};
use crate::trace_events::tracks::Ident;
use evidence::{Counts, Pending, RunFacts, finish, push, stream_track};
use model::{Correlation, Document, ToolOutput};

pub use format::{CSV_DIR_FORMAT, CSV_FORMAT, FORMAT};

pub const ROCPROF_EXTRACTOR_NAME: &str = "rocprofv3_json";
/// Bumped whenever the rows produced for the same input change.
pub const ROCPROF_EXTRACTOR_VERSION: &str = "2";

fn correlation(c: Correlation) -> (i64, i64) {
    let internal = i64::try_from(c.internal).unwrap_or(NONE);
    let external = match c.external {
        0 => NONE,
        e => i64::try_from(e).unwrap_or(NONE),
    };
    (internal, external)
}

fn add_tool(trace: &mut TraceBuilder, tool: &ToolOutput, counts: &mut Counts) {
    let gpu_of = tool.gpu_of();
    let kernels = tool.kernel_names();
    let pid = tool.metadata.pid.unwrap_or(0);
    let host = Ident::Int(pid);
    let command = tool
        .metadata
        .command
        .iter()
        .take(3)
        .cloned()
        .collect::<Vec<_>>()
        .join(" ");
    if !command.is_empty() {
        let name = trace.strings.intern(&command);
        trace.tracks.process_names.insert(host, name);
    }
    for d in &tool.buffer_records.kernel_dispatch {
        let info = &d.dispatch_info;
        let Some(&device) = gpu_of.get(&info.agent_id) else {
            trace.log.note("dispatch_on_unknown_agent", || {
                "a kernel dispatch names an agent that is not a GPU of the document; skipped"
                    .to_owned()
            });
            continue;
        };
        let stream = i64::try_from(d.stream_id.handle).unwrap_or(NONE);
        let track = stream_track(trace, device, stream);
        let (correlation, external) = correlation(d.correlation_id);
        let name = kernels
            .get(&info.kernel_id)
            .copied()
            .filter(|n| !n.is_empty());
        let unnamed;
        let name = match name {
            Some(n) => n,
            None => {
                unnamed = format!("kernel {}", info.kernel_id);
                &unnamed
            }
        };
        let args = json!({
            "kernel_id": info.kernel_id,
            "dispatch_id": info.dispatch_id,
            "queue": info.queue_id.handle,
            "grid": [info.grid_size.x, info.grid_size.y, info.grid_size.z],
            "workgroup": [info.workgroup_size.x, info.workgroup_size.y, info.workgroup_size.z],
            "lds_bytes": info.group_segment_size,
            "scratch_bytes": info.private_segment_size,
            "thread_id": d.thread_id,
        })
        .to_string();
        push(
            trace,
            track,
            Pending {
                start: d.start_timestamp,
                end: d.end_timestamp,
                name,
                category: "kernel_dispatch",
                kind: kernel_kind(name),
                fields: DeviceFields {
                    device,
                    stream,
                    correlation,
                    external,
                    ..DeviceFields::ABSENT
                },
                args: Some(args),
            },
            counts,
        );
    }
    *counts.by_type.entry("kernel_dispatch").or_default() +=
        tool.buffer_records.kernel_dispatch.len() as u64;
    for c in &tool.buffer_records.memory_copy {
        // A copy belongs to the GPU it touches (the destination first).
        let device = gpu_of
            .get(&c.dst_agent_id)
            .or_else(|| gpu_of.get(&c.src_agent_id))
            .copied()
            .unwrap_or(NONE);
        let stream = i64::try_from(c.stream_id.handle).unwrap_or(NONE);
        let track = stream_track(trace, device, stream);
        let (correlation, external) = correlation(c.correlation_id);
        let name = tool
            .operation_name(c.kind, c.operation)
            .unwrap_or("MEMORY_COPY");
        push(
            trace,
            track,
            Pending {
                start: c.start_timestamp,
                end: c.end_timestamp,
                name,
                category: "memory_copy",
                kind: EventKind::Memcpy,
                fields: DeviceFields {
                    device,
                    stream,
                    correlation,
                    external,
                    bytes: i64::try_from(c.bytes).unwrap_or(NONE),
                    ..DeviceFields::ABSENT
                },
                args: None,
            },
            counts,
        );
    }
    *counts.by_type.entry("memory_copy").or_default() +=
        tool.buffer_records.memory_copy.len() as u64;
    let apis = [
        (
            "hip_api",
            &tool.buffer_records.hip_api,
            EventKind::RuntimeApi,
        ),
        (
            "hsa_api",
            &tool.buffer_records.hsa_api,
            EventKind::DriverApi,
        ),
        (
            "marker_api",
            &tool.buffer_records.marker_api,
            EventKind::UserAnnotation,
        ),
        (
            "rccl_api",
            &tool.buffer_records.rccl_api,
            EventKind::Communication,
        ),
    ];
    for (category, calls, kind) in apis {
        for call in calls.iter() {
            let tid = call.thread_id.unwrap_or(pid);
            let track = trace.tracks.thread(host, Ident::Int(tid));
            let (correlation, external) = correlation(call.correlation_id);
            let name = tool
                .operation_name(call.kind, call.operation)
                .unwrap_or(category);
            push(
                trace,
                track,
                Pending {
                    start: call.start_timestamp,
                    end: call.end_timestamp,
                    name,
                    category,
                    kind,
                    fields: DeviceFields {
                        correlation,
                        external,
                        ..DeviceFields::ABSENT
                    },
                    args: None,
                },
                counts,
            );
        }
        *counts.by_type.entry(category).or_default() += calls.len() as u64;
    }
}

/// Extracts a rocprofiler-sdk JSON document.
pub fn extract_rocprof_json<R: BufRead>(
    reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    // Progress is reported and cancellation polled while serde reads.
    let (doc, _): (Document, u64) =
        crate::json_doc::read_document(reader, observer, "rocprofiler-sdk tool")?;
    let mut trace = TraceBuilder::default();
    trace.store.arena = crate::trace_events::args_arena::ArgsArena::new(options.spill_dir.clone());
    let mut counts = Counts::default();
    for tool in &doc.tool {
        add_tool(&mut trace, tool, &mut counts);
    }
    let first = doc.tool.first();
    let mut metadata = BTreeMap::new();
    metadata.insert("pid".to_owned(), json!(first.and_then(|t| t.metadata.pid)));
    metadata.insert(
        "hostname".to_owned(),
        json!(first.and_then(|t| t.metadata.node.hostname.clone())),
    );
    // Each GPU by the device number its kernels carry, with its name and
    // compute units (`sm_count`, as Nsight's GPUs have SMs).
    metadata.insert(
        "gpus".to_owned(),
        json!(first.map(|t| {
            let index = t.gpu_of();
            t.agents
                .iter()
                .filter(|a| a.kind == 2)
                .map(|a| {
                    json!({
                        "id": index.get(&a.id),
                        "name": a.product_name.clone().or_else(|| a.name.clone()),
                        "sm_count": a.cu_count,
                    })
                })
                .collect::<Vec<_>>()
        })),
    );
    let facts = RunFacts {
        extractor: ROCPROF_EXTRACTOR_NAME,
        version: ROCPROF_EXTRACTOR_VERSION,
        format: FormatKind::RocprofJson,
        metadata,
    };
    finish(trace, counts, facts, options, sink, observer)
}
