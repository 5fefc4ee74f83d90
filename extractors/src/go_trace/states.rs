//! Derives the timeline from the event stream: each goroutine's running,
//! runnable, blocked and syscall intervals (with the reason it left the
//! previous state), what each P ran, and P activity. GC, sweep, assist and
//! user annotations are in `gc_and_user.rs`, the state transitions in
//! `transitions.rs`. The builder tolerates inconsistent input: an
//! impossible transition is noted and the interval closed, never a panic
//! or a negative interval.

use std::collections::{BTreeMap, HashMap};

use super::error::NoteLog;
use super::gc_and_user::{GcState, OpenRegion};
use super::model::{
    Frame, GoroutineInfo, InstantKind, SliceKind, StackId, TimelineInstant, TimelineSink,
    TimelineSlice, Track,
};
use super::sched_event::SchedEvent;

/// A goroutine's current state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum GKind {
    Unknown,
    Runnable,
    Running,
    Blocked,
    Syscall,
    Dead,
}

/// What the builder knows of one goroutine.
pub(super) struct GState {
    pub(super) info: GoroutineInfo,
    pub(super) kind: GKind,
    /// When it entered `kind`, why, and the stack of that event.
    pub(super) since: u64,
    pub(super) reason: String,
    pub(super) stack: Option<StackId>,
    /// The P it runs on (while running) or last ran on.
    pub(super) p: Option<i64>,
    pub(super) assist: Option<(u64, Option<StackId>)>,
    pub(super) regions: Vec<OpenRegion>,
}

/// What the builder knows of one P: held by a thread since (and which),
/// the goroutine it runs, a sweep in progress.
#[derive(Default)]
pub(super) struct PState {
    pub(super) active: Option<(u64, Option<i64>)>,
    pub(super) running: Option<u64>,
    pub(super) sweep: Option<(u64, Option<StackId>)>,
}

/// Turns [`SchedEvent`]s into timeline items on a [`TimelineSink`].
pub(crate) struct TimelineBuilder<'s, S: TimelineSink> {
    pub(super) sink: &'s mut S,
    stacks: HashMap<Vec<u64>, StackId>,
    pub(super) goroutines: BTreeMap<u64, GState>,
    pub(super) procs: BTreeMap<i64, PState>,
    pub(super) gc: GcState,
    pub(super) notes: NoteLog,
    pub(super) last_ns: u64,
    /// Set while `finish` closes what is still open.
    pub(super) at_end: bool,
}

/// What the builder counted, for the summary.
pub(crate) struct BuilderTotals {
    pub(crate) goroutines: u64,
    pub(crate) procs: u64,
    pub(crate) gc_cycles: u64,
    pub(crate) end_ns: u64,
    pub(crate) notes: NoteLog,
}

pub(super) fn arg(k: &str, v: impl ToString) -> (String, String) {
    (k.to_string(), v.to_string())
}

/// An interval without stack or args, to be completed with `..span(…)`.
pub(super) fn span(
    track: Track,
    kind: SliceKind,
    name: impl Into<String>,
    start_ns: u64,
    end_ns: u64,
) -> TimelineSlice {
    TimelineSlice {
        track,
        kind,
        name: name.into(),
        start_ns,
        end_ns,
        stack: None,
        args: Vec::new(),
    }
}

impl<'s, S: TimelineSink> TimelineBuilder<'s, S> {
    pub(crate) fn new(sink: &'s mut S) -> Self {
        TimelineBuilder {
            sink,
            stacks: HashMap::new(),
            goroutines: BTreeMap::new(),
            procs: BTreeMap::new(),
            gc: GcState::default(),
            notes: NoteLog::default(),
            last_ns: 0,
            at_end: false,
        }
    }

