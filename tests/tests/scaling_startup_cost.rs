//! A real workload with a real start-up cost: `tests/workloads/pair_count.py`
//! does exactly 2·n² loop iterations after Python's own start-up (tens of
//! ms of CPU, most of the time at the smallest size). Declared over
//! n = 250 … 4000 (16×, what `experiment plan` asks for) with 3 blocks and
//! measured by `cpu_time`, `analyze scaling` must fit the fixed cost, state
//! an exponent interval that holds 2, name a quadratic conclusion, and say
//! that the exponent is poorly determined at the small sizes. Planned again,
//! the earlier trials' fixed cost makes `experiment plan` warn that n = 250
//! runs for less than ten times it; a narrower declaration gets the 8×
//! warning with a doubling ladder.
//!
//! The experiment asks for 99.5 % intervals: this is real timing on a
//! shared machine, and a 95 % interval misses the truth in 1 run of 20 by
//! design (CI saw k = 1.950 [1.903, 1.999] once). The 95 % coverage itself
//! is proven on simulated data (`stats_simulation`).

use flameox_tests::{Project, repo_root};
use serde_json::Value;

fn config(sizes: &str) -> String {
    let script = repo_root().join("tests/workloads/pair_count.py");
    format!(
        r#"
[workloads.pairs_py]
argv = ["python3", "{script}", "{{n}}"]
timeout_seconds = 120
parameters = {{ n = {sizes} }}
oracle = {{ stdout_contains = "pairs" }}

[experiments.startup_scaling]
workload = "pairs_py"
scaling = {{ parameter = "n", values = {sizes} }}
repetitions = 3
seed = 11
primary_metric = "cpu_time"
polarity = "lower_is_better"
practical_threshold = 0.05
confidence_level = 0.995
"#,
        script = script.display(),
    )
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn quadratic_growth_is_recognized_through_pythons_start_up() {
    let project = Project::bare();
    std::fs::write(
        project.path().join("flameox.toml"),
        config("[250, 500, 1000, 2000, 4000]"),
    )
    .unwrap();
    assert!(project.run(&["init"]).status.success());
    let plan = project.json(&["experiment", "plan", "startup_scaling"]);
    assert!(
        plan.get("design_warnings").is_none(),
        "16× is enough: {plan}"
    );
    let experiment = project.json(&["experiment", "run", "startup_scaling"]);
    assert_eq!(experiment["status"], "completed", "{experiment}");
    let id = experiment["experiment_id"].as_str().unwrap();
    let scaling = project.json(&["analyze", "scaling", id]);
    let fit = &scaling["variants"][0]["fit"];
    eprintln!(
        "conclusion {} growth {} plain {} notes {}",
        fit["conclusion"], fit["growth_exponent"], fit["power_law_exponent"], fit["notes"]
    );
    let growth = &fit["growth_exponent"];
    assert_eq!(growth["model"], "offset_power_law", "{fit}");
    assert_eq!(growth["confidence_level"], 0.995, "{fit}");
    let (lower, upper) = (f(&growth["lower"]), f(&growth["upper"]));
    assert!(
        lower <= 2.0 && 2.0 <= upper,
        "k interval [{lower}, {upper}] misses 2: {fit}"
    );
    let conclusion = &fit["conclusion"];
    let named = match conclusion["status"].as_str() {
        Some("best") => &conclusion["model"],
        _ => &conclusion["best"],
    };
    assert!(
        named == "n_squared" || named == "offset_power_law",
        "not a quadratic conclusion: {conclusion}"
    );
    let offset = &fit["offset_power_law"];
    let share_at_smallest = f(&offset["fixed_cost_share"][0]["share"]);
    assert!(
        share_at_smallest > 0.25,
        "Python's start-up is most of n = 250: {offset}"
    );
    assert_eq!(offset["exponent_poorly_determined"], true);
    let notes: Vec<&str> = fit["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    assert!(
        notes.iter().any(|n| n.contains("poorly determined")),
        "{notes:?}"
    );
    // Planned again, the earlier trials have measured Python's start-up:
    // at n = 250 a trial is mostly that fixed cost.
    let replanned = project.json(&["experiment", "plan", "startup_scaling"]);
    let warnings = replanned["design_warnings"]
        .as_array()
        .expect("{replanned}");
    let fixed = warnings
        .iter()
        .find(|w| w["code"] == "fixed_cost_dominates")
        .unwrap_or_else(|| panic!("no fixed-cost warning: {replanned}"));
    let start = f(&fixed["proposed_values"][0]);
    assert!(start > 250.0, "{fixed}");
    // The issue's design (4×) is warned about, with sizes to declare.
    std::fs::write(
        project.path().join("flameox.toml"),
        config("[1000, 2000, 4000]"),
    )
    .unwrap();
    let narrow = project.json(&["experiment", "plan", "startup_scaling"]);
    let warning = &narrow["design_warnings"][0];
    assert_eq!(warning["code"], "narrow_size_range", "{narrow}");
    assert_eq!(
        warning["proposed_values"],
        serde_json::json!([1000, 2000, 4000, 8000, 16000])
    );
}
