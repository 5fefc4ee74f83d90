//! `analyze gpu-diagnosis` and the diagnoses `summarize_target` names,
//! through the real binary: copies, host waits and launch geometry against
//! SQL over the Nsight exports; collectives against a walk of the Kineto
//! JSON; ranks side by side on a generated 64-rank job with one slowed
//! rank (its own GPU work, or a late host) against the generator's exact
//! timing model, and on the corpus's 8-rank DLRM job.

use std::path::Path;

use flameox_benches::nccl_job::{NcclJobSpec, SlowCause, nccl_job_truth, write_nccl_job};
use flameox_tests::{Project, corpus, corpus_json, micros_to_ns};
use serde_json::Value;

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("an integer, got {v}"))
}

fn sql_row(db: &Path, query: &str) -> Vec<i64> {
    let c = rusqlite::Connection::open(db).expect("export");
    c.query_row(query, [], |r| {
        (0..r.as_ref().column_count())
            .map(|i| r.get::<_, Option<i64>>(i).map(|v| v.unwrap_or(0)))
            .collect()
    })
    .expect("query")
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn copies_and_host_waits_match_sql_over_the_cloverleaf_export() {
    let db = corpus().join("nsys/pipit_cloverleaf_a100_nsys2024.5.sqlite");
    let project = Project::new();
    let run = project.import_path(&db);
    let a = project.json(&["analyze", "gpu-diagnosis", &run, "--section", "copies"]);
    let c = &a["copies"];
    // Memory kind 0 is pageable host memory.
    let pageable = sql_row(
        &db,
        "select count(*), sum(bytes), sum(end - start) from CUPTI_ACTIVITY_KIND_MEMCPY where srcKind = 0 or dstKind = 0",
    );
    assert_eq!(
        [
            c["pageable_copies"].clone(),
            c["pageable_bytes"].clone(),
            c["pageable_ns"].clone()
        ]
        .map(|v| int(&v)),
        [pageable[0], pageable[1], pageable[2]]
    );
    // Host-to-device copies against the A100's PCIe 4.0 x16 (31.5 GB/s a
    // direction): bytes over time from SQL, and its share of the link.
    let h2d = sql_row(
        &db,
        "select sum(bytes), sum(end - start) from CUPTI_ACTIVITY_KIND_MEMCPY where copyKind = 1",
    );
    let row = c["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["direction"] == "H2D")
        .expect("an H2D row");
    assert_eq!(row["link"]["link"], "PCIe 4.0 x16", "{row}");
    let rate = h2d[0] as f64 / h2d[1] as f64;
    let share = row["pct_of_link"].as_f64().expect("pct_of_link");
    assert!(
        (share - rate * 100.0 / 31.5).abs() <= 0.005,
        "{rate} GB/s vs {row}"
    );
    let calls = |name: &str| {
        sql_row(
            &db,
            &format!(
                "select count(*), sum(r.end - r.start) from CUPTI_ACTIVITY_KIND_RUNTIME r join StringIds s on r.nameId = s.id where s.value = '{name}' or s.value like '{name}\\_v%' escape '\\'"
            ),
        )
    };
    let w = &c["host_waits"][0];
    let syncs = calls("cudaDeviceSynchronize");
    let launches = calls("cudaLaunchKernel");
    let copies = calls("cudaMemcpy");
    assert_eq!(int(&w["sync_calls"]), syncs[0]);
    assert_eq!(int(&w["sync_ns"]), syncs[1]);
    assert_eq!(int(&w["kernel_launches"]), launches[0]);
    assert_eq!(int(&w["synchronous_copies"]), copies[0]);
    assert!(
        syncs[0] > 1000 && syncs[0] == launches[0],
        "{syncs:?} {launches:?}"
    );
    // The rules: one synchronize per launch, 225 MB through pageable memory.
    let summary = project.json(&["analyze", "summary", &run]);
    let rules: Vec<&str> = summary["gpu"]["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .filter_map(|d| d["rule"].as_str())
        .collect();
    assert!(rules.contains(&"sync_after_launches"), "{rules:?}");
    assert!(rules.contains(&"pageable_copies"), "{rules:?}");
    assert!(!rules.contains(&"straggler_rank"), "{rules:?}");
    assert_eq!(summary["next"][0]["operation"], "analyze_gpu_diagnosis");
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn launch_geometry_matches_sql_and_flags_the_two_block_saxpy() {
    let db = corpus().join("nsys/pipit_saxpy_mpi_a100_nsys2022.2.sqlite");
    let project = Project::new();
    let run = project.import_path(&db);
    let a = project.json(&["analyze", "gpu-diagnosis", &run, "--section", "geometry"]);
    let d = &a["geometry"][0];
    let sms = sql_row(&db, "select smCount from TARGET_INFO_GPU")[0];
    let kernels = sql_row(
        &db,
        "select count(*), sum(end - start), min(gridX * gridY * gridZ), max(gridX * gridY * gridZ) from CUPTI_ACTIVITY_KIND_KERNEL",
    );
    assert_eq!(int(&d["sm_count"]), sms);
    assert_eq!(d["sm_count_source"], "device properties");
    assert_eq!(int(&d["compute_kernels"]), kernels[0]);
    assert_eq!(int(&d["compute_ns"]), kernels[1]);
    // Every saxpy launch ran 2 blocks on 108 SMs.
    assert_eq!((kernels[2], kernels[3]), (2, 2));
    assert_eq!(int(&d["underfilled_kernels"]), kernels[0]);
    assert_eq!(int(&d["underfilled_ns"]), kernels[1]);
    let shape = &d["shapes"][0];
    assert_eq!(int(&shape["blocks"]), 2);
    assert!((shape["blocks_per_sm"].as_f64().expect("ratio") - 2.0 / sms as f64).abs() < 1e-12);
    assert!(a["summary"].is_null(), "the JSON is the result itself");
    let text = project.run(&["analyze", "gpu-diagnosis", &run]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.starts_with("GPU diagnosis of") && text.contains("fewer blocks than its 108 SMs"),
        "{text}"
    );
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn collectives_match_a_walk_of_the_nccl_trace() {
    let file = "kineto/hta_nccl_a100_rank0of2.json.gz";
    let trace = corpus_json(file);
    // (elements, count, Σ dur ns) per all-reduce message, from the args.
    let mut oracle: std::collections::BTreeMap<i64, (i64, i64)> = Default::default();
    for e in trace["traceEvents"].as_array().expect("events") {
        let args = &e["args"];
        if e["cat"] == "kernel" && args["Collective name"] == "allreduce" {
            let n = int(&args["In msg nelems"]);
            let slot = oracle.entry(n * 4).or_default();
            slot.0 += 1;
            slot.1 += micros_to_ns(&e["dur"]);
        }
    }
    assert!(oracle.len() >= 3, "{oracle:?}");
    let project = Project::new();
    let run = project.import_path(&corpus().join(file));
    let a = project.json(&[
        "analyze",
        "gpu-diagnosis",
        &run,
        "--section",
        "collectives",
        "--limit",
        "100",
    ]);
    let rows = a["collectives"]["rows"].as_array().expect("rows");
    let mut seen = 0;
    for row in rows.iter().filter(|r| r["collective"] == "allreduce") {
        let bytes = int(&row["bytes"]);
        let (count, time) = oracle.get(&bytes).copied().unwrap_or_default();
        assert_eq!(
            (int(&row["count"]), int(&row["time_ns"])),
            (count, time),
            "{row}"
        );
        assert_eq!(row["read_from"], "args");
        assert_eq!(int(&row["group_size"]), 2);
        // Two ranks: bus bandwidth = algorithm bandwidth = S / median.
        let algbw = bytes as f64 / int(&row["median_ns"]) as f64;
        assert!((row["busbw_gb_per_s"].as_f64().expect("busbw") - algbw).abs() < 1e-9);
        seen += 1;
    }
    assert_eq!(seen, oracle.len());
}

/// The generated job, imported as one run.
fn generated_job(project: &Project, dir: &Path, spec: &NcclJobSpec) -> String {
    write_nccl_job(spec, dir).expect("generate the job");
    project.import_path(dir)
}

fn check_slowed_rank(cause: SlowCause, slow: u64, words: &str) {
    let spec = NcclJobSpec {
        ranks: 64,
        steps: 4,
        slow_rank: Some(slow),
        slow_factor: 1.6,
        slow_cause: cause,
        ..NcclJobSpec::default()
    };
    let truth = nccl_job_truth(&spec);
    let tmp = tempfile::tempdir().expect("tmp");
    let project = Project::new();
    let run = generated_job(&project, tmp.path(), &spec);
    let a = project.json(&["analyze", "gpu-diagnosis", &run, "--section", "ranks"]);
    let ranks = &a["ranks"];
    assert_eq!(int(&ranks["ranks_total"]), 64);
    assert_eq!(int(&ranks["matched_collectives"]), 4);
    assert_eq!(ranks["clocks_comparable"], true);
    let h = &ranks["holders"][0];
    assert_eq!(int(&h["rank"]), slow as i64, "{ranks}");
    assert_eq!(int(&h["times_last"]), 4);
    assert_eq!(h["cause"], words, "{h}");
    // Late = Σ over steps of (its start − the median rank's start).
    let mut late = 0i64;
    for k in 0..4 {
        let mut starts: Vec<i64> = (0..64)
            .map(|r| truth.get(r, k).expect("rank step").allreduce_start_ns as i64)
            .collect();
        starts.sort();
        late += truth.get(slow, k).expect("slow").allreduce_start_ns as i64 - starts[32];
    }
    assert!(
        (int(&h["late_ns"]) - late).abs() <= 8,
        "{} vs {late}",
        h["late_ns"]
    );
    // Every shown rank's wait is the model's, to the ns (±1 per step).
    for row in ranks["rows"].as_array().expect("rows") {
        let r = int(&row["rank"]) as u64;
        let wait: i64 = (0..4)
            .map(|k| truth.get(r, k).expect("step").wait_ns as i64)
            .sum();
        assert!((int(&row["wait_ns"]) - wait).abs() <= 8, "rank {r}: {row}");
    }
    let verdict = ranks["verdict"].as_str().expect("verdict");
    assert!(
        verdict.starts_with(&format!("rank {slow} arrived last at 4 of 4")),
        "{verdict}"
    );
    // The summary's first diagnosis names the straggler.
    let summary = project.json(&["analyze", "summary", &run]);
    let first = &summary["gpu"]["diagnoses"][0];
    assert_eq!(first["rule"], "straggler_rank", "{}", summary["gpu"]);
    // Bounded: the whole default answer for 64 ranks stays small.
    let all = project.json(&["analyze", "gpu-diagnosis", &run]);
    let bytes = serde_json::to_string(&all).expect("json").len();
    assert!(bytes <= 20_000, "{bytes} bytes for 64 ranks");
}

#[test]
fn a_rank_slowed_by_its_own_kernels_is_named_with_its_cause() {
    check_slowed_rank(SlowCause::Compute, 37, "own GPU work");
}

#[test]
fn a_rank_slowed_by_its_host_is_named_with_its_cause() {
    check_slowed_rank(SlowCause::Host, 11, "host launched late");
}

#[test]
fn alike_ranks_have_no_straggler_diagnosis() {
    let spec = NcclJobSpec {
        ranks: 8,
        steps: 4,
        ..NcclJobSpec::default()
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let project = Project::new();
    let run = generated_job(&project, tmp.path(), &spec);
    let a = project.json(&["analyze", "gpu-diagnosis", &run]);
    let rules: Vec<&str> = a["diagnoses"]
        .as_array()
        .expect("diagnoses")
        .iter()
        .filter_map(|d| d["rule"].as_str())
        .collect();
    assert!(
        !rules.contains(&"straggler_rank"),
        "{rules:?}: {}",
        a["ranks"]
    );
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn the_dlrm_job_waits_on_rank_7() {
    let project = Project::new();
    let run = project.import_path(&corpus().join("kineto/param_dlrm_8rank"));
    let a = project.json(&["analyze", "gpu-diagnosis", &run, "--section", "ranks"]);
    let ranks = &a["ranks"];
    assert_eq!(int(&ranks["ranks_total"]), 8);
    // The first all-to-all ends within a few µs on every rank: one clock.
    assert!(int(&ranks["end_spread_median_ns"]) < 10_000, "{ranks}");
    assert_eq!(int(&ranks["holders"][0]["rank"]), 7, "{ranks}");
}
