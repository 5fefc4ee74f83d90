//! The corpus trace (`linux/go1.19_runtime_execution.trace`) through the
//! extractor: its rows against the decoder's timeline (which
//! `corpus_tests.rs` checks against a byte walk), and the same rows batch
//! for batch when every event goes through spill runs.
#![cfg(test)]

use std::collections::BTreeMap;

use super::decode::decode_go_trace;
use super::error::DecodeLimits;
use super::extract_tests::{Evidence, extract};
use super::model::{InstantKind, SliceKind, Track};
use crate::spill_compare::assert_every_event_spills_the_same;

fn corpus_bytes() -> Vec<u8> {
    let path = std::path::Path::new(env!("FLAMEOX_CORPUS_DIR"))
        .join("linux/go1.19_runtime_execution.trace");
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn the_corpus_trace_is_its_decoded_timeline_held_or_spilled() {
    let bytes = corpus_bytes();
    let decoded = decode_go_trace(bytes.as_slice(), &DecodeLimits::default()).expect("decodes");
    let tl = &decoded.timeline;
    let ev = Evidence::of(&bytes);
    assert!(
        ev.summary.limitations.is_empty(),
        "{:?}",
        ev.summary.limitations
    );
    // Each goroutine's runs: as many rows, and as long, as the decoder's
    // running time for it.
    let mut on_cpu: BTreeMap<i64, (u64, i64)> = BTreeMap::new();
    for e in ev.of_kind("sched_slice") {
        let slot = on_cpu.entry(e.tid.expect("tid")).or_default();
        *slot = (slot.0 + 1, slot.1 + e.dur);
    }
    let mut runs: BTreeMap<i64, u64> = BTreeMap::new();
    for x in &tl.slices {
        if let (Track::Proc(_), SliceKind::Running) = (x.track, x.kind) {
            let g = x
                .args
                .iter()
                .find(|(k, _)| k == "g")
                .expect("g")
                .1
                .parse()
                .unwrap();
            *runs.entry(g).or_default() += 1;
        }
    }
    for g in &tl.goroutines {
        let id = i64::try_from(g.id).unwrap();
        let (rows, ns) = on_cpu.get(&id).copied().unwrap_or_default();
        assert_eq!(rows, runs.get(&id).copied().unwrap_or(0), "G{}", g.id);
        assert_eq!(ns, g.running_ns as i64, "G{}", g.id);
    }
    let states = tl
        .slices
        .iter()
        .filter(|x| matches!(x.track, Track::Goroutine(_)))
        .filter(|x| !matches!(x.kind, SliceKind::MarkAssist | SliceKind::UserRegion))
        .count();
    assert_eq!(ev.of_kind("thread_state").len(), states);
    let mut cpus: Vec<_> = ev
        .tracks
        .values()
        .filter(|t| t.0 == "cpu")
        .map(|t| t.1.as_str())
        .collect();
    cpus.sort_unstable();
    assert_eq!(cpus, ["P0", "P1"]);
    let samples = tl
        .instants
        .iter()
        .filter(|i| i.kind == InstantKind::CpuSample)
        .count() as i64;
    let sampled: i64 = ev
        .samples()
        .iter()
        .filter(|s| s.0 == "cpu.samples")
        .map(|s| s.2)
        .sum();
    assert_eq!(sampled, samples);
    assert_eq!(ev.summary.rows["counters"], tl.counters.len() as u64);
    // The same rows, batch for batch, through runs of 1 and of 700 events.
    for after in [1, 700] {
        assert_every_event_spills_the_same("go1.19 corpus", after, |spill| extract(&bytes, spill));
    }
}
