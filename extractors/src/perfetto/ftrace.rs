//! Kernel scheduling and atrace from `ftrace_events` bundles.
//!
//! `sched_switch` / `sched_waking` (plain or `compact_sched`) and atrace
//! `print` markers are collected as small records while packets stream in,
//! then sorted by time and replayed once the input is read: bundles are per
//! CPU and interleave, and a thread's switch-out and its wake-up usually
//! come from different CPUs' bundles, so a state machine fed in file order
//! would see effects before causes.
//!
//! Output: one `sched_slice` row per task run on a CPU track (named by the
//! task, with its pid/tid; the idle task is not a slice), `interrupt` rows
//! on per-CPU interrupt tracks ([`super::interrupts`]), and per-thread
//! `thread_state` rows — Running, Runnable (woken or preempted, waiting for
//! a CPU), Sleeping, Uninterruptible Sleep, … — on a thread-state track.

use crate::FastHashMap;
use crate::api::LimitationLog;

use super::decoder::{Decoder, EventRow, SlotKey};
use super::ftrace_records::{FtraceRecord, Record};
use super::interrupts::{Interrupts, softirq_action};
use super::proto::{CompactSched, FtraceEvent, FtraceEventBundle};
use super::sequence::lossy;
use super::spill::Spilling;
use crate::trace_events::ids::NONE;
use crate::trace_events::kinds::EventKind;

/// Longest thread name taken from a task's `comm` (the kernel's are 16
/// bytes at most); longer ones are cut (`comm_truncated`).
pub const MAX_COMM_NAME_BYTES: usize = 256;

impl Decoder {
    pub fn ftrace_bundle(&mut self, bundle: &FtraceEventBundle) {
        let cpu = bundle.cpu.unwrap_or(0);
        if bundle.lost_events == Some(true) {
            self.p.log.note("ftrace_events_lost", || {
                format!("the kernel lost ftrace events before a bundle of cpu {cpu}")
            });
        }
        for event in &bundle.event {
            let Some(raw) = event.timestamp else { continue };
            let ts = raw as i64;
            if let Some(s) = &event.sched_switch {
                let next_comm = s.next_comm.as_deref().map(lossy).unwrap_or_default();
                if let (Some(pid), Some(comm)) = (s.prev_pid, s.prev_comm.as_deref()) {
                    name_thread_weak(&mut self.threads, &mut self.p.log, pid, &lossy(comm));
                }
                let next_pid = s.next_pid.unwrap_or(0);
                name_thread_weak(&mut self.threads, &mut self.p.log, next_pid, &next_comm);
                let next_comm = self.p.strings.intern(&next_comm);
                self.ftrace.push(FtraceRecord {
                    ts,
                    cpu,
                    what: Record::Switch {
                        prev_pid: s.prev_pid,
                        prev_state: s.prev_state.unwrap_or(0),
                        next_pid,
                        next_prio: s.next_prio.unwrap_or(0),
                        next_comm,
                    },
                });
            } else if let Some(w) = &event.sched_waking {
                let comm = w.comm.as_deref().map(lossy).unwrap_or_default();
                let comm = self.p.strings.intern(&comm);
                self.ftrace.push(FtraceRecord {
                    ts,
                    cpu,
                    what: Record::Waking {
                        pid: w.pid.unwrap_or(0),
                        target_cpu: w.target_cpu.unwrap_or(-1),
                        comm,
                        waker: event.pid.and_then(|p| i32::try_from(p).ok()),
                    },
                });
            } else if let Some(print) = &event.print {
                let text = print.buf.as_deref().map(lossy).unwrap_or_default();
                let text: Box<str> = text.trim_end_matches('\n').into();
                let tid = event.pid.and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
                self.ftrace.push(FtraceRecord {
                    ts,
                    cpu,
                    what: Record::Print { tid, text },
                });
            } else if let Some(what) = self.interrupt_record(event) {
                self.ftrace.push(FtraceRecord { ts, cpu, what });
            } else if let Some(c) = event.cpu_frequency.as_ref().or(event.cpu_idle.as_ref()) {
                let frequency = event.cpu_frequency.is_some();
                let Some(state) = c.state else { continue };
                let target = c.cpu_id.unwrap_or(cpu);
                let (name, unit, value) = if frequency {
                    (format!("cpu{target}.freq"), Some("kHz"), f64::from(state))
                } else if state == u32::MAX {
                    (format!("cpu{target}.idle_state"), None, -1.0)
                } else {
                    (format!("cpu{target}.idle_state"), None, f64::from(state))
                };
                self.named_counter(0, &name, ts, value, unit);
            } else {
                self.ftrace_other_events += 1;
            }
        }
        if let Some(compact) = &bundle.compact_sched {
            self.compact_sched(cpu, compact);
        }
    }

