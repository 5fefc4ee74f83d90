//! The golden experiment shared by its CLI and MCP halves
//! (`tests/tests/experiment_golden.rs`, `tests/tests/experiment_golden_mcp.rs`):
//! the `flameox.toml` declaring `tests/workloads/pair_count.pl` (O(n²) in
//! both variants, `half` doing half the inner-loop work of `full`) and the
//! check that a scaling fit says quadratic.

use serde_json::Value;

use crate::repo_root;

/// The scaled sizes. The smallest, `half` at n = 2000, takes ~90 ms of
/// CPU, so neither the workload's start-up nor a few ms of timer noise
/// bends the curve: from 1000, where `half` takes ~25 ms and its repeats
/// vary by 25 %, a full test run here fitted `half` at k = 1.84 [1.77,
/// 1.91] with the power law conclusively ahead of n². With 500 the
/// smallest, one compare at load 2.5 came out inconclusive. The workload
/// is Perl because its ~3.5 ms start-up is small; python3's 60–80 ms bent
/// CI's fits to k = 1.15 and 1.48.
pub const SIZES: [u32; 5] = [2000, 2500, 3000, 4000, 5000];

/// The experiment: 2 variants × 5 sizes × 3 blocks = 30 trials.
pub fn config() -> String {
    let sizes = format!("{SIZES:?}");
    let script = repo_root().join("tests/workloads/pair_count.pl");
    format!(
        r#"
[workloads.pairs]
argv = ["perl", "{script}", "{{n}}", "{{algorithm}}"]
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

/// Asserts a variant's scaling fit says quadratic: n² ranked best
/// (conclusively or not), or the power-law exponent's interval holds 2, or
/// n² is the close runner-up of a power law whose interval lies within
/// 2 ± 0.3, or the runner-up of a conclusive power law within 2 ± 0.1.
///
/// The last clause is for what start-up and timer noise do to clean data:
/// Perl's ~3.5 ms start-up is a constant under every size, so a pure
/// power law fits k a little below 2 (with 1000 the smallest size, one
/// run: 1.878 [1.775, 1.981], power law best by an AICc margin of 0.41
/// over n², inconclusive). A workload that is not quadratic, or one whose
/// curve start-up bent (python3's 60–80 ms fitted k = 1.48 [1.37, 1.60]
/// and 1.15 [0.93, 1.38] in CI), still fails.
pub fn assert_quadratic(variant: &Value) {
    let fit = &variant["fit"];
    let conclusion = &fit["conclusion"];
    let k = &fit["power_law_exponent"];
    let bound = |name: &str| {
        k[name]
            .as_f64()
            .unwrap_or_else(|| panic!("power-law {name} missing: {k}"))
    };
    let n2_best = match conclusion["status"].as_str() {
        Some("best") => conclusion["model"] == "n_squared",
        Some("inconclusive") => conclusion["best"] == "n_squared",
        _ => false,
    };
    let n2_close_to_a_power_law = conclusion["status"] == "inconclusive"
        && conclusion["best"] == "power_law"
        && conclusion["runner_up"] == "n_squared";
    let k_holds_2 = bound("lower") <= 2.0 && 2.0 <= bound("upper");
    let k_near_2 = bound("lower") >= 1.7 && bound("upper") <= 2.3;
    // The plain power law has no offset, so Perl's constant start-up pulls
    // its exponent a little under 2 and can win outright over n²: two runs
    // on 2026-12-04 fitted `half` at k = 1.954 [1.935, 1.973] and 1.947
    // [1.927, 1.967], power law best by AICc margins 3.0 and 2.0, n² the
    // runner-up. That is the bias issue 30's offset power law removes; until
    // then such a fit, within 2 ± 0.1 and with n² next, counts as quadratic.
    let n2_next_to_a_near_2_power_law = conclusion["status"] == "best"
        && conclusion["model"] == "power_law"
        && conclusion["runner_up"] == "n_squared"
        && bound("lower") >= 1.9
        && bound("upper") <= 2.1;
    // Printed for the log of a passing run too: how close it came.
    eprintln!("variant {}: {conclusion} k = {k}", variant["variant"]);
    assert!(
        n2_best
            || k_holds_2
            || (n2_close_to_a_power_law && k_near_2)
            || n2_next_to_a_near_2_power_law,
        "variant {} is not recognized as quadratic: {conclusion} k = {k}",
        variant["variant"]
    );
}
