//! XSpace events → trace events, by what each one is
//! ([`crate::xplane_model::classify`]):
//!
//! | XPlane | kind | where |
//! | --- | --- | --- |
//! | kernel / memcpy / memset on a `Stream #N` line | `kernel` / `memcpy` / `memset` (device activity, with correlation id) | GPU stream track (device ordinal, stream) |
//! | XLA op on a device without stream lines (TPU) | `kernel` | the device's `XLA Ops` line as its stream |
//! | XLA op or module on a device with stream lines | `gpu_user_annotation` | its line, under the device |
//! | runtime call with a correlation id (`hipLaunchKernel`, …) | `runtime_api` | host thread |
//! | Python tracer frame | `python_function` (the profiler's own `start_trace`, open for the whole session: `profiler_span`) | host thread |
//! | XLA op run on a host thread (XLA:CPU thunk) | `cpu_op` | host thread |
//! | host event with `step_num` | `user_annotation` named `ProfilerStep#N` (the name kept in args as `xplane_name`), so phases work | host thread |
//! | any other host event | `cpu_slice` | host thread |
//!
//! A plane is a process (named by the plane), a line a thread (its id as
//! tid, named by the line). Aggregated events (`num_occurrences`, no
//! timestamp), `Launch Stats` and `_counters_` lines are counted as
//! limitations. Stats become `args_json` (event and metadata stats, names
//! resolved), bounded like every other extractor's.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::api::ARGS_TRUNCATED_MARKER;
use crate::trace_events::args_arena::bound_args;
use crate::trace_events::builder::TraceBuilder;
use crate::trace_events::device_columns::DeviceFields;
use crate::trace_events::ids::NONE;
use crate::trace_events::kinds::EventKind;
use crate::trace_events::store::NewEvent;
use crate::trace_events::tracks::Ident;
use crate::xplane_model::classify::{Classified, DeviceActivity, EventClass, PlaneClassifier};
use crate::xplane_model::kinds::{LineKind, PlaneKind};
use crate::xplane_model::space::{Event, Line, Plane, Space, Stat, ValueRef};

/// What was written.
#[derive(Default)]
pub struct Counts {
    pub events: u64,
    pub host: u64,
    pub device: u64,
    pub correlated: u64,
    pub steps: u64,
    pub by_class: BTreeMap<&'static str, u64>,
}

/// Writes every timed event of `space` into `trace`.
pub fn add_space(trace: &mut TraceBuilder, space: &Space<'_>, max_args_bytes: usize) -> Counts {
    let mut counts = Counts::default();
    for plane in &space.planes {
        let kind = PlaneKind::of_name(&plane.name);
        if matches!(kind, PlaneKind::HostMetadata | PlaneKind::TaskEnvironment) {
            continue;
        }
        add_plane(trace, plane, kind, max_args_bytes, &mut counts);
    }
    counts
}

fn add_plane(
    trace: &mut TraceBuilder,
    plane: &Plane<'_>,
    kind: PlaneKind,
    max_args_bytes: usize,
    counts: &mut Counts,
) {
    let classifier = PlaneClassifier::new(plane);
    let process_name = trace.strings.intern(&plane.name);
    let pid = Ident::Label(process_name);
    trace.tracks.process_names.insert(pid, process_name);
    // A device with stream lines has its kernels there: its XLA ops are
    // annotations over them. Without (TPU), the ops are the device work.
    let has_streams = plane
        .lines
        .iter()
        .any(|l| matches!(classifier.line_kind(l), LineKind::Stream { .. }));
    for line in &plane.lines {
        let line_kind = classifier.line_kind(line);
        if matches!(line_kind, LineKind::LaunchStats | LineKind::Counters) {
            let n = line.events.len() as u64;
            trace.log.note_n("xplane_line_not_read", n, || {
                format!(
                    "`{}` lines (launch statistics, counters) are not read",
                    line.name
                )
            });
            continue;
        }
        // The trace viewer's converter shows a line as its id's low 32
        // bits; the same tid here lets a reader match the two.
        let tid = Ident::Int(line.id & 0xFFFF_FFFF);
        let track = trace.tracks.thread(pid, tid);
        let name = if line.display_name.is_empty() {
            &line.name
        } else {
            &line.display_name
        };
        let name = trace.strings.intern(name);
        trace.tracks.thread_names.insert((pid, tid), name);
        let ops_are_device_work = kind.is_device() && !has_streams && line_kind == LineKind::XlaOps;
        for event in &line.events {
            add_event(
                trace,
                (plane, line, line_kind, event),
                &classifier,
                (track, ops_are_device_work),
                max_args_bytes,
                counts,
            );
        }
    }
}

