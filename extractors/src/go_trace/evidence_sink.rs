//! Where each piece of the decoded timeline goes in the evidence: the
//! [`TimelineSink`] the decoder feeds while it reads. The Go program is one
//! process (a label: a trace names no pid); each goroutine is a thread of
//! it (tid = goroutine id, named `G<id> <start function>`):
//!
//! - its states are `thread_state` rows on its thread-state track, named
//!   in the kernel's words where they mean the same (`Running`, `Runnable`,
//!   `Runnable (Preempted)`, `Blocked (<reason>)`, `Syscall`), the reason
//!   and where it happened in args;
//! - each run is also a `sched_slice` row on the cpu track of the P it ran
//!   on (`P<n>`), so on-CPU and runnable time per goroutine come out of
//!   the scheduler recipes as for a kernel trace;
//! - `go` statements, system calls and `trace.Log` messages are instants
//!   on its thread-state track; user regions are `user_annotation` slices
//!   on its thread track (its time "in traced calls");
//! - the GC's cycles, stop-the-world phases, sweeps (per P) and mark
//!   assists (per goroutine) are slices of category `gc` on async tracks:
//!   they overlap each other and the goroutines' runs, and a cycle is the
//!   GC in progress, not a thread's work (as a thread, "GC" would be the
//!   busiest thread of every trace and the summary's hot thread of a trace
//!   without CPU samples);
//! - user tasks span goroutines: laid out on lanes at the end
//!   ([`super::task_lanes`]).
//!
//! Rows leave for spill runs past `spill_after_events`; what stays held is
//! one entry per track, goroutine name, distinct stack, CPU sample and
//! user task.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::cpu_samples::{PendingSample, StackTable};
use super::model::StackId;
use super::task_lanes::PendingTask;
use crate::FastHashMap;
use crate::api::{ARGS_TRUNCATED_MARKER, ExtractError, ExtractObserver, ExtractOptions};
use crate::trace_events::args_arena::{ArgsArena, bound_args};
use crate::trace_events::builder::TraceBuilder;
use crate::trace_events::device_columns::DeviceFields;
use crate::trace_events::external::Spill;
use crate::trace_events::ids::NONE;
use crate::trace_events::kinds::EventKind;
use crate::trace_events::spill_phases::PhaseCollector;
use crate::trace_events::store::NewEvent;
use crate::trace_events::tracks::{Ident, TrackKind};

/// The Go program's process label (a trace names no pid).
pub(super) const PROCESS_LABEL: &str = "Go program";

/// Items between two looks at cancellation.
const POLL_EVERY: u64 = 4096;

/// One row to add.
pub(super) struct Row<'a> {
    pub(super) start_ns: u64,
    /// `None` for an instant.
    pub(super) end_ns: Option<u64>,
    pub(super) name: &'a str,
    pub(super) category: u32,
    pub(super) kind: EventKind,
    pub(super) track: u32,
    pub(super) args: Option<String>,
    /// The goroutine a row on a P's cpu track ran.
    pub(super) goroutine: Option<i64>,
}

/// Interned categories.
pub(super) struct Categories {
    pub(super) sched: u32,
    pub(super) gc: u32,
    pub(super) region: u32,
    pub(super) task: u32,
    pub(super) syscall: u32,
    pub(super) log: u32,
}

/// What the summary reports beyond the rows.
#[derive(Default)]
pub(super) struct Totals {
    /// Time each P was held by a thread (ProcStart … ProcStop).
    pub(super) proc_active_ns: BTreeMap<i64, u64>,
    pub(super) gc_cycle_ns: u64,
    pub(super) stop_the_world_ns: u64,
    /// Rows of goroutine states, of user regions, and of GC activity.
    pub(super) states: u64,
    pub(super) regions: u64,
    pub(super) gc_slices: u64,
}

/// The timeline sink that builds the evidence.
pub(super) struct EvidenceSink<'o> {
    pub(super) trace: TraceBuilder,
    pub(super) process: Ident,
    pub(super) cats: Categories,
    pub(super) stacks: StackTable,
    pub(super) samples: Vec<PendingSample>,
    pub(super) tasks: Vec<PendingTask>,
    /// Each goroutine's thread name (interned), once described.
    pub(super) names: FastHashMap<u64, u32>,
    pub(super) totals: Totals,
    pub(super) spill: Option<Spill>,
    /// The first failure (a spill that cannot be written, cancellation):
    /// everything after it is ignored and the extraction returns it.
    pub(super) failure: Option<ExtractError>,
    spill_to: Option<(PathBuf, usize)>,
    threads: FastHashMap<u64, u32>,
    states: FastHashMap<u64, u32>,
    assists: FastHashMap<u64, u32>,
    cpus: BTreeMap<i64, u32>,
    sweeps: BTreeMap<i64, u32>,
    gc: Option<u32>,
    stop_the_world: Option<u32>,
    named: FastHashMap<&'static str, u32>,
    next_event_id: u64,
    items: u64,
    max_args_bytes: usize,
    observer: &'o dyn ExtractObserver,
}

