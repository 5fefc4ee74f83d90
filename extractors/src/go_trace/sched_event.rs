//! The scheduling, GC and annotation events both trace layouts are
//! translated into before the timeline is derived (`states.rs`). The
//! goroutine, P and thread an event concerns are explicit here (the wire
//! formats leave them implicit in per-P or per-M context), strings are
//! resolved and stacks are global [`StackId`]s.

use super::model::StackId;

/// A goroutine's state as declared at the start of tracing (1.11–1.21
/// `GoWaiting`/`GoInSyscall`) or of a generation (1.22+ `GoStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeclaredState {
    Runnable,
    Running { p: Option<i64> },
    Syscall,
    Waiting,
}

/// One event, with its subject made explicit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchedEvent {
    /// `g` created by `creator` (0 = runtime). `name` is the new
    /// goroutine's start function. `blocked`: created waiting (1.23
    /// coroutines); `in_syscall`: appeared in a syscall (cgo callback).
    GoCreate {
        g: u64,
        creator: u64,
        name: Option<String>,
        stack: Option<StackId>,
        blocked: bool,
        in_syscall: bool,
    },
    GoStart {
        g: u64,
        p: Option<i64>,
        label: Option<String>,
    },
    GoEnd {
        g: u64,
    },
    /// Running → runnable (Gosched, preemption, 1.22+ GoStop reasons).
    GoYield {
        g: u64,
        reason: String,
        stack: Option<StackId>,
    },
    /// Running → blocked.
    GoBlock {
        g: u64,
        reason: String,
        stack: Option<StackId>,
    },
    /// Blocked → runnable, by `by` (0 = runtime, timers, netpoller).
    GoUnblock {
        g: u64,
        by: u64,
        stack: Option<StackId>,
    },
    /// A syscall that did not block its thread (1.11–1.21 entry only).
    SyscallInstant {
        g: u64,
        stack: Option<StackId>,
    },
    /// Running → in syscall.
    SyscallBegin {
        g: u64,
        stack: Option<StackId>,
    },
    /// Syscall → running (`resumed`, 1.22+ fast path) or → runnable.
    SyscallEnd {
        g: u64,
        resumed: bool,
    },
    /// A state declared rather than reached by a transition.
    GoStatus {
        g: u64,
        state: DeclaredState,
        stack: Option<StackId>,
    },
    GoLabel {
        g: u64,
        label: String,
    },
    ProcStart {
        p: i64,
        thread: Option<i64>,
    },
    ProcStop {
        p: i64,
    },
    /// The P already runs at the start of a 1.22+ generation.
    ProcActive {
        p: i64,
        thread: Option<i64>,
    },
    Gomaxprocs {
        procs: u64,
    },
    GcStart {
        seq: u64,
        stack: Option<StackId>,
    },
    /// A GC cycle already in progress at a 1.22+ generation start.
    GcActive {
        seq: u64,
    },
    GcDone,
    StwStart {
        kind: String,
    },
    StwDone,
    SweepStart {
        p: i64,
        stack: Option<StackId>,
    },
    SweepDone {
        p: i64,
        swept: Option<u64>,
        reclaimed: Option<u64>,
    },
    MarkAssistStart {
        g: u64,
        stack: Option<StackId>,
    },
    MarkAssistDone {
        g: u64,
    },
    HeapAlloc {
        bytes: u64,
    },
    HeapGoal {
        bytes: u64,
    },
    TaskBegin {
        task: u64,
        parent: u64,
        name: String,
        stack: Option<StackId>,
    },
    TaskEnd {
        task: u64,
    },
    RegionBegin {
        g: u64,
        task: u64,
        name: String,
        stack: Option<StackId>,
    },
    RegionEnd {
        g: u64,
        task: u64,
        name: String,
    },
    Log {
        g: u64,
        task: u64,
        category: String,
        message: String,
        stack: Option<StackId>,
    },
    CpuSample {
        g: u64,
        p: Option<i64>,
        stack: Option<StackId>,
    },
}
