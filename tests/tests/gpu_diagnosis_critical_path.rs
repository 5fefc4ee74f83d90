//! The critical path of `analyze gpu-diagnosis` against HTA 0.5.0's
//! critical-path analysis and SQL: on the AlexNet trace's measured forward
//! pass (HTA, with its pandas-3 `fillna(inplace=True)` calls fixed, gives
//! 78,776 µs, 95.19 % CPU-bound: `docs/recipes.md`), and on the CloverLeaf
//! export, where each of its synchronize calls is a sync edge.

use flameox_tests::{Project, corpus};

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn the_alexnet_forward_pass_has_htas_critical_path() {
    let project = Project::new();
    let run = project.import_corpus("kineto/hta_alexnet_a100.pt.trace.json.gz");
    let a = project.json(&[
        "analyze",
        "gpu-diagnosis",
        &run,
        "--section",
        "critical_path",
        "--phase",
        "[param|pytorch.model.alex_net|0|0|0|measure|forward]",
    ]);
    let p = &a["critical_path"][0];
    let length = p["length_ns"].as_i64().expect("length");
    // HTA reports whole µs.
    assert!((length - 78_776_000).abs() < 1_000, "{p}");
    let cpu = p["by_bound"]
        .as_array()
        .expect("bounds")
        .iter()
        .find(|b| b["bound"] == "cpu")
        .and_then(|b| b["pct_of_path"].as_f64())
        .expect("cpu share");
    assert!((cpu - 95.19).abs() < 0.01, "{p}");
    assert_eq!(p["sync_edges"].as_i64(), Some(5), "{p}");
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn every_device_synchronize_of_cloverleaf_is_a_sync_edge() {
    let db = corpus().join("nsys/pipit_cloverleaf_a100_nsys2024.5.sqlite");
    let syncs: i64 = rusqlite::Connection::open(&db)
        .expect("export")
        .query_row(
            "select count(*) from CUPTI_ACTIVITY_KIND_RUNTIME r join StringIds s on r.nameId = s.id where s.value like 'cudaDeviceSynchronize%'",
            [],
            |r| r.get(0),
        )
        .expect("count");
    let project = Project::new();
    let run = project.import_corpus("nsys/pipit_cloverleaf_a100_nsys2024.5.sqlite");
    let a = project.json(&[
        "analyze",
        "gpu-diagnosis",
        &run,
        "--section",
        "critical_path",
    ]);
    let p = &a["critical_path"][0];
    assert_eq!(p["sync_edges"].as_i64(), Some(syncs), "{p}");
    // Synchronizing after every kernel puts the kernels on the path.
    let top = &p["by_bound"][0];
    assert_eq!(top["bound"], "gpu_compute", "{p}");
}
