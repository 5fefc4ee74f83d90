//! Run sets and `analyze compare` through the real binary, on pyperf runs
//! generated from known distributions: per block a level drawn from ±20 %,
//! per sample 3 % log-normal noise, the candidate a true 10 % faster, equal
//! or 10 % slower (one file per block per variant, imported with
//! `--variant` and `--param block=i`). The decisions must be what
//! `docs/statistics.md` predicts; validity follows the pair count; a
//! single pair adds the exploratory sample-level comparison; sets are
//! frozen (same selection → same id, record bytes unchanged); results and
//! records are deterministic with stable digests.

use flameox_tests::Project;
use flameox_tests::generated_runs::{Noise, import_run, pyperf_json, samples, write_file};
use serde_json::Value;

const BLOCKS: usize = 6;
const BENCH: &str = "pyperf.work";

/// Imports `BLOCKS` baseline runs (variant `base`) and candidate runs
/// (variant `cand`) whose true ratio is `ratio`; returns both run lists.
fn generate(project: &Project, ratio: f64, seed: u64, blocks: usize) -> (Vec<String>, Vec<String>) {
    let mut noise = Noise::new(seed);
    let (mut base, mut cand) = (Vec::new(), Vec::new());
    for block in 0..blocks {
        let level = 1e-3 * (0.2 * (2.0 * noise.uniform() - 1.0)).exp();
        for (variant, factor, out) in [("base", 1.0, &mut base), ("cand", ratio, &mut cand)] {
            let values = samples(&mut noise, level * factor, 5, 0.03);
            let file = write_file(
                project,
                &format!("{variant}-{block}.json"),
                &pyperf_json("work", &values),
            );
            out.push(import_run(
                project,
                &[file],
                variant,
                &[("block", block.to_string())],
            ));
        }
    }
    (base, cand)
}

fn freeze(project: &Project, args: &[&str]) -> Value {
    let mut all = vec!["runs", "freeze"];
    all.extend_from_slice(args);
    project.json(&all)
}

fn compare(project: &Project, base: &str, cand: &str) -> Value {
    project.json(&[
        "analyze", "compare", cand, base, "--metric", BENCH, "--seed", "7",
    ])
}

