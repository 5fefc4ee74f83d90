//! Decodes a 1.11–1.21 trace body: indexes it (`events_v1.rs`), merges the
//! per-P batches (`order_v1.rs`) and translates each event into a
//! [`SchedEvent`] with nanosecond time for the timeline builder. Needs the
//! whole body in memory: batches of one P are spread through the file and
//! the frequency and stack table are in the footer.

use std::collections::HashMap;

use super::error::{GoTraceError, NoteLog};
use super::events_v1::{V1Index, index_v1, timed_layout};
use super::model::{Frame, StackId, TimelineSink};
use super::order_v1::{V1Event, merge_v1};
use super::sched_event::{DeclaredState, SchedEvent};
use super::states::TimelineBuilder;

/// What decoding a 1.11–1.21 body counted.
pub(super) struct V1Outcome {
    /// Events by type: timed ones as the merge delivered them, structural
    /// ones (batches, strings, stacks, …) as read.
    pub(super) counts: [u64; 64],
    pub(super) ticks_per_second: u64,
    pub(super) notes: NoteLog,
}

/// The stop-the-world kind of a `GCSTWStart` (its meaning changed in 1.21).
fn stw_kind(minor: u32, id: u64) -> String {
    const V21: [&str; 17] = [
        "unknown",
        "GC mark termination",
        "GC sweep termination",
        "write heap dump",
        "goroutine profile",
        "goroutine profile cleanup",
        "all goroutines stack trace",
        "read mem stats",
        "AllThreadsSyscall",
        "GOMAXPROCS",
        "start trace",
        "stop trace",
        "CountPagesInUse (test)",
        "ReadMetricsSlow (test)",
        "ReadMemStatsSlow (test)",
        "PageCachePagesLeaked (test)",
        "ResetDebugLog (test)",
    ];
    let name = match (minor, id) {
        (21, id) => usize::try_from(id).ok().and_then(|i| V21.get(i)).copied(),
        (_, 0) => Some("GC mark termination"),
        (_, 1) => Some("GC sweep termination"),
        _ => None,
    };
    name.unwrap_or("unknown").to_string()
}

fn block_reason(ty: u8) -> &'static str {
    match ty {
        16 => "stopped (select with no cases or nil channel)",
        19 => "sleep",
        22 => "chan send",
        23 => "chan receive",
        24 => "select",
        25 => "sync (mutex)",
        26 => "sync.Cond",
        27 => "network",
        42 => "GC assist wait",
        _ => "blocked",
    }
}

struct Converter<'a> {
    ix: &'a V1Index,
    body: &'a [u8],
    minor: u32,
    min_ticks: u64,
    freq: u64,
    /// Ticks of each goroutine's last syscall block (for GoSysExit times).
    sys_block: HashMap<u64, u64>,
    /// The stack of each goroutine's last syscall entry.
    sys_stack: HashMap<u64, Option<StackId>>,
}