    /// The record of an interrupt or softirq entry or exit.
    fn interrupt_record(&mut self, event: &FtraceEvent) -> Option<Record> {
        let (soft, enter, number, name, ret) = if let Some(e) = &event.irq_handler_entry {
            let irq = e.irq.unwrap_or(-1);
            let name = e.name.as_deref().map(lossy).unwrap_or_default();
            let name = if name.is_empty() {
                format!("irq {irq}")
            } else {
                name.chars().take(MAX_COMM_NAME_BYTES).collect()
            };
            (false, true, irq, self.p.strings.intern(&name), -1)
        } else if let Some(e) = &event.irq_handler_exit {
            (false, false, e.irq.unwrap_or(-1), 0, e.ret.unwrap_or(-1))
        } else if let Some(v) = event.softirq_entry.as_ref().or(event.softirq_exit.as_ref()) {
            let vec = v.vec.unwrap_or(u32::MAX);
            let name = self.p.strings.intern(&softirq_action(vec));
            let number = i32::try_from(vec).unwrap_or(-1);
            (true, event.softirq_entry.is_some(), number, name, -1)
        } else {
            return None;
        };
        Some(Record::Interrupt {
            soft,
            enter,
            number,
            name,
            ret,
        })
    }

    fn compact_sched(&mut self, cpu: u32, c: &CompactSched) {
        let table: Vec<u32> = c
            .intern_table
            .iter()
            .map(|s| self.p.strings.intern(&lossy(s)))
            .collect();
        let comm = |i: Option<&u32>| i.and_then(|&i| table.get(i as usize)).copied();
        let mut ts: i64 = 0;
        let n = c.switch_timestamp.len();
        let consistent = c.switch_next_pid.len() == n && c.switch_prev_state.len() == n;
        if !consistent {
            self.p.log.note("malformed_compact_sched", || {
                "compact sched switch arrays differ in length; the bundle's switches were skipped"
                    .to_string()
            });
        }
        for i in (0..n).filter(|_| consistent) {
            ts = ts.wrapping_add(c.switch_timestamp[i] as i64);
            let next_pid = c.switch_next_pid[i];
            let next_comm = comm(c.switch_next_comm_index.get(i)).unwrap_or(0);
            // Lent, not copied per switch: the entry may be long and every
            // switch may use it.
            name_thread_weak(
                &mut self.threads,
                &mut self.p.log,
                next_pid,
                self.p.strings.get(next_comm),
            );
            self.ftrace.push(FtraceRecord {
                ts,
                cpu,
                what: Record::Switch {
                    prev_pid: None,
                    prev_state: c.switch_prev_state[i],
                    next_pid,
                    next_prio: c.switch_next_prio.get(i).copied().unwrap_or(0),
                    next_comm,
                },
            });
        }
        let mut ts: i64 = 0;
        let n = c.waking_timestamp.len();
        if c.waking_pid.len() != n {
            self.p.log.note("malformed_compact_sched", || {
                "compact sched waking arrays differ in length; the bundle's wakings were skipped"
                    .to_string()
            });
            return;
        }
        for i in 0..n {
            ts = ts.wrapping_add(c.waking_timestamp[i] as i64);
            self.ftrace.push(FtraceRecord {
                ts,
                cpu,
                what: Record::Waking {
                    pid: c.waking_pid[i],
                    target_cpu: c.waking_target_cpu.get(i).copied().unwrap_or(-1),
                    comm: comm(c.waking_comm_index.get(i)).unwrap_or(0),
                    waker: None,
                },
            });
        }
    }