/// The event's kind, its device fields, and whether it runs on a device.
fn kind_of(
    c: &Classified<'_>,
    name: &str,
    ops_are_device_work: bool,
    line_id: i64,
) -> (EventKind, DeviceFields, bool) {
    let device = |a: &DeviceActivity| DeviceFields {
        device: a.device_ordinal.map_or(NONE, i64::from),
        stream: a.stream_id.unwrap_or(NONE),
        correlation: a
            .correlation_id
            .and_then(|c| i64::try_from(c).ok())
            .unwrap_or(NONE),
        context: a
            .context_id
            .and_then(|c| i64::try_from(c).ok())
            .unwrap_or(NONE),
        ..DeviceFields::ABSENT
    };
    match c.class {
        EventClass::DeviceKernel(a) => (EventKind::Kernel, device(&a), true),
        EventClass::DeviceMemcpy(a) => (EventKind::Memcpy, device(&a), true),
        EventClass::DeviceMemset(a) => (EventKind::Memset, device(&a), true),
        EventClass::XlaOp {
            device_ordinal,
            on_host: false,
        } if ops_are_device_work => (
            EventKind::Kernel,
            DeviceFields {
                device: device_ordinal.map_or(NONE, i64::from),
                stream: line_id,
                ..DeviceFields::ABSENT
            },
            true,
        ),
        EventClass::XlaOp {
            device_ordinal,
            on_host: false,
        }
        | EventClass::XlaModule { device_ordinal }
        | EventClass::Step {
            device_ordinal: device_ordinal @ Some(_),
            ..
        } => (
            EventKind::GpuUserAnnotation,
            DeviceFields {
                device: device_ordinal.map_or(NONE, i64::from),
                ..DeviceFields::ABSENT
            },
            false,
        ),
        EventClass::XlaOp { on_host: true, .. } => (EventKind::CpuOp, DeviceFields::ABSENT, false),
        EventClass::HostRuntimeCall { correlation_id, .. } => (
            EventKind::RuntimeApi,
            DeviceFields {
                correlation: i64::try_from(correlation_id).unwrap_or(NONE),
                ..DeviceFields::ABSENT
            },
            false,
        ),
        EventClass::HostPython if is_profiler_session(name) => {
            (EventKind::ProfilerSpan, DeviceFields::ABSENT, false)
        }
        EventClass::HostPython => (EventKind::PythonFunction, DeviceFields::ABSENT, false),
        EventClass::Step { .. } => (EventKind::UserAnnotation, DeviceFields::ABSENT, false),
        EventClass::HostSlice
        | EventClass::LaunchStats
        | EventClass::Counter
        | EventClass::Other => (EventKind::CpuSlice, DeviceFields::ABSENT, false),
    }
}

/// The Python tracer records the call that started the profiler
/// (`$profiler.py:101 start_trace`, jax and TensorFlow) as open until the
/// trace stops: the session, not work (like Kineto's `PyTorch Profiler`
/// span), so it stays out of busy time and hotspots.
fn is_profiler_session(name: &str) -> bool {
    name.starts_with("$profiler.py:")
        && (name.ends_with(" start_trace") || name.ends_with(" start_server"))
}

/// A stat's value as JSON.
fn stat_json(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Double(d) => serde_json::Number::from_f64(d).map_or(Value::Null, Value::Number),
        ValueRef::Text(t) => Value::String(t.to_owned()),
        ValueRef::Bytes(b) => Value::String(format!("<{} bytes>", b.len())),
        ValueRef::DanglingRef(id) => Value::String(format!("<unresolved ref {id}>")),
        ValueRef::Unset => Value::Null,
        other => other
            .as_i128()
            .map_or(Value::Null, |n| match i64::try_from(n) {
                Ok(v) => Value::from(v),
                Err(_) => Value::String(n.to_string()),
            }),
    }
}

fn add_stats(plane: &Plane<'_>, stats: &[Stat<'_>], args: &mut Map<String, Value>) {
    for stat in stats {
        let Some(name) = plane.stat_name(stat) else {
            continue;
        };
        args.entry(name.to_owned())
            .or_insert_with(|| stat_json(plane.stat_value(stat)));
    }
}

fn add_event(
    trace: &mut TraceBuilder,
    (plane, line, line_kind, event): (&Plane<'_>, &Line<'_>, LineKind, &Event),
    classifier: &PlaneClassifier<'_, '_>,
    (track, ops_are_device_work): (u32, bool),
    max_args_bytes: usize,
    counts: &mut Counts,
) {
    let Some(start) = event.start() else {
        let aggregated = event.is_aggregated();
        trace.log.note(
            if aggregated {
                "aggregated_event"
            } else {
                "timestamp_overflow"
            },
            || {
                if aggregated {
                    "an aggregated XEvent (occurrence count, no timestamp) was not read".to_owned()
                } else {
                    "an XEvent's start does not fit in i64 ns; skipped".to_owned()
                }
            },
        );
        return;
    };
    let c = classifier.classify(line, line_kind, event);
    let (kind, fields, device_activity) = kind_of(
        &c,
        plane.event_display_name(event),
        ops_are_device_work,
        line.id,
    );
    if device_activity {
        trace.tracks.mark_gpu(track, fields.device, fields.stream);
    }
    let mut args = Map::new();
    add_stats(plane, line.stats_of(event), &mut args);
    if let Some(m) = plane.event_metadata_of(event) {
        add_stats(plane, &m.stats, &mut args);
    }
    let mut name = plane.event_display_name(event).to_owned();
    if let (EventKind::UserAnnotation, EventClass::Step { step_num, .. }) = (kind, c.class) {
        counts.steps += 1;
        args.insert("xplane_name".to_owned(), Value::String(name.clone()));
        name = match step_num {
            Some(n) => format!("ProfilerStep#{n}"),
            None => format!("ProfilerStep#{}", counts.steps - 1),
        };
    }
    let args = Value::Object(args).to_string();
    let args = bound_args(&args, max_args_bytes, ARGS_TRUNCATED_MARKER);
    let name = trace.strings.intern(&name);
    let cat = trace.strings.intern(c.class.label());
    let event_id = trace.store.len() as u64;
    trace.store.push(
        NewEvent {
            event_id,
            ts: start.ns,
            dur: (event.duration_ps / 1000).max(0),
            name,
            cat,
            kind,
            track,
            device_activity,
            fields,
        },
        false,
        Some(&args),
    );
    counts.events += 1;
    if device_activity {
        counts.device += 1;
    } else if !PlaneKind::of_name(&plane.name).is_device() {
        counts.host += 1;
    }
    if fields.correlation != NONE {
        counts.correlated += 1;
    }
    *counts.by_class.entry(c.class.label()).or_default() += 1;
}
