//! Benchmark results through the real binary: pyperf, hyperfine, criterion
//! and Google Benchmark files made by the real tools
//! (`tests/fixtures/benchmarks/README.md`) import by content, and the
//! `measurements` rows match what each file says — sample and warmup
//! counts, values recomputed here from the JSON with serde_json, units,
//! names. Re-import is idempotent; broken inputs are typed errors that
//! publish nothing.

use std::collections::BTreeMap;
use std::path::PathBuf;

use flameox_tests::{Project, repo_root};
use serde_json::Value;

fn fixture(rel: &str) -> PathBuf {
    repo_root().join("tests/fixtures/benchmarks").join(rel)
}

fn fixture_arg(rel: &str) -> String {
    fixture(rel).to_str().expect("utf-8 path").to_owned()
}

fn read_json(rel: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture(rel)).expect("fixture")).expect("fixture json")
}

/// Every measurement of `run` (warmups included), grouped by name, each
/// group in `sample_index` order.
fn rows_by_name(project: &Project, run: &str) -> BTreeMap<String, Vec<Value>> {
    let page = project.json(&[
        "measurements",
        "query",
        run,
        "--include-warmups",
        "--limit",
        "1000",
    ]);
    assert_eq!(page["truncated"], false);
    let mut out: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for row in page["rows"].as_array().expect("rows") {
        let name = row["name"].as_str().expect("name").to_owned();
        out.entry(name).or_default().push(row.clone());
    }
    for rows in out.values_mut() {
        rows.sort_by_key(|r| r["sample_index"].as_i64());
    }
    out
}

/// `(value, is_warmup)` per row, with indexes checked to run 0, 1, 2, ….
fn values(rows: &[Value], unit: &str) -> Vec<(f64, bool)> {
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            assert_eq!(r["sample_index"].as_i64(), Some(i as i64), "{r}");
            assert_eq!(r["unit"], unit, "{r}");
            (
                r["value"].as_f64().expect("value"),
                r["is_warmup"].as_bool().expect("is_warmup"),
            )
        })
        .collect()
}

fn assert_close(got: &[(f64, bool)], expected: &[(f64, bool)], what: &str) {
    assert_eq!(got.len(), expected.len(), "{what}: sample count");
    for (i, ((g, gw), (e, ew))) in got.iter().zip(expected).enumerate() {
        assert!((g - e).abs() <= e.abs() * 1e-12, "{what} #{i}: {g} != {e}");
        assert_eq!(gw, ew, "{what} #{i}: warmup flag");
    }
}