impl Converter<'_> {
    fn ns(&self, ticks: u64) -> u64 {
        let d = u128::from(ticks.saturating_sub(self.min_ticks)) * 1_000_000_000;
        u64::try_from(d / u128::from(self.freq.max(1))).unwrap_or(u64::MAX)
    }

    fn text(&self, id: u64) -> String {
        self.ix.strings.get(&id).cloned().unwrap_or_default()
    }

    fn stack<S: TimelineSink>(&self, b: &mut TimelineBuilder<S>, id: u64) -> Option<StackId> {
        let Some(frames) = self.ix.stacks.get(&id) else {
            if id != 0 {
                b.note("stack missing from the stack table", || {
                    format!("stack {id}")
                });
            }
            return None;
        };
        let pcs: Vec<u64> = frames.iter().map(|f| f.pc).collect();
        b.register_stack(&pcs, || {
            let frame = |f: &super::events_v1::RawFrame| Frame {
                pc: f.pc,
                function: self.text(f.func),
                file: self.text(f.file),
                line: f.line,
            };
            frames.iter().map(frame).collect()
        })
    }

    fn convert<S: TimelineSink>(&mut self, b: &mut TimelineBuilder<S>, ev: V1Event) {
        let [a0, a1, a2, _] = ev.args;
        let stack = self.stack(b, ev.stack);
        let mut ts = self.ns(ev.ticks);
        let (g, p) = (ev.g, ev.p);
        let event = match ev.ty {
            4 => SchedEvent::Gomaxprocs { procs: a0 },
            5 => SchedEvent::ProcStart {
                p,
                thread: i64::try_from(a0).ok(),
            },
            6 => SchedEvent::ProcStop { p },
            7 => SchedEvent::GcStart { seq: a0, stack },
            8 => SchedEvent::GcDone,
            9 => SchedEvent::StwStart {
                kind: stw_kind(self.minor, a0),
            },
            10 => SchedEvent::StwDone,
            11 => SchedEvent::SweepStart { p, stack },
            12 => SchedEvent::SweepDone {
                p,
                swept: Some(a0),
                reclaimed: Some(a1),
            },
            13 => {
                let start = self.ix.stacks.get(&a1).and_then(|f| f.first());
                let name = start.map(|f| self.text(f.func)).filter(|n| !n.is_empty());
                SchedEvent::GoCreate {
                    g: a0,
                    creator: g,
                    name,
                    stack,
                    blocked: false,
                    in_syscall: false,
                }
            }
            14 => SchedEvent::GoStart {
                g,
                p: Some(p),
                label: None,
            },
            41 => SchedEvent::GoStart {
                g,
                p: Some(p),
                label: Some(self.text(a2)),
            },
            15 => SchedEvent::GoEnd { g },
            17 => SchedEvent::GoYield {
                g,
                reason: "Gosched".into(),
                stack,
            },
            18 => SchedEvent::GoYield {
                g,
                reason: "preempted".into(),
                stack,
            },
            16 | 19 | 20 | 22..=27 | 42 => SchedEvent::GoBlock {
                g,
                reason: block_reason(ev.ty).into(),
                stack,
            },
            21 => SchedEvent::GoUnblock {
                g: a0,
                by: g,
                stack,
            },
            28 => {
                self.sys_stack.insert(g, stack);
                SchedEvent::SyscallInstant { g, stack }
            }
            30 => {
                self.sys_block.insert(g, ev.ticks);
                let stack = self.sys_stack.remove(&g).flatten();
                SchedEvent::SyscallBegin { g, stack }
            }
            29 => {
                // The exit's real time (args[2]) predates the event's emission.
                let block = self.sys_block.remove(&a0);
                if a2 != 0 && block.is_some_and(|t| a2 >= t) {
                    ts = self.ns(a2);
                }
                SchedEvent::SyscallEnd {
                    g: a0,
                    resumed: false,
                }
            }
            31 => SchedEvent::GoStatus {
                g: a0,
                state: DeclaredState::Waiting,
                stack: None,
            },
            32 => {
                self.sys_block.insert(a0, ev.ticks);
                SchedEvent::GoStatus {
                    g: a0,
                    state: DeclaredState::Syscall,
                    stack: None,
                }
            }
            33 => SchedEvent::HeapAlloc { bytes: a0 },
            34 => SchedEvent::HeapGoal { bytes: a0 },
            43 => SchedEvent::MarkAssistStart { g, stack },
            44 => SchedEvent::MarkAssistDone { g },
            45 => SchedEvent::TaskBegin {
                task: a0,
                parent: a1,
                name: self.text(a2),
                stack,
            },
            46 => SchedEvent::TaskEnd { task: a0 },
            47 if a1 == 0 => SchedEvent::RegionBegin {
                g,
                task: a0,
                name: self.text(a2),
                stack,
            },
            47 if a1 == 1 => SchedEvent::RegionEnd {
                g,
                task: a0,
                name: self.text(a2),
            },
            48 => {
                let (from, to) = ev.text.unwrap_or((0, 0));
                let message =
                    String::from_utf8_lossy(self.body.get(from..to).unwrap_or(&[])).into_owned();
                SchedEvent::Log {
                    g,
                    task: a0,
                    category: self.text(a1),
                    message,
                    stack,
                }
            }
            _ => return, // FutileWakeup, a region of unknown mode
        };
        b.apply(ts, event);
    }
}

/// Decodes the body (bytes after the header) of a 1.11–1.21 trace.
pub(super) fn decode_v1<S: TimelineSink>(
    body: &[u8],
    minor: u32,
    builder: &mut TimelineBuilder<S>,
) -> Result<V1Outcome, GoTraceError> {
    let ix = index_v1(body, minor);
    let mut notes = ix.notes.clone();
    if ix.valid_end == 0 && !body.is_empty() {
        let what = notes.lines().join("; ");
        return Err(GoTraceError::Malformed { offset: 16, what });
    }
    let freq = ix.ticks_per_second.ok_or(GoTraceError::MissingFrequency)?;
    let valid = body.get(..ix.valid_end).unwrap_or(body);
    let mut conv = Converter {
        ix: &ix,
        body: valid,
        minor,
        min_ticks: ix.min_ticks.unwrap_or(0),
        freq,
        sys_block: HashMap::new(),
        sys_stack: HashMap::new(),
    };
    let mut counts = [0u64; 64];
    merge_v1(valid, minor, &ix.batches, &mut notes, |ev| {
        if let Some(n) = counts.get_mut(usize::from(ev.wire_ty)) {
            *n += 1;
        }
        conv.convert(builder, ev);
    });
    let mut samples = ix.samples.clone();
    samples.sort_by_key(|s| s.ticks);
    for s in samples {
        let stack = conv.stack(builder, s.stack);
        builder.apply(
            conv.ns(s.ticks),
            SchedEvent::CpuSample {
                g: s.g,
                p: s.p,
                stack,
            },
        );
    }
    let (mut timed_read, mut timed_merged) = (0u64, 0u64);
    for (ty, (&read, merged)) in ix.counts.iter().zip(counts.iter_mut()).enumerate() {
        if u8::try_from(ty).ok().and_then(timed_layout).is_some() {
            timed_read += read;
            timed_merged += *merged;
        } else {
            *merged = read;
        }
    }
    if timed_read != timed_merged {
        notes.add("events read but not merged", || {
            format!("{timed_read} read, {timed_merged} merged")
        });
    }
    Ok(V1Outcome {
        counts,
        ticks_per_second: freq,
        notes,
    })
}
