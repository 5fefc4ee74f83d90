//! Theoretical occupancy in `analyze gpu-diagnosis --section geometry`,
//! through the real binary. The oracle is NVIDIA's own calculator as
//! Kineto ran it while profiling: each kernel's `est. achieved occupancy
//! %` is min(resident blocks per SM, grid blocks / SMs) × threads per
//! block over the SM's threads, rounded; so every shape of four Kineto
//! traces (V100, A100, H100, B200) must give Kineto's figure from
//! flameox's resident blocks — except where Kineto's calculator, not told
//! that a kernel opted in to more than `sharedMemPerBlock` of shared
//! memory, says 0 % for a kernel that ran: flameox must give those a
//! figure. Nsight exports state the limits
//! `TARGET_INFO_GPU` holds (SQL); an AMD MI300X trace gets no figure.

use std::path::Path;

use flameox_tests::{Project, corpus, corpus_json};
use serde_json::Value;

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number, got {v}"))
}

fn geometry(project: &Project, run: &str) -> Value {
    let a = project.json(&[
        "analyze",
        "gpu-diagnosis",
        run,
        "--section",
        "geometry",
        "--limit",
        "1000",
    ]);
    a["geometry"][0].clone()
}

/// What one Kineto trace's shapes showed.
#[derive(Default)]
struct Checked {
    compared: usize,
    opted_in: usize,
    limiters: Vec<String>,
}