    /// The global id of the stack with these PCs, delivering its frames to
    /// the sink the first time. None for an empty stack.
    pub(crate) fn register_stack(
        &mut self,
        pcs: &[u64],
        frames: impl FnOnce() -> Vec<Frame>,
    ) -> Option<StackId> {
        if pcs.is_empty() {
            return None;
        }
        if let Some(&id) = self.stacks.get(pcs) {
            return Some(id);
        }
        let id = StackId::try_from(self.stacks.len()).ok()?;
        self.stacks.insert(pcs.to_vec(), id);
        self.sink.stack(id, frames());
        Some(id)
    }

    pub(crate) fn note(&mut self, kind: &'static str, example: impl FnOnce() -> String) {
        self.notes.add(kind, example);
    }

    /// Applies one event at `ts_ns`.
    pub(crate) fn apply(&mut self, ts_ns: u64, event: SchedEvent) {
        self.last_ns = self.last_ns.max(ts_ns);
        let ts = ts_ns;
        match event {
            SchedEvent::GoCreate {
                g,
                creator,
                name,
                stack,
                blocked,
                in_syscall,
            } => {
                if self
                    .goroutines
                    .get(&g)
                    .is_some_and(|s| s.kind != GKind::Dead)
                {
                    self.note("goroutine created twice", || format!("G{g} at {ts} ns"));
                    self.transition(g, ts, GKind::Dead, String::new(), None, None);
                }
                let info = GoroutineInfo {
                    id: g,
                    name: name.unwrap_or_default(),
                    created_ns: Some(ts),
                    created_by: (creator != 0).then_some(creator),
                    ..GoroutineInfo::default()
                };
                self.goroutines.insert(g, new_g(info, ts));
                let (kind, reason) = match (blocked, in_syscall) {
                    (true, _) => (GKind::Blocked, "created blocked"),
                    (_, true) => (GKind::Syscall, "created in syscall"),
                    _ => (GKind::Runnable, "created"),
                };
                self.transition(g, ts, kind, reason.into(), stack, None);
                if creator != 0 {
                    let instant = TimelineInstant {
                        track: Track::Goroutine(creator),
                        kind: InstantKind::GoCreate,
                        name: "go".into(),
                        ts_ns: ts,
                        stack,
                        args: vec![arg("new_g", g)],
                    };
                    self.sink.instant(instant);
                }
            }
            SchedEvent::GoStart { g, p, label } => {
                self.expect(
                    g,
                    ts,
                    &[GKind::Runnable],
                    "GoStart of a goroutine not runnable",
                );
                if let Some(label) = label {
                    self.g_mut(g, ts).info.label = Some(label);
                }
                self.transition(g, ts, GKind::Running, String::new(), None, p);
            }
            SchedEvent::GoEnd { g } => {
                self.expect(
                    g,
                    ts,
                    &[GKind::Running, GKind::Syscall],
                    "GoEnd of a goroutine not running",
                );
                self.transition(g, ts, GKind::Dead, String::new(), None, None);
                self.end_goroutine_annotations(g, ts);
                self.g_mut(g, ts).info.ended_ns = Some(ts);
            }
            SchedEvent::GoYield { g, reason, stack } => {
                self.expect(
                    g,
                    ts,
                    &[GKind::Running],
                    "GoYield of a goroutine not running",
                );
                self.transition(g, ts, GKind::Runnable, reason, stack, None);
            }
            SchedEvent::GoBlock { g, reason, stack } => {
                self.expect(
                    g,
                    ts,
                    &[GKind::Running],
                    "GoBlock of a goroutine not running",
                );
                self.transition(g, ts, GKind::Blocked, reason, stack, None);
            }
            SchedEvent::GoUnblock { g, by, stack } => {
                if self.expect(
                    g,
                    ts,
                    &[GKind::Blocked],
                    "GoUnblock of a goroutine not blocked",
                ) {
                    let reason = if by == 0 {
                        "unblocked".into()
                    } else {
                        format!("unblocked by G{by}")
                    };
                    self.transition(g, ts, GKind::Runnable, reason, stack, None);
                }
            }
            SchedEvent::SyscallInstant { g, stack } => {
                let instant = TimelineInstant {
                    track: Track::Goroutine(g),
                    kind: InstantKind::Syscall,
                    name: "syscall".into(),
                    ts_ns: ts,
                    stack,
                    args: Vec::new(),
                };
                self.sink.instant(instant);
            }
            SchedEvent::SyscallBegin { g, stack } => {
                self.expect(
                    g,
                    ts,
                    &[GKind::Running],
                    "syscall begin of a goroutine not running",
                );
                self.transition(g, ts, GKind::Syscall, "syscall".into(), stack, None);
            }
            SchedEvent::SyscallEnd { g, resumed } => {
                self.expect(
                    g,
                    ts,
                    &[GKind::Syscall],
                    "syscall end of a goroutine not in syscall",
                );
                if resumed {
                    let p = self.goroutines.get(&g).and_then(|s| s.p);
                    self.transition(g, ts, GKind::Running, String::new(), None, p);
                } else {
                    self.transition(g, ts, GKind::Runnable, "syscall exit".into(), None, None);
                }
            }
            SchedEvent::GoStatus { g, state, stack } => self.declare(g, ts, state, stack),
            SchedEvent::GoLabel { g, label } => self.g_mut(g, ts).info.label = Some(label),
            SchedEvent::ProcStart { p, thread } => {
                if self.procs.get(&p).is_some_and(|s| s.active.is_some()) {
                    self.note("ProcStart of a running P", || format!("P{p} at {ts} ns"));
                    self.stop_proc(p, ts);
                }
                self.procs.entry(p).or_default().active = Some((ts, thread));
            }
            SchedEvent::ProcActive { p, thread } => {
                let state = self.procs.entry(p).or_default();
                if state.active.is_none() {
                    state.active = Some((ts, thread));
                }
            }
            SchedEvent::ProcStop { p } => self.stop_proc(p, ts),
            other => self.apply_gc_or_user(ts, other),
        }
    }

