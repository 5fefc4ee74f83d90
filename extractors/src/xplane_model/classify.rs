//! What each event of a decoded XSpace is, from its plane and line kinds
//! ([`super::kinds`]) and its stats, by the conventions of XLA/TSL's
//! `xplane_schema` (stat names `correlation_id`, `hlo_op`, `step_num`, …).
//!
//! The classes are neutral: device kernels, memcpys and memsets (with the
//! device ordinal, stream and correlation id), XLA ops and modules, step
//! markers, host-side runtime calls that launch device work (with the
//! correlation id that matches them to their kernel), Python-tracer
//! frames and other host slices. Mapping them to evidence-table kinds is
//! the importer's job.

use super::kinds::{LineKind, PlaneKind, RuntimeCall};
use super::space::{Event, Line, Plane, Stat, ValueRef};

/// Device activity facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceActivity {
    pub device_ordinal: Option<u32>,
    pub stream_id: Option<i64>,
    pub correlation_id: Option<u64>,
    pub context_id: Option<u64>,
}

/// The class of one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventClass {
    DeviceKernel(DeviceActivity),
    DeviceMemcpy(DeviceActivity),
    DeviceMemset(DeviceActivity),
    /// An HLO op's execution: on a device's `XLA Ops` line, or a thunk run
    /// on a host thread (`hlo_op` stat; XLA:CPU).
    XlaOp {
        device_ordinal: Option<u32>,
        on_host: bool,
    },
    /// An XLA module (program) execution on a device.
    XlaModule {
        device_ordinal: Option<u32>,
    },
    /// A step marker: a `Steps` line event, or a host event with `step_num`.
    Step {
        step_num: Option<i64>,
        device_ordinal: Option<u32>,
    },
    /// A host runtime/driver API call carrying the correlation id of the
    /// device work it started.
    HostRuntimeCall {
        correlation_id: u64,
        call: RuntimeCall,
    },
    /// A Python-tracer frame (`$file:line function`).
    HostPython,
    /// Any other host slice (TraceMe annotations, compiler passes, …).
    HostSlice,
    /// An event of a `Launch Stats` line.
    LaunchStats,
    /// A counter sample (`_counters_` line).
    Counter,
    Other,
}

impl EventClass {
    /// A short stable label (summaries, tests).
    pub fn label(self) -> &'static str {
        match self {
            EventClass::DeviceKernel(_) => "device_kernel",
            EventClass::DeviceMemcpy(_) => "device_memcpy",
            EventClass::DeviceMemset(_) => "device_memset",
            EventClass::XlaOp { on_host: false, .. } => "xla_op",
            EventClass::XlaOp { on_host: true, .. } => "xla_op_on_host",
            EventClass::XlaModule { .. } => "xla_module",
            EventClass::Step { .. } => "step",
            EventClass::HostRuntimeCall { .. } => "host_runtime_call",
            EventClass::HostPython => "host_python",
            EventClass::HostSlice => "host_slice",
            EventClass::LaunchStats => "launch_stats",
            EventClass::Counter => "counter",
            EventClass::Other => "other",
        }
    }
}

/// An event's class with the stats an importer wants beside it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Classified<'p> {
    pub class: EventClass,
    pub group_id: Option<i64>,
    pub hlo_op: Option<&'p str>,
    pub hlo_module: Option<&'p str>,
}

/// The stat-metadata indices of the stats classification reads.
#[derive(Debug, Clone, Copy, Default)]
struct KnownStats {
    correlation_id: Option<u32>,
    device_ordinal: Option<u32>,
    context_id: Option<u32>,
    stream: Option<u32>,
    step_num: Option<u32>,
    group_id: Option<u32>,
    hlo_op: Option<u32>,
    hlo_module: Option<u32>,
    memcpy_details: Option<u32>,
    memset_details: Option<u32>,
}

/// Classifies the events of one plane.
pub struct PlaneClassifier<'p, 'a> {
    plane: &'p Plane<'a>,
    kind: PlaneKind,
    known: KnownStats,
}

/// An event's known stats, read from it and from its metadata.
#[derive(Default)]
struct Facts<'p> {
    correlation_id: Option<u64>,
    device_ordinal: Option<u32>,
    context_id: Option<u64>,
    stream: Option<i64>,
    step_num: Option<i64>,
    group_id: Option<i64>,
    hlo_op: Option<&'p str>,
    hlo_module: Option<&'p str>,
    memcpy: bool,
    memset: bool,
}

