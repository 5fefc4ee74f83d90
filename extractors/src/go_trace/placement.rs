//! The decoder's items, each placed on its track with its kind, name and
//! category (the layout is described in [`super::evidence_sink`]): the
//! [`TimelineSink`] implementation.

use std::borrow::Cow;

use super::cpu_samples::{PendingSample, cut};
use super::evidence_sink::{EvidenceSink, Row};
use super::model::{
    Counter, Frame, GoroutineInfo, InstantKind, SliceKind, StackId, TimelineInstant, TimelineSink,
    TimelineSlice, Track,
};
use super::task_lanes::PendingTask;
use crate::trace_events::ids::NO_ID;
use crate::trace_events::kinds::EventKind;
use crate::trace_events::store::CounterRow;

/// Longest reason kept in a state's name (the whole one is in args).
const MAX_REASON_IN_NAME: usize = 64;

/// A goroutine state's name, in the kernel's words where they mean the
/// same (`Runnable%` is what the scheduler recipe counts as waiting for a
/// CPU).
pub(super) fn state_name<'a>(kind: SliceKind, reason: &'a str) -> Cow<'a, str> {
    match kind {
        SliceKind::Running => Cow::Borrowed("Running"),
        SliceKind::Runnable if reason == "preempted" => Cow::Borrowed("Runnable (Preempted)"),
        SliceKind::Runnable => Cow::Borrowed("Runnable"),
        SliceKind::Syscall => Cow::Borrowed("Syscall"),
        _ => match reason {
            "" | "blocked" | "unspecified" => Cow::Borrowed("Blocked"),
            r => Cow::Owned(format!("Blocked ({})", cut(r, MAX_REASON_IN_NAME))),
        },
    }
}

fn arg<'a>(args: &'a [(String, String)], key: &str) -> Option<&'a str> {
    args.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// Counter names and units (`None`: a plain number).
fn counter_series(name: &str) -> (&'static str, Option<&'static str>) {
    match name {
        "heap_alloc_bytes" => ("go.heap_alloc", Some("bytes")),
        "heap_goal_bytes" => ("go.heap_goal", Some("bytes")),
        "gomaxprocs" => ("go.gomaxprocs", None),
        _ => ("go.counter", None),
    }
}

impl EvidenceSink<'_> {
    /// A goroutine's state interval: a `thread_state` row.
    fn state(&mut self, g: u64, s: &TimelineSlice) {
        let Some(track) = self.state_track(g) else {
            return;
        };
        let reason = arg(&s.args, "reason").unwrap_or("");
        let name = state_name(s.kind, reason);
        let args = self.args(&s.args, s.stack);
        let category = self.cats.sched;
        self.totals.states += 1;
        self.push(Row {
            start_ns: s.start_ns,
            end_ns: Some(s.end_ns),
            name: &name,
            category,
            kind: EventKind::ThreadState,
            track,
            args,
            goroutine: None,
        });
    }

    /// What a P ran: a `sched_slice` row naming the goroutine.
    fn run_on_p(&mut self, p: i64, s: &TimelineSlice) {
        let Some(g) = arg(&s.args, "g").and_then(|g| g.parse::<i64>().ok()) else {
            self.trace.log.note("run_without_goroutine", || {
                "a P's run names no goroutine; skipped".to_owned()
            });
            return;
        };
        let track = self.cpu_track(p);
        let mut pairs = s.args.clone();
        pairs.push(("p".to_owned(), p.to_string()));
        let args = self.args(&pairs, None);
        let category = self.cats.sched;
        self.push(Row {
            start_ns: s.start_ns,
            end_ns: Some(s.end_ns),
            name: &s.name,
            category,
            kind: EventKind::SchedSlice,
            track,
            args,
            goroutine: Some(g),
        });
    }

    /// A slice of the GC or of a goroutine's annotations on `track`.
    fn slice_on(&mut self, track: u32, category: u32, kind: EventKind, s: &TimelineSlice) {
        let args = self.args(&s.args, s.stack);
        if kind == EventKind::UserAnnotation {
            self.totals.regions += 1;
        } else {
            self.totals.gc_slices += 1;
        }
        let name = if s.name.is_empty() {
            "(unnamed)"
        } else {
            s.name.as_str()
        };
        self.push(Row {
            start_ns: s.start_ns,
            end_ns: Some(s.end_ns),
            name,
            category,
            kind,
            track,
            args,
            goroutine: None,
        });
    }

    fn unplaced(&mut self, what: String) {
        self.trace.log.note("item_not_placed", || {
            format!("{what}: the decoder put it where no track is made for it; skipped")
        });
    }
}

