//! The golden experiment shared by its CLI and MCP halves
//! (`tests/tests/experiment_golden.rs`, `tests/tests/experiment_golden_mcp.rs`):
//! the `flameox.toml` declaring `tests/workloads/pair_count.py` (O(n²) in
//! both variants, `half` doing half the inner-loop work of `full`) and the
//! check that a scaling fit says quadratic.

use serde_json::Value;

use crate::repo_root;

/// The scaled sizes. The smallest does ~1 M inner-loop steps, so even a
/// start-up inflated by a loaded machine cannot flip a `half`/`full` pair
/// (with 500 and 1000 the smallest, one compare at load 2.5 came out
/// inconclusive: its interval reached +8 %).
pub const SIZES: [u32; 5] = [1000, 2000, 3000, 4000, 5000];

/// The experiment: 2 variants × 5 sizes × 3 blocks = 30 trials.
pub fn config() -> String {
    let sizes = format!("{SIZES:?}");
    let script = repo_root().join("tests/workloads/pair_count.py");
    format!(
        r#"
[workloads.pairs]
argv = ["python3", "-S", "{script}", "{{n}}", "{{algorithm}}"]
timeout_seconds = 120
parameters = {{ n = {sizes}, algorithm = ["full", "half"] }}
oracle = {{ stdout_contains = "pairs" }}

[experiments.pairs_scaling]
workload = "pairs"
variants = {{ full = {{ algorithm = "full" }}, half = {{ algorithm = "half" }} }}
scaling = {{ parameter = "n", values = {sizes} }}
repetitions = 3
seed = 7
primary_metric = "cpu_time"
polarity = "lower_is_better"
practical_threshold = 0.05
confidence_level = 0.95
"#,
        script = script.display(),
    )
}

/// Asserts a variant's scaling fit says quadratic: n² ranked best, or k = 2
/// inside the power-law exponent's interval.
pub fn assert_quadratic(variant: &Value) {
    let fit = &variant["fit"];
    let conclusion = &fit["conclusion"];
    let k = &fit["power_law_exponent"];
    let bound = |name: &str| {
        k[name]
            .as_f64()
            .unwrap_or_else(|| panic!("power-law {name} missing: {k}"))
    };
    let named_n2 = conclusion["status"] == "best" && conclusion["model"] == "n_squared";
    let k_holds_2 = bound("lower") <= 2.0 && 2.0 <= bound("upper");
    assert!(
        named_n2 || k_holds_2,
        "variant {} is not recognized as quadratic: {conclusion} k = {k}",
        variant["variant"]
    );
}
