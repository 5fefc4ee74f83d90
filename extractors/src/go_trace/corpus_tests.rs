//! Tests against the real Go 1.19 trace of the shared corpus
//! (`linux/go1.19_runtime_execution.trace`: sha256/sort/flate/json on four
//! goroutines for about 4 s, with CPU profiling on). The decoder is checked
//! against an independent byte walk written here (type byte, argument
//! count, varint skipping: no merge, no tables) and against facts any
//! correct timeline must satisfy; then the file is cut and damaged.
#![cfg(test)]

use std::collections::BTreeMap;

use super::decode::decode_go_trace;
use super::error::DecodeLimits;
use super::events_v1::EVENT_NAMES;
use super::model::{GoTrace, InstantKind, SliceKind, Track};

fn corpus_bytes() -> Vec<u8> {
    let path = std::path::Path::new(env!("FLAMEOX_CORPUS_DIR"))
        .join("linux/go1.19_runtime_execution.trace");
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Counts events by type the simplest way: one pass, no interpretation.
fn walk_counts(bytes: &[u8]) -> BTreeMap<u8, u64> {
    assert!(bytes.starts_with(b"go 1.19 trace\0\0\0"));
    let mut i = 16usize;
    let uvarint = |i: &mut usize| -> u64 {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let b = bytes[*i];
            *i += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return v;
            }
            shift += 7;
        }
    };
    let mut counts = BTreeMap::new();
    while i < bytes.len() {
        let b = bytes[i];
        i += 1;
        let (ty, inline) = (b & 0x3f, b >> 6);
        if ty == 37 {
            uvarint(&mut i);
            i += uvarint(&mut i) as usize;
        } else if inline == 3 {
            i += uvarint(&mut i) as usize;
            if ty == 48 {
                i += uvarint(&mut i) as usize;
            }
        } else {
            for _ in 0..=inline {
                uvarint(&mut i);
            }
        }
        *counts.entry(ty).or_insert(0) += 1;
    }
    assert_eq!(
        i,
        bytes.len(),
        "the walk ends exactly at the end of the file"
    );
    counts
}

/// Asserts intervals (start, end) never overlap once sorted.
fn assert_disjoint(what: &str, mut spans: Vec<(u64, u64)>) {
    spans.sort();
    for w in spans.windows(2) {
        assert!(w[0].1 <= w[1].0, "{what}: {:?} overlaps {:?}", w[0], w[1]);
    }
}

