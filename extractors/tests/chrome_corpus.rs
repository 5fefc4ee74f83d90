//! The Chrome extractor on every real Chrome / Kineto JSON file in the corpus.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::PathBuf;

use common::*;
use flameox_extractors::{
    EvidenceTable as T, ExtractError, InputLimits, NoObserver, extract_chrome_json, open_input,
};

/// Slice intervals, Σ self_ns, and whether an unterminated slice was seen.
type TrackTally = (Vec<(i64, i64)>, i64, bool);

fn corpus_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["chrome_json", "kineto", "kineto/param_dlrm_8rank"] {
        for entry in std::fs::read_dir(corpus(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(files.len() >= 27, "corpus not found: {files:?}");
    files
}

fn read_all(path: &std::path::Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    open_input(path, &InputLimits::default())
        .unwrap()
        .read_to_end(&mut bytes)
        .unwrap();
    bytes
}

/// Independent tallies from serde_json::Value: indices of X events and of
/// every event that should become a `trace_events` row.
fn independent_counts(bytes: &[u8]) -> (BTreeSet<u64>, usize) {
    let doc: serde_json::Value = serde_json::from_slice(bytes).unwrap();
    let events = match &doc {
        serde_json::Value::Array(a) => a.clone(),
        other => other["traceEvents"].as_array().unwrap().clone(),
    };
    let mut x = BTreeSet::new();
    let mut rows = 0;
    for (i, e) in events.iter().enumerate() {
        let ph = e.get("ph").and_then(|p| p.as_str()).unwrap_or("");
        if e.get("ts").is_none() {
            continue;
        }
        if ph == "X" {
            x.insert(i as u64);
        }
        if matches!(ph, "X" | "B" | "i" | "I" | "R" | "n" | "b") {
            rows += 1;
        }
    }
    (x, rows)
}

/// Union length of intervals and whether any two overlap without nesting.
fn union_and_proper(mut iv: Vec<(i64, i64)>) -> (i64, bool) {
    iv.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut stack: Vec<i64> = Vec::new();
    let mut proper = true;
    let (mut total, mut cur): (i64, Option<(i64, i64)>) = (0, None);
    for &(s, e) in &iv {
        while stack.last().is_some_and(|&end| end <= s) {
            stack.pop();
        }
        if stack.last().is_some_and(|&end| e > end) {
            proper = false;
        }
        stack.push(e);
        cur = match cur {
            Some((a, b)) if s <= b => Some((a, b.max(e))),
            Some((a, b)) => {
                total += b - a;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    if let Some((a, b)) = cur {
        total += b - a;
    }
    (total, proper)
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn every_corpus_trace_extracts_consistently() {
    for path in corpus_files() {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let bytes = read_all(&path);
        let (x_events, expected_rows) = independent_counts(&bytes);
        let stream = open_input(&path, &InputLimits::default()).unwrap();
        let mut sink = MemorySink::default();
        let s = extract_chrome_json(stream, &options(), &mut sink, &NoObserver)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(s.input_bytes, bytes.len() as u64, "{name}");
        let ids = sink.i64s(T::TraceEvents, "event_id");
        let ts = sink.i64s(T::TraceEvents, "ts_ns");
        assert_eq!(ids.len(), expected_rows, "{name}: rows");
        assert_eq!(s.rows["trace_events"], expected_rows as u64, "{name}");
        let id_set: BTreeSet<u64> = ids.iter().map(|i| i.unwrap() as u64).collect();
        assert_eq!(id_set.len(), ids.len(), "{name}: event ids unique");
        assert!(
            x_events.is_subset(&id_set),
            "{name}: every X event is a row"
        );
        for w in 0..ids.len().saturating_sub(1) {
            assert!(
                (ts[w], ids[w]) < (ts[w + 1], ids[w + 1]),
                "{name}: sorted at row {w}"
            );
        }
        // Per-track self time equals the union of slice intervals.
        let track = sink.i64s(T::TraceEvents, "track_id");
        let dur = sink.i64s(T::TraceEvents, "dur_ns");
        let selfs = sink.i64s(T::TraceEvents, "self_ns");
        let kind = sink.strs(T::TraceEvents, "kind");
        let mut per_track: BTreeMap<i64, TrackTally> = BTreeMap::new();
        for r in 0..ids.len() {
            let e = per_track.entry(track[r].unwrap()).or_default();
            let d = dur[r].unwrap();
            if d < 0 {
                e.2 = true;
                continue;
            }
            if kind[r].as_deref() != Some("instant") {
                e.0.push((ts[r].unwrap(), ts[r].unwrap() + d));
                e.1 += selfs[r].unwrap();
                assert!(
                    selfs[r].unwrap() >= 0 && selfs[r].unwrap() <= d,
                    "{name}: self within dur"
                );
            }
        }
        let mut checked = 0;
        for (t, (iv, self_sum, unterminated)) in per_track {
            let (union, proper) = union_and_proper(iv);
            if proper && !unterminated {
                assert_eq!(self_sum, union, "{name}: track {t}");
                checked += 1;
            }
        }
        assert!(checked > 0, "{name}: no track was checkable");
        // Reductions are consistent with slices.
        let self_total: i64 = sink
            .i64s(T::Samples, "weight")
            .iter()
            .map(|w| w.unwrap())
            .sum();
        let slice_self: i64 = (0..ids.len())
            .filter(|&r| {
                dur[r].unwrap() >= 0
                    && !matches!(kind[r].as_deref(), Some("instant" | "profiler_span"))
            })
            .map(|r| selfs[r].unwrap())
            .sum();
        assert_eq!(self_total, slice_self, "{name}: samples weight");
        let kineto = name.contains("pt.trace") || path.to_string_lossy().contains("kineto/");
        if kineto {
            assert_eq!(s.producer, "torch.profiler", "{name}");
        }
        eprintln!(
            "{name}: {} events, {} rows, {} tracks, limitations {:?}",
            s.input_events,
            ids.len(),
            s.tracks,
            s.limitations
                .iter()
                .map(|l| (&l.code, l.count))
                .collect::<Vec<_>>()
        );
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn kineto_details_on_real_files() {
    let path = corpus("kineto/hta_alexnet_a100.pt.trace.json.gz");
    let mut sink = MemorySink::default();
    let s = extract_chrome_json(
        open_input(&path, &InputLimits::default()).unwrap(),
        &options(),
        &mut sink,
        &NoObserver,
    )
    .unwrap();
    assert_eq!(s.metadata["distributedInfo"]["rank"], 0);
    assert!(
        s.coverage["correlation_ids"]
            && s.coverage["external_ids"]
            && s.coverage["stream_identity"]
    );
    let kinds = sink.strs(T::TraceEvents, "kind");
    let count = |k: &str| kinds.iter().filter(|x| x.as_deref() == Some(k)).count();
    assert_eq!(count("kernel") + count("communication"), 79);
    assert_eq!(count("runtime_api") + count("graph_launch"), 361);
    assert_eq!(count("sync"), 41);
    assert_eq!(count("memcpy"), 16);
    assert_eq!(count("memset"), 3);

    // Old schema: string tids, `Operator`/`Runtime`/`Kernel` categories.
    let path = corpus("kineto/tbplugin_resnet50_v100_worker0.pt.trace.json.gz");
    let mut sink = MemorySink::default();
    let s = extract_chrome_json(
        open_input(&path, &InputLimits::default()).unwrap(),
        &options(),
        &mut sink,
        &NoObserver,
    )
    .unwrap();
    assert_eq!(s.producer, "torch.profiler");
    let kinds = sink.strs(T::TraceEvents, "kind");
    let kernels = kinds
        .iter()
        .filter(|x| matches!(x.as_deref(), Some("kernel" | "communication")))
        .count();
    assert_eq!(kernels, 8772);
    let tk = sink.strs(T::Tracks, "kind");
    assert!(tk.iter().any(|k| k.as_deref() == Some("gpu_stream")));

    // Floats with sub-µs fractions are exact.
    let path = corpus("kineto/kineto_h100_out_of_order_after_fix.json");
    let bytes = std::fs::read(&path).unwrap();
    let (_, sink) = extract_bytes(&bytes).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    if text.contains("88437691101.729") {
        assert!(
            sink.i64s(T::TraceEvents, "ts_ns")
                .contains(&Some(88_437_691_101_729))
        );
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn truncation_at_many_offsets_never_panics() {
    for rel in [
        "kineto/kineto_h100_out_of_order_before_fix.json",
        "chrome_json/pyspy_workload.chrometrace.json",
    ] {
        let bytes = std::fs::read(corpus(rel)).unwrap();
        let step = (bytes.len() / 150).max(1);
        let mut cut = 0;
        while cut < bytes.len() {
            match extract_bytes(&bytes[..cut]) {
                Ok((s, _)) => {
                    assert_eq!(limitation(&s, "truncated_input"), 1, "{rel} cut at {cut}")
                }
                Err(ExtractError::Parse { .. }) => {}
                Err(e) => panic!("{rel} cut at {cut}: {e}"),
            }
            cut += step;
        }
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn gzip_truncation_keeps_complete_events() {
    let path = corpus("kineto/hta_amd_mi250_rocm6.2.json.gz");
    let gz = std::fs::read(&path).unwrap();
    let dir = std::env::temp_dir().join(format!("flameox-gzcut-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cut = dir.join("cut.json.gz");
    std::fs::write(&cut, &gz[..gz.len() * 2 / 3]).unwrap();
    let mut sink = MemorySink::default();
    let s = extract_chrome_json(
        open_input(&cut, &InputLimits::default()).unwrap(),
        &options(),
        &mut sink,
        &NoObserver,
    )
    .unwrap();
    assert_eq!(limitation(&s, "truncated_input"), 1);
    assert!(sink.rows(T::TraceEvents) > 0);
}
