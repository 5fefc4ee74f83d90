//! The format-neutral timeline a Go execution trace is decoded into:
//! intervals on goroutine, P, GC and user-task tracks, instants, counters,
//! goroutine descriptions and the stack table. Both trace layouts (1.11–1.21
//! and 1.22+) produce exactly this, through [`TimelineSink`], so the code
//! turning it into evidence does not know which layout it came from.

use std::collections::BTreeMap;

use super::header::TraceVersion;

/// Index of a stack in the decoded stack table (deduplicated by PCs across
/// the whole trace; a 1.22+ trace's per-generation ids are renumbered).
pub type StackId = u32;

/// Where an interval or instant belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Track {
    /// A goroutine, by id.
    Goroutine(u64),
    /// A logical processor (P), by id; -1 is the runtime's "no P".
    Proc(i64),
    /// The garbage collector (cycles and stop-the-world phases).
    Gc,
    /// An OS thread (M). Reserved: no interval is put here yet.
    Thread(i64),
    /// A user task (`trace.NewTask`), by its trace-internal id.
    Task(u64),
}

/// What an interval is, independent of its display name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SliceKind {
    /// A goroutine executing (on a goroutine track), or what a P executed
    /// (on a P track, named after the goroutine).
    Running,
    /// A goroutine ready to run, waiting for a P (`reason` says why it
    /// left running: created, preempted, yielded, unblocked, …).
    Runnable,
    /// A goroutine blocked (`reason`: chan send/receive, select, sync,
    /// cond, network, sleep, GC assist, …).
    Blocked,
    /// A goroutine in a system call that blocked its thread.
    Syscall,
    /// A P held by a thread (ProcStart … ProcStop); args say which thread.
    ProcActive,
    /// A GC cycle (GCStart … GCDone).
    GcCycle,
    /// A stop-the-world phase; `name` says which.
    StopTheWorld,
    /// Sweeping by a P.
    Sweep,
    /// A goroutine assisting the GC's marking (spans state intervals).
    MarkAssist,
    /// `trace.NewTask` … `Task.End`.
    UserTask,
    /// `trace.WithRegion` / `StartRegion` … `End` on a goroutine.
    UserRegion,
}

/// One interval. `start_ns`/`end_ns` are nanoseconds from the trace's first
/// event. An interval still open when the trace ended ends at the trace's
/// end and has the arg `open_at_end = true`; one whose start predates the
/// trace has `started_before_trace = true`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimelineSlice {
    pub track: Track,
    pub kind: SliceKind,
    pub name: String,
    pub start_ns: u64,
    pub end_ns: u64,
    /// The stack of the event that began the interval (for a blocked
    /// interval: where the goroutine blocked).
    pub stack: Option<StackId>,
    pub args: Vec<(String, String)>,
}

/// What an instant is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum InstantKind {
    /// A goroutine created another (on the creator's track; `stack` is the
    /// `go` statement).
    GoCreate,
    /// A system call that did not block (1.11–1.21 record only the entry).
    Syscall,
    /// `trace.Log`: `name` is the category, arg `message` the message.
    UserLog,
    /// A CPU profile sample taken while tracing.
    CpuSample,
}

/// One point event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimelineInstant {
    pub track: Track,
    pub kind: InstantKind,
    pub name: String,
    pub ts_ns: u64,
    pub stack: Option<StackId>,
    pub args: Vec<(String, String)>,
}

/// A runtime counter sample: `heap_alloc_bytes`, `heap_goal_bytes` or
/// `gomaxprocs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counter {
    pub name: &'static str,
    pub ts_ns: u64,
    pub value: u64,
}

/// One goroutine, as `go tool trace` lists it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GoroutineInfo {
    pub id: u64,
    /// The goroutine's start function (top frame of its creation's new
    /// stack), as `go tool trace` names goroutines; empty when unknown
    /// (a 1.22+ goroutine that already existed when tracing started).
    pub name: String,
    /// The last label given to it (1.11–1.21 `GoStartLabel`, e.g.
    /// "GC (dedicated)"; 1.22+ `GoLabel`).
    pub label: Option<String>,
    pub created_ns: Option<u64>,
    /// The goroutine that created it (None for the runtime/g0, or unknown).
    pub created_by: Option<u64>,
    pub ended_ns: Option<u64>,
    pub running_ns: u64,
    pub runnable_ns: u64,
    pub blocked_ns: u64,
    pub syscall_ns: u64,
}

/// One stack frame, resolved through the trace's own string table.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Frame {
    pub pc: u64,
    pub function: String,
    pub file: String,
    pub line: u64,
}

/// What was decoded, for the extraction summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoTraceSummary {
    pub version: TraceVersion,
    /// Events read, structural ones (batches, strings, stacks) included.
    pub events: u64,
    /// Events read by event name (the runtime's names, e.g. `GoStart`).
    pub events_by_type: BTreeMap<String, u64>,
    pub goroutines: u64,
    pub procs: u64,
    /// GC cycles begun (GCStart / GCBegin events).
    pub gc_cycles: u64,
    /// Events of types this decoder does not know, skipped.
    pub unknown_events: u64,
    /// Nanoseconds from the first to the last event.
    pub duration_ns: u64,
    /// Timestamp ticks per second, as the trace states it (the last one).
    pub ticks_per_second: u64,
    /// Generations read (1.22+ only; 0 for older traces).
    pub generations: u64,
    /// Damage and oddities, one line per kind with a count and an example.
    pub notes: Vec<String>,
}

/// Receives the timeline as it is decoded. A stack is always delivered
/// before the first item that refers to it; goroutines come last.
pub trait TimelineSink {
    fn slice(&mut self, slice: TimelineSlice);
    fn instant(&mut self, instant: TimelineInstant);
    fn counter(&mut self, counter: Counter);
    fn stack(&mut self, id: StackId, frames: Vec<Frame>);
    fn goroutine(&mut self, info: GoroutineInfo);
}

/// The whole decoded timeline in memory (the simple sink).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GoTimeline {
    pub slices: Vec<TimelineSlice>,
    pub instants: Vec<TimelineInstant>,
    pub counters: Vec<Counter>,
    /// Indexed by [`StackId`]; frames innermost first.
    pub stacks: Vec<Vec<Frame>>,
    /// Sorted by id.
    pub goroutines: Vec<GoroutineInfo>,
}

impl TimelineSink for GoTimeline {
    fn slice(&mut self, slice: TimelineSlice) {
        self.slices.push(slice);
    }
    fn instant(&mut self, instant: TimelineInstant) {
        self.instants.push(instant);
    }
    fn counter(&mut self, counter: Counter) {
        self.counters.push(counter);
    }
    fn stack(&mut self, id: StackId, frames: Vec<Frame>) {
        let index = id as usize;
        if self.stacks.len() <= index {
            self.stacks.resize(index.saturating_add(1), Vec::new());
        }
        if let Some(slot) = self.stacks.get_mut(index) {
            *slot = frames;
        }
    }
    fn goroutine(&mut self, info: GoroutineInfo) {
        self.goroutines.push(info);
    }
}

/// A decoded trace: the summary and the whole timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoTrace {
    pub summary: GoTraceSummary,
    pub timeline: GoTimeline,
}

impl GoTimeline {
    /// The frames of a stack (empty for an unknown id).
    pub fn frames(&self, id: StackId) -> &[Frame] {
        self.stacks.get(id as usize).map_or(&[], Vec::as_slice)
    }
}