fn limitation_count(imported: &Value, code: &str) -> u64 {
    imported["limitations"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|l| l["code"] == code)
        .map(|l| l["count"].as_u64().unwrap_or(0))
        .sum()
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn pyperf_runs_keep_warmups_marked_and_values_per_loop_in_ns() {
    let project = Project::new();
    // Our fixture, and the corpus suite made with `--fast` (3 benchmarks).
    let corpus = flameox_tests::corpus().join("misc/pyperf_bench.json");
    for path in [fixture("pyperf/pyperf_suite.json"), corpus] {
        let imported = project.json(&["import", path.to_str().expect("utf-8")]);
        assert_eq!(imported["kind"], "pyperf_json");
        assert_eq!(imported["producer"], "pyperf");
        let run = imported["run_id"].as_str().expect("run");
        let suite: Value =
            serde_json::from_slice(&std::fs::read(&path).expect("suite")).expect("json");
        let by_name = rows_by_name(&project, run);
        let benchmarks = suite["benchmarks"].as_array().expect("benchmarks");
        let (mut all, mut warm) = (0u64, 0u64);
        for bench in benchmarks {
            let name = format!(
                "pyperf.{}",
                bench["metadata"]["name"].as_str().expect("name")
            );
            let mut expected = Vec::new();
            for run in bench["runs"].as_array().expect("runs") {
                // pyperf 1.0: warmups are [loops, value per loop].
                for w in run["warmups"].as_array().into_iter().flatten() {
                    expected.push((w[1].as_f64().expect("warmup") * 1e9, true));
                }
                for v in run["values"].as_array().into_iter().flatten() {
                    expected.push((v.as_f64().expect("value") * 1e9, false));
                }
            }
            assert!(expected.iter().any(|e| e.1) && expected.iter().any(|e| !e.1));
            all += expected.len() as u64;
            warm += expected.iter().filter(|e| e.1).count() as u64;
            assert_close(&values(&by_name[&name], "ns"), &expected, &name);
        }
        assert_eq!(by_name.len(), benchmarks.len());
        assert_eq!(imported["rows"]["measurements"].as_u64(), Some(all));
        // Warmups are left out unless asked for.
        let page = project.json(&["measurements", "query", run, "--limit", "1000"]);
        assert_eq!(page["total"].as_u64(), Some(all - warm));
        assert!(
            page["rows"]
                .as_array()
                .expect("rows")
                .iter()
                .all(|r| r["is_warmup"] == false)
        );
        let manifest = project.json(&["runs", "show", run]);
        assert_eq!(
            manifest["artifacts"][0]["metadata"]["pyperf"]["perf_version"],
            suite["metadata"]["perf_version"]
        );
    }
}

#[test]
fn hyperfine_times_exit_codes_and_parameters_become_rows() {
    let project = Project::new();
    for (file, nonzero) in [
        ("hyperfine/hyperfine_basic.json", 0),
        ("hyperfine/hyperfine_params.json", 0),
        ("hyperfine/hyperfine_failing.json", 3),
    ] {
        let imported = project.json(&["import", &fixture_arg(file)]);
        assert_eq!(imported["kind"], "hyperfine_json", "{file}");
        assert_eq!(limitation_count(&imported, "nonzero_exit_code"), nonzero);
        let run = imported["run_id"].as_str().expect("run");
        let export = read_json(file);
        let page = project.json(&["measurements", "query", run, "--limit", "1000"]);
        let rows = page["rows"].as_array().expect("rows");
        let mut expected_rows = 0;
        for result in export["results"].as_array().expect("results") {
            let name = format!("hyperfine.{}", result["command"].as_str().expect("command"));
            let parameters = result.get("parameters").cloned();
            let of = |n: &str| -> Vec<&Value> {
                let mut v: Vec<&Value> = rows
                    .iter()
                    .filter(|r| {
                        r["name"] == n
                            && r["parameters"] == parameters.clone().unwrap_or(Value::Null)
                    })
                    .collect();
                v.sort_by_key(|r| r["sample_index"].as_i64());
                v
            };
            let times: Vec<(f64, bool)> = result["times"]
                .as_array()
                .expect("times")
                .iter()
                .map(|t| (t.as_f64().expect("time") * 1e9, false))
                .collect();
            let got: Vec<Value> = of(&name).into_iter().cloned().collect();
            assert_close(&values(&got, "ns"), &times, &name);
            let codes: Vec<(f64, bool)> = result["exit_codes"]
                .as_array()
                .expect("exit codes")
                .iter()
                .map(|c| (c.as_f64().expect("code"), false))
                .collect();
            let got: Vec<Value> = of(&format!("{name}.exit_code"))
                .into_iter()
                .cloned()
                .collect();
            assert_close(&values(&got, "exit_code"), &codes, &name);
            expected_rows += times.len() + codes.len();
        }
        assert_eq!(page["total"].as_u64(), Some(expected_rows as u64), "{file}");
    }
}

#[test]
fn google_benchmark_iterations_are_samples_in_ns_and_aggregates_are_skipped() {
    let project = Project::new();
    let imported = project.json(&["import", &fixture_arg("gbench/gbench.json")]);
    assert_eq!(imported["kind"], "google_benchmark_json");
    assert_eq!(imported["producer"], "google-benchmark");
    let run = imported["run_id"].as_str().expect("run");
    let report = read_json("gbench/gbench.json");
    let by_name = rows_by_name(&project, run);
    let mut expected: BTreeMap<String, Vec<(f64, bool)>> = BTreeMap::new();
    let (mut aggregates, mut errors) = (0, 0);
    for b in report["benchmarks"].as_array().expect("benchmarks") {
        if b["run_type"] == "aggregate" {
            aggregates += 1;
            continue;
        }
        if b["error_occurred"] == true {
            errors += 1;
            continue;
        }
        let scale = match b["time_unit"].as_str().expect("unit") {
            "ns" => 1.0,
            "us" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            other => panic!("unit {other}"),
        };
        let run_name = b["run_name"].as_str().expect("run_name");
        for clock in ["real_time", "cpu_time"] {
            let series = expected
                .entry(format!("gbench.{run_name}.{clock}"))
                .or_default();
            assert_eq!(b["repetition_index"].as_u64(), Some(series.len() as u64));
            series.push((b[clock].as_f64().expect("time") * scale, false));
        }
    }
    assert!(aggregates > 0 && errors == 1);
    assert_eq!(limitation_count(&imported, "aggregate_skipped"), aggregates);
    assert_eq!(limitation_count(&imported, "benchmark_error"), errors);
    assert_eq!(
        by_name.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>()
    );
    for (name, series) in &expected {
        assert_close(&values(&by_name[name], "ns"), series, name);
    }
    // BM_StringCopy reports µs: stored ×1000.
    let copy = &by_name["gbench.BM_StringCopy.real_time"][0];
    assert!(copy["value"].as_f64().expect("value") > 1.0, "{copy}");
}

/// Expected per-iteration samples of every `new/` folder under `root`.
fn criterion_expected(root: &std::path::Path) -> BTreeMap<String, Vec<(f64, bool)>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("dir").flatten() {
            let path = entry.path();
            if !path.is_dir() {
                continue;
            }
            let is_measurement = path.join("benchmark.json").is_file();
            if path.file_name().is_some_and(|n| n == "new") && is_measurement {
                let read = |f: &str| -> Value {
                    serde_json::from_slice(&std::fs::read(path.join(f)).expect("file"))
                        .expect("json")
                };
                let (id, sample) = (read("benchmark.json"), read("sample.json"));
                let iters = sample["iters"].as_array().expect("iters");
                let times = sample["times"].as_array().expect("times");
                let series: Vec<(f64, bool)> = iters
                    .iter()
                    .zip(times)
                    .map(|(n, t)| (t.as_f64().expect("t") / n.as_f64().expect("n"), false))
                    .collect();
                out.insert(
                    format!("criterion.{}", id["full_id"].as_str().expect("id")),
                    series,
                );
            } else {
                stack.push(path);
            }
        }
    }
    out
}