impl TimelineSink for EvidenceSink<'_> {
    fn slice(&mut self, s: TimelineSlice) {
        if !self.accepting() {
            return;
        }
        let gc = self.cats.gc;
        match (s.track, s.kind) {
            (
                Track::Goroutine(g),
                SliceKind::Running | SliceKind::Runnable | SliceKind::Blocked | SliceKind::Syscall,
            ) => self.state(g, &s),
            (Track::Goroutine(g), SliceKind::MarkAssist) => {
                if let Some(track) = self.assist_track(g) {
                    self.slice_on(track, gc, EventKind::CpuSlice, &s);
                }
            }
            (Track::Goroutine(g), SliceKind::UserRegion) => {
                if let Some(track) = self.thread_track(g) {
                    let region = self.cats.region;
                    self.slice_on(track, region, EventKind::UserAnnotation, &s);
                }
            }
            (Track::Proc(p), SliceKind::Running) => self.run_on_p(p, &s),
            (Track::Proc(p), SliceKind::ProcActive) => {
                let held = s.end_ns.saturating_sub(s.start_ns);
                let slot = self.totals.proc_active_ns.entry(p).or_insert(0);
                *slot = slot.saturating_add(held);
            }
            (Track::Proc(p), SliceKind::Sweep) => {
                let track = self.sweep_track(p);
                self.slice_on(track, gc, EventKind::CpuSlice, &s);
            }
            (Track::Gc, SliceKind::GcCycle) => {
                let ns = s.end_ns.saturating_sub(s.start_ns);
                self.totals.gc_cycle_ns = self.totals.gc_cycle_ns.saturating_add(ns);
                let track = self.gc_track(false);
                self.slice_on(track, gc, EventKind::CpuSlice, &s);
            }
            (Track::Gc, SliceKind::StopTheWorld) => {
                let ns = s.end_ns.saturating_sub(s.start_ns);
                self.totals.stop_the_world_ns = self.totals.stop_the_world_ns.saturating_add(ns);
                let track = self.gc_track(true);
                self.slice_on(track, gc, EventKind::CpuSlice, &s);
            }
            (Track::Task(task), SliceKind::UserTask) => {
                let args = self.args(&s.args, s.stack);
                let parent = arg(&s.args, "parent").and_then(|p| p.parse().ok());
                self.tasks.push(PendingTask {
                    task,
                    parent,
                    start_ns: s.start_ns,
                    end_ns: s.end_ns,
                    name: s.name,
                    args,
                });
            }
            (track, kind) => self.unplaced(format!("a {kind:?} interval on {track:?}")),
        }
    }

    fn instant(&mut self, i: TimelineInstant) {
        if !self.accepting() {
            return;
        }
        if i.kind == InstantKind::CpuSample {
            let Ok(ts) = i64::try_from(i.ts_ns) else {
                self.trace.log.note("timestamp_overflow", || {
                    "a time past i64 nanoseconds; the sample was skipped".to_owned()
                });
                return;
            };
            let g = match i.track {
                Track::Goroutine(g) => g,
                _ => 0,
            };
            self.samples.push(PendingSample {
                ts,
                stack: i.stack,
                g,
            });
            return;
        }
        let Track::Goroutine(g) = i.track else {
            return self.unplaced(format!("a {:?} instant on {:?}", i.kind, i.track));
        };
        // On the state track, not the thread track: a thread track makes
        // the goroutine "busy" (in traced calls) for 0 ns, which ranks it
        // above goroutines that ran longer.
        let Some(track) = self.state_track(g) else {
            return;
        };
        let (name, category) = match i.kind {
            InstantKind::GoCreate => ("go", self.cats.sched),
            InstantKind::Syscall => ("syscall", self.cats.syscall),
            _ if i.name.is_empty() => ("log", self.cats.log),
            _ => (i.name.as_str(), self.cats.log),
        };
        let args = self.args(&i.args, i.stack);
        self.push(Row {
            start_ns: i.ts_ns,
            end_ns: None,
            name,
            category,
            kind: EventKind::Instant,
            track,
            args,
            goroutine: None,
        });
    }

    fn counter(&mut self, c: Counter) {
        if !self.accepting() {
            return;
        }
        let Ok(ts) = i64::try_from(c.ts_ns) else {
            return self.trace.log.note("timestamp_overflow", || {
                "a time past i64 nanoseconds; the counter value was skipped".to_owned()
            });
        };
        let (series, unit) = counter_series(c.name);
        let name = self.name_id(series);
        let unit = match unit {
            Some("bytes") => self.trace.bytes_unit,
            Some(other) => self.name_id(other),
            None => NO_ID,
        };
        let track = self.trace.tracks.counter_track(self.process, name);
        self.trace.counters.push(CounterRow {
            track,
            ts,
            value: c.value as f64,
            name,
            unit,
        });
    }

    fn stack(&mut self, id: StackId, frames: Vec<Frame>) {
        self.stacks.insert(id, frames);
    }

    fn goroutine(&mut self, info: GoroutineInfo) {
        let Ok(tid) = i64::try_from(info.id) else {
            return;
        };
        let mut name = format!("G{}", info.id);
        if !info.name.is_empty() {
            name.push(' ');
            name.push_str(&info.name);
        }
        let id = self.trace.strings.intern(cut(&name, 512));
        let key = (self.process, crate::trace_events::tracks::Ident::Int(tid));
        self.trace.tracks.thread_names.insert(key, id);
        self.names.insert(info.id, id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_are_named_in_the_kernels_words() {
        assert_eq!(state_name(SliceKind::Running, ""), "Running");
        assert_eq!(
            state_name(SliceKind::Runnable, "preempted"),
            "Runnable (Preempted)"
        );
        assert_eq!(
            state_name(SliceKind::Runnable, "unblocked by G5"),
            "Runnable"
        );
        assert_eq!(
            state_name(SliceKind::Blocked, "chan receive"),
            "Blocked (chan receive)"
        );
        assert_eq!(state_name(SliceKind::Blocked, "blocked"), "Blocked");
        assert_eq!(state_name(SliceKind::Syscall, "syscall"), "Syscall");
        assert_eq!(
            counter_series("heap_alloc_bytes"),
            ("go.heap_alloc", Some("bytes"))
        );
    }
}
