//! `analyze memory` through the real binary against models computed here:
//! Kineto `[memory]` events read from the JSON (per-device `Total
//! Allocated` / `Total Reserved` series, growth over each `ProfilerStep#N`,
//! allocation totals and the enclosing operator of each allocation), a
//! Perfetto counter track read with the reference `perfetto_protos`
//! decoder, and Perfetto `process_stats` RSS written with it.

use std::collections::BTreeMap;

use flameox_tests::{Project, corpus, corpus_json, micros_to_ns};
use perfetto_protos::process_stats::{ProcessStats, process_stats::Process};
use perfetto_protos::trace::Trace;
use perfetto_protos::trace_packet::TracePacket;
use protobuf::Message;
use serde_json::{Value, json};

/// (ts ns, value) of one series.
type Samples = Vec<(i64, f64)>;

/// Samples ordered as the analysis promises: by time, then value.
fn stats(samples: &mut [(i64, f64)]) -> (f64, f64, f64, i64, f64) {
    samples.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let first = samples[0].1;
    let last = samples[samples.len() - 1].1;
    let peak = samples.iter().map(|s| s.1).fold(f64::MIN, f64::max);
    let peak_ns = samples
        .iter()
        .filter(|s| s.1 == peak)
        .map(|s| s.0)
        .min()
        .expect("peak");
    let min = samples.iter().map(|s| s.1).fold(f64::MAX, f64::min);
    (first, last, peak, peak_ns, min)
}

fn check_series(got: &Value, samples: &mut [(i64, f64)], what: &str) {
    let (first, last, peak, peak_ns, min) = stats(samples);
    assert_eq!(
        got["samples"].as_i64(),
        Some(samples.len() as i64),
        "{what}"
    );
    assert_eq!(got["first"].as_f64(), Some(first), "{what}");
    assert_eq!(got["last"].as_f64(), Some(last), "{what}");
    assert_eq!(got["retained"].as_f64(), Some(last - first), "{what}");
    assert_eq!(got["peak"].as_f64(), Some(peak), "{what}");
    assert_eq!(got["peak_ns"].as_i64(), Some(peak_ns), "{what}");
    assert_eq!(got["min"].as_f64(), Some(min), "{what}");
    assert_eq!(got["unit"], "bytes", "{what}");
}

fn import(project: &Project, path: &str) -> String {
    let imported = project.json(&["import", path]);
    imported["run_id"].as_str().expect("run").to_owned()
}

