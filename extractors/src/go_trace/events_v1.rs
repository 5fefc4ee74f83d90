//! The 1.11–1.21 wire format: events in per-P batches, each event one byte
//! (type in the low 6 bits, argument count in the top 2; 3 means the
//! arguments are length-prefixed) then varint arguments, the first of which
//! is a timestamp delta within the batch. Strings and stacks are table
//! entries anywhere in the file; the tick frequency is in the footer.
//!
//! This file reads events and indexes the whole trace (pass 1: batch
//! offsets per P, strings, stacks, frequency, CPU samples, counts by type);
//! `order_v1.rs` merges the batches. Learnt from Go's
//! `internal/trace/internal/tracev1/parser.go` and `runtime/trace.go` (1.19).

use std::collections::{BTreeMap, HashMap};

use super::error::NoteLog;
use crate::varint::get_u64;

pub(super) const EV_BATCH: u8 = 1;
pub(super) const EV_FREQUENCY: u8 = 2;
pub(super) const EV_STACK: u8 = 3;
pub(super) const EV_TIMER_GOROUTINE: u8 = 35;
pub(super) const EV_STRING: u8 = 37;
pub(super) const EV_USER_LOG: u8 = 48;
pub(super) const EV_CPU_SAMPLE: u8 = 49;

/// The runtime's event names, by type (1.11–1.21).
pub(super) const EVENT_NAMES: [&str; 50] = [
    "None",
    "Batch",
    "Frequency",
    "Stack",
    "Gomaxprocs",
    "ProcStart",
    "ProcStop",
    "GCStart",
    "GCDone",
    "GCSTWStart",
    "GCSTWDone",
    "GCSweepStart",
    "GCSweepDone",
    "GoCreate",
    "GoStart",
    "GoEnd",
    "GoStop",
    "GoSched",
    "GoPreempt",
    "GoSleep",
    "GoBlock",
    "GoUnblock",
    "GoBlockSend",
    "GoBlockRecv",
    "GoBlockSelect",
    "GoBlockSync",
    "GoBlockCond",
    "GoBlockNet",
    "GoSysCall",
    "GoSysExit",
    "GoSysBlock",
    "GoWaiting",
    "GoInSyscall",
    "HeapAlloc",
    "HeapGoal",
    "TimerGoroutine",
    "FutileWakeup",
    "String",
    "GoStartLocal",
    "GoUnblockLocal",
    "GoSysExitLocal",
    "GoStartLabel",
    "GoBlockGC",
    "GCMarkAssistStart",
    "GCMarkAssistDone",
    "UserTaskCreate",
    "UserTaskEnd",
    "UserRegion",
    "UserLog",
    "CPUSample",
];

/// For a timed event type: values on the wire (timestamp included) and
/// whether the last is a stack id. None for structural or unknown types.
pub(super) fn timed_layout(ty: u8) -> Option<(usize, bool)> {
    Some(match ty {
        6 | 8 | 10 | 15 | 30 | 36 | 44 => (1, false),
        5 | 9 | 31 | 32 | 33 | 34 | 38 => (2, false),
        11 | 16..=20 | 22..=28 | 42 | 43 => (2, true),
        14 | 12 | 40 => (3, false),
        4 | 7 | 39 | 46 => (3, true),
        29 | 41 => (4, false),
        13 | 21 | 48 => (4, true),
        45 | 47 => (5, true),
        _ => return None,
    })
}

/// One event as framed on the wire, arguments not yet interpreted.
#[derive(Debug, Default)]
pub(super) struct RawEvent {
    pub(super) ty: u8,
    pub(super) args: Vec<u64>,
    /// Byte range of an inline string: a `String` entry's text or a
    /// `UserLog`'s message.
    pub(super) text: Option<(usize, usize)>,
}

fn varint(data: &[u8], off: &mut usize) -> Result<u64, String> {
    let mut rest = data.get(*off..).unwrap_or(&[]);
    let v = get_u64(&mut rest).ok_or_else(|| format!("bad or cut varint at byte {off}"))?;
    *off = data.len() - rest.len();
    Ok(v)
}

/// The byte range of `len` bytes at `off`, advancing past them.
fn take(data: &[u8], off: &mut usize, len: u64, what: &str) -> Result<(usize, usize), String> {
    let end = usize::try_from(len).ok().and_then(|l| off.checked_add(l));
    match end {
        Some(end) if end <= data.len() => {
            let range = (*off, end);
            *off = end;
            Ok(range)
        }
        _ => Err(format!(
            "{what} of {len} bytes at byte {off} runs past the end"
        )),
    }
}

