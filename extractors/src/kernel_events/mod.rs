//! Linux kernel tracepoints from any tracer, read into one model
//! ([`model::KernelEvent`]) and interpreted once: scheduling, wake-ups,
//! CPU idle and frequency and atrace markers go to the Perfetto decoder's
//! ftrace replay ([`crate::perfetto::session::SystemTrace`]), the same
//! code that reads Perfetto's own `ftrace_events`, so a context switch
//! becomes the same `sched_slice` and `thread_state` rows whether ftrace
//! text, trace-cmd, perf.data or Perfetto recorded it.
//!
//! Binary tracers record tracepoints as raw bytes described by the
//! kernel's `format` files ([`tracefs_format`]), which trace-cmd and perf
//! carry in their "tracing data" ([`tracing_data`]).

pub mod endian_reader;
pub mod model;
pub mod prev_state;
pub mod tracefs_decode;
pub mod tracefs_format;
pub mod tracing_data;

use std::collections::BTreeMap;

use crate::perfetto::proto::{
    CpuState, FtraceEvent, FtraceEventBundle, IrqHandlerEntry, IrqHandlerExit, PrintEvent,
    SchedSwitch, SchedWaking, Softirq,
};
use crate::perfetto::session::SystemTrace;
use model::{FieldValue, KernelEvent};

/// Feeds kernel events to a system-trace decoder and counts them by name.
pub struct KernelEventFeed {
    bundle: FtraceEventBundle,
    /// Events read, by tracepoint name.
    pub by_name: BTreeMap<String, u64>,
    /// Events whose name is not interpreted (kept as counts only).
    pub not_interpreted: u64,
    pub events: u64,
}

impl Default for KernelEventFeed {
    fn default() -> Self {
        KernelEventFeed {
            bundle: FtraceEventBundle {
                cpu: None,
                event: Vec::with_capacity(1),
                lost_events: None,
                compact_sched: None,
            },
            by_name: BTreeMap::new(),
            not_interpreted: 0,
            events: 0,
        }
    }
}

fn int(ev: &KernelEvent, name: &str) -> Option<i64> {
    ev.field(name).and_then(FieldValue::as_i64)
}

fn int32(ev: &KernelEvent, name: &str) -> Option<i32> {
    int(ev, name).and_then(|v| i32::try_from(v).ok())
}

fn text(ev: &KernelEvent, name: &str) -> Option<Vec<u8>> {
    ev.field(name).map(|v| v.as_text().into_bytes())
}

/// The Perfetto ftrace event a kernel event is, if one is interpreted.
pub fn to_ftrace_event(ev: &KernelEvent) -> Option<FtraceEvent> {
    let mut out = FtraceEvent {
        timestamp: u64::try_from(ev.ts_ns).ok(),
        pid: u32::try_from(ev.pid).ok(),
        print: None,
        sched_switch: None,
        sched_waking: None,
        cpu_frequency: None,
        cpu_idle: None,
        softirq_entry: None,
        softirq_exit: None,
        irq_handler_entry: None,
        irq_handler_exit: None,
    };
    match ev.name.as_str() {
        "sched_switch" => {
            out.sched_switch = Some(SchedSwitch {
                prev_comm: text(ev, "prev_comm"),
                prev_pid: int32(ev, "prev_pid"),
                prev_prio: int32(ev, "prev_prio"),
                prev_state: ev.field("prev_state").and_then(prev_state::state_bits),
                next_comm: text(ev, "next_comm"),
                next_pid: int32(ev, "next_pid"),
                next_prio: int32(ev, "next_prio"),
            });
        }
        // A wake-up after its waking is ignored by the replay (the thread
        // is runnable already); a tracer that records only wake-ups still
        // gives each wait its end.
        "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => {
            out.sched_waking = Some(SchedWaking {
                comm: text(ev, "comm"),
                pid: int32(ev, "pid"),
                prio: int32(ev, "prio"),
                target_cpu: int32(ev, "target_cpu"),
            });
        }
        "cpu_idle" | "cpu_frequency" => {
            let state = CpuState {
                // `4294967295` (leaving idle) is u32::MAX; text may print -1.
                state: int(ev, "state").map(|v| v as u32),
                cpu_id: int(ev, "cpu_id").and_then(|v| u32::try_from(v).ok()),
            };
            if ev.name == "cpu_idle" {
                out.cpu_idle = Some(state);
            } else {
                out.cpu_frequency = Some(state);
            }
        }
        // `print` in binary formats; ftrace text shows the same event as
        // `tracing_mark_write`.
        "print" | "tracing_mark_write" => {
            out.print = Some(PrintEvent {
                buf: text(ev, "buf"),
            });
        }
        "irq_handler_entry" => {
            out.irq_handler_entry = Some(IrqHandlerEntry {
                irq: leading_int(ev, "irq").and_then(|v| i32::try_from(v).ok()),
                name: text(ev, "name"),
            });
        }
        "irq_handler_exit" => {
            // Binary formats record `ret` (1 = handled); ftrace text
            // prints it as `handled` / `unhandled`.
            let ret = match ev.field("ret").map(FieldValue::as_text).as_deref() {
                Some("handled") => Some(1),
                Some("unhandled") => Some(0),
                _ => leading_int(ev, "ret").and_then(|v| i32::try_from(v).ok()),
            };
            out.irq_handler_exit = Some(IrqHandlerExit {
                irq: leading_int(ev, "irq").and_then(|v| i32::try_from(v).ok()),
                ret,
            });
        }
        "softirq_entry" | "softirq_exit" => {
            let vec = Softirq {
                vec: leading_int(ev, "vec").and_then(|v| u32::try_from(v).ok()),
            };
            if ev.name == "softirq_entry" {
                out.softirq_entry = Some(vec);
            } else {
                out.softirq_exit = Some(vec);
            }
        }
        _ => return None,
    }
    Some(out)
}

/// An integer field, or the number its text starts with (ftrace text
/// prints `vec=4 [action=BLOCK]`).
fn leading_int(ev: &KernelEvent, name: &str) -> Option<i64> {
    let value = ev.field(name)?;
    value.as_i64().or_else(|| {
        let text = value.as_text();
        text.split_whitespace().next().and_then(|t| t.parse().ok())
    })
}

impl KernelEventFeed {
    /// Names the running task from the event's `comm` when the format
    /// records it, then feeds the event.
    pub fn feed(&mut self, trace: &mut SystemTrace<'_>, ev: &KernelEvent) {
        self.events += 1;
        match self.by_name.get_mut(ev.name.as_str()) {
            Some(n) => *n += 1,
            None => {
                self.by_name.insert(ev.name.clone(), 1);
            }
        }
        if let Some(comm) = ev.comm.as_deref().filter(|c| !c.is_empty() && ev.pid != 0) {
            let entry = trace.d.threads.entry(ev.pid).or_insert((None, None));
            if entry.1.is_none() {
                entry.1 = Some(comm.chars().take(256).collect());
            }
        }
        let Some(event) = to_ftrace_event(ev) else {
            self.not_interpreted += 1;
            return;
        };
        self.bundle.cpu = Some(ev.cpu);
        self.bundle.event.clear();
        self.bundle.event.push(event);
        trace.d.ftrace_bundle(&self.bundle);
    }

    /// The summary's metadata: events by tracepoint name.
    pub fn metadata(&self) -> BTreeMap<String, serde_json::Value> {
        let mut m = BTreeMap::new();
        m.insert("events_by_name".to_owned(), serde_json::json!(self.by_name));
        m.insert(
            "events_not_interpreted".to_owned(),
            serde_json::json!(self.not_interpreted),
        );
        m
    }
}
