//! The non-scheduling half of the timeline: GC cycles, stop-the-world
//! phases, sweeping, mark assists, heap and GOMAXPROCS counters, CPU
//! samples, and the user annotations of `runtime/trace` (tasks, regions,
//! logs). Split from `states.rs`, which owns the builder.

use std::collections::BTreeMap;

use super::model::{
    Counter, InstantKind, SliceKind, StackId, TimelineInstant, TimelineSink, TimelineSlice, Track,
};
use super::sched_event::SchedEvent;
use super::states::{TimelineBuilder, arg, span};

/// A region open on a goroutine.
pub(super) struct OpenRegion {
    task: u64,
    name: String,
    start: u64,
    stack: Option<StackId>,
}

struct OpenTask {
    start: u64,
    parent: u64,
    name: String,
    stack: Option<StackId>,
}

/// GC and task state.
#[derive(Default)]
pub(super) struct GcState {
    /// Start, sequence number, stack, and whether it began before the trace.
    cycle: Option<(u64, u64, Option<StackId>, bool)>,
    stw: Option<(u64, String)>,
    tasks: BTreeMap<u64, OpenTask>,
    cycles: u64,
}

fn before_trace(args: &mut Vec<(String, String)>, before: bool) {
    if before {
        args.push(arg("started_before_trace", "true"));
    }
}

