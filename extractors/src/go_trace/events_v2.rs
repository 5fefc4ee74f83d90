//! The 1.22+ wire format: a sequence of generations, each a run of batches
//! (`EventBatch [gen, M, base time, size]` then `size` bytes) written by
//! threads (Ms). A generation carries its own string table, stack table,
//! CPU samples and frequency (1.25+: in a sync batch with a clock
//! snapshot), so the stream is read one generation at a time. Timed events
//! are a type byte, a time delta and a fixed number of varint arguments.
//! Learnt from Go's `internal/trace/{batch,generation,batchcursor}.go` and
//! `tracev2/events.go`.

use std::collections::HashMap;
use std::io::{BufRead, Read};

use super::error::NoteLog;
use crate::varint::get_u64;

pub(super) const EV_EVENT_BATCH: u8 = 1;
pub(super) const EV_STACKS: u8 = 2;
pub(super) const EV_STACK: u8 = 3;
pub(super) const EV_STRINGS: u8 = 4;
pub(super) const EV_STRING: u8 = 5;
pub(super) const EV_CPU_SAMPLES: u8 = 6;
pub(super) const EV_CPU_SAMPLE: u8 = 7;
pub(super) const EV_FREQUENCY: u8 = 8;
pub(super) const EV_EXPERIMENTAL_BATCH: u8 = 49;
pub(super) const EV_SYNC: u8 = 50;
pub(super) const EV_CLOCK_SNAPSHOT: u8 = 51;
/// 1.26+: a lone byte between two generations (the next batch's
/// generation number says the same; it is counted and skipped).
pub(super) const EV_END_OF_GENERATION: u8 = 52;
/// Largest batch payload the runtime writes.
const MAX_BATCH: u64 = 64 << 10;

/// The runtime's event names, by type (1.22–1.26).
pub(super) const EVENT_NAMES: [&str; 53] = [
    "None",
    "EventBatch",
    "Stacks",
    "Stack",
    "Strings",
    "String",
    "CPUSamples",
    "CPUSample",
    "Frequency",
    "ProcsChange",
    "ProcStart",
    "ProcStop",
    "ProcSteal",
    "ProcStatus",
    "GoCreate",
    "GoCreateSyscall",
    "GoStart",
    "GoDestroy",
    "GoDestroySyscall",
    "GoStop",
    "GoBlock",
    "GoUnblock",
    "GoSyscallBegin",
    "GoSyscallEnd",
    "GoSyscallEndBlocked",
    "GoStatus",
    "STWBegin",
    "STWEnd",
    "GCActive",
    "GCBegin",
    "GCEnd",
    "GCSweepActive",
    "GCSweepBegin",
    "GCSweepEnd",
    "GCMarkAssistActive",
    "GCMarkAssistBegin",
    "GCMarkAssistEnd",
    "HeapAlloc",
    "HeapGoal",
    "GoLabel",
    "UserTaskBegin",
    "UserTaskEnd",
    "UserRegionBegin",
    "UserRegionEnd",
    "UserLog",
    "GoSwitch",
    "GoSwitchDestroy",
    "GoCreateBlocked",
    "GoStatusStack",
    "ExperimentalBatch",
    "Sync",
    "ClockSnapshot",
    "EndOfGeneration",
];

/// Values on the wire (time delta included) of a timed event type in a
/// format version; None when the type is not a timed event there.
pub(super) fn timed_arity(ty: u8, minor: u32) -> Option<usize> {
    Some(match ty {
        11 | 17 | 18 | 23 | 24 | 27 | 36 => 1,
        15 | 28 | 30..=32 | 34 | 35 | 37..=39 => 2,
        9 | 10 | 13 | 16 | 19 | 20 | 22 | 26 | 29 | 33 | 41 => 3,
        12 | 14 | 21 | 25 | 42 | 43 => 4,
        40 | 44 => 5,
        45 | 46 if minor >= 23 => 3,
        47 if minor >= 23 => 4,
        48 if minor >= 23 => 5,
        51 if minor >= 25 => 4,
        _ => return None,
    })
}

/// One batch as read: its generation, thread, base time and payload.
#[derive(Debug, Clone)]
pub(super) struct RawBatch {
    pub(super) generation: u64,
    pub(super) m: u64,
    pub(super) ticks: u64,
    pub(super) data: Vec<u8>,
    pub(super) experimental: bool,
}

fn read_varint(r: &mut impl BufRead) -> Result<u64, String> {
    let mut v = 0u64;
    for i in 0..10u32 {
        let mut b = [0u8; 1];
        r.read_exact(&mut b)
            .map_err(|e| format!("batch header cut: {e}"))?;
        v |= u64::from(b[0] & 0x7f) << (7 * i);
        if b[0] < 0x80 {
            return Ok(v);
        }
    }
    Err("varint longer than 10 bytes in a batch header".into())
}