/// Reads the event at `*off` into `ev`. Ok(false) at the end of `data`.
pub(super) fn read_raw(
    data: &[u8],
    off: &mut usize,
    minor: u32,
    ev: &mut RawEvent,
) -> Result<bool, String> {
    let start = *off;
    let Some(&b) = data.get(start) else {
        return Ok(false);
    };
    *off = start + 1;
    ev.ty = b & 0x3f;
    ev.args.clear();
    ev.text = None;
    let inline = usize::from(b >> 6);
    if ev.ty == 0
        || usize::from(ev.ty) >= EVENT_NAMES.len()
        || (ev.ty == EV_CPU_SAMPLE && minor < 19)
    {
        return Err(format!("unknown event type {} at byte {start}", ev.ty));
    }
    if ev.ty == EV_STRING {
        ev.args.push(varint(data, off)?);
        let len = varint(data, off)?;
        if len > 1_000_000 {
            return Err(format!("string of {len} bytes at byte {start}"));
        }
        ev.text = Some(take(data, off, len, "string")?);
        return Ok(true);
    }
    if inline < 3 {
        for _ in 0..=inline {
            ev.args.push(varint(data, off)?);
        }
        return Ok(true);
    }
    let len = varint(data, off)?;
    if len > 2048 && ev.ty != EV_STACK {
        return Err(format!(
            "event {} arguments of {len} bytes at byte {start}",
            ev.ty
        ));
    }
    let (a, z) = take(data, off, len, "arguments")?;
    let mut inner = data.get(a..z).unwrap_or(&[]);
    while !inner.is_empty() {
        let v =
            get_u64(&mut inner).ok_or_else(|| format!("bad varint in event at byte {start}"))?;
        ev.args.push(v);
    }
    if ev.ty == EV_USER_LOG {
        let len = varint(data, off)?;
        if len > 1_000_000 {
            return Err(format!("log message of {len} bytes at byte {start}"));
        }
        ev.text = Some(take(data, off, len, "log message")?);
    }
    Ok(true)
}

/// A P id as the runtime writes it: `uint64(int32)`, so -1 is all ones.
pub(super) fn proc_id(v: u64) -> Option<i64> {
    if v == u64::MAX {
        Some(-1)
    } else {
        i32::try_from(v).ok().map(i64::from)
    }
}

/// A stack frame as the table stores it: PC, function and file string
/// ids, line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RawFrame {
    pub(super) pc: u64,
    pub(super) func: u64,
    pub(super) file: u64,
    pub(super) line: u64,
}

/// A CPU sample: real timestamp (ticks), P, goroutine, stack id.
#[derive(Debug, Clone, Copy)]
pub(super) struct RawSample {
    pub(super) ticks: u64,
    pub(super) p: Option<i64>,
    pub(super) g: u64,
    pub(super) stack: u64,
}

/// Everything pass 1 learns about a 1.11–1.21 trace body.
#[derive(Debug)]
pub(super) struct V1Index {
    /// Offsets of each P's batch headers, in file order.
    pub(super) batches: BTreeMap<i64, Vec<usize>>,
    pub(super) strings: HashMap<u64, String>,
    pub(super) stacks: HashMap<u64, Vec<RawFrame>>,
    pub(super) ticks_per_second: Option<u64>,
    pub(super) samples: Vec<RawSample>,
    /// Smallest event timestamp, in ticks.
    pub(super) min_ticks: Option<u64>,
    /// Events read, by type.
    pub(super) counts: [u64; 64],
    /// Where reading stopped: the end, or the first damaged event.
    pub(super) valid_end: usize,
    pub(super) notes: NoteLog,
}

/// Pass 1 over the body (the bytes after the header). Damage stops the
/// pass; what was read before it is kept and noted.
pub(super) fn index_v1(data: &[u8], minor: u32) -> V1Index {
    let mut ix = V1Index {
        batches: BTreeMap::new(),
        strings: HashMap::new(),
        stacks: HashMap::new(),
        ticks_per_second: None,
        samples: Vec::new(),
        min_ticks: None,
        counts: [0; 64],
        valid_end: data.len(),
        notes: NoteLog::default(),
    };
    let mut off = 0usize;
    let mut ev = RawEvent::default();
    let mut last_ticks: Option<u64> = None;
    loop {
        let start = off;
        match read_raw(data, &mut off, minor, &mut ev) {
            Ok(true) => {}
            Ok(false) => break,
            Err(what) => {
                ix.valid_end = start;
                ix.notes.add("damaged event stopped reading", || what);
                break;
            }
        }
        if let Err(what) = index_event(&mut ix, data, start, &ev, &mut last_ticks) {
            ix.valid_end = start;
            ix.notes.add("damaged event stopped reading", || what);
            break;
        }
        if let Some(n) = ix.counts.get_mut(usize::from(ev.ty)) {
            *n = n.saturating_add(1);
        }
    }
    ix
}