impl<'o> EvidenceSink<'o> {
    pub(super) fn new(options: &ExtractOptions, observer: &'o dyn ExtractObserver) -> Self {
        let mut trace = TraceBuilder::default();
        trace.store.arena = ArgsArena::new(options.spill_dir.clone());
        let process = Ident::Label(trace.strings.intern(PROCESS_LABEL));
        let mut cat = |name: &str| trace.strings.intern(name);
        let cats = Categories {
            sched: cat("sched"),
            gc: cat("gc"),
            region: cat("region"),
            task: cat("task"),
            syscall: cat("syscall"),
            log: cat("log"),
        };
        EvidenceSink {
            trace,
            process,
            cats,
            stacks: StackTable::default(),
            samples: Vec::new(),
            tasks: Vec::new(),
            names: FastHashMap::default(),
            totals: Totals::default(),
            spill: None,
            failure: None,
            spill_to: options
                .spill_dir
                .clone()
                .map(|dir| (dir, options.spill_after_events)),
            threads: FastHashMap::default(),
            states: FastHashMap::default(),
            assists: FastHashMap::default(),
            cpus: BTreeMap::new(),
            sweeps: BTreeMap::new(),
            gc: None,
            stop_the_world: None,
            named: FastHashMap::default(),
            next_event_id: 0,
            items: 0,
            max_args_bytes: options.max_args_bytes,
            observer,
        }
    }

    /// Whether items are still taken (no failure yet); looks at
    /// cancellation every [`POLL_EVERY`] items.
    pub(super) fn accepting(&mut self) -> bool {
        self.items = self.items.wrapping_add(1);
        if self.failure.is_none()
            && self.items.is_multiple_of(POLL_EVERY)
            && self.observer.cancelled()
        {
            self.failure = Some(ExtractError::Cancelled);
        }
        self.failure.is_none()
    }

    /// Adds one row; spills a run when the budget is reached.
    pub(super) fn push(&mut self, row: Row<'_>) {
        let (Ok(ts), Ok(end)) = (
            i64::try_from(row.start_ns),
            i64::try_from(row.end_ns.unwrap_or(row.start_ns)),
        ) else {
            self.trace.log.note("timestamp_overflow", || {
                "a time past i64 nanoseconds; the interval or instant was skipped".to_owned()
            });
            return;
        };
        let args = row
            .args
            .as_deref()
            .map(|a| bound_args(a, self.max_args_bytes, ARGS_TRUNCATED_MARKER));
        let event = NewEvent {
            event_id: self.next_event_id,
            ts,
            dur: end.saturating_sub(ts).max(0),
            name: self.trace.strings.intern(row.name),
            cat: row.category,
            kind: row.kind,
            track: row.track,
            device_activity: false,
            fields: DeviceFields::ABSENT,
        };
        self.next_event_id += 1;
        let at = self
            .trace
            .store
            .push(event, row.end_ns.is_none(), args.as_deref());
        if let Some(g) = row.goroutine {
            match u32::try_from(at) {
                Ok(at) => {
                    self.trace.store.thread_override.insert(at, (NONE, g));
                }
                Err(_) => self.trace.log.note("too_many_events", || {
                    "more than 2^32 events held; a run lost its goroutine".to_owned()
                }),
            }
        }
        self.spill_if_due();
    }

    fn spill_if_due(&mut self) {
        let Some((dir, budget)) = &self.spill_to else {
            return;
        };
        if self.trace.store.len() < *budget {
            return;
        }
        let written = (|| -> std::io::Result<()> {
            let spill = match &mut self.spill {
                Some(spill) => spill,
                None => self
                    .spill
                    .insert(Spill::create(dir, *budget, PhaseCollector::default())?),
            };
            if spill.due(&self.trace.store) {
                spill.write_run(&mut self.trace, false)?;
            }
            Ok(())
        })();
        if let Err(e) = written {
            self.failure = Some(e.into());
        }
    }