/// Reads the next batch. Ok(None) at a clean end of input.
/// 1.26's end-of-generation markers before it are skipped and counted in
/// `end_markers`.
pub(super) fn read_batch(
    r: &mut impl BufRead,
    minor: u32,
    offset: &mut u64,
    end_markers: &mut u64,
) -> Result<Option<RawBatch>, String> {
    let mut head = [0u8; 1];
    let mut at = *offset;
    loop {
        match r.read(&mut head) {
            Ok(0) => return Ok(None),
            Ok(_) => {}
            Err(e) => return Err(format!("reading at byte {at}: {e}")),
        }
        if head[0] != EV_END_OF_GENERATION || minor < 26 {
            break;
        }
        *end_markers = end_markers.saturating_add(1);
        at = at.saturating_add(1);
        *offset = at;
    }
    let experimental = match head[0] {
        EV_EVENT_BATCH => false,
        EV_EXPERIMENTAL_BATCH if minor >= 23 => {
            r.read_exact(&mut head)
                .map_err(|e| format!("batch header cut: {e}"))?;
            true
        }
        other => {
            return Err(format!(
                "expected a batch at byte {at}, found event type {other}"
            ));
        }
    };
    let generation = read_varint(r)?;
    let m = read_varint(r)?;
    let ticks = read_varint(r)?;
    let size = read_varint(r)?;
    if size > MAX_BATCH {
        return Err(format!(
            "batch of {size} bytes at byte {at} (the maximum is {MAX_BATCH})"
        ));
    }
    let mut data = Vec::new();
    let got = r
        .by_ref()
        .take(size)
        .read_to_end(&mut data)
        .map_err(|e| format!("reading batch at byte {at}: {e}"))?;
    if got as u64 != size {
        return Err(format!(
            "batch at byte {at} cut after {got} of {size} bytes"
        ));
    }
    // Offsets are for messages only: the header's varints are counted as
    // two bytes each.
    *offset = at.saturating_add(size).saturating_add(9);
    Ok(Some(RawBatch {
        generation,
        m,
        ticks,
        data,
        experimental,
    }))
}

/// A frame of a stack table entry: PC, function and file string ids, line.
pub(super) type RawFrame = [u64; 4];

/// A CPU sample: time (ticks), M, P, goroutine, stack id.
pub(super) type RawSample = [u64; 5];

/// The structural content of one generation.
#[derive(Debug, Default)]
pub(super) struct GenTables {
    pub(super) strings: HashMap<u64, String>,
    pub(super) stacks: HashMap<u64, Vec<RawFrame>>,
    pub(super) samples: Vec<RawSample>,
    pub(super) ticks_per_second: Option<u64>,
    pub(super) counts: HashMap<u8, u64>,
}

fn count(t: &mut GenTables, ty: u8) {
    let n = t.counts.entry(ty).or_insert(0);
    *n = n.saturating_add(1);
}

/// Reads a strings, stacks, CPU-samples or sync/frequency batch into
/// `t`. Returns false when the batch is an event batch (not structural).
pub(super) fn read_structural(
    b: &RawBatch,
    minor: u32,
    t: &mut GenTables,
    notes: &mut NoteLog,
) -> bool {
    let Some((&kind, mut rest)) = b.data.split_first() else {
        return false;
    };
    let structural = match kind {
        EV_STRINGS | EV_STACKS | EV_CPU_SAMPLES => true,
        EV_FREQUENCY => minor < 25,
        EV_SYNC => minor >= 25,
        _ => false,
    };
    if !structural || b.experimental {
        return false;
    }
    count(t, kind);
    let result = (|| -> Option<()> {
        if kind == EV_FREQUENCY {
            t.ticks_per_second = Some(get_u64(&mut rest)?).filter(|&f| f > 0);
            return Some(());
        }
        while let Some((&ty, tail)) = rest.split_first() {
            rest = tail;
            match (kind, ty) {
                (EV_STRINGS, EV_STRING) => {
                    let id = get_u64(&mut rest)?;
                    let len = usize::try_from(get_u64(&mut rest)?).ok()?;
                    let text = rest.get(..len)?;
                    rest = rest.get(len..)?;
                    t.strings
                        .insert(id, String::from_utf8_lossy(text).into_owned());
                }
                (EV_STACKS, EV_STACK) => {
                    let id = get_u64(&mut rest)?;
                    let n = get_u64(&mut rest)?;
                    // Each frame takes at least four bytes.
                    if n > rest.len() as u64 / 4 {
                        return None;
                    }
                    let mut frames = Vec::with_capacity(usize::try_from(n).ok()?);
                    for _ in 0..n {
                        let f = [
                            get_u64(&mut rest)?,
                            get_u64(&mut rest)?,
                            get_u64(&mut rest)?,
                            get_u64(&mut rest)?,
                        ];
                        frames.push(f);
                    }
                    t.stacks.insert(id, frames);
                }
                (EV_CPU_SAMPLES, EV_CPU_SAMPLE) => {
                    let mut s = [0u64; 5];
                    for v in &mut s {
                        *v = get_u64(&mut rest)?;
                    }
                    t.samples.push(s);
                }
                (EV_SYNC, EV_FREQUENCY) => {
                    t.ticks_per_second = Some(get_u64(&mut rest)?).filter(|&f| f > 0)
                }
                (EV_SYNC, EV_CLOCK_SNAPSHOT) => {
                    for _ in 0..4 {
                        get_u64(&mut rest)?;
                    }
                }
                _ => return None,
            }
            count(t, ty);
        }
        Some(())
    })();
    if result.is_none() {
        notes.add("damaged table batch; read up to the damage", || {
            format!(
                "batch of type {kind} in generation {} on M {}",
                b.generation, b.m
            )
        });
    }
    true
}

