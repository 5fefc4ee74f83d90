//! The folded-stacks extractor on the real folded files in the corpus
//! (py-spy raw output and `stackcollapse-perf.pl --all`), checked against
//! self and inclusive counts computed here from the plain text, plus broken
//! inputs.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use flameox_extractors::{EvidenceTable as T, ExtractError, NoObserver, extract_folded_stacks};

/// (self, inclusive) per frame text, computed from the lines directly.
fn model(text: &str) -> (BTreeMap<String, (i64, i64)>, i64) {
    let mut totals: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let mut all = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (stack, count) = line.trim_end().rsplit_once(' ').unwrap();
        let count: i64 = count.parse().unwrap();
        all += count;
        // An empty element (one vertx line ends `…write0_[j]; 3`) is no frame.
        let mut frames: Vec<&str> = stack
            .trim_end()
            .split(';')
            .filter(|f| !f.is_empty())
            .collect();
        if frames[0].starts_with("thread (") {
            frames.remove(0);
            if frames.is_empty() {
                frames.push("[no frames]");
            }
        }
        totals
            .entry(frames.last().unwrap().to_string())
            .or_default()
            .0 += count;
        let distinct: BTreeSet<&str> = frames.iter().copied().collect();
        for f in distinct {
            totals.entry(f.to_string()).or_default().1 += count;
        }
    }
    (totals, all)
}

fn extract(
    bytes: &[u8],
) -> Result<(flameox_extractors::ExtractionSummary, MemorySink), ExtractError> {
    let mut sink = MemorySink::default();
    let summary = extract_folded_stacks(bytes, &options(), &mut sink, &NoObserver)?;
    Ok((summary, sink))
}

/// Rebuilds the frame text the way the input wrote it.
fn frame_text(
    function: &str,
    file: Option<&str>,
    line: Option<i64>,
    module: Option<&str>,
) -> String {
    match (file, line, module) {
        (Some(file), Some(line), _) => format!("{function} ({file}:{line})"),
        (_, _, Some("kernel")) => format!("{function}_[k]"),
        (_, _, Some("jit")) => format!("{function}_[j]"),
        (_, _, Some("inlined")) => format!("{function}_[i]"),
        (_, _, Some("waker")) => format!("{function}_[w]"),
        _ => function.to_owned(),
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn corpus_folded_files_match_an_independent_count() {
    for (rel, producer) in [
        ("stacks/pyspy_workload.folded.txt", "py-spy"),
        (
            "stacks/flamegraph_perf-vertx-stacks-01-collapsed-all.folded.txt",
            "folded",
        ),
    ] {
        let bytes = std::fs::read(corpus(rel)).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        let (expected, total) = model(&text);
        let (summary, sink) = extract(&bytes).unwrap();
        assert_eq!(summary.producer, producer, "{rel}");
        assert_eq!(summary.format, "folded_stacks");
        assert_eq!(
            summary.input_events as usize,
            text.lines().filter(|l| !l.trim().is_empty()).count()
        );
        let empty_elements = text
            .lines()
            .map(|l| l.trim_end().rsplit_once(' ').map_or("", |s| s.0).trim_end())
            .map(|stack| stack.split(';').filter(|f| f.is_empty()).count() as u64)
            .sum::<u64>();
        assert_eq!(limitation(&summary, "empty_frame"), empty_elements, "{rel}");
        assert_eq!(
            summary.limitations.len(),
            usize::from(empty_elements > 0),
            "{rel}: {:?}",
            summary.limitations
        );

        let weights = sink.i64s(T::Samples, "weight");
        assert_eq!(
            weights.iter().map(|w| w.unwrap()).sum::<i64>(),
            total,
            "{rel}"
        );
        assert!(
            sink.strs(T::Samples, "metric")
                .iter()
                .all(|m| m.as_deref() == Some("cpu.samples"))
        );

        let functions = sink.strs(T::FrameTotals, "function");
        let files = sink.strs(T::FrameTotals, "file");
        let lines = sink.i64s(T::FrameTotals, "line");
        let modules = sink.strs(T::FrameTotals, "module");
        let selfs = sink.i64s(T::FrameTotals, "self_value");
        let incls = sink.i64s(T::FrameTotals, "inclusive_value");
        let mut got: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        for i in 0..functions.len() {
            let key = frame_text(
                functions[i].as_deref().unwrap(),
                files[i].as_deref(),
                lines[i],
                modules[i].as_deref(),
            );
            let e = got.entry(key).or_default();
            e.0 += selfs[i].unwrap();
            e.1 += incls[i].unwrap();
        }
        assert_eq!(got, expected, "{rel}");
        assert_eq!(summary.rows["frames"] as usize, sink.rows(T::Frames));
        assert!(sink.rows(T::CallEdges) > 0);
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn pyspy_threads_become_sample_threads() {
    let bytes = std::fs::read(corpus("stacks/pyspy_workload.folded.txt")).unwrap();
    let (_, sink) = extract(&bytes).unwrap();
    let tids: BTreeSet<i64> = sink.i64s(T::Samples, "tid").into_iter().flatten().collect();
    assert!(tids.contains(&23098) && tids.contains(&23101), "{tids:?}");
    let functions = sink.strs(T::Frames, "function");
    assert!(
        functions
            .iter()
            .all(|f| !f.as_deref().unwrap().starts_with("thread ("))
    );
}

#[test]
fn broken_inputs_are_typed() {
    for bad in [
        &b""[..],
        b"\n\n",
        b"not folded at all",
        b"a;b;c\n",
        b"\x00\x01\x02 x",
    ] {
        match extract(bad) {
            Err(ExtractError::Parse { .. }) => {}
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(bad)),
        }
    }
    let (summary, sink) = extract(b"a;b 3\nbroken line\na;;c 2\n# comment\na;b 1").unwrap();
    assert_eq!(limitation(&summary, "malformed_line"), 1);
    assert_eq!(limitation(&summary, "empty_frame"), 1);
    assert_eq!(
        sink.i64s(T::Samples, "weight")
            .iter()
            .flatten()
            .sum::<i64>(),
        6
    );
}