#[test]
fn criterion_folders_give_time_per_iteration_from_new_only() {
    let project = Project::new();
    let tree = fixture("criterion");
    let expected = criterion_expected(&tree);
    assert!(expected.len() >= 2);
    // The whole tree: one artifact, every new/ folder (base/ and change/ ignored).
    let imported = project.json(&["import", tree.to_str().expect("utf-8")]);
    assert_eq!(imported["kind"], "criterion_dir");
    assert_eq!(imported["artifacts"].as_array().map(Vec::len), Some(1));
    let run = imported["run_id"].as_str().expect("run");
    let by_name = rows_by_name(&project, run);
    assert_eq!(
        by_name.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>()
    );
    for (name, series) in &expected {
        assert_close(&values(&by_name[name], "ns"), series, name);
    }
    let total: usize = expected.values().map(Vec::len).sum();
    assert_eq!(
        imported["rows"]["measurements"].as_u64(),
        Some(total as u64)
    );

    // One benchmark's new/ folder (linear sampling: 2, 4, … iterations per
    // sample, so the division matters): the same rows for that name.
    let bench = "queries_100k_rows/trace_window_page_depth_1_warm";
    let dir = tree.join(bench).join("new");
    let sample: Value =
        serde_json::from_slice(&std::fs::read(dir.join("sample.json")).expect("sample"))
            .expect("json");
    assert!(
        sample["iters"]
            .as_array()
            .expect("iters")
            .iter()
            .any(|n| n.as_f64() != Some(1.0))
    );
    let (name, series) = (
        format!("criterion.{bench}"),
        &expected[&format!("criterion.{bench}")],
    );
    let one = project.json(&["import", dir.to_str().expect("utf-8")]);
    assert_eq!(one["kind"], "criterion_dir");
    let rows = rows_by_name(&project, one["run_id"].as_str().expect("run"));
    assert_eq!(rows.len(), 1);
    assert_close(&values(&rows[&name], "ns"), series, &name);
}

#[test]
fn reimport_is_idempotent_and_broken_inputs_publish_nothing() {
    let project = Project::new();
    let file = fixture_arg("gbench/gbench.json");
    let first = project.json(&["import", &file]);
    let head = project.head();
    let ids = |run: &str| -> Vec<Value> {
        let page = project.json(&["measurements", "query", run, "--limit", "1000"]);
        page["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| r["measurement_id"].clone())
            .collect()
    };
    let before = ids(first["run_id"].as_str().expect("run"));
    let again = project.json(&["import", &file]);
    assert_eq!(again["reused_generation"], true);
    assert_eq!(again["generation_id"], first["generation_id"]);
    assert_eq!(ids(again["run_id"].as_str().expect("run")), before);
    let everything = project.json(&["measurements", "query", "--limit", "1000"]);
    assert_eq!(everything["total"].as_u64(), Some(before.len() as u64));
    assert_eq!(project.head(), head);

    for (args, code, exit) in [
        (
            vec![fixture_arg("edge/pyperf_truncated.json")],
            "ARTIFACT_PARSE_FAILED",
            5,
        ),
        (
            vec![fixture_arg("edge/pyperf_unknown_version.json")],
            "ARTIFACT_PARSE_FAILED",
            5,
        ),
        (
            vec![fixture_arg("edge/hyperfine_no_results.json")],
            "ARTIFACT_PARSE_FAILED",
            5,
        ),
        (
            vec![
                fixture_arg("edge/hyperfine_no_results.json"),
                "--kind".into(),
                "hyperfine".into(),
            ],
            "ARTIFACT_PARSE_FAILED",
            5,
        ),
        (
            vec![fixture_arg("edge/criterion_mismatch")],
            "ARTIFACT_PARSE_FAILED",
            5,
        ),
        (
            vec![fixture_arg("edge/criterion_mismatch/new/sample.json")],
            "INVALID_ARGUMENTS",
            2,
        ),
    ] {
        let mut all = vec!["import"];
        all.extend(args.iter().map(String::as_str));
        let err = project.json_err(&all, code, exit);
        assert_eq!(project.head(), head, "{args:?} published something: {err}");
    }
    let version = project.json_err(
        &["import", &fixture_arg("edge/pyperf_unknown_version.json")],
        "ARTIFACT_PARSE_FAILED",
        5,
    );
    assert!(
        version["message"]
            .as_str()
            .unwrap_or("")
            .contains("version 2.0"),
        "{version}"
    );
    let everything = project.json(&["measurements", "query", "--limit", "1000"]);
    assert_eq!(everything["total"].as_u64(), Some(before.len() as u64));
    assert_eq!(project.staging_entries(), 0);
}