/// One timed event of an event batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct V2Event {
    pub(super) ticks: u64,
    pub(super) ty: u8,
    pub(super) args: [u64; 4],
}

/// Reads the timed event at the front of `rest`, its time `last + delta`.
/// Err: a type this version does not define, or cut arguments (the rest
/// of the batch cannot be framed).
pub(super) fn read_timed(rest: &mut &[u8], last: u64, minor: u32) -> Result<V2Event, String> {
    let (&ty, tail) = rest.split_first().ok_or("empty")?;
    let n = timed_arity(ty, minor).ok_or_else(|| format!("unknown event type {ty}"))?;
    *rest = tail;
    let delta = get_u64(rest).ok_or("cut time delta")?;
    let mut args = [0u64; 4];
    for slot in args.iter_mut().take(n - 1) {
        *slot = get_u64(rest).ok_or("cut argument")?;
    }
    Ok(V2Event {
        ticks: last.wrapping_add(delta),
        ty,
        args,
    })
}

#[cfg(test)]
mod tests {
    use super::super::synthetic::V2Writer;
    use super::*;

    #[test]
    fn reads_batches_and_the_tables_of_a_generation() {
        let mut w = V2Writer::new(22);
        w.strings(1, &[(1, "main.main"), (2, "main.go")]);
        w.stacks(1, &[(7, vec![[0x1000, 1, 2, 10]])]);
        w.frequency(1, 1_000_000_000);
        let bytes = w.body();
        let mut r = bytes.as_slice();
        let mut off = 0;
        let (mut tables, mut notes) = (GenTables::default(), NoteLog::default());
        while let Some(b) = read_batch(&mut r, 22, &mut off, &mut 0).unwrap() {
            assert!(read_structural(&b, 22, &mut tables, &mut notes));
        }
        assert_eq!(tables.strings.get(&2).map(String::as_str), Some("main.go"));
        assert_eq!(tables.stacks.get(&7), Some(&vec![[0x1000, 1, 2, 10]]));
        assert_eq!(tables.ticks_per_second, Some(1_000_000_000));
        assert_eq!(tables.counts.get(&EV_STRING), Some(&2));
    }

    #[test]
    fn refuses_oversized_cut_and_foreign_batches() {
        let mut off = 0;
        let mut big: &[u8] = &[1, 1, 0, 0, 0x80, 0x80, 0x08];
        assert!(
            read_batch(&mut big, 22, &mut off, &mut 0)
                .unwrap_err()
                .contains("maximum")
        );
        let mut cut: &[u8] = &[1, 1, 0, 0, 5, 1];
        assert!(
            read_batch(&mut cut, 22, &mut off, &mut 0)
                .unwrap_err()
                .contains("cut")
        );
        let mut foreign: &[u8] = &[9];
        assert!(read_batch(&mut foreign, 22, &mut off, &mut 0).is_err());
        let mut empty: &[u8] = &[];
        assert!(
            read_batch(&mut empty, 22, &mut off, &mut 0)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn timed_events_need_their_version() {
        let mut bytes: &[u8] = &[45, 1, 2, 3];
        assert!(read_timed(&mut bytes, 0, 22).is_err());
        let mut bytes: &[u8] = &[45, 1, 2, 3];
        assert_eq!(read_timed(&mut bytes, 10, 23).unwrap().ticks, 11);
        let mut cut: &[u8] = &[16, 1, 2];
        assert!(read_timed(&mut cut, 0, 22).is_err());
        for ty in 0..=255u8 {
            if let Some(n) = timed_arity(ty, 25) {
                assert!((1..=5).contains(&n) && usize::from(ty) < EVENT_NAMES.len());
            }
        }
    }
}