fn decode(bytes: &[u8]) -> GoTrace {
    decode_go_trace(bytes, &DecodeLimits::default()).expect("the corpus trace decodes")
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn go119_event_counts_match_an_independent_byte_walk() {
    let bytes = corpus_bytes();
    let walked = walk_counts(&bytes);
    let trace = decode(&bytes);
    let s = &trace.summary;
    assert_eq!(s.version.minor, 19);
    assert!(s.notes.is_empty(), "notes: {:?}", s.notes);
    for (&ty, &n) in &walked {
        let name = EVENT_NAMES[usize::from(ty)];
        assert_eq!(s.events_by_type.get(name).copied(), Some(n), "{name}");
    }
    assert_eq!(s.events, walked.values().sum::<u64>());
    assert_eq!(s.events_by_type.len(), walked.len());
    // GC cycles begun = GCStart events; every cycle is an interval.
    let gc_starts = walked.get(&7).copied().unwrap_or(0);
    assert!(gc_starts > 0);
    assert_eq!(s.gc_cycles, gc_starts);
    let t = &trace.timeline;
    let cycles = t
        .slices
        .iter()
        .filter(|x| x.kind == SliceKind::GcCycle)
        .count() as u64;
    assert_eq!(cycles, gc_starts);
    // CPU samples and heap counters, one each per event.
    let samples = t
        .instants
        .iter()
        .filter(|i| i.kind == InstantKind::CpuSample)
        .count() as u64;
    assert_eq!(samples, walked.get(&49).copied().unwrap_or(0));
    let heap = t
        .counters
        .iter()
        .filter(|c| c.name.starts_with("heap_"))
        .count() as u64;
    assert_eq!(
        heap,
        walked.get(&33).copied().unwrap_or(0) + walked.get(&34).copied().unwrap_or(0)
    );
    eprintln!(
        "go1.19 corpus: {} events, {} goroutines, {} Ps, {} GC cycles, {} ns, {} slices, {} instants ({samples} CPU samples), {} counters, {} stacks; by type {:?}",
        s.events,
        s.goroutines,
        s.procs,
        s.gc_cycles,
        s.duration_ns,
        t.slices.len(),
        t.instants.len(),
        t.counters.len(),
        t.stacks.len(),
        s.events_by_type
    );
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn go119_timeline_is_consistent() {
    let bytes = corpus_bytes();
    let walked = walk_counts(&bytes);
    let count = |ty: u8| walked.get(&ty).copied().unwrap_or(0);
    let trace = decode(&bytes);
    let (s, t) = (&trace.summary, &trace.timeline);
    // One running interval per GoStart/GoStartLocal/GoStartLabel, one
    // runnable interval per preemption, one blocked interval per sleep.
    let with_reason = |kind: SliceKind, reason: &str| {
        let has = |x: &&super::model::TimelineSlice| {
            x.args.iter().any(|(k, v)| k == "reason" && v == reason)
        };
        t.slices
            .iter()
            .filter(|x| x.kind == kind && matches!(x.track, Track::Goroutine(_)))
            .filter(has)
            .count() as u64
    };
    let runs = t
        .slices
        .iter()
        .filter(|x| x.kind == SliceKind::Running && matches!(x.track, Track::Goroutine(_)))
        .count() as u64;
    assert_eq!(runs, count(14) + count(38) + count(41));
    assert_eq!(with_reason(SliceKind::Runnable, "preempted"), count(18));
    assert_eq!(with_reason(SliceKind::Blocked, "sleep"), count(19));
    let mut by_track: BTreeMap<(Track, bool), Vec<(u64, u64)>> = BTreeMap::new();
    let mut running_total = 0u64;
    let mut running_by_g: BTreeMap<u64, u64> = BTreeMap::new();
    for x in &t.slices {
        assert!(x.start_ns <= x.end_ns && x.end_ns <= s.duration_ns, "{x:?}");
        if let Some(id) = x.stack {
            assert!(!t.frames(id).is_empty());
        }
        let state = matches!(
            x.kind,
            SliceKind::Running | SliceKind::Runnable | SliceKind::Blocked | SliceKind::Syscall
        );
        if let (Track::Goroutine(g), true) = (x.track, state) {
            by_track
                .entry((x.track, false))
                .or_default()
                .push((x.start_ns, x.end_ns));
            if x.kind == SliceKind::Running {
                running_total += x.end_ns - x.start_ns;
                *running_by_g.entry(g).or_insert(0) += x.end_ns - x.start_ns;
            }
        }
        if let (Track::Proc(_), SliceKind::Running | SliceKind::ProcActive) = (x.track, x.kind) {
            let active = x.kind == SliceKind::ProcActive;
            by_track
                .entry((x.track, active))
                .or_default()
                .push((x.start_ns, x.end_ns));
        }
    }
    // A goroutine is in one state at a time; a P runs one goroutine at a time.
    for ((track, active), spans) in by_track {
        assert_disjoint(&format!("{track:?} active={active}"), spans);
    }
    let procs = t
        .counters
        .iter()
        .filter(|c| c.name == "gomaxprocs")
        .map(|c| c.value)
        .max()
        .unwrap_or(s.procs);
    assert!(procs >= 1);
    assert!(
        running_total <= procs * s.duration_ns,
        "{running_total} > {procs} x {}",
        s.duration_ns
    );
    // The four workers: created by the main goroutine (`runtime.main`),
    // named after their start function, and they did the work.
    let main = t
        .goroutines
        .iter()
        .find(|g| g.name == "runtime.main")
        .expect("main goroutine");
    let workers: Vec<_> = t
        .goroutines
        .iter()
        .filter(|g| g.created_by == Some(main.id) && g.name.starts_with("main.main.func"))
        .collect();
    assert_eq!(
        workers.len(),
        4,
        "{:?}",
        t.goroutines.iter().map(|g| &g.name).collect::<Vec<_>>()
    );
    for w in &workers {
        assert_eq!(w.name, workers[0].name);
        assert_eq!(running_by_g.get(&w.id).copied().unwrap_or(0), w.running_ns);
        assert!(w.running_ns > s.duration_ns / 20, "{w:?}");
        assert!(w.ended_ns.is_some(), "{w:?}");
    }
    let busy: u64 = workers.iter().map(|w| w.running_ns).sum();
    eprintln!(
        "go1.19 corpus: gomaxprocs {procs}, {runs} running intervals, running total {running_total} ns, workers {busy} ns over {} ns",
        s.duration_ns
    );
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn go119_cut_or_damaged_never_panics() {
    let bytes = corpus_bytes();
    let limits = DecodeLimits::default();
    let check = |data: &[u8]| {
        if let Ok(trace) = decode_go_trace(data, &limits) {
            for x in &trace.timeline.slices {
                assert!(x.start_ns <= x.end_ns);
            }
        }
    };
    let mut cuts: Vec<usize> = (0..24).collect();
    cuts.extend((24..bytes.len()).step_by(997));
    for cut in cuts {
        check(&bytes[..cut]);
    }
    for at in (16..bytes.len()).step_by(701) {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0xff;
        check(&flipped);
    }
    for at in (16..bytes.len()).step_by(2803) {
        let mut zeroed = bytes.clone();
        let end = (at + 512).min(bytes.len());
        zeroed[at..end].fill(0);
        check(&zeroed);
    }
    // Cut before the footer's frequency: a typed error. Cut inside the
    // stack table: a partial timeline whose notes say what is missing.
    assert!(decode_go_trace(&bytes[..bytes.len() * 2 / 5], &limits).is_err());
    let partial = decode_go_trace(&bytes[..bytes.len() * 3 / 5], &limits).expect("partial");
    assert!(
        partial
            .summary
            .notes
            .iter()
            .any(|n| n.contains("stack missing")),
        "{:?}",
        partial.summary.notes
    );
}
