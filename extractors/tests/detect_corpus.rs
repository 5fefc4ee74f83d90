//! Detection on every corpus file, by content.

mod common;

use common::corpus;
use flameox_extractors::{FormatKind as K, InputLimits, detect, read_head};

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn every_corpus_file_is_detected_as_its_real_kind() {
    let mut expected: Vec<(String, K)> = Vec::new();
    for dir in ["chrome_json", "kineto", "kineto/param_dlrm_8rank"] {
        for e in std::fs::read_dir(corpus(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() {
                expected.push((
                    format!("{dir}/{}", p.file_name().unwrap().to_string_lossy()),
                    K::ChromeJson,
                ));
            }
        }
    }
    for e in std::fs::read_dir(corpus("perfetto")).unwrap() {
        let p = e.unwrap().path();
        expected.push((
            format!("perfetto/{}", p.file_name().unwrap().to_string_lossy()),
            K::PerfettoProtobuf,
        ));
    }
    expected.extend([
        (
            "nsys/apax_rtx4070_nsys2026.1.nsys-rep".to_string(),
            K::NsightReport,
        ),
        (
            "nsys/flameox_smoke_nsys2025.5.2.sqlite".to_string(),
            K::NsightSqlite,
        ),
        (
            "nsys/pipit_cloverleaf_a100_nsys2024.5.sqlite".to_string(),
            K::NsightSqlite,
        ),
        (
            "nsys/pipit_saxpy_mpi_a100_nsys2022.2.sqlite".to_string(),
            K::NsightSqlite,
        ),
        (
            "stacks/flamegraph_perf-vertx-stacks-01-collapsed-all.folded.txt".to_string(),
            K::FoldedStacks,
        ),
        (
            "stacks/pyspy_workload.folded.txt".to_string(),
            K::FoldedStacks,
        ),
        (
            "stacks/flamegraph_perf-vertx-stacks-01.perf-script.txt".to_string(),
            K::Unknown,
        ),
        ("stacks/perf_mixed.perf-script.txt".to_string(), K::Unknown),
        ("stacks/go1.19_allocs.pprof.pb.gz".to_string(), K::Pprof),
        ("stacks/go1.19_cpu.pprof.pb.gz".to_string(), K::Pprof),
        (
            "stacks/node20_work.cpuprofile".to_string(),
            K::ChromeCpuProfile,
        ),
        (
            "stacks/pyspy_workload.speedscope.json".to_string(),
            K::SpeedscopeJson,
        ),
        (
            "stacks/speedscope_firefox59_devtools_recording.json".to_string(),
            K::GeckoProfile,
        ),
        (
            "misc/rocprofv3_908_results.json.gz".to_string(),
            K::RocprofJson,
        ),
        ("linux/tracecmd_sched.dat".to_string(), K::TraceCmd),
        (
            "linux/perf_mixed_cpuclock_callchains.perf.data".to_string(),
            K::PerfData,
        ),
        (
            "linux/perf_sched_tracepoints.perf.data".to_string(),
            K::PerfData,
        ),
        // XSpace starts with field-1 records as Perfetto does; the field
        // walk tells them apart (issue 48: it was imported as 0 events).
        ("misc/jax0.10_cpu_mlp.xplane.pb".to_string(), K::XPlane),
        (
            "misc/jax_te_fused_attn_934987a2fc2f.xplane.pb".to_string(),
            K::XPlane,
        ),
        ("misc/pyperf_bench.json".to_string(), K::PyperfJson),
        ("misc/coverage_workload.json".to_string(), K::CoverageJson),
        ("linux/ftrace_sched_raw.txt".to_string(), K::FtraceText),
        (
            "linux/go1.19_runtime_execution.trace".to_string(),
            K::GoTrace,
        ),
        ("misc/memray_workload_native.bin".to_string(), K::Memray),
    ]);
    let mut failures = Vec::new();
    for (rel, kind) in &expected {
        let path = corpus(rel);
        let head = read_head(&path, &InputLimits::default(), 64 * 1024).unwrap();
        let d = detect(&head, path.file_name().and_then(|n| n.to_str()));
        if d.kind != *kind {
            failures.push(format!(
                "{rel}: got {:?} ({}), want {kind:?}",
                d.kind, d.reason
            ));
        }
        if rel.starts_with("kineto") {
            assert_eq!(d.producer_hint.as_deref(), Some("torch.profiler"), "{rel}");
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    let py = read_head(
        &corpus("chrome_json/pyspy_workload.chrometrace.json"),
        &InputLimits::default(),
        65536,
    )
    .unwrap();
    assert_eq!(detect(&py, None).producer_hint.as_deref(), Some("py-spy"));
}