fn index_event(
    ix: &mut V1Index,
    data: &[u8],
    start: usize,
    ev: &RawEvent,
    last: &mut Option<u64>,
) -> Result<(), String> {
    let a = |i: usize| ev.args.get(i).copied().unwrap_or(0);
    match ev.ty {
        EV_BATCH => {
            let p =
                proc_id(a(0)).ok_or_else(|| format!("P id {} in batch at byte {start}", a(0)))?;
            if ev.args.len() != 2 {
                return Err(format!(
                    "batch header with {} values at byte {start}",
                    ev.args.len()
                ));
            }
            ix.batches.entry(p).or_default().push(start);
            *last = Some(a(1));
        }
        EV_STRING => {
            let (from, to) = ev.text.unwrap_or((0, 0));
            let text = String::from_utf8_lossy(data.get(from..to).unwrap_or(&[])).into_owned();
            ix.strings.insert(a(0), text);
        }
        EV_STACK => {
            let n = a(1);
            let want = n.checked_mul(4).and_then(|x| x.checked_add(2));
            if n > 1000 || want != Some(ev.args.len() as u64) {
                return Err(format!(
                    "stack with {} values for {n} frames at byte {start}",
                    ev.args.len()
                ));
            }
            let frames = ev.args.get(2..).unwrap_or(&[]).chunks_exact(4);
            let frames = frames.filter_map(|f| <[u64; 4]>::try_from(f).ok());
            let frames = frames.map(|[pc, func, file, line]| RawFrame {
                pc,
                func,
                file,
                line,
            });
            ix.stacks.insert(a(0), frames.collect());
        }
        EV_FREQUENCY => ix.ticks_per_second = Some(a(0)).filter(|&f| f > 0),
        EV_TIMER_GOROUTINE => {}
        EV_CPU_SAMPLE => {
            if ev.args.len() != 5 {
                return Err(format!(
                    "CPU sample with {} values at byte {start}",
                    ev.args.len()
                ));
            }
            let sample = RawSample {
                ticks: a(1),
                p: proc_id(a(2)),
                g: a(3),
                stack: a(4),
            };
            ix.samples.push(sample);
            ix.min_ticks = Some(ix.min_ticks.map_or(sample.ticks, |m| m.min(sample.ticks)));
        }
        _ => {
            let Some(base) = *last else {
                return Err(format!("event {} before any batch at byte {start}", ev.ty));
            };
            let ticks = base.wrapping_add(a(0));
            *last = Some(ticks);
            ix.min_ticks = Some(ix.min_ticks.map_or(ticks, |m| m.min(ticks)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::synthetic::V1Writer;
    use super::*;

    #[test]
    fn reads_inline_length_prefixed_string_and_log_events() {
        let mut w = V1Writer::new(19);
        w.batch(0, 1000);
        w.string(1, "main.worker");
        w.event(14, &[5, 7, 1]); // GoStart: ts delta, g, seq
        w.event(48, &[3, 0, 1, 0]); // UserLog: ts, task, key, stack
        w.text("hello");
        w.stack(9, &[(0x401000, 1, 1, 42)]);
        w.event(2, &[1_000_000_000]); // Frequency
        let body = w.body();
        let ix = index_v1(&body, 19);
        assert_eq!(ix.valid_end, body.len());
        assert_eq!(ix.strings.get(&1).map(String::as_str), Some("main.worker"));
        assert_eq!(ix.stacks.get(&9).map(Vec::len), Some(1));
        assert_eq!(ix.ticks_per_second, Some(1_000_000_000));
        assert_eq!(ix.min_ticks, Some(1005));
        assert_eq!(ix.counts[14], 1);
        assert_eq!(ix.counts[48], 1);
        assert_eq!(ix.batches.get(&0).map(Vec::len), Some(1));
    }

    #[test]
    fn damage_stops_the_index_where_it_starts() {
        let mut w = V1Writer::new(19);
        w.batch(0, 10);
        w.event(6, &[1]);
        let good = w.body().len();
        w.raw(&[0x3f, 0x80]); // unknown type 63
        let body = w.body();
        let ix = index_v1(&body, 19);
        assert_eq!(ix.valid_end, good);
        assert_eq!(ix.notes.count("damaged event stopped reading"), 1);
        // A cut varint and an event before any batch are damage too.
        assert_eq!(index_v1(&[0x45, 0x80], 19).valid_end, 0);
        assert_eq!(index_v1(&[0x06, 0x01], 19).valid_end, 0);
        // CPU samples do not exist before 1.19.
        assert_eq!(index_v1(&[0xf1, 0x00], 11).valid_end, 0);
    }

    #[test]
    fn every_timed_layout_has_a_name_and_fits_the_event_args() {
        for ty in 0..64u8 {
            if let Some((n, stack)) = timed_layout(ty) {
                assert!(usize::from(ty) < EVENT_NAMES.len());
                assert!((1..=5).contains(&n));
                assert!(n - 1 - usize::from(stack) <= 4);
            }
        }
        assert_eq!(proc_id(u64::MAX), Some(-1));
        assert_eq!(proc_id(1 << 40), None);
    }
}
