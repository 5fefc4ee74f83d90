//! Merges the per-P batches of a 1.11–1.21 trace into one causally
//! consistent stream. Events within a P are in order, but across Ps only
//! the goroutine sequence numbers say what came first (tick counters of
//! different CPUs may disagree). The merge takes, among the Ps whose next
//! event is allowed by its goroutine's current state, the earliest — the
//! algorithm of Go's `tracev1/order.go`, with a wait list per goroutine so
//! each step is O(log P). When no P can advance (damage), the earliest
//! event is taken anyway and noted, so the merge always ends.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

use super::error::NoteLog;
use super::events_v1::{EV_BATCH, RawEvent, read_raw, timed_layout};

/// A timed event with its P and goroutine made explicit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct V1Event {
    pub(super) ticks: u64,
    /// Event type; the `…Local` variants are renamed once merged.
    pub(super) ty: u8,
    /// The type as written (before renaming).
    pub(super) wire_ty: u8,
    pub(super) p: i64,
    pub(super) g: u64,
    /// Arguments after the timestamp, the stack id excluded.
    pub(super) args: [u64; 4],
    pub(super) stack: u64,
    /// A `UserLog` message's byte range.
    pub(super) text: Option<(usize, usize)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum St {
    #[default]
    Dead,
    Runnable,
    Running,
    Waiting,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct GOrd {
    seq: u64,
    st: St,
}

const NOSEQ: u64 = u64::MAX;
const SEQINC: u64 = u64::MAX - 1;
/// The ordering key of GC cycles (GCStart carries a sequence number).
const GC_KEY: u64 = u64::MAX - 1;

/// The goroutine (ordering key) an event advances, the state it needs and
/// the state it leaves. None: no ordering constraint.
fn transition(ev: &V1Event) -> Option<(u64, GOrd, GOrd)> {
    let o = |seq, st| GOrd { seq, st };
    let [a0, a1, ..] = ev.args;
    let seq_next = a1.wrapping_add(1);
    Some(match ev.ty {
        13 => (a0, o(0, St::Dead), o(1, St::Runnable)),
        31 | 32 => (ev.g, o(1, St::Runnable), o(2, St::Waiting)),
        14 | 41 => (ev.g, o(a1, St::Runnable), o(seq_next, St::Running)),
        38 => (ev.g, o(NOSEQ, St::Runnable), o(SEQINC, St::Running)),
        19 | 20 | 22..=27 | 30 | 42 => (ev.g, o(NOSEQ, St::Running), o(NOSEQ, St::Waiting)),
        17 | 18 => (ev.g, o(NOSEQ, St::Running), o(NOSEQ, St::Runnable)),
        21 | 29 => (a0, o(a1, St::Waiting), o(seq_next, St::Runnable)),
        39 | 40 => (a0, o(NOSEQ, St::Waiting), o(SEQINC, St::Runnable)),
        7 => (GC_KEY, o(a0, St::Dead), o(a0.wrapping_add(1), St::Dead)),
        _ => return None,
    })
}

fn ready(cur: GOrd, init: GOrd) -> bool {
    (init.seq == NOSEQ || init.seq == cur.seq) && init.st == cur.st
}

/// One P's events: its batches, loaded one at a time.
struct Cursor {
    p: i64,
    batches: VecDeque<usize>,
    events: VecDeque<V1Event>,
    last_g: u64,
}

impl Cursor {
    /// The next event, loading batches as needed.
    fn head(&mut self, body: &[u8], minor: u32, notes: &mut NoteLog) -> Option<V1Event> {
        while self.events.is_empty() {
            let offset = self.batches.pop_front()?;
            self.load(body, offset, minor, notes);
        }
        self.events.front().copied()
    }

    fn load(&mut self, body: &[u8], mut off: usize, minor: u32, notes: &mut NoteLog) {
        let mut raw = RawEvent::default();
        let mut last = 0u64;
        let mut first = true;
        loop {
            let start = off;
            match read_raw(body, &mut off, minor, &mut raw) {
                Ok(true) => {}
                Ok(false) => break,
                Err(what) => {
                    notes.add("damaged event in batch", || what);
                    break;
                }
            }
            if raw.ty == EV_BATCH {
                if !first {
                    break;
                }
                first = false;
                last = raw.args.get(1).copied().unwrap_or(0);
                continue;
            }
            let Some((n, has_stack)) = timed_layout(raw.ty) else {
                continue; // strings, stacks, frequency, timer goroutine, CPU samples
            };
            if raw.args.len() != n {
                let ty = raw.ty;
                let got = raw.args.len();
                notes.add("event with the wrong number of arguments skipped", || {
                    format!("type {ty} with {got} values at byte {start}")
                });
                continue;
            }
            let ticks = last.wrapping_add(raw.args.first().copied().unwrap_or(0));
            last = ticks;
            let plain = raw.args.get(1..n - usize::from(has_stack)).unwrap_or(&[]);
            let mut args = [0u64; 4];
            for (slot, v) in args.iter_mut().zip(plain) {
                *slot = *v;
            }
            let stack = if has_stack {
                raw.args.last().copied().unwrap_or(0)
            } else {
                0
            };
            let mut ev = V1Event {
                ticks,
                ty: raw.ty,
                wire_ty: raw.ty,
                p: self.p,
                g: self.last_g,
                args,
                stack,
                text: raw.text,
            };
            match ev.ty {
                14 | 38 | 41 => {
                    self.last_g = args[0];
                    ev.g = args[0];
                }
                15..=20 | 22..=27 | 30 | 42 => self.last_g = 0,
                29 | 31 | 32 | 40 => ev.g = args[0],
                _ => {}
            }
            self.events.push_back(ev);
        }
    }
}

/// Merges the batches listed per P (offsets into `body`, which ends where
/// pass 1 stopped) and hands each event to `emit` in causal order.
pub(super) fn merge_v1(
    body: &[u8],
    minor: u32,
    batches: &std::collections::BTreeMap<i64, Vec<usize>>,
    notes: &mut NoteLog,
    mut emit: impl FnMut(V1Event),
) {
    let mut cursors: Vec<Cursor> = batches
        .iter()
        .map(|(&p, offs)| Cursor {
            p,
            batches: offs.iter().copied().collect(),
            events: VecDeque::new(),
            last_g: 0,
        })
        .collect();
    let mut states: HashMap<u64, GOrd> = HashMap::new();
    let mut heap: BinaryHeap<Reverse<(u64, u64, usize)>> = BinaryHeap::new();
    let mut waiting: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut order = 0u64;
    let mut enqueue = |i: usize,
                       cursors: &mut Vec<Cursor>,
                       states: &HashMap<u64, GOrd>,
                       heap: &mut BinaryHeap<_>,
                       waiting: &mut HashMap<u64, Vec<usize>>,
                       notes: &mut NoteLog| {
        let Some(ev) = cursors.get_mut(i).and_then(|c| c.head(body, minor, notes)) else {
            return;
        };
        match transition(&ev) {
            Some((key, init, _)) if !ready(states.get(&key).copied().unwrap_or_default(), init) => {
                waiting.entry(key).or_default().push(i);
            }
            _ => {
                order += 1;
                heap.push(Reverse((ev.ticks, order, i)));
            }
        }
    };
    for i in 0..cursors.len() {
        enqueue(i, &mut cursors, &states, &mut heap, &mut waiting, notes);
    }
    loop {
        let (i, forced) = match heap.pop() {
            Some(Reverse((_, _, i))) => (i, false),
            None => {
                // Every remaining head waits for a state that never comes.
                let stuck: Vec<usize> = waiting.drain().flat_map(|(_, v)| v).collect();
                let earliest = stuck
                    .iter()
                    .copied()
                    .filter_map(|i| {
                        cursors
                            .get(i)
                            .and_then(|c| c.events.front())
                            .map(|e| (e.ticks, i))
                    })
                    .min();
                let Some((_, i)) = earliest else { break };
                for j in stuck.into_iter().filter(|&j| j != i) {
                    enqueue(j, &mut cursors, &states, &mut heap, &mut waiting, notes);
                }
                (i, true)
            }
        };
        let Some(mut ev) = cursors.get_mut(i).and_then(|c| c.events.front().copied()) else {
            continue;
        };
        let change = transition(&ev);
        if let (Some((key, init, _)), false) = (change, forced)
            && !ready(states.get(&key).copied().unwrap_or_default(), init)
        {
            waiting.entry(key).or_default().push(i);
            continue;
        }
        if forced {
            notes.add("no consistent order; event taken by time", || {
                format!("type {} at tick {}", ev.ty, ev.ticks)
            });
        }
        if let Some(c) = cursors.get_mut(i) {
            c.events.pop_front();
        }
        if let Some((key, _, mut next)) = change {
            let cur = states.get(&key).copied().unwrap_or_default();
            next.seq = match next.seq {
                NOSEQ => cur.seq,
                SEQINC => cur.seq.wrapping_add(1),
                s => s,
            };
            states.insert(key, next);
        }
        match ev.ty {
            38 => ev.ty = 14,
            39 => ev.ty = 21,
            40 => {
                // GoSysExitLocal [g, real ts] becomes GoSysExit [g, seq, real ts].
                ev.ty = 29;
                ev.args = [ev.args[0], 0, ev.args[1], 0];
            }
            _ => {}
        }
        emit(ev);
        enqueue(i, &mut cursors, &states, &mut heap, &mut waiting, notes);
        if let Some((key, _, _)) = change {
            for j in waiting.remove(&key).unwrap_or_default() {
                enqueue(j, &mut cursors, &states, &mut heap, &mut waiting, notes);
            }
        }
    }
}
