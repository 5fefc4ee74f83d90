//! Translates 1.22+ events into [`SchedEvent`]s. The wire events leave
//! their subject implicit: each thread (M) has a current P and goroutine,
//! set by ProcStart/GoStart and status events and carried across
//! generations, and an event concerns the M's current goroutine unless it
//! names one. Strings and stacks resolve through the generation's tables.

use std::collections::HashMap;

use super::events_v2::{GenTables, V2Event};
use super::model::{Frame, StackId, TimelineSink};
use super::sched_event::{DeclaredState, SchedEvent};
use super::states::TimelineBuilder;

/// A thread's current P and goroutine (0: none).
#[derive(Default, Clone, Copy)]
pub(super) struct MCtx {
    pub(super) p: Option<i64>,
    pub(super) g: u64,
}

pub(super) fn pid(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(-1)
}

pub(super) fn abs_ns(ticks: u64, freq: u64) -> u64 {
    let ns = u128::from(ticks) * 1_000_000_000 / u128::from(freq.max(1));
    u64::try_from(ns).unwrap_or(u64::MAX)
}

/// Converts the events of one generation.
pub(super) struct GenConverter<'a> {
    pub(super) tables: &'a GenTables,
    pub(super) freq: u64,
    /// Absolute nanoseconds of the trace's first batch.
    pub(super) origin: u64,
}