fn check_against_kineto(rel: &str) -> Checked {
    let json = corpus_json(rel);
    let props = &json["deviceProperties"][0];
    let max_threads = num(&props["maxThreadsPerMultiprocessor"]);
    let per_block = num(&props["sharedMemPerBlock"]);
    let project = Project::new();
    let run = project.import_corpus(rel);
    let d = geometry(&project, &run);
    let basis = d["occupancy_basis"].as_str().unwrap_or_default();
    assert!(basis.starts_with("cc "), "{rel}: no basis: {d}");
    let sms = num(&d["sm_count"]);
    let shapes = d["shapes"].as_array().expect("shapes");
    assert_eq!(shapes.len() as u64, d["shapes_total"].as_u64().unwrap_or(0));
    let mut checked = Checked::default();
    for s in shapes {
        let Some(kineto) = s["achieved_occupancy_pct"].as_f64() else {
            continue;
        };
        let theoretical = num(&s["theoretical_occupancy_pct"]);
        assert!(theoretical > 0.0 && theoretical <= 100.0, "{s}");
        if kineto == 0.0 && num(&s["shared_memory_bytes"]) > per_block {
            checked.opted_in += 1;
            continue;
        }
        let resident = num(&s["resident_blocks_per_sm"]);
        let threads = num(&s["threads_per_block"]);
        let blocks = num(&s["blocks"]);
        let expected = resident.min(blocks / sms) * threads / max_threads * 100.0;
        assert!(
            (expected - kineto).abs() <= 0.5 + 1e-6,
            "{rel}: Kineto {kineto} %, flameox's resident blocks give {expected:.3} %: {s}"
        );
        let by = s["occupancy_limited_by"].as_str().unwrap_or_default();
        if !checked.limiters.iter().any(|l| l == by) {
            checked.limiters.push(by.to_owned());
        }
        checked.compared += 1;
    }
    checked
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn theoretical_occupancy_gives_kinetos_estimate_on_every_shape() {
    let (mut limiters_seen, mut compared, mut opted_in) = (Vec::<String>::new(), 0, 0);
    for rel in [
        "kineto/hta_alexnet_a100.pt.trace.json.gz",
        "kineto/hta_ns_resolution_v100_rank0.pt.trace.json.gz",
        "kineto/tracelens_h100_bert_small.json.gz",
        "kineto/tracelens_b200_vllm_eager_rank0of8.json.gz",
    ] {
        let c = check_against_kineto(rel);
        eprintln!(
            "{rel}: {} shapes agree with Kineto, {} opted-in shared memory; limited by {:?}",
            c.compared, c.opted_in, c.limiters
        );
        assert!(
            c.compared >= 5,
            "{rel}: only {} shapes with Kineto's estimate",
            c.compared
        );
        compared += c.compared;
        opted_in += c.opted_in;
        for l in c.limiters {
            if !limiters_seen.contains(&l) {
                limiters_seen.push(l);
            }
        }
    }
    limiters_seen.sort();
    assert!(
        compared >= 200 && opted_in >= 5,
        "{compared} shapes, {opted_in} opted in"
    );
    assert_eq!(
        limiters_seen,
        ["blocks", "registers", "shared_memory", "warps"],
        "the corpus has shapes limited by each resource"
    );
}

fn sql_limits(db: &Path) -> String {
    let c = rusqlite::Connection::open(db).expect("export");
    c.query_row(
        "select computeMajor, computeMinor, maxWarpsPerSm, maxBlocksPerSm, maxRegistersPerSm, maxShmemPerSm from TARGET_INFO_GPU order by id limit 1",
        [],
        |r| {
            Ok(format!(
                "cc {}.{}: {} warps, {} blocks, {} registers, {} B shared memory per SM",
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, i64>(4)?,
                r.get::<_, i64>(5)?
            ))
        },
    )
    .expect("query")
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn nsight_exports_state_their_sm_limits_and_amd_gets_no_figure() {
    for rel in [
        "nsys/pipit_cloverleaf_a100_nsys2024.5.sqlite",
        "nsys/flameox_smoke_nsys2025.5.2.sqlite",
    ] {
        let db = corpus().join(rel);
        let project = Project::new();
        let run = project.import_path(&db);
        let d = geometry(&project, &run);
        assert_eq!(d["occupancy_basis"], sql_limits(&db).as_str(), "{rel}");
        let shapes = d["shapes"].as_array().expect("shapes");
        assert!(!shapes.is_empty(), "{rel}");
        for s in shapes {
            let (resident, pct) = (
                num(&s["resident_blocks_per_sm"]),
                num(&s["theoretical_occupancy_pct"]),
            );
            assert!(resident >= 1.0 && pct > 0.0 && pct <= 100.0, "{rel}: {s}");
        }
        let text = project.run(&["analyze", "gpu-diagnosis", &run, "--section", "geometry"]);
        let text = String::from_utf8_lossy(&text.stdout);
        assert!(
            text.contains("theoretical occupancy (limited by) from cc ") && text.contains(" % ("),
            "{text}"
        );
    }
    // An MI300X (wavefronts of 64): shapes with grids, no occupancy.
    let project = Project::new();
    let run = project.import_corpus("kineto/tracelens_mi300x_sglang_decode_hipgraph.json.gz");
    let d = geometry(&project, &run);
    assert!(d["occupancy_basis"].is_null(), "wavefronts of 64: {d}");
    let shapes = d["shapes"].as_array().expect("shapes");
    assert!(!shapes.is_empty(), "{d}");
    for s in shapes {
        assert!(s.get("theoretical_occupancy_pct").is_none(), "{s}");
    }
}

/// "Why is this kernel slow?" asked with `--kernel`: the headline is that
/// kernel — its grid against the SMs, its occupancy and limiter — not the
/// device's other kernels.
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn the_headline_of_a_kernel_question_is_that_kernel() {
    let project = Project::new();
    let run = project.import_corpus("kineto/hta_alexnet_a100.pt.trace.json.gz");
    let first_line = |args: &[&str]| {
        let out = project.run(args);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines().next().unwrap_or_default().to_owned()
    };
    let line = first_line(&[
        "analyze",
        "gpu-diagnosis",
        &run,
        "--section",
        "geometry",
        "--kernel",
        "scudnn",
    ]);
    for part in [
        "cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1 on device 0: 2 launches",
        "3025 blocks on 108 SMs (28.0 per SM)",
        "theoretical occupancy 19 % (3 blocks of 128 threads per SM, limited by registers)",
        "Kineto's achieved estimate 19 %",
    ] {
        assert!(line.contains(part), "{part:?} not in {line}");
    }
    assert!(!line.contains("computeOffsets"), "another kernel: {line}");
    // Under the rule's 10 %, the device's underfilled kernels (0.1 % here)
    // are no headline.
    let line = first_line(&["analyze", "gpu-diagnosis", &run, "--section", "geometry"]);
    assert!(!line.contains("fewer blocks"), "{line}");
    let line = first_line(&[
        "analyze",
        "gpu-diagnosis",
        &run,
        "--kernel",
        "no_such_kernel",
    ]);
    assert!(
        line.contains("no compute kernel named like \"no_such_kernel\""),
        "{line}"
    );

    // A kernel with 213,656 B of opted-in shared memory: Kineto says 0 %,
    // and the headline says why.
    let b200 = project.import_corpus("kineto/tracelens_b200_vllm_eager_rank0of8.json.gz");
    let line = first_line(&[
        "analyze",
        "gpu-diagnosis",
        &b200,
        "--section",
        "geometry",
        "--kernel",
        "nvjet_tst_64x64",
    ]);
    assert!(
        line.contains("140 blocks on 148 SMs: 8 SMs idle while it runs")
            && line.contains("(1 block of 256 threads per SM, limited by registers)")
            && line.contains("does not see shared memory opted in past 48 KiB"),
        "{line}"
    );

    let db = corpus().join("nsys/pipit_saxpy_mpi_a100_nsys2022.2.sqlite");
    let run = project.import_path(&db);
    let line = first_line(&["analyze", "gpu-diagnosis", &run, "--kernel", "saxpy"]);
    assert!(
        line.contains("2 blocks on 108 SMs: 106 SMs idle while it runs")
            && line.contains("theoretical occupancy 100 %"),
        "{line}"
    );
}