    /// Replays the collected records in time order; finished rows leave for
    /// spill runs whenever `spilling` has a run due.
    pub fn replay_ftrace(&mut self, spilling: &mut Spilling) -> std::io::Result<()> {
        let mut records = std::mem::take(&mut self.ftrace);
        let mut sched = Sched::default();
        let mut atrace = super::atrace::Atrace::default();
        let mut interrupts = Interrupts::default();
        let mut last = 0;
        for r in records.sorted()? {
            let r = r?;
            last = r.ts;
            if let Some(spill) = spilling.due(&self.p.store)? {
                atrace.spill_finished(self, spill)?;
            }
            match r.what {
                Record::Switch {
                    prev_pid,
                    prev_state,
                    next_pid,
                    next_prio,
                    next_comm,
                } => {
                    let prev = prev_pid.or_else(|| sched.running.get(r.cpu).map(|o| o.tid));
                    if let Some(open) = sched.running.remove(r.cpu) {
                        if prev_pid.is_some_and(|p| p != open.tid) {
                            self.p.log.note("sched_switch_mismatch", || {
                                "a switch's previous task is not the one that was running; \
                                 that task's run ends there, its state after is unknown"
                                    .to_string()
                            });
                            // Its own switch-out was lost: it stopped running
                            // here at the latest, in a state nobody recorded.
                            if sched
                                .states
                                .get(&open.tid)
                                .is_some_and(|s| s.name == "Running")
                            {
                                self.close_state(&mut sched, open.tid, r.ts);
                            }
                        }
                        self.sched_slice(r.cpu, &open, r.ts, prev_state);
                    }
                    if let Some(prev) = prev.filter(|&p| p != 0) {
                        let state = state_name(prev_state);
                        self.thread_state(&mut sched, prev, r.ts, state, None);
                    }
                    if next_pid != 0 {
                        // A task runs on one CPU at a time: a switch-out that
                        // never arrived (lost events) ends where it runs next.
                        let elsewhere = sched.running.cpu_of(next_pid).filter(|&c| c != r.cpu);
                        if let Some(other) = elsewhere
                            && let Some(stale) = sched.running.remove(other)
                        {
                            self.p.log.note("sched_switch_missing", || {
                                "a task was switched in while still running on another CPU; \
                                 its earlier run was ended there"
                                    .to_string()
                            });
                            self.sched_slice(other, &stale, r.ts, 0);
                        }
                        self.thread_state(&mut sched, next_pid, r.ts, "Running", Some(r.cpu));
                        sched.running.insert(
                            r.cpu,
                            Running {
                                tid: next_pid,
                                start: r.ts,
                                prio: next_prio,
                                comm: next_comm,
                            },
                        );
                    }
                }
                Record::Waking {
                    pid,
                    target_cpu,
                    comm: _,
                    waker,
                } => {
                    let asleep = sched
                        .states
                        .get(&pid)
                        .is_none_or(|s| s.name != "Running" && !s.name.starts_with("Runnable"));
                    if asleep && pid != 0 {
                        let state = "Runnable";
                        sched.wake_args.insert(pid, wake_args(target_cpu, waker));
                        self.thread_state(&mut sched, pid, r.ts, state, None);
                    }
                }
                Record::Print { tid, ref text } => {
                    atrace.handle(self, r.ts, tid, text);
                }
                Record::Interrupt {
                    soft,
                    enter: true,
                    number,
                    name,
                    ret: _,
                } => interrupts.enter(self, r.cpu, r.ts, soft, number, name),
                Record::Interrupt {
                    soft,
                    enter: false,
                    number,
                    name: _,
                    ret,
                } => interrupts.exit(self, r.cpu, r.ts, soft, number, ret),
            }
        }
        // In CPU and thread order, not the maps' (seeded per process):
        // event ids and track ids must not change from one import to the
        // next.
        let mut running: Vec<(u32, Running)> = std::mem::take(&mut sched.running)
            .by_cpu
            .into_iter()
            .collect();
        running.sort_unstable_by_key(|(cpu, _)| *cpu);
        for (cpu, open) in running {
            self.sched_slice(cpu, &open, NONE, 0);
        }
        let mut open_states: Vec<i32> = sched.states.keys().copied().collect();
        open_states.sort_unstable();
        for tid in open_states {
            self.close_state(&mut sched, tid, NONE);
        }
        atrace.finish(self, last);
        interrupts.finish(self);
        Ok(())
    }