    /// An interned fixed name.
    pub(super) fn name_id(&mut self, name: &'static str) -> u32 {
        if let Some(&id) = self.named.get(name) {
            return id;
        }
        let id = self.trace.strings.intern(name);
        self.named.insert(name, id);
        id
    }

    /// The goroutine's id as a tid; `None` (noted) past i64.
    fn tid(&mut self, g: u64) -> Option<i64> {
        let tid = i64::try_from(g).ok();
        if tid.is_none() {
            self.trace.log.note("goroutine_id_out_of_range", || {
                format!("goroutine id {g} does not fit a tid; its items were skipped")
            });
        }
        tid
    }

    pub(super) fn thread_track(&mut self, g: u64) -> Option<u32> {
        if let Some(&t) = self.threads.get(&g) {
            return Some(t);
        }
        let tid = self.tid(g)?;
        let t = self.trace.tracks.thread(self.process, Ident::Int(tid));
        self.threads.insert(g, t);
        Some(t)
    }

    pub(super) fn state_track(&mut self, g: u64) -> Option<u32> {
        if let Some(&t) = self.states.get(&g) {
            return Some(t);
        }
        let tid = self.tid(g)?;
        let name = self.name_id("thread state");
        let t = self.trace.tracks.add_named(
            TrackKind::ThreadState,
            self.process,
            Ident::Int(tid),
            name,
        );
        self.states.insert(g, t);
        Some(t)
    }

    pub(super) fn assist_track(&mut self, g: u64) -> Option<u32> {
        if let Some(&t) = self.assists.get(&g) {
            return Some(t);
        }
        let tid = self.tid(g)?;
        let name = self.name_id("GC mark assist");
        let t = self
            .trace
            .tracks
            .add_named(TrackKind::Async, self.process, Ident::Int(tid), name);
        self.assists.insert(g, t);
        Some(t)
    }

    /// The cpu track of P `p` (`P<n>`; `no P` for the runtime's -1).
    pub(super) fn cpu_track(&mut self, p: i64) -> u32 {
        if let Some(&t) = self.cpus.get(&p) {
            return t;
        }
        let label = if p >= 0 {
            format!("P{p}")
        } else {
            "no P".to_owned()
        };
        let name = self.trace.strings.intern(&label);
        let t = self
            .trace
            .tracks
            .add_named(TrackKind::Cpu, Ident::None, Ident::None, name);
        self.cpus.insert(p, t);
        t
    }

    pub(super) fn sweep_track(&mut self, p: i64) -> u32 {
        if let Some(&t) = self.sweeps.get(&p) {
            return t;
        }
        let name = self.trace.strings.intern(&format!("GC sweep on P{p}"));
        let t = self
            .trace
            .tracks
            .add_named(TrackKind::Async, self.process, Ident::None, name);
        self.sweeps.insert(p, t);
        t
    }

    /// The async track of the GC's cycles, or of its stop-the-world
    /// phases, made once.
    pub(super) fn gc_track(&mut self, stop_the_world: bool) -> u32 {
        let made = if stop_the_world {
            self.stop_the_world
        } else {
            self.gc
        };
        if let Some(t) = made {
            return t;
        }
        let name = if stop_the_world {
            self.name_id("GC stop-the-world")
        } else {
            self.name_id("GC cycles")
        };
        let t = self
            .trace
            .tracks
            .add_named(TrackKind::Async, self.process, Ident::None, name);
        if stop_the_world {
            self.stop_the_world = Some(t);
        } else {
            self.gc = Some(t);
        }
        t
    }

    /// The `args_json` of a row: the decoder's args (numbers and booleans
    /// as such) and `where` the interval began.
    pub(super) fn args(
        &self,
        pairs: &[(String, String)],
        stack: Option<StackId>,
    ) -> Option<String> {
        let mut map = serde_json::Map::new();
        for (k, v) in pairs {
            let value = if let Ok(n) = v.parse::<i64>() {
                serde_json::json!(n)
            } else if let Ok(n) = v.parse::<u64>() {
                serde_json::json!(n)
            } else if v == "true" || v == "false" {
                serde_json::json!(v == "true")
            } else {
                serde_json::json!(v)
            };
            map.insert(k.clone(), value);
        }
        if let Some(at) = self.stacks.where_of(stack) {
            map.insert("where".to_owned(), serde_json::json!(at));
        }
        (!map.is_empty()).then(|| serde_json::Value::Object(map).to_string())
    }
}
