//! End-to-end tests on small synthetic traces of both layouts (written by
//! `synthetic.rs`): ordering across Ps against skewed clocks, state
//! intervals and their reasons, syscalls, GC, annotations, generations,
//! and damage handling.
#![cfg(test)]

use super::decode::decode_go_trace;
use super::error::{DecodeLimits, GoTraceError};
use super::model::{GoTrace, SliceKind, TimelineSlice, Track};
use super::synthetic::{V1Writer, V2Writer};

fn decode(bytes: &[u8]) -> GoTrace {
    decode_go_trace(bytes, &DecodeLimits::default()).expect("decodes")
}

/// The goroutine's state intervals in time order: (kind, start, end, reason).
fn states(t: &GoTrace, g: u64) -> Vec<(SliceKind, u64, u64, String)> {
    let mut v: Vec<_> = t
        .timeline
        .slices
        .iter()
        .filter(|s| s.track == Track::Goroutine(g))
        .filter(|s| {
            matches!(
                s.kind,
                SliceKind::Running | SliceKind::Runnable | SliceKind::Blocked | SliceKind::Syscall
            )
        })
        .map(|s| (s.kind, s.start_ns, s.end_ns, reason(s)))
        .collect();
    v.sort_by_key(|s| s.1);
    v
}

fn reason(s: &TimelineSlice) -> String {
    s.args
        .iter()
        .find(|(k, _)| k == "reason")
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

fn v1_tables(w: &mut V1Writer) {
    w.string(1, "main.send");
    w.string(2, "main.go");
    w.string(3, "main.worker");
    w.string(4, "phase");
    w.string(5, "job");
    w.stack(1, &[(0x10, 1, 2, 7)]);
    w.stack(2, &[(0x20, 3, 2, 1)]);
    w.event(2, &[1_000_000_000]); // 1 tick = 1 ns
}

#[test]
fn v1_merges_ps_by_sequence_not_by_skewed_clocks() {
    let mut w = V1Writer::new(19);
    w.batch(0, 100);
    w.event(13, &[0, 5, 2, 1]); // GoCreate g5 (new stack 2), by g0
    w.event(14, &[10, 5, 1]); // t110 GoStart g5 seq 1
    w.event(22, &[20, 1]); // t130 GoBlockSend
    w.batch(1, 120);
    w.event(21, &[5, 5, 2, 1]); // t125 GoUnblock g5 seq 2: after the block, whatever the clock says
    w.event(14, &[25, 5, 3]); // t150 GoStart g5 seq 3
    w.event(15, &[10]); // t160 GoEnd
    v1_tables(&mut w);
    let t = decode(&w.bytes());
    assert!(t.summary.notes.is_empty(), "{:?}", t.summary.notes);
    let g5 = states(&t, 5);
    let kinds: Vec<_> = g5.iter().map(|s| (s.0, s.3.as_str())).collect();
    assert_eq!(
        kinds,
        [
            (SliceKind::Runnable, "created"),
            (SliceKind::Running, ""),
            (SliceKind::Runnable, "unblocked"),
            (SliceKind::Running, "")
        ]
    );
    assert_eq!((g5[0].1, g5[1].1, g5[1].2, g5[3].2), (0, 10, 30, 60));
    let info = &t.timeline.goroutines[0];
    assert_eq!(
        (info.id, info.name.as_str(), info.ended_ns),
        (5, "main.worker", Some(60))
    );
    assert_eq!(info.running_ns, 30);
    assert_eq!(t.summary.events_by_type.get("GoStart"), Some(&2));
    assert_eq!(t.summary.procs, 2);
}

#[test]
fn v1_syscalls_gc_and_annotations() {
    let mut w = V1Writer::new(19);
    w.batch(0, 1000);
    w.event(13, &[0, 7, 2, 1]); // GoCreate g7
    w.event(31, &[0, 7]); // GoWaiting g7 (blocked when tracing started)
    w.event(21, &[5, 7, 2, 1]); // t1005 GoUnblock g7 seq 2
    w.event(38, &[5, 7]); // t1010 GoStartLocal g7
    w.event(28, &[5, 1]); // t1015 GoSysCall
    w.event(30, &[5]); // t1020 GoSysBlock
    w.event(7, &[10, 0, 0]); // t1030 GCStart, the first cycle's seq is 0
    w.event(9, &[1, 0]); // t1031 STW kind 0
    w.event(10, &[4]); // t1035
    w.event(33, &[1, 4096]); // HeapAlloc
    w.event(8, &[4]); // t1040 GCDone
    w.batch(-1, 1050);
    w.event(29, &[0, 7, 4, 1025]); // GoSysExit g7 seq 4, really at t1025
    w.batch(0, 1060);
    w.event(14, &[0, 7, 5]); // t1060 GoStart g7 seq 5
    w.event(45, &[1, 1, 0, 5, 1]); // t1061 task 1 "job"
    w.event(47, &[1, 1, 0, 4, 1]); // t1062 region "phase" begins
    w.event(48, &[1, 1, 4, 1]); // t1063 log, category "phase"
    w.text("hello");
    w.event(47, &[2, 1, 1, 4, 1]); // t1065 region ends
    w.event(46, &[5, 1, 1]); // t1070 task ends
    w.event(15, &[5]); // t1075 GoEnd
    v1_tables(&mut w);
    let t = decode(&w.bytes());
    assert!(t.summary.notes.is_empty(), "{:?}", t.summary.notes);
    let g7 = states(&t, 7);
    let seq: Vec<_> = g7.iter().map(|s| (s.0, s.1, s.2, s.3.as_str())).collect();
    assert_eq!(
        seq,
        [
            (SliceKind::Blocked, 0, 5, "waiting at trace start"),
            (SliceKind::Runnable, 5, 10, "unblocked"),
            (SliceKind::Running, 10, 20, ""),
            (SliceKind::Syscall, 20, 25, "syscall"),
            (SliceKind::Runnable, 25, 60, "syscall exit"),
            (SliceKind::Running, 60, 75, ""),
        ]
    );
    let tl = &t.timeline;
    let find = |k: SliceKind| tl.slices.iter().find(|s| s.kind == k).expect("slice");
    assert_eq!(
        (
            find(SliceKind::GcCycle).start_ns,
            find(SliceKind::GcCycle).end_ns
        ),
        (30, 40)
    );
    assert_eq!(
        find(SliceKind::StopTheWorld).name,
        "STW: GC mark termination"
    );
    assert_eq!(
        (
            find(SliceKind::UserRegion).name.as_str(),
            find(SliceKind::UserRegion).end_ns
        ),
        ("phase", 65)
    );
    assert_eq!(
        (
            find(SliceKind::UserTask).name.as_str(),
            find(SliceKind::UserTask).track
        ),
        ("job", Track::Task(1))
    );
    let log = tl.instants.iter().find(|i| i.name == "phase").expect("log");
    assert!(log.args.contains(&("message".into(), "hello".into())));
    assert_eq!(
        tl.counters.first().map(|c| (c.name, c.value)),
        Some(("heap_alloc_bytes", 4096))
    );
    // The syscall interval carries the stack of the syscall's entry.
    let stack = find(SliceKind::Syscall).stack.expect("syscall stack");
    assert_eq!(tl.frames(stack)[0].function, "main.send");
    assert_eq!(t.summary.gc_cycles, 1);
}

#[test]
fn v1_without_frequency_or_with_damage_at_the_start_is_an_error() {
    let mut w = V1Writer::new(19);
    w.batch(0, 1);
    w.event(6, &[1]);
    assert!(matches!(
        decode_go_trace(&w.bytes()[..], &DecodeLimits::default()),
        Err(GoTraceError::MissingFrequency)
    ));
    let mut bad = V1Writer::new(21).bytes();
    bad.push(0x3f);
    assert!(matches!(
        decode_go_trace(&bad[..], &DecodeLimits::default()),
        Err(GoTraceError::Malformed { .. })
    ));
    let small = DecodeLimits {
        max_v1_bytes: 4,
        ..DecodeLimits::default()
    };
    assert!(matches!(
        decode_go_trace(&w.bytes()[..], &small),
        Err(GoTraceError::TooLarge { .. })
    ));
}

fn v2_generation(w: &mut V2Writer, generation: u64) {
    w.strings(
        generation,
        &[
            (1, "main.worker"),
            (2, "main.go"),
            (3, "chan receive"),
            (4, "preempted"),
        ],
    );
    w.stacks(generation, &[(1, vec![[0x100, 1, 2, 10]])]);
    w.frequency(generation, 1_000_000_000);
}

fn v2_trace(minor: u32) -> Vec<u8> {
    let mut w = V2Writer::new(minor);
    v2_generation(&mut w, 1);
    let m7: &[(u8, &[u64])] = &[
        (13, &[0, 0, 1]),     // t1000 ProcStatus P0 running
        (25, &[0, 1, 7, 2]),  // GoStatus g1 running on M7
        (14, &[10, 9, 1, 1]), // t1010 GoCreate g9
        (20, &[10, 3, 1]),    // t1020 GoBlock "chan receive"
        (16, &[5, 9, 1]),     // t1025 GoStart g9
        (22, &[5, 1, 1]),     // t1030 GoSyscallBegin
        (23, &[10]),          // t1040 GoSyscallEnd
        (29, &[5, 1, 0]),     // t1045 GCBegin
        (30, &[5, 1]),        // t1050 GCEnd
        (19, &[10, 4, 0]),    // t1060 GoStop "preempted"
        (11, &[5]),           // t1065 ProcStop
    ];
    w.events(1, 7, 1000, m7);
    w.events(
        1,
        8,
        1030,
        &[(10, &[0, 1, 1]), (21, &[5, 1, 2, 0]), (37, &[1, 512])],
    ); // P1; unblock g1 at t1035
    v2_generation(&mut w, 2);
    w.events(
        2,
        8,
        1100,
        &[(25, &[0, 1, u64::MAX, 1]), (16, &[10, 1, 3]), (17, &[10])],
    ); // g1 starts at 1110, ends 1120
    w.bytes()
}

#[test]
fn v2_generations_decode_into_the_same_timeline() {
    for minor in [22, 23, 25, 26] {
        let t = decode(&v2_trace(minor));
        let s = &t.summary;
        assert!(s.notes.is_empty(), "go1.{minor}: {:?}", s.notes);
        assert_eq!(
            (s.generations, s.gc_cycles, s.ticks_per_second),
            (2, 1, 1_000_000_000)
        );
        assert_eq!(s.events_by_type.get("GoStart"), Some(&2));
        let markers = s.events_by_type.get("EndOfGeneration").copied();
        assert_eq!(markers, (minor >= 26).then_some(1), "go1.{minor}");
        let g1: Vec<_> = states(&t, 1)
            .into_iter()
            .map(|s| (s.0, s.1, s.2, s.3))
            .collect();
        assert_eq!(
            g1,
            [
                (SliceKind::Running, 0, 20, String::new()),
                (SliceKind::Blocked, 20, 35, "chan receive".into()),
                (SliceKind::Runnable, 35, 110, "unblocked".into()),
                (SliceKind::Running, 110, 120, String::new()),
            ]
        );
        let g9: Vec<_> = states(&t, 9).into_iter().map(|s| (s.0, s.1, s.2)).collect();
        let want = [
            (SliceKind::Runnable, 10, 25),
            (SliceKind::Running, 25, 30),
            (SliceKind::Syscall, 30, 40),
            (SliceKind::Running, 40, 60),
            (SliceKind::Runnable, 60, 120),
        ];
        assert_eq!(g9, want);
        let g9info = t
            .timeline
            .goroutines
            .iter()
            .find(|g| g.id == 9)
            .expect("g9");
        assert_eq!(
            (g9info.name.as_str(), g9info.created_by),
            ("main.worker", Some(1))
        );
        let p0: Vec<_> = t
            .timeline
            .slices
            .iter()
            .filter(|s| s.track == Track::Proc(0) && s.kind == SliceKind::Running)
            .map(|s| (s.name.as_str(), s.start_ns, s.end_ns))
            .collect();
        assert_eq!(
            p0,
            [
                ("G1", 0, 20),
                ("G9 main.worker", 25, 30),
                ("G9 main.worker", 40, 60)
            ]
        );
    }
}

#[test]
fn v2_damage_after_a_generation_keeps_what_was_read() {
    let bytes = v2_trace(22);
    let whole = decode(&bytes);
    for cut in (17..bytes.len()).rev() {
        match decode_go_trace(&bytes[..cut], &DecodeLimits::default()) {
            Ok(t) => assert!(
                t.summary.generations >= 1 && t.summary.duration_ns <= whole.summary.duration_ns
            ),
            Err(e) => assert!(
                matches!(
                    e,
                    GoTraceError::Malformed { .. } | GoTraceError::MissingFrequency
                ),
                "{e}"
            ),
        }
    }
    let mut flipped = bytes.clone();
    for at in 16..bytes.len() {
        flipped.clone_from(&bytes);
        flipped[at] ^= 0x5a;
        let _ = decode_go_trace(&flipped[..], &DecodeLimits::default());
    }
    let tiny = DecodeLimits {
        max_generation_bytes: 8,
        ..DecodeLimits::default()
    };
    assert!(matches!(
        decode_go_trace(&bytes[..], &tiny),
        Err(GoTraceError::TooLarge { .. })
    ));
}
