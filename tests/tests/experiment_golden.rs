//! The end-to-end golden experiment: a real Perl workload
//! (`tests/workloads/pair_count.pl`, O(n²) in both variants, `half` doing
//! half the inner-loop work of `full`) declared in a temp project's
//! `flameox.toml`, run through the CLI binary as
//! `init → experiment run → analyze scaling <experiment> → analyze compare
//! <base set> <candidate set>`. Scaling must recognize each variant as
//! quadratic (`golden_experiment::assert_quadratic`); compare must call
//! `half` an improvement over `full` (the first declared variant is the
//! baseline).
//! `experiment_golden_mcp.rs` is the same experiment through MCP.

use flameox_tests::Project;
use flameox_tests::golden_experiment::{SIZES, assert_quadratic, config};

#[test]
fn cli_experiment_scaling_names_n_squared_and_compare_finds_the_improvement() {
    let project = Project::bare();
    std::fs::write(project.path().join("flameox.toml"), config()).unwrap();
    assert!(project.run(&["init"]).status.success());
    let started = std::time::Instant::now();
    let experiment = project.json(&["experiment", "run", "pairs_scaling"]);
    eprintln!("experiment run took {:?}", started.elapsed());
    assert_eq!(experiment["status"], "completed", "{experiment}");
    let outcome = &experiment["outcome"];
    assert_eq!(outcome["counts"]["attempted"], 30);
    assert_eq!(outcome["counts"]["completed"], 30);
    let sets = outcome["run_sets"].as_array().unwrap();
    assert_eq!(sets.len(), 2);
    assert_eq!(
        sets[0]["variant"], "full",
        "the first declared variant is the baseline"
    );
    assert_eq!(sets[0]["members"], 15);
    let id = experiment["experiment_id"].as_str().unwrap();

    let scaling = project.json(&["analyze", "scaling", id]);
    assert_eq!(scaling["parameter"], "n");
    assert_eq!(
        scaling["metric"], "cpu_time",
        "the experiment's primary metric is the default"
    );
    let variants = scaling["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 2);
    for v in variants {
        assert_eq!(v["runs"], 15, "{v}");
        assert_quadratic(v);
    }

    let base = sets[0]["run_set_id"].as_str().unwrap();
    let cand = sets[1]["run_set_id"].as_str().unwrap();
    // No settings given: the experiment's declared metric, threshold and
    // seed are the defaults of a comparison between its run sets.
    let compare = project.json(&["analyze", "compare", cand, base]);
    assert_eq!(compare["metric"], "cpu_time", "{compare}");
    assert_eq!(compare["estimate"]["practical_threshold"], 0.05);
    assert_eq!(compare["estimate"]["seed"], 7);
    assert_eq!(compare["pairing"]["method"], "experiment_block");
    // One pair per block and size: like is compared with like, the sizes
    // are not mixed inside a block.
    let pairs = compare["pairing"]["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 15, "{compare}");
    for block in 0..3 {
        for n in SIZES {
            let key = format!("{block} n={n}");
            let pair = pairs.iter().find(|p| p["block"] == key.as_str());
            let pair = pair.unwrap_or_else(|| panic!("no pair {key}: {compare}"));
            assert_eq!(pair["baseline_runs"].as_array().unwrap().len(), 1);
            assert_eq!(pair["candidate_runs"].as_array().unwrap().len(), 1);
        }
    }
    assert_eq!(
        compare["decision"], "improvement",
        "{}",
        compare["estimate"]
    );
    // The suggested comparison is the same request.
    let suggested = &outcome["analyses"]["compare"];
    assert_eq!(suggested["base"], base);
    assert_eq!(suggested["target"], cand);
}