fn find<'a>(series: &'a [Value], device: Option<i64>, name: &str) -> &'a Value {
    series
        .iter()
        .find(|s| s["device"].as_i64() == device && s["series"] == name)
        .unwrap_or_else(|| panic!("series {name} of device {device:?}"))
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn kineto_memory_events_match_the_json() {
    let project = Project::new();
    let path = "kineto/tracelens_h100_bert_small.json.gz";
    let doc = corpus_json(path);
    let events = doc["traceEvents"].as_array().expect("events");
    let device_of = |e: &Value| e["args"]["Device Id"].as_i64().filter(|d| *d >= 0);

    // Series per (device, name), allocation totals per device.
    let mut series: BTreeMap<(Option<i64>, &str), Samples> = BTreeMap::new();
    let mut totals: BTreeMap<Option<i64>, (i64, i64, i64, i64)> = BTreeMap::new();
    let memory: Vec<&Value> = events.iter().filter(|e| e["name"] == "[memory]").collect();
    for e in &memory {
        let ts = micros_to_ns(&e["ts"]);
        for name in ["Total Allocated", "Total Reserved"] {
            if let Some(v) = e["args"][name].as_f64() {
                series
                    .entry((device_of(e), name))
                    .or_default()
                    .push((ts, v));
            }
        }
        let bytes = e["args"]["Bytes"].as_i64().expect("Bytes");
        let t = totals.entry(device_of(e)).or_default();
        if bytes > 0 {
            t.0 += 1;
            t.1 += bytes;
        } else if bytes < 0 {
            t.2 += 1;
            t.3 -= bytes;
        }
    }
    assert!(!series.is_empty());

    let run = import(&project, corpus().join(path).to_str().expect("utf-8"));
    let m = project.json(&["analyze", "memory", &run, "--limit", "100"]);
    assert_eq!(m["evidence"]["status"], "available", "{m}");
    assert_eq!(m["series_found"].as_u64(), Some(series.len() as u64));
    let got = m["series"].as_array().expect("series");
    let peaks: Vec<f64> = got.iter().filter_map(|s| s["peak"].as_f64()).collect();
    assert!(peaks.windows(2).all(|w| w[0] >= w[1]), "highest peak first");

    // Phases: the host ProfilerStep slices (the GPU copy runs later).
    let mut phases: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
    for e in events {
        let name = e["name"].as_str().unwrap_or("");
        if e["ph"] == "X" && name.starts_with("ProfilerStep#") && e["cat"] != "gpu_user_annotation"
        {
            let start = micros_to_ns(&e["ts"]);
            let end = start + micros_to_ns(&e["dur"]);
            let p = phases.entry(name).or_insert((start, end));
            *p = (p.0.min(start), p.1.max(end));
        }
    }
    assert!(!phases.is_empty());
    for ((device, name), samples) in &mut series {
        let what = format!("{name} of {device:?}");
        let s = find(got, *device, name);
        check_series(s, samples, &what);
        let grown = s["phases"].as_array().expect("phases");
        assert_eq!(grown.len(), phases.len(), "{what}");
        for g in grown {
            let (start, end) = phases[g["phase"].as_str().expect("phase")];
            let at = |t: i64| samples.iter().rev().find(|s| s.0 <= t).map(|s| s.1);
            let first_in = samples.iter().find(|s| s.0 >= start).map(|s| s.1);
            let from = at(start).or(first_in).expect("start value");
            let to = at(end).expect("end value");
            assert_eq!(g["start_ns"].as_i64(), Some(start), "{what}");
            assert_eq!(g["end_ns"].as_i64(), Some(end), "{what}");
            assert_eq!(g["growth"].as_f64(), Some(to - from), "{what}");
            let inside: Vec<f64> = samples
                .iter()
                .filter(|s| s.0 >= start && s.0 <= end)
                .map(|s| s.1)
                .collect();
            assert_eq!(
                g["samples_in_phase"].as_i64(),
                Some(inside.len() as i64),
                "{what}"
            );
        }
    }

    let allocations = m["allocations"].as_array().expect("allocations");
    assert_eq!(allocations.len(), totals.len());
    for (device, (allocs, allocated, frees, freed)) in &totals {
        let a = allocations
            .iter()
            .find(|a| a["device"].as_i64() == *device)
            .expect("device totals");
        assert_eq!(a["allocations"].as_i64(), Some(*allocs), "{device:?}");
        assert_eq!(
            a["allocated_bytes"].as_i64(),
            Some(*allocated),
            "{device:?}"
        );
        assert_eq!(a["frees"].as_i64(), Some(*frees), "{device:?}");
        assert_eq!(a["freed_bytes"].as_i64(), Some(*freed), "{device:?}");
    }

    // Sites: the innermost slice of the same thread enclosing the event.
    let slices: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    let mut sites: BTreeMap<(Option<i64>, String), i64> = BTreeMap::new();
    for e in memory
        .iter()
        .filter(|e| e["args"]["Bytes"].as_i64() > Some(0))
    {
        let ts = micros_to_ns(&e["ts"]);
        let site = slices
            .iter()
            .filter(|s| s["pid"] == e["pid"] && s["tid"] == e["tid"])
            .map(|s| (micros_to_ns(&s["ts"]), micros_to_ns(&s["dur"]), s))
            .filter(|(start, dur, _)| *start <= ts && ts < start + dur)
            .max_by_key(|(start, dur, _)| (*start, -dur))
            .map_or("(none)".to_owned(), |(_, _, s)| {
                s["name"].as_str().expect("name").to_owned()
            });
        *sites.entry((device_of(e), site)).or_default() +=
            e["args"]["Bytes"].as_i64().expect("Bytes");
    }
    assert_eq!(m["sites_found"].as_u64(), Some(sites.len() as u64));
    for s in m["sites"].as_array().expect("sites") {
        let key = (
            s["device"].as_i64(),
            s["site"].as_str().expect("site").to_owned(),
        );
        assert_eq!(s["bytes"].as_i64(), sites.get(&key).copied(), "{key:?}");
    }
    assert_eq!(m["limitations"][0]["code"], "captured_run_peak_rss");
    assert_eq!(m["limitations"][0]["status"], "not_yet");
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn perfetto_counter_in_bytes_matches_the_reference_decoder() {
    let project = Project::new();
    let path = corpus().join("perfetto/perfetto_pybuilder_trackevent.pftrace");
    let bytes = std::fs::read(&path).expect("corpus");
    let trace = Trace::parse_from_bytes(&bytes).expect("reference decoder");
    let counter = trace
        .packet
        .iter()
        .find(|p| p.track_descriptor().name() == "heap_bytes")
        .map(|p| p.track_descriptor().uuid())
        .expect("heap_bytes track");
    let mut samples: Vec<(i64, f64)> = trace
        .packet
        .iter()
        .filter(|p| p.has_track_event() && p.track_event().track_uuid() == counter)
        .map(|p| {
            let e = p.track_event();
            let v = if e.has_double_counter_value() {
                e.double_counter_value()
            } else {
                e.counter_value() as f64
            };
            (p.timestamp() as i64, v)
        })
        .collect();
    assert!(samples.len() > 100);

    let run = import(&project, path.to_str().expect("utf-8"));
    let m = project.json(&["analyze", "memory", &run]);
    assert_eq!(m["evidence"]["status"], "available", "{m}");
    let got = m["series"].as_array().expect("series");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["series"], "heap_bytes");
    check_series(&got[0], &mut samples, "heap_bytes");
}