impl GenConverter<'_> {
    pub(super) fn ns(&self, ticks: u64) -> u64 {
        abs_ns(ticks, self.freq).saturating_sub(self.origin)
    }

    fn text(&self, id: u64) -> String {
        self.tables.strings.get(&id).cloned().unwrap_or_default()
    }

    pub(super) fn stack<S: TimelineSink>(
        &self,
        b: &mut TimelineBuilder<S>,
        id: u64,
    ) -> Option<StackId> {
        let Some(frames) = self.tables.stacks.get(&id) else {
            if id != 0 {
                b.note("stack missing from the stack table", || {
                    format!("stack {id}")
                });
            }
            return None;
        };
        let pcs: Vec<u64> = frames.iter().map(|f| f[0]).collect();
        b.register_stack(&pcs, || {
            let frame = |f: &[u64; 4]| Frame {
                pc: f[0],
                function: self.text(f[1]),
                file: self.text(f[2]),
                line: f[3],
            };
            frames.iter().map(frame).collect()
        })
    }

    pub(super) fn convert<S: TimelineSink>(
        &mut self,
        ms: &mut HashMap<u64, MCtx>,
        b: &mut TimelineBuilder<S>,
        m: u64,
        ev: V2Event,
    ) {
        let ts = self.ns(ev.ticks);
        let [a0, a1, a2, a3] = ev.args;
        let ctx = ms.get(&m).copied().unwrap_or_default();
        let cur = ctx.g;
        let thread = Some(m as i64);
        let set = |ms: &mut HashMap<u64, MCtx>, f: &dyn Fn(&mut MCtx)| f(ms.entry(m).or_default());
        let needs_g = matches!(ev.ty, 17..=20 | 22..=24 | 35 | 36 | 39 | 45 | 46);
        if needs_g && cur == 0 {
            b.note("goroutine event on a thread running no goroutine", || {
                format!("type {} on M {m} at {ts} ns", ev.ty)
            });
            return;
        }
        let sched = match ev.ty {
            9 => SchedEvent::Gomaxprocs { procs: a0 },
            10 => {
                set(ms, &|c| c.p = Some(pid(a0)));
                SchedEvent::ProcStart { p: pid(a0), thread }
            }
            11 => {
                set(ms, &|c| c.p = None);
                let Some(p) = ctx.p else { return };
                SchedEvent::ProcStop { p }
            }
            12 | 13 if ev.ty == 12 || a1 == 2 => {
                for c in ms.values_mut().filter(|c| c.p == Some(pid(a0))) {
                    c.p = None;
                }
                SchedEvent::ProcStop { p: pid(a0) }
            }
            13 if a1 == 1 || a1 == 3 => {
                set(ms, &|c| c.p = Some(pid(a0)));
                SchedEvent::ProcActive { p: pid(a0), thread }
            }
            14 | 47 => {
                let name = self
                    .tables
                    .stacks
                    .get(&a1)
                    .and_then(|f| f.first())
                    .map(|f| self.text(f[1]))
                    .filter(|n| !n.is_empty());
                let stack = self.stack(b, a2);
                SchedEvent::GoCreate {
                    g: a0,
                    creator: cur,
                    name,
                    stack,
                    blocked: ev.ty == 47,
                    in_syscall: false,
                }
            }
            15 => {
                set(ms, &|c| c.g = a0);
                SchedEvent::GoCreate {
                    g: a0,
                    creator: 0,
                    name: None,
                    stack: None,
                    blocked: false,
                    in_syscall: true,
                }
            }
            16 => {
                set(ms, &|c| c.g = a0);
                SchedEvent::GoStart {
                    g: a0,
                    p: ctx.p,
                    label: None,
                }
            }
            17 | 18 | 24 => {
                set(ms, &|c| c.g = 0);
                match ev.ty {
                    24 => SchedEvent::SyscallEnd {
                        g: cur,
                        resumed: false,
                    },
                    _ => SchedEvent::GoEnd { g: cur },
                }
            }
            19 | 20 => {
                set(ms, &|c| c.g = 0);
                let (reason, stack) = (self.text(a0), self.stack(b, a1));
                match ev.ty {
                    19 => SchedEvent::GoYield {
                        g: cur,
                        reason,
                        stack,
                    },
                    _ => SchedEvent::GoBlock {
                        g: cur,
                        reason,
                        stack,
                    },
                }
            }
            21 => SchedEvent::GoUnblock {
                g: a0,
                by: cur,
                stack: self.stack(b, a2),
            },
            22 => SchedEvent::SyscallBegin {
                g: cur,
                stack: self.stack(b, a1),
            },
            23 => SchedEvent::SyscallEnd {
                g: cur,
                resumed: true,
            },
            25 | 48 => {
                let on = ms.get(&a1).copied().unwrap_or_default();
                let state = match a2 {
                    1 => DeclaredState::Runnable,
                    2 => DeclaredState::Running { p: on.p },
                    3 => DeclaredState::Syscall,
                    4 => DeclaredState::Waiting,
                    _ => {
                        return b.note("goroutine status of unknown value", || {
                            format!("G{a0} status {a2}")
                        });
                    }
                };
                if matches!(a2, 2 | 3) {
                    ms.entry(a1).or_default().g = a0;
                }
                let stack = if ev.ty == 48 { self.stack(b, a3) } else { None };
                SchedEvent::GoStatus {
                    g: a0,
                    state,
                    stack,
                }
            }
            26 => SchedEvent::StwStart {
                kind: self.text(a0),
            },
            27 => SchedEvent::StwDone,
            28 => SchedEvent::GcActive { seq: a0 },
            29 => SchedEvent::GcStart {
                seq: a0,
                stack: self.stack(b, a1),
            },
            30 => SchedEvent::GcDone,
            31 => SchedEvent::SweepStart {
                p: pid(a0),
                stack: None,
            },
            32 => SchedEvent::SweepStart {
                p: ctx.p.unwrap_or(-1),
                stack: self.stack(b, a0),
            },
            33 => SchedEvent::SweepDone {
                p: ctx.p.unwrap_or(-1),
                swept: Some(a0),
                reclaimed: Some(a1),
            },
            34 => SchedEvent::MarkAssistStart { g: a0, stack: None },
            35 => SchedEvent::MarkAssistStart {
                g: cur,
                stack: self.stack(b, a0),
            },
            36 => SchedEvent::MarkAssistDone { g: cur },
            37 => SchedEvent::HeapAlloc { bytes: a0 },
            38 => SchedEvent::HeapGoal { bytes: a0 },
            39 => SchedEvent::GoLabel {
                g: cur,
                label: self.text(a0),
            },
            40 => SchedEvent::TaskBegin {
                task: a0,
                parent: a1,
                name: self.text(a2),
                stack: self.stack(b, a3),
            },
            41 => SchedEvent::TaskEnd { task: a0 },
            42 => SchedEvent::RegionBegin {
                g: cur,
                task: a0,
                name: self.text(a1),
                stack: self.stack(b, a2),
            },
            43 => SchedEvent::RegionEnd {
                g: cur,
                task: a0,
                name: self.text(a1),
            },
            44 => SchedEvent::Log {
                g: cur,
                task: a0,
                category: self.text(a1),
                message: self.text(a2),
                stack: self.stack(b, a3),
            },
            45 | 46 => {
                // A coroutine switch: the current goroutine blocks (or ends)
                // and `a0` runs on this thread in its place.
                let leave = match ev.ty {
                    45 => SchedEvent::GoBlock {
                        g: cur,
                        reason: "coroutine switch".into(),
                        stack: None,
                    },
                    _ => SchedEvent::GoEnd { g: cur },
                };
                b.apply(ts, leave);
                b.apply(
                    ts,
                    SchedEvent::GoUnblock {
                        g: a0,
                        by: cur,
                        stack: None,
                    },
                );
                set(ms, &|c| c.g = a0);
                SchedEvent::GoStart {
                    g: a0,
                    p: ctx.p,
                    label: None,
                }
            }
            _ => return, // ProcStatus idle/abandoned, ClockSnapshot
        };
        b.apply(ts, sched);
    }
}