impl<'p, 'a> PlaneClassifier<'p, 'a> {
    pub fn new(plane: &'p Plane<'a>) -> Self {
        let at = |name: &str| plane.stat_metadata_named(name);
        let known = KnownStats {
            correlation_id: at("correlation_id"),
            device_ordinal: at("device_ordinal"),
            context_id: at("context_id"),
            stream: at("stream").or_else(|| at("stream_id")),
            step_num: at("step_num"),
            group_id: at("group_id"),
            hlo_op: at("hlo_op"),
            hlo_module: at("hlo_module"),
            memcpy_details: at("memcpy_details"),
            memset_details: at("Memset_details").or_else(|| at("memset_details")),
        };
        PlaneClassifier {
            plane,
            kind: PlaneKind::of_name(&plane.name),
            known,
        }
    }

    pub fn plane_kind(&self) -> PlaneKind {
        self.kind
    }

    pub fn line_kind(&self, line: &Line<'_>) -> LineKind {
        LineKind::of(self.kind, line)
    }

    fn facts(&self, stats: &'p [Stat<'a>], metadata_stats: &'p [Stat<'a>]) -> Facts<'p> {
        let mut facts = Facts::default();
        let k = &self.known;
        // Metadata stats first, so the event's own stats override them.
        for stat in metadata_stats.iter().chain(stats) {
            let Some(index) = stat.metadata else { continue };
            let value: ValueRef<'p> = self.plane.stat_value(stat);
            let is = |known: Option<u32>| known == Some(index);
            if is(k.correlation_id) {
                facts.correlation_id = value.as_u64();
            } else if is(k.device_ordinal) {
                facts.device_ordinal = value.as_u64().and_then(|v| u32::try_from(v).ok());
            } else if is(k.context_id) {
                facts.context_id = value.as_u64();
            } else if is(k.stream) {
                facts.stream = value.as_i64();
            } else if is(k.step_num) {
                facts.step_num = value.as_i64();
            } else if is(k.group_id) {
                facts.group_id = value.as_i64();
            } else if is(k.hlo_op) {
                facts.hlo_op = value.as_text();
            } else if is(k.hlo_module) {
                facts.hlo_module = value.as_text();
            } else if is(k.memcpy_details) {
                facts.memcpy = true;
            } else if is(k.memset_details) {
                facts.memset = true;
            }
        }
        facts
    }

    /// Classifies `event` of `line` (whose kind is `line_kind`).
    pub fn classify(
        &self,
        line: &'p Line<'a>,
        line_kind: LineKind,
        event: &Event,
    ) -> Classified<'p> {
        let metadata = self.plane.event_metadata_of(event);
        let metadata_stats = metadata.map_or(&[][..], |m| &m.stats[..]);
        let facts = self.facts(line.stats_of(event), metadata_stats);
        let name = self.plane.event_name(event);
        let device_ordinal = self.kind.device_ordinal().or(facts.device_ordinal);
        let class = match line_kind {
            LineKind::Stream { stream_id } => {
                let activity = DeviceActivity {
                    device_ordinal,
                    stream_id: facts.stream.or(stream_id),
                    correlation_id: facts.correlation_id,
                    context_id: facts.context_id,
                };
                let prefix = |p: &str| {
                    name.get(..p.len())
                        .is_some_and(|h| h.eq_ignore_ascii_case(p))
                };
                if facts.memcpy || prefix("memcpy") {
                    EventClass::DeviceMemcpy(activity)
                } else if facts.memset || prefix("memset") {
                    EventClass::DeviceMemset(activity)
                } else {
                    EventClass::DeviceKernel(activity)
                }
            }
            LineKind::XlaOps | LineKind::AsyncXlaOps => EventClass::XlaOp {
                device_ordinal,
                on_host: false,
            },
            LineKind::XlaModules => EventClass::XlaModule { device_ordinal },
            LineKind::Steps => EventClass::Step {
                step_num: facts.step_num.or_else(|| name.trim().parse().ok()),
                device_ordinal,
            },
            LineKind::LaunchStats => EventClass::LaunchStats,
            LineKind::Counters => EventClass::Counter,
            LineKind::HostThread => host_class(name, &facts),
            LineKind::FrameworkOps | LineKind::Other => EventClass::Other,
        };
        Classified {
            class,
            group_id: facts.group_id,
            hlo_op: facts.hlo_op,
            hlo_module: facts.hlo_module,
        }
    }
}

/// The class of an event on a host thread.
fn host_class(name: &str, facts: &Facts<'_>) -> EventClass {
    if let Some(correlation_id) = facts.correlation_id {
        EventClass::HostRuntimeCall {
            correlation_id,
            call: RuntimeCall::of_name(name),
        }
    } else if facts.step_num.is_some() {
        EventClass::Step {
            step_num: facts.step_num,
            device_ordinal: None,
        }
    } else if facts.hlo_op.is_some() {
        EventClass::XlaOp {
            device_ordinal: facts.device_ordinal,
            on_host: true,
        }
    } else if name.starts_with('$') {
        EventClass::HostPython
    } else {
        EventClass::HostSlice
    }
}