#[test]
fn known_speedup_no_change_and_regression_get_the_documented_decisions() {
    for (ratio, seed, expected) in [
        (0.9, 11, &["improvement"][..]),
        (1.0, 12, &["no_meaningful_difference", "inconclusive"][..]),
        (1.1, 13, &["regression"][..]),
    ] {
        let project = Project::new();
        let (base_runs, cand_runs) = generate(&project, ratio, seed, BLOCKS);
        let base = freeze(&project, &["--variant", "base"]);
        let cand = freeze(&project, &["--variant", "cand"]);
        assert_eq!(base["created"], true);
        let base_id = base["run_set"]["run_set_id"].as_str().unwrap().to_owned();
        let cand_id = cand["run_set"]["run_set_id"].as_str().unwrap().to_owned();
        assert_eq!(base["run_set"]["pairing_key"], "block_parameter");
        let members = base["run_set"]["members"].as_array().unwrap();
        assert_eq!(members.len(), BLOCKS);
        let mut ids: Vec<String> = members
            .iter()
            .map(|m| m["run_id"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        let mut expected_ids = base_runs.clone();
        expected_ids.sort();
        assert_eq!(ids, expected_ids);
        assert_eq!(cand_runs.len(), BLOCKS);

        let result = compare(&project, &base_id, &cand_id);
        let decision = result["decision"].as_str().unwrap();
        assert!(expected.contains(&decision), "ratio {ratio}: {result:#}");
        assert_eq!(result["validity"], "valid", "{result:#}");
        assert_eq!(result["pairing"]["method"], "block_parameter");
        assert_eq!(result["pairing"]["pairs"].as_array().unwrap().len(), BLOCKS);
        assert!(result["sample_level"].is_null());
        // The estimate is near the truth and the interval holds it.
        let change = result["estimate"]["relative_change"].as_f64().unwrap();
        assert!((change - (ratio - 1.0)).abs() < 0.03, "{change} vs {ratio}");
        let ci = &result["estimate"]["relative_interval"];
        assert!(ci["lower"].as_f64().unwrap() <= change && change <= ci["upper"].as_f64().unwrap());
        // Each pair's log ratio is recomputed from its two statistics.
        for pair in result["pairing"]["pairs"].as_array().unwrap() {
            let b = pair["baseline_statistic"].as_f64().unwrap();
            let c = pair["candidate_statistic"].as_f64().unwrap();
            assert!((pair["log_ratio"].as_f64().unwrap() - (c / b).ln()).abs() < 1e-12);
        }
        assert_eq!(result["baseline"]["attempted"], BLOCKS);
        assert_eq!(result["baseline"]["failed"], 0);
        assert_eq!(result["unit"], "ns");
        let checks = result["compatibility"].as_array().unwrap();
        let collector = checks
            .iter()
            .find(|c| c["check"] == "collector_name")
            .unwrap();
        assert_eq!(collector["status"], "consistent");
        assert_eq!(result["profile_changes"]["status"], "unavailable");
    }
}

#[test]
fn few_pairs_are_exploratory_and_one_pair_adds_the_sample_level_comparison() {
    let project = Project::new();
    let (base, cand) = generate(&project, 0.8, 21, 2);
    let b = freeze(&project, &["--variant", "base"]);
    let c = freeze(&project, &["--variant", "cand"]);
    let two = compare(
        &project,
        b["run_set"]["run_set_id"].as_str().unwrap(),
        c["run_set"]["run_set_id"].as_str().unwrap(),
    );
    assert_eq!(two["validity"], "exploratory");
    assert_eq!(two["decision"], "inconclusive");
    assert!(
        two["validity_reasons"][0]
            .as_str()
            .unwrap()
            .contains("2 pair")
    );
    assert_eq!(two["sample_level"]["validity"], "exploratory");

    // Run ids are one-element run sets: one pair.
    let one = compare(&project, &base[0], &cand[0]);
    assert_eq!(one["validity"], "exploratory");
    assert_eq!(one["pairing"]["pairs"].as_array().unwrap().len(), 1);
    assert!(one["baseline"]["run_set_id"].is_null());
    let sample = &one["sample_level"];
    assert_eq!(sample["baseline_samples"], 5);
    assert_eq!(sample["candidate_samples"], 5);
    assert_eq!(sample["validity"], "exploratory");
    let change = sample["relative_change"].as_f64().unwrap();
    assert!((change + 0.2).abs() < 0.06, "{sample}");
    assert!(sample["relative_interval"]["lower"].as_f64().unwrap() <= change);
}

#[test]
fn sets_are_frozen_results_deterministic_and_records_idempotent() {
    let project = Project::new();
    let (base, _cand) = generate(&project, 0.9, 31, 3);
    let first = freeze(&project, &["--variant", "base"]);
    let id = first["run_set"]["run_set_id"].as_str().unwrap().to_owned();
    let path = project
        .path()
        .join(format!(".flameox/records/run_sets/{id}.json"));
    let bytes = std::fs::read(&path).expect("run set record");
    let again = freeze(&project, &["--variant", "base"]);
    assert_eq!(again["created"], false);
    assert_eq!(again["run_set"], first["run_set"]);
    // A new matching run changes a new freeze, never the frozen set.
    let extra = write_file(
        &project,
        "extra.json",
        &pyperf_json("work", &[1e-3, 1.1e-3, 0.9e-3]),
    );
    import_run(&project, &[extra], "base", &[("block", "9".into())]);
    let later = freeze(&project, &["--variant", "base"]);
    assert_ne!(later["run_set"]["run_set_id"].as_str().unwrap(), id);
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    let shown = project.json(&["evidence", "get", &format!("run_set:{id}")]);
    assert_eq!(shown["record"]["members"].as_array().unwrap().len(), 3);
    // Explicit ids with a filter they fail are refused by name.
    let err = project.json_err(
        &["runs", "freeze", &base[0], "--variant", "cand"],
        "INVALID_ARGUMENTS",
        2,
    );
    assert!(err["message"].as_str().unwrap().contains(&base[0]));
    project.json_err(&["runs", "freeze"], "INVALID_ARGUMENTS", 2);

    let c = freeze(&project, &["--variant", "cand"]);
    let cand_id = c["run_set"]["run_set_id"].as_str().unwrap().to_owned();
    let args = [
        "analyze", "compare", &cand_id, &id, "--metric", BENCH, "--json",
    ];
    let once = project.run(&args);
    let twice = project.run(&args);
    assert!(once.status.success());
    assert_eq!(once.stdout, twice.stdout, "same commit and parameters");
    let reseeded = project.run(&[
        "analyze", "compare", &cand_id, &id, "--metric", BENCH, "--seed", "99", "--json",
    ]);
    assert_ne!(
        once.stdout, reseeded.stdout,
        "the seed reaches the bootstrap"
    );

    let record_args = [
        "analyze",
        "record-comparison",
        &cand_id,
        &id,
        "--metric",
        BENCH,
    ];
    let recorded = project.json(&record_args);
    assert_eq!(recorded["created"], true);
    let record = &recorded["record"];
    let result: Value = serde_json::from_slice(&once.stdout).unwrap();
    assert_eq!(record["result"], result);
    // The digest is over the in-memory result (serde_json's default float
    // parsing is not exact, so a parsed copy may differ in the last bit):
    // recompute it from the same engine call, in process.
    assert_eq!(
        record["result_digest"].as_str().unwrap(),
        in_process_digest(&project, &id, &cand_id)
    );
    assert_eq!(record["commit_id"], result["commit_id"]);
    assert_eq!(record["inputs"]["base"], id);
    let repeat = project.json(&record_args);
    assert_eq!(repeat["created"], false);
    assert_eq!(repeat["record"], recorded["record"]);
    let record_id = record["record_id"].as_str().unwrap();
    let got = project.json(&["evidence", "get", &format!("comparison:{record_id}")]);
    assert_eq!(got["record"]["result_digest"], record["result_digest"]);
}

fn in_process_digest(project: &Project, base: &str, cand: &str) -> String {
    use flameox_engine::services::QueryContext;
    use flameox_engine::services::compare::{CompareRequest, compare_run_sets};
    let ws = flameox_engine::Workspace::open(&project.path().join(".flameox")).unwrap();
    let request = CompareRequest {
        base: base.to_owned(),
        target: cand.to_owned(),
        metric: Some(BENCH.to_owned()),
        ..Default::default()
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let result = runtime
        .block_on(compare_run_sets(&QueryContext::new(&ws), &request))
        .unwrap();
    flameox_engine::fsutil::digest_json(&serde_json::to_value(&result).unwrap())
}

#[test]
fn incompatible_or_unpaired_inputs_are_typed_errors_and_failures_are_counted() {
    let project = Project::new();
    let (base, cand) = generate(&project, 0.9, 41, 3);
    // A metric only one side has.
    let hyper = project.json(&[
        "import",
        flameox_tests::repo_root()
            .join("tests/fixtures/benchmarks/hyperfine/hyperfine_basic.json")
            .to_str()
            .unwrap(),
    ]);
    let hyper_run = hyper["run_id"].as_str().unwrap();
    let err = project.json_err(
        &["analyze", "compare", hyper_run, &base[0]],
        "COMPARISON_INVALID",
        6,
    );
    assert!(
        err["details"]["baseline_metrics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m == BENCH)
    );
    project.json_err(
        &[
            "analyze",
            "compare",
            &cand[0],
            &base[0],
            "--metric",
            "pyperf.nope",
        ],
        "COMPARISON_INVALID",
        6,
    );
    for (flag, value) in [("--threshold", "1.5"), ("--confidence", "1")] {
        let e = project.json_err(
            &["analyze", "compare", &cand[0], &base[0], flag, value],
            "INVALID_ARGUMENTS",
            2,
        );
        assert!(!e["remediation"].as_array().unwrap().is_empty(), "{e}");
    }
    // A polarity that does not exist: a usage error naming the two that do.
    let out = project.run(&[
        "analyze",
        "compare",
        &cand[0],
        &base[0],
        "--polarity",
        "faster",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("higher_is_better"), "{stderr}");
    project.json_err(
        &[
            "analyze",
            "compare",
            &cand[0],
            "rs_00000000000000000000000000000000",
        ],
        "RUN_NOT_FOUND",
        1,
    );
    // A failed import in the candidate set is attempted, failed, left out.
    let broken = write_file(
        &project,
        "broken.json",
        "{\"version\": \"1.0\", \"benchmarks\": [",
    );
    let out = project.run(&[
        "import",
        broken.to_str().unwrap(),
        "--kind",
        "pyperf_json",
        "--variant",
        "cand",
        "--param",
        "block=7",
        "--json",
    ]);
    assert!(!out.status.success());
    let failure: Value = serde_json::from_slice(&out.stdout).unwrap();
    let failed_run = failure["run_id"]
        .as_str()
        .expect("failed run id")
        .to_owned();
    let b = freeze(&project, &["--variant", "base"]);
    let c = freeze(&project, &["--variant", "cand"]);
    let members = c["run_set"]["members"].as_array().unwrap();
    assert!(
        members
            .iter()
            .any(|m| m["run_id"] == failed_run.as_str() && m["failed"] == true)
    );
    let result = compare(
        &project,
        b["run_set"]["run_set_id"].as_str().unwrap(),
        c["run_set"]["run_set_id"].as_str().unwrap(),
    );
    assert_eq!(result["candidate"]["attempted"], 4);
    assert_eq!(result["candidate"]["failed"], 1);
    assert_eq!(result["candidate"]["failed_runs"][0], failed_run.as_str());
    assert_eq!(result["candidate"]["used"], 3);
    assert_eq!(result["pairing"]["pairs"].as_array().unwrap().len(), 3);
}