impl<S: TimelineSink> TimelineBuilder<'_, S> {
    pub(super) fn apply_gc_or_user(&mut self, ts: u64, event: SchedEvent) {
        match event {
            SchedEvent::Gomaxprocs { procs } => self.counter("gomaxprocs", ts, procs),
            SchedEvent::HeapAlloc { bytes } => self.counter("heap_alloc_bytes", ts, bytes),
            SchedEvent::HeapGoal { bytes } => self.counter("heap_goal_bytes", ts, bytes),
            SchedEvent::GcStart { seq, stack } => {
                if self.gc.cycle.is_some() {
                    self.note("GC start while a GC cycle is open", || {
                        format!("at {ts} ns")
                    });
                    self.close_gc(ts);
                }
                self.gc.cycle = Some((ts, seq, stack, false));
                self.gc.cycles = self.gc.cycles.saturating_add(1);
            }
            SchedEvent::GcActive { seq } => {
                if self.gc.cycle.is_none() {
                    self.gc.cycle = Some((ts, seq, None, true));
                }
            }
            SchedEvent::GcDone => {
                if self.gc.cycle.is_none() {
                    self.note("GC done without a GC start", || format!("at {ts} ns"));
                }
                self.close_gc(ts);
            }
            SchedEvent::StwStart { kind } => {
                if self.gc.stw.is_some() {
                    self.note("STW start while a STW is open", || format!("at {ts} ns"));
                    self.close_stw(ts);
                }
                self.gc.stw = Some((ts, kind));
            }
            SchedEvent::StwDone => self.close_stw(ts),
            SchedEvent::SweepStart { p, stack } => {
                let state = self.procs.entry(p).or_default();
                if state.sweep.is_none() {
                    state.sweep = Some((ts, stack));
                }
            }
            SchedEvent::SweepDone {
                p,
                swept,
                reclaimed,
            } => {
                let mut args = Vec::new();
                if let Some(v) = swept {
                    args.push(arg("swept_bytes", v));
                }
                if let Some(v) = reclaimed {
                    args.push(arg("reclaimed_bytes", v));
                }
                self.close_sweep(p, ts, args);
            }
            SchedEvent::MarkAssistStart { g, stack } => {
                let state = self.g_mut(g, ts);
                if state.assist.is_none() {
                    state.assist = Some((ts, stack));
                }
            }
            SchedEvent::MarkAssistDone { g } => self.close_assist(g, ts),
            SchedEvent::TaskBegin {
                task,
                parent,
                name,
                stack,
            } => {
                if self.gc.tasks.contains_key(&task) {
                    self.note("task id reused while open", || {
                        format!("task {task} at {ts} ns")
                    });
                    self.close_task(task, ts);
                }
                let open = OpenTask {
                    start: ts,
                    parent,
                    name,
                    stack,
                };
                self.gc.tasks.insert(task, open);
            }
            SchedEvent::TaskEnd { task } => self.close_task(task, ts),
            SchedEvent::RegionBegin {
                g,
                task,
                name,
                stack,
            } => {
                let region = OpenRegion {
                    task,
                    name,
                    start: ts,
                    stack,
                };
                self.g_mut(g, ts).regions.push(region);
            }
            SchedEvent::RegionEnd { g, task, name } => {
                let regions = &mut self.g_mut(g, ts).regions;
                let found = regions
                    .iter()
                    .rposition(|r| r.task == task && r.name == name);
                let (start, stack, before) = match found {
                    Some(i) => {
                        let r = regions.remove(i);
                        (r.start, r.stack, false)
                    }
                    None => (0, None, true),
                };
                let mut args = vec![arg("task", task)];
                before_trace(&mut args, before);
                self.emit(TimelineSlice {
                    stack,
                    args,
                    ..span(Track::Goroutine(g), SliceKind::UserRegion, name, start, ts)
                });
            }
            SchedEvent::Log {
                g,
                task,
                category,
                message,
                stack,
            } => {
                let args = vec![arg("message", message), arg("task", task)];
                let track = Track::Goroutine(g);
                let instant = TimelineInstant {
                    track,
                    kind: InstantKind::UserLog,
                    name: category,
                    ts_ns: ts,
                    stack,
                    args,
                };
                self.sink.instant(instant);
            }
            SchedEvent::CpuSample { g, p, stack } => {
                let track = match (g, p) {
                    (0, Some(p)) => Track::Proc(p),
                    (0, None) => Track::Proc(-1),
                    _ => Track::Goroutine(g),
                };
                let mut args = Vec::new();
                if let Some(p) = p {
                    args.push(arg("p", p));
                }
                let instant = TimelineInstant {
                    track,
                    kind: InstantKind::CpuSample,
                    name: "cpu sample".into(),
                    ts_ns: ts,
                    stack,
                    args,
                };
                self.sink.instant(instant);
            }
            other => self.note("event not handled", || format!("{other:?}")),
        }
    }

    fn counter(&mut self, name: &'static str, ts_ns: u64, value: u64) {
        self.sink.counter(Counter { name, ts_ns, value });
    }

    fn close_gc(&mut self, ts: u64) {
        if let Some((start, seq, stack, before)) = self.gc.cycle.take() {
            let mut args = vec![arg("seq", seq)];
            before_trace(&mut args, before);
            self.emit(TimelineSlice {
                stack,
                args,
                ..span(Track::Gc, SliceKind::GcCycle, "GC", start, ts)
            });
        }
    }

    fn close_stw(&mut self, ts: u64) {
        if let Some((start, kind)) = self.gc.stw.take() {
            let name = format!("STW: {kind}");
            let args = vec![arg("kind", kind)];
            self.emit(TimelineSlice {
                args,
                ..span(Track::Gc, SliceKind::StopTheWorld, name, start, ts)
            });
        }
    }

    fn close_sweep(&mut self, p: i64, ts: u64, args: Vec<(String, String)>) {
        if let Some((start, stack)) = self.procs.get_mut(&p).and_then(|s| s.sweep.take()) {
            self.emit(TimelineSlice {
                stack,
                args,
                ..span(Track::Proc(p), SliceKind::Sweep, "sweep", start, ts)
            });
        }
    }

    fn close_assist(&mut self, g: u64, ts: u64) {
        if let Some((start, stack)) = self.goroutines.get_mut(&g).and_then(|s| s.assist.take()) {
            let name = "GC mark assist".to_string();
            self.emit(TimelineSlice {
                stack,
                ..span(Track::Goroutine(g), SliceKind::MarkAssist, name, start, ts)
            });
        }
    }

    fn close_task(&mut self, task: u64, ts: u64) {
        let (start, name, stack, mut args, before) = match self.gc.tasks.remove(&task) {
            Some(t) => (
                t.start,
                t.name,
                t.stack,
                vec![arg("parent", t.parent)],
                false,
            ),
            None => (0, String::new(), None, Vec::new(), true),
        };
        before_trace(&mut args, before);
        self.emit(TimelineSlice {
            stack,
            args,
            ..span(Track::Task(task), SliceKind::UserTask, name, start, ts)
        });
    }

    /// A goroutine ended: its assist and regions end with it.
    pub(super) fn end_goroutine_annotations(&mut self, g: u64, ts: u64) {
        self.close_assist(g, ts);
        let regions = self
            .goroutines
            .get_mut(&g)
            .map(|s| std::mem::take(&mut s.regions))
            .unwrap_or_default();
        for r in regions.into_iter().rev() {
            let args = vec![arg("task", r.task), arg("closed_by_goroutine_end", "true")];
            self.emit(TimelineSlice {
                stack: r.stack,
                args,
                ..span(
                    Track::Goroutine(g),
                    SliceKind::UserRegion,
                    r.name,
                    r.start,
                    ts,
                )
            });
        }
    }

    /// Closes everything open at `end`; returns the GC cycles begun.
    pub(super) fn finish_gc_and_user(&mut self, end: u64) -> u64 {
        self.close_gc(end);
        self.close_stw(end);
        let procs: Vec<i64> = self.procs.keys().copied().collect();
        for p in procs {
            self.close_sweep(p, end, Vec::new());
        }
        let goroutines: Vec<u64> = self.goroutines.keys().copied().collect();
        for g in goroutines {
            self.close_assist(g, end);
            let regions = self
                .goroutines
                .get_mut(&g)
                .map(|s| std::mem::take(&mut s.regions))
                .unwrap_or_default();
            for r in regions.into_iter().rev() {
                let args = vec![arg("task", r.task)];
                self.emit(TimelineSlice {
                    stack: r.stack,
                    args,
                    ..span(
                        Track::Goroutine(g),
                        SliceKind::UserRegion,
                        r.name,
                        r.start,
                        end,
                    )
                });
            }
        }
        let tasks: Vec<u64> = self.gc.tasks.keys().copied().collect();
        for task in tasks {
            self.close_task(task, end);
        }
        self.gc.cycles
    }
}