#[test]
fn perfetto_process_stats_rss_by_hand() {
    let stat = |ts: u64, rss_kb: u64, swap_kb: u64| {
        let mut stats = ProcessStats::new();
        stats.processes = vec![Process {
            pid: Some(100),
            vm_rss_kb: Some(rss_kb),
            vm_swap_kb: Some(swap_kb),
            ..Default::default()
        }];
        let mut p = TracePacket::new();
        p.set_timestamp(ts);
        p.set_trusted_packet_sequence_id(1);
        p.set_process_stats(stats);
        p
    };
    let mut t = Trace::new();
    t.packet = vec![stat(10, 1000, 0), stat(20, 3000, 5), stat(30, 2000, 5)];
    let project = Project::new();
    let path = project.path().join("rss.perfetto-trace");
    std::fs::write(&path, t.write_to_bytes().expect("encode")).expect("write");
    let run = import(&project, path.to_str().expect("utf-8"));
    let m = project.json(&["analyze", "memory", &run]);
    assert_eq!(m["evidence"]["status"], "available", "{m}");
    let got = m["series"].as_array().expect("series");
    let rss = got
        .iter()
        .find(|s| s["series"] == "mem.rss")
        .expect("mem.rss");
    // kB → bytes; peak 3000 kB at 20 ns, 1000 kB retained.
    assert_eq!(rss["pid"], 100);
    assert_eq!(rss["peak"].as_f64(), Some(3000.0 * 1024.0));
    assert_eq!(rss["peak_ns"], 20);
    assert_eq!(rss["retained"].as_f64(), Some(1000.0 * 1024.0));
    assert_eq!(rss["phases"], json!([]));
    let swap = got
        .iter()
        .find(|s| s["series"] == "mem.swap")
        .expect("mem.swap");
    assert_eq!(swap["peak_ns"], 20, "the first time the peak is reached");
    assert_eq!(swap["min"].as_f64(), Some(0.0));
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn no_memory_evidence_is_partial_with_the_next_call() {
    let project = Project::new();
    let path = corpus().join("kineto/hta_alexnet_a100.pt.trace.json.gz");
    let run = import(&project, path.to_str().expect("utf-8"));
    let m = project.json(&["analyze", "memory", &run]);
    assert_eq!(m["evidence"]["status"], "partial");
    assert_eq!(m["evidence"]["reason"], "memory_counters_missing");
    assert_eq!(m["evidence"]["next_tool"], "get_run");
    assert_eq!(m["series"], json!([]));
    assert_eq!(m["limitations"][0]["status"], "not_yet");
}