    /// Delivers an interval (never negative; marked when closed by the
    /// trace's end).
    pub(super) fn emit(&mut self, mut slice: TimelineSlice) {
        slice.end_ns = slice.end_ns.max(slice.start_ns);
        if self.at_end {
            slice.args.push(arg("open_at_end", "true"));
        }
        self.sink.slice(slice);
    }

    /// Closes everything still open at the trace's end and delivers the
    /// goroutines.
    pub(crate) fn finish(mut self, end_ns: u64) -> BuilderTotals {
        let end = end_ns.max(self.last_ns);
        self.at_end = true;
        let ids: Vec<u64> = self.goroutines.keys().copied().collect();
        for g in &ids {
            let open = self.goroutines.get(g).map(|s| s.kind);
            if matches!(
                open,
                Some(GKind::Running | GKind::Runnable | GKind::Blocked | GKind::Syscall)
            ) {
                self.transition(*g, end, GKind::Unknown, String::new(), None, None);
            }
        }
        let procs: Vec<i64> = self.procs.keys().copied().collect();
        for p in procs {
            self.stop_proc(p, end);
        }
        let gc_cycles = self.finish_gc_and_user(end);
        let goroutines = std::mem::take(&mut self.goroutines);
        let count = goroutines.len() as u64;
        for (_, state) in goroutines {
            self.sink.goroutine(state.info);
        }
        BuilderTotals {
            goroutines: count,
            procs: self.procs.len() as u64,
            gc_cycles,
            end_ns: end,
            notes: self.notes,
        }
    }
}

pub(super) fn new_g(info: GoroutineInfo, ts: u64) -> GState {
    GState {
        info,
        kind: GKind::Unknown,
        since: ts,
        reason: String::new(),
        stack: None,
        p: None,
        assist: None,
        regions: Vec::new(),
    }
}

/// How a goroutine is named on a P track: `G7 main.worker`.
pub(super) fn goroutine_display(info: &GoroutineInfo) -> String {
    match (&info.label, info.name.is_empty()) {
        (Some(label), _) => format!("G{} {label}", info.id),
        (None, false) => format!("G{} {}", info.id, info.name),
        (None, true) => format!("G{}", info.id),
    }
}