    /// Writes a finished (or, with `end == NONE`, unterminated) run.
    fn sched_slice(&mut self, cpu: u32, open: &Running, end: i64, end_state: i64) {
        let slot = self.slot(SlotKey::Cpu(cpu));
        let pid = self.threads.get(&open.tid).and_then(|t| t.0);
        let end_state = (end != NONE).then(|| state_name(end_state));
        let args = slice_args(cpu, open.prio, end_state);
        // The task's comm is already interned.
        let name = if self.p.strings.get(open.comm).is_empty() {
            self.p.strings.intern("[unknown task]")
        } else {
            open.comm
        };
        let category = self.p.strings.intern("sched");
        let row = self.push_event(EventRow {
            slot,
            ts: open.start,
            dur: if end == NONE {
                -1
            } else {
                end.saturating_sub(open.start).max(0)
            },
            name,
            category,
            kind: EventKind::SchedSlice,
            instant: false,
            correlation: NONE,
            args: Some(&args),
        });
        self.p.store.thread_override.insert(
            row as u32,
            (pid.map_or(NONE, i64::from), i64::from(open.tid)),
        );
    }

    fn thread_state(
        &mut self,
        sched: &mut Sched,
        tid: i32,
        ts: i64,
        name: &'static str,
        cpu: Option<u32>,
    ) {
        self.close_state(sched, tid, ts);
        sched.states.insert(
            tid,
            OpenState {
                name,
                start: ts,
                cpu,
            },
        );
    }

    fn close_state(&mut self, sched: &mut Sched, tid: i32, end: i64) {
        let Some(open) = sched.states.remove(&tid) else {
            return;
        };
        let slot = self.slot(SlotKey::ThreadState(tid));
        let mut args = open.cpu.map(|cpu| format!("{{\"cpu\":{cpu}}}"));
        if open.name == "Runnable"
            && let Some(w) = sched.wake_args.remove(&tid)
        {
            args = Some(w);
        }
        let name = self.p.strings.intern(open.name);
        let category = self.p.strings.intern("sched");
        self.push_event(EventRow {
            slot,
            ts: open.start,
            dur: if end == NONE {
                -1
            } else {
                end.saturating_sub(open.start).max(0)
            },
            name,
            category,
            kind: EventKind::ThreadState,
            instant: false,
            correlation: NONE,
            args: args.as_deref(),
        });
    }
}

/// Names thread `tid` from the kernel's `comm` when nothing better is
/// known. Copied only when it names the thread, and cut at
/// [`MAX_COMM_NAME_BYTES`]: one long compact-sched entry may name any
/// number of threads.
fn name_thread_weak(
    threads: &mut FastHashMap<i32, (Option<i32>, Option<String>)>,
    log: &mut LimitationLog,
    tid: i32,
    comm: &str,
) {
    let entry = threads.entry(tid).or_insert((None, None));
    if entry.1.is_none() && !comm.is_empty() {
        let mut cut = comm.len().min(MAX_COMM_NAME_BYTES);
        while !comm.is_char_boundary(cut) {
            cut -= 1;
        }
        entry.1 = Some(comm[..cut].to_string());
        if cut < comm.len() {
            log.note("comm_truncated", || {
                format!(
                    "a task's comm passes {MAX_COMM_NAME_BYTES} bytes; the thread it names was \
                     given the first {MAX_COMM_NAME_BYTES}"
                )
            });
        }
    }
}

struct Running {
    tid: i32,
    start: i64,
    prio: i32,
    comm: u32,
}

struct OpenState {
    name: &'static str,
    start: i64,
    cpu: Option<u32>,
}

/// The task running on each CPU, and the CPU of each running task.
///
/// A task runs on one CPU at a time: switching it in ends its run on any
/// other (see `replay_ftrace`), so each tid is on one CPU at most and the
/// switch finds it by tid instead of scanning every CPU.
#[derive(Default)]
struct RunningTasks {
    by_cpu: FastHashMap<u32, Running>,
    cpu_of_tid: FastHashMap<i32, u32>,
}

