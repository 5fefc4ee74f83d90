//! The spilled path writes what the in-memory path writes: every batch of
//! every table and the summary, on the corpus and on edge cases built to
//! cross run boundaries.

use std::io::{BufReader, Read};
use std::path::Path;

use super::extract_chrome_json_spilling;
use crate::api::NoObserver;
use crate::spill_compare::{
    Extracted, assert_no_spill_files_left, assert_same_tables, options, spill_dir,
};
use crate::stream_gaps::tests::Collect;

fn extract(doc: &[u8], spill: Option<(&Path, usize)>) -> Extracted {
    let options = options(spill);
    let mut sink = Collect::default();
    let (summary, spilled) =
        extract_chrome_json_spilling(doc, &options, &mut sink, &NoObserver).unwrap();
    (summary, sink, spilled)
}

/// Extracts `doc` in memory and with runs of `after` events; both must
/// agree exactly, and the second must really have spilled.
fn assert_same_output(name: &str, doc: &[u8], after: usize) {
    let dir = spill_dir("cmp");
    let (want, want_batches, none) = extract(doc, None);
    let (got, got_batches, spilled) = extract(doc, Some((&dir, after)));
    assert_eq!(none, 0);
    assert!(
        spilled > 0,
        "{name}: nothing spilled with runs of {after} events"
    );
    assert_eq!(got, want, "{name}: summaries differ (runs of {after})");
    assert_same_tables(name, &got_batches, &want_batches);
    assert_no_spill_files_left(&dir);
}