impl RunningTasks {
    fn get(&self, cpu: u32) -> Option<&Running> {
        self.by_cpu.get(&cpu)
    }

    fn cpu_of(&self, tid: i32) -> Option<u32> {
        self.cpu_of_tid.get(&tid).copied()
    }

    fn remove(&mut self, cpu: u32) -> Option<Running> {
        let open = self.by_cpu.remove(&cpu)?;
        if self.cpu_of_tid.get(&open.tid) == Some(&cpu) {
            self.cpu_of_tid.remove(&open.tid);
        }
        Some(open)
    }

    fn insert(&mut self, cpu: u32, run: Running) {
        self.remove(cpu);
        self.cpu_of_tid.insert(run.tid, cpu);
        self.by_cpu.insert(cpu, run);
    }
}

#[derive(Default)]
struct Sched {
    running: RunningTasks,
    states: FastHashMap<i32, OpenState>,
    wake_args: FastHashMap<i32, String>,
}

// The scheduling rows' `args_json`, formatted directly (one or two per
// context switch, millions in a system trace): the bytes `json!` printed,
// keys in its sorted order. Only integers and the fixed ASCII names of
// `state_name` go in, so nothing needs escaping.

/// A `sched_slice` row's args; `end_state` is absent while it runs.
fn slice_args(cpu: u32, prio: i32, end_state: Option<&'static str>) -> String {
    match end_state {
        None => format!("{{\"cpu\":{cpu},\"prio\":{prio}}}"),
        Some(state) => format!("{{\"cpu\":{cpu},\"end_state\":\"{state}\",\"prio\":{prio}}}"),
    }
}

/// A woken thread's `Runnable` args.
fn wake_args(target_cpu: i32, waker: Option<i32>) -> String {
    match waker {
        Some(tid) => format!("{{\"target_cpu\":{target_cpu},\"waker_tid\":{tid}}}"),
        None => format!("{{\"target_cpu\":{target_cpu},\"waker_tid\":null}}"),
    }
}

/// The name of a task state written by `sched_switch` (`prev_state`).
///
/// The low bits are the kernel's `TASK_REPORT` states; a value with none of
/// them set (0, or only the preemption bit above them) is a task preempted
/// while runnable.
pub fn state_name(state: i64) -> &'static str {
    match state & 0xff {
        0 => "Runnable (Preempted)",
        s if s & 0x01 != 0 => "Sleeping",
        s if s & 0x02 != 0 => "Uninterruptible Sleep",
        s if s & 0x04 != 0 => "Stopped",
        s if s & 0x08 != 0 => "Traced",
        s if s & 0x10 != 0 => "Exit (Dead)",
        s if s & 0x20 != 0 => "Exit (Zombie)",
        s if s & 0x40 != 0 => "Parked",
        _ => "Idle",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduling_args_are_the_bytes_json_printed() {
        use serde_json::json;
        for (cpu, prio) in [(0u32, 120i32), (63, -1), (u32::MAX, i32::MIN)] {
            assert_eq!(
                slice_args(cpu, prio, None),
                json!({"cpu": cpu, "prio": prio}).to_string()
            );
            for state in (0..0x100).map(state_name) {
                assert!(state.chars().all(|c| c.is_ascii() && c != '"' && c != '\\'));
                assert_eq!(
                    slice_args(cpu, prio, Some(state)),
                    json!({"cpu": cpu, "prio": prio, "end_state": state}).to_string()
                );
            }
        }
        for (target_cpu, waker) in [(-1, None), (3, Some(0)), (i32::MAX, Some(-7))] {
            assert_eq!(
                wake_args(target_cpu, waker),
                json!({"target_cpu": target_cpu, "waker_tid": waker}).to_string()
            );
        }
    }

    #[test]
    fn task_states_follow_the_report_bits() {
        assert_eq!(state_name(0), "Runnable (Preempted)");
        assert_eq!(state_name(1), "Sleeping");
        assert_eq!(state_name(2), "Uninterruptible Sleep");
        assert_eq!(state_name(0x100), "Runnable (Preempted)");
        assert_eq!(state_name(0x400 | 0x02), "Uninterruptible Sleep");
        assert_eq!(state_name(0x80), "Idle");
    }
}