fn corpus(rel: &str) -> Vec<u8> {
    let path = Path::new(env!("FLAMEOX_CORPUS_DIR")).join(rel);
    let file = std::fs::File::open(&path).unwrap();
    let mut reader: Box<dyn Read> = if rel.ends_with(".gz") {
        Box::new(flate2::read::MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let mut out = Vec::new();
    BufReader::new(&mut reader).read_to_end(&mut out).unwrap();
    out
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn corpus_traces_come_out_the_same_through_spill_runs() {
    for (rel, after) in [
        ("chrome_json/chromium_headless_page_devtools.json", 997),
        ("chrome_json/node20_trace_events.json", 13),
        ("chrome_json/pyspy_workload.chrometrace.json", 7),
        ("chrome_json/jax0.10_cpu_mlp.trace.json.gz", 500),
        (
            "chrome_json/speedscope_chrome116_devtools_Trace-20230603T221323.json",
            101,
        ),
        ("kineto/deepseek_train_h800_ep64_rank0.json", 1000),
        ("kineto/hta_alexnet_a100.pt.trace.json.gz", 3),
        ("kineto/hta_amd_mi250_rocm6.2.json.gz", 1),
        ("kineto/hta_cudagraph_nccl_a100_rank0of16.json.gz", 2000),
        ("kineto/hta_v100_nccl_rank1of2_216k_events.json.gz", 20_000),
        ("kineto/kineto_h100_out_of_order_before_fix.json", 5),
        (
            "kineto/tbplugin_resnet50_v100_worker0.pt.trace.json.gz",
            1500,
        ),
        ("kineto/tracelens_b200_vllm_eager_rank0of8.json.gz", 3000),
        ("kineto/tracelens_mi300x_sglang_decode_hipgraph.json.gz", 50),
    ] {
        assert_same_output(rel, &corpus(rel), after);
    }
}

/// Begins and ends far apart (open begins stay in memory across runs),
/// an unterminated begin, improper nesting, instants, async slices, flows
/// that must fill missing correlation ids (enclosing and not, both at one
/// timestamp), and
/// `ProfilerStep#N` phases passed to kernels through correlation ids.
const EDGE_CASES: &str = r#"{"traceEvents": [
  {"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"main"}},
  {"ph":"B","name":"outer","cat":"cpu_op","pid":1,"tid":1,"ts":0},
  {"ph":"X","name":"ProfilerStep#1","cat":"user_annotation","pid":1,"tid":1,"ts":1,"dur":40},
  {"ph":"X","name":"cudaLaunchKernel","cat":"cuda_runtime","pid":1,"tid":1,"ts":2,"dur":3,"args":{"correlation":11}},
  {"ph":"X","name":"cudaLaunchKernel","cat":"cuda_runtime","pid":1,"tid":1,"ts":6,"dur":3},
  {"ph":"s","id":77,"name":"ac2g","cat":"ac2g","pid":1,"tid":1,"ts":6},
  {"ph":"X","name":"kernel_a","cat":"kernel","pid":0,"tid":7,"ts":10,"dur":5,"args":{"device":0,"stream":7,"correlation":11}},
  {"ph":"X","name":"kernel_b","cat":"kernel","pid":0,"tid":7,"ts":16,"dur":5,"args":{"device":0,"stream":7}},
  {"ph":"f","id":77,"bp":"e","name":"ac2g","cat":"ac2g","pid":0,"tid":7,"ts":16},
  {"ph":"X","name":"cudaLaunchKernel","cat":"cuda_runtime","pid":1,"tid":1,"ts":20,"dur":2},
  {"ph":"s","id":78,"name":"ac2g","cat":"ac2g","pid":1,"tid":1,"ts":19},
  {"ph":"X","name":"kernel_c","cat":"kernel","pid":0,"tid":7,"ts":30,"dur":4,"args":{"device":0,"stream":7}},
  {"ph":"f","id":78,"name":"ac2g","cat":"ac2g","pid":0,"tid":7,"ts":29},
  {"ph":"i","name":"mark","cat":"cpu_op","pid":1,"tid":1,"ts":21,"s":"t"},
  {"ph":"X","name":"straddles","cat":"cpu_op","pid":1,"tid":1,"ts":35,"dur":20},
  {"ph":"B","name":"inner","cat":"cpu_op","pid":1,"tid":2,"ts":3},
  {"ph":"b","id":5,"name":"async","cat":"x","pid":1,"ts":4},
  {"ph":"X","name":"ProfilerStep#2","cat":"user_annotation","pid":1,"tid":1,"ts":42,"dur":20},
  {"ph":"X","name":"cudaLaunchKernel","cat":"cuda_runtime","pid":1,"tid":1,"ts":43,"dur":1,"args":{"correlation":12}},
  {"ph":"X","name":"kernel_d","cat":"kernel","pid":0,"tid":7,"ts":60,"dur":4,"args":{"device":0,"stream":7,"correlation":12}},
  {"ph":"E","pid":1,"tid":2,"ts":9},
  {"ph":"e","id":5,"name":"async","cat":"x","pid":1,"ts":50},
  {"ph":"X","name":"same_start","cat":"cpu_op","pid":1,"tid":3,"ts":5,"dur":5},
  {"ph":"X","name":"same_start","cat":"cpu_op","pid":1,"tid":3,"ts":5,"dur":5},
  {"ph":"B","name":"never_ends","cat":"cpu_op","pid":1,"tid":3,"ts":6},
  {"ph":"X","name":"cudaLaunchKernel","cat":"cuda_runtime","pid":1,"tid":1,"ts":70,"dur":1},
  {"ph":"s","id":79,"name":"ac2g","cat":"ac2g","pid":1,"tid":1,"ts":70},
  {"ph":"t","id":80,"bp":"e","name":"ac2g","cat":"ac2g","pid":0,"tid":7,"ts":70},
  {"ph":"f","id":79,"name":"ac2g","cat":"ac2g","pid":0,"tid":7,"ts":70},
  {"ph":"s","id":80,"name":"ac2g","cat":"ac2g","pid":1,"tid":1,"ts":0},
  {"ph":"X","name":"kernel_e","cat":"kernel","pid":0,"tid":7,"ts":70,"dur":2,"args":{"device":0,"stream":7}},
  {"ph":"E","pid":1,"tid":1,"ts":100}
]}"#;

#[test]
fn edge_cases_come_out_the_same_with_runs_of_every_size() {
    let (summary, _, _) = extract(EDGE_CASES.as_bytes(), None);
    // The case exercises what it is meant to.
    let limitation = |code: &str| summary.limitations.iter().any(|l| l.code == code);
    assert!(
        limitation("correlation_from_flow"),
        "{:?}",
        summary.limitations
    );
    assert!(limitation("improper_nesting"));
    assert!(limitation("unterminated_slice"));
    assert_eq!(summary.coverage.get("phase_annotations"), Some(&true));
    for after in 1..=12 {
        assert_same_output("edge cases", EDGE_CASES.as_bytes(), after);
    }
}

#[test]
fn a_trace_within_the_budget_never_spills() {
    let dir = spill_dir("small");
    let (_, _, spilled) = extract(EDGE_CASES.as_bytes(), Some((&dir, 1000)));
    assert_eq!(spilled, 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `n` complete events on four threads, each the start of a flow that
/// ends on the next thread: enough records and flow endpoints that every
/// spill file outgrows its 1 MiB write buffer while the threads run.
fn events_with_flows(n: usize) -> String {
    let mut doc = String::from("{\"traceEvents\":[");
    for i in 0..n {
        let (ts, tid, next) = (i * 10, i % 4, (i + 1) % 4);
        if i > 0 {
            doc.push(',');
        }
        doc.push_str(&format!(
            "{{\"ph\":\"X\",\"name\":\"op{}\",\"pid\":1,\"tid\":{tid},\"ts\":{ts},\"dur\":5}},\
             {{\"ph\":\"s\",\"cat\":\"c\",\"name\":\"f\",\"id\":{i},\"pid\":1,\"tid\":{tid},\"ts\":{}}},\
             {{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"c\",\"name\":\"f\",\"id\":{i},\"pid\":1,\"tid\":{next},\"ts\":{}}}",
            i % 50,
            ts + 1,
            ts + 12,
        ));
    }
    doc.push_str("]}");
    doc
}

#[test]
fn a_spill_file_that_cannot_be_written_fails_the_extraction() {
    let doc = events_with_flows(60_000);
    // The pass-1 runs and the flows are written on the run writer's
    // thread, the time-ordered runs on the sorter's: each failure must
    // come back as the extraction's error, not a panic or a hang.
    for label in ["events-by-track", "flows", "events-by-time"] {
        let dir = spill_dir(label);
        crate::sorted_runs::full_disk::register(&dir, label);
        let mut sink = Collect::default();
        let result = extract_chrome_json_spilling(
            doc.as_bytes(),
            &options(Some((&dir, 5_000))),
            &mut sink,
            &NoObserver,
        );
        match result {
            Err(crate::api::ExtractError::Io(e)) => {
                assert_eq!(e.kind(), std::io::ErrorKind::StorageFull, "{label}: {e}")
            }
            Err(other) => panic!("{label}: not the disk's error: {other:?}"),
            Ok((summary, spilled)) => {
                panic!("{label}: extracted on a full disk ({spilled} spilled): {summary:?}")
            }
        }
        assert_no_spill_files_left(&dir);
    }
    // The same trace on a writable disk goes through the runs.
    let dir = spill_dir("writable");
    let (_, _, spilled) = extract(doc.as_bytes(), Some((&dir, 5_000)));
    assert!(spilled >= 60_000, "{spilled}");
    assert_no_spill_files_left(&dir);
}
