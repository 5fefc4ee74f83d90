//! The statistics kernels (recipes/src/stats) against SciPy: the fixture
//! `tests/stats_oracle/expected.json` is written by `oracle.py` with pinned
//! SciPy and re-checked by `.ci/run`, so these comparisons are against the
//! current reference.
//!
//! Deterministic quantities must agree to 1e-9 relative (1e-12 absolute for
//! values that are 0 up to float noise). Bootstrap quantities are Monte-Carlo
//! estimates on both sides (SciPy 100 000 resamples, ours 50 000) and are
//! compared with 4-standard-error tolerances derived in docs/statistics.md.

use flameox_recipes::stats::bootstrap::{
    BcaInterval, BootstrapSettings, MedianBootstrap, bootstrap_medians, median_interval,
    paired_log_ratios, paired_median_log_ratio_interval,
};
use flameox_recipes::stats::rank::Correlation;
use flameox_recipes::stats::special::{
    normal_cdf, normal_pdf, normal_quantile, student_t_cdf, student_t_quantile,
};
use flameox_recipes::stats::{
    ScalingModel, ScalingPoint, benjamini_hochberg, fit_scaling, robust_summary, spearman,
};
use serde_json::Value;

const OUR_RESAMPLES: usize = 50_000;
const OUR_SEED: u64 = 7;
const OUR_SETTINGS: BootstrapSettings = BootstrapSettings {
    confidence_level: 0.95,
    resamples: OUR_RESAMPLES,
    seed: OUR_SEED,
};
/// Standard errors of Monte-Carlo slack.
const MC_SIGMAS: f64 = 4.0;

fn fixture() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/stats_oracle/expected.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("json")
}

fn num(v: &Value) -> f64 {
    v.as_f64().expect("number")
}

fn nums(v: &Value) -> Vec<f64> {
    v.as_array().expect("array").iter().map(num).collect()
}

/// A fixture case's `n` and `y` as scaling points.
fn scaling_points(case: &Value) -> Vec<ScalingPoint> {
    nums(&case["n"])
        .into_iter()
        .zip(nums(&case["y"]))
        .map(|(n, value)| ScalingPoint { n, value })
        .collect()
}

#[track_caller]
fn assert_close(ours: f64, reference: f64, what: &str) {
    let ok = (ours - reference).abs() <= 1e-9 * reference.abs() + 1e-12;
    assert!(ok, "{what}: ours {ours} vs SciPy {reference}");
}

#[test]
fn medians_and_mads_match_numpy_and_scipy() {
    let f = fixture();
    for (name, case) in f["median_mad"].as_object().unwrap() {
        let s = robust_summary(&nums(&case["values"])).unwrap();
        assert_close(s.median, num(&case["median"]), name);
        assert_close(s.mad_raw, num(&case["mad_raw"]), name);
        assert_close(s.mad_normal, num(&case["mad_normal"]), name);
    }
}

#[test]
fn normal_and_t_distributions_match_scipy() {
    let f = fixture();
    for row in f["normal"].as_array().unwrap() {
        if let Some(x) = row.get("x") {
            assert_close(normal_cdf(num(x)), num(&row["cdf"]), &format!("Phi({x})"));
        } else {
            let p = num(&row["p"]);
            assert_close(
                normal_quantile(p),
                num(&row["quantile"]),
                &format!("Phi^-1({p})"),
            );
        }
    }
    let mut checked = 0;
    for row in f["student_t"].as_array().unwrap() {
        let df = num(&row["df"]);
        if let Some(x) = row.get("x") {
            let what = format!("T_{df}({x})");
            assert_close(student_t_cdf(num(x), df), num(&row["cdf"]), &what);
        } else {
            let p = num(&row["p"]);
            let what = format!("T_{df}^-1({p})");
            assert_close(student_t_quantile(p, df), num(&row["quantile"]), &what);
        }
        checked += 1;
    }
    assert!(checked >= 100, "{checked} t rows");
}

#[test]
fn spearman_and_benjamini_hochberg_match_scipy() {
    let f = fixture();
    for (name, case) in f["spearman"].as_object().unwrap() {
        let Correlation::Available { rho, p_value, .. } =
            spearman(&nums(&case["x"]), &nums(&case["y"])).unwrap()
        else {
            panic!("{name}: no correlation");
        };
        assert_close(rho, num(&case["rho"]), name);
        assert_close(p_value, num(&case["p_value"]), name);
    }
    for (name, case) in f["benjamini_hochberg"].as_object().unwrap() {
        let q = benjamini_hochberg(&nums(&case["p"])).unwrap();
        let want = nums(&case["q"]);
        assert_eq!(q.len(), want.len());
        for (ours, theirs) in q.iter().zip(&want) {
            assert_close(*ours, *theirs, name);
        }
    }
}

#[test]
fn the_power_law_exponent_matches_linregress_on_log_log_data() {
    let f = fixture();
    for (name, case) in f["power_law"].as_object().unwrap() {
        let points = scaling_points(case);
        let fit = fit_scaling(&points, num(&f["confidence_level"])).unwrap();
        let k = fit.power_law_exponent;
        assert_close(k.estimate, num(&case["slope"]), name);
        assert_close(k.standard_error, num(&case["slope_stderr"]), name);
        assert_close(k.lower, num(&case["slope_lower"]), name);
        assert_close(k.upper, num(&case["slope_upper"]), name);
        let power = fit
            .models
            .iter()
            .find(|m| m.model == ScalingModel::PowerLaw)
            .unwrap();
        assert_close(power.a.ln(), num(&case["intercept"]), name);
    }
}

/// Type-7 quantile of sorted values (NumPy's default), written out here.
fn quantile(sorted: &[f64], level: f64) -> f64 {
    let position = level.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = (below + 1).min(sorted.len() - 1);
    sorted[below] + (position - below as f64) * (sorted[above] - sorted[below])
}

/// The BCa level for the normal quantile `z` (Efron & Tibshirani eq. 14.10).
fn bca_level(z0: f64, a: f64, z: f64) -> f64 {
    normal_cdf(z0 + (z0 + z) / (1.0 - a * (z0 + z)))
}

/// Checks one bootstrap case: `sample` is what is resampled (values or
/// per-pair log ratios), `ours` our interval, `reference` SciPy's record.
fn check_bootstrap(name: &str, sample: &[f64], ours: &MedianBootstrap, reference: &Value) {
    let b_ref = num(&reference["resamples"]);
    let inverse_b = 1.0 / OUR_RESAMPLES as f64 + 1.0 / b_ref;
    assert_close(ours.estimate, num(&reference["estimate"]), name);
    let bca_ref = &reference["bca"];
    let BcaInterval::Available {
        lower,
        upper,
        bias_correction,
        acceleration,
        jackknife_degenerate,
        lower_level,
        upper_level,
    } = ours.bca
    else {
        panic!("{name}: no BCa interval: {ours:?}");
    };
    assert!(!jackknife_degenerate, "{name}");
    // Acceleration is a jackknife quantity: deterministic.
    let a_ref = num(&bca_ref["acceleration"]);
    assert_close(acceleration, a_ref, &format!("{name} acceleration"));
    // z0 = Phi^-1(share): the share is a proportion over B resamples.
    let z0_ref = num(&bca_ref["bias_correction"]);
    let share = normal_cdf(z0_ref);
    let z0_tolerance = MC_SIGMAS * (share * (1.0 - share) * inverse_b).sqrt() / normal_pdf(z0_ref);
    assert!(
        (bias_correction - z0_ref).abs() <= z0_tolerance,
        "{name} z0: ours {bias_correction} vs SciPy {z0_ref} (± {z0_tolerance})"
    );
    // The levels follow from z0 and a: ours must be what SciPy's formula
    // gives for some z0 within that tolerance.
    let alpha = (1.0 - ours.confidence_level) / 2.0;
    let mut sorted = bootstrap_medians(sample, OUR_RESAMPLES, OUR_SEED);
    sorted.sort_by(f64::total_cmp);
    let cases = [
        (
            lower_level,
            num(&bca_ref["lower_level"]),
            lower,
            num(&bca_ref["lower"]),
            normal_quantile(alpha),
        ),
        (
            upper_level,
            num(&bca_ref["upper_level"]),
            upper,
            num(&bca_ref["upper"]),
            -normal_quantile(alpha),
        ),
    ];
    for (level, level_ref, bound, bound_ref, z) in cases {
        let reachable =
            [z0_ref - z0_tolerance, z0_ref + z0_tolerance].map(|z0| bca_level(z0, a_ref, z));
        assert!(
            level >= reachable[0] - 1e-12 && level <= reachable[1] + 1e-12,
            "{name} level {level} vs SciPy {level_ref}, reachable {reachable:?}"
        );
        assert_eq!(
            bound,
            quantile(&sorted, level),
            "{name}: bound is our quantile at our level"
        );
        check_quantile_band(
            name,
            &sorted,
            level.min(level_ref),
            level.max(level_ref),
            inverse_b,
            bound_ref,
        );
    }
    let percentile_ref = &reference["percentile"];
    let ours_percentile = ours.percentile.bounds().expect("percentile interval");
    for (level, bound, bound_ref) in [
        (alpha, ours_percentile.lower, num(&percentile_ref["lower"])),
        (
            1.0 - alpha,
            ours_percentile.upper,
            num(&percentile_ref["upper"]),
        ),
    ] {
        assert_eq!(bound, quantile(&sorted, level), "{name}: percentile bound");
        check_quantile_band(name, &sorted, level, level, inverse_b, bound_ref);
    }
}

/// SciPy's bound is a quantile (at a level between `low` and `high`) of the
/// same bootstrap distribution ours estimates: it must fall between our
/// quantiles at those levels widened by 4 binomial standard errors (and by
/// float noise: NumPy's and Rust's `ln` may differ in the last bit).
fn check_quantile_band(
    name: &str,
    sorted: &[f64],
    low: f64,
    high: f64,
    inverse_b: f64,
    bound_ref: f64,
) {
    let widen = |level: f64| MC_SIGMAS * (level * (1.0 - level) * inverse_b).sqrt();
    let noise = 1e-12 * bound_ref.abs();
    let band = (
        quantile(sorted, low - widen(low)) - noise,
        quantile(sorted, high + widen(high)) + noise,
    );
    assert!(
        band.0 <= bound_ref && bound_ref <= band.1,
        "{name}: SciPy bound {bound_ref} outside our band {band:?} (levels {low}..{high})"
    );
}

#[test]
fn one_sample_bca_intervals_match_scipy_within_monte_carlo_error() {
    let f = fixture();
    let cases = f["bootstrap_median"].as_object().unwrap();
    assert!(cases.len() >= 4);
    for (name, case) in cases {
        let values = nums(&case["values"]);
        let ours = median_interval(&values, &OUR_SETTINGS).unwrap();
        check_bootstrap(name, &values, &ours, case);
    }
}

#[test]
fn paired_bca_intervals_match_scipy_within_monte_carlo_error() {
    let f = fixture();
    let cases = f["bootstrap_paired"].as_object().unwrap();
    assert!(cases.len() >= 2);
    for (name, case) in cases {
        let (baseline, candidate) = (nums(&case["baseline"]), nums(&case["candidate"]));
        let ours = paired_median_log_ratio_interval(&baseline, &candidate, &OUR_SETTINGS).unwrap();
        let log_ratios = paired_log_ratios(&baseline, &candidate).unwrap();
        check_bootstrap(name, &log_ratios, &ours, case);
    }
}

/// Agreement of two optimizers on a fitted parameter: both stop where the
/// profile is flat to machine precision, which pins a parameter to about
/// 1e-6 relative (docs/statistics.md, "Offset power law").
#[track_caller]
fn assert_optimizer_close(ours: f64, reference: f64, tolerance: f64, what: &str) {
    let ok = (ours - reference).abs() <= tolerance * reference.abs() + 1e-12;
    assert!(ok, "{what}: ours {ours} vs SciPy {reference}");
}

#[test]
fn the_offset_power_law_matches_curve_fit_and_its_profile_interval() {
    let f = fixture();
    for (name, case) in f["offset_power_law"].as_object().unwrap() {
        let points = scaling_points(case);
        let fit = fit_scaling(&points, num(&f["confidence_level"])).unwrap();
        let o = fit.offset_power_law.as_ref().expect("six points or more");
        assert_optimizer_close(o.exponent.estimate, num(&case["k"]), 1e-6, name);
        assert_optimizer_close(o.fixed_cost, num(&case["a"]), 1e-5, name);
        assert_optimizer_close(o.b, num(&case["b"]), 1e-5, name);
        let model = fit
            .models
            .iter()
            .find(|m| m.model == ScalingModel::OffsetPowerLaw)
            .unwrap();
        let rss = model.log_residual_rms.powi(2) * points.len() as f64;
        assert_optimizer_close(rss, num(&case["rss"]), 1e-9, name);
        assert_optimizer_close(o.exponent.lower, num(&case["k_lower"]), 1e-7, name);
        assert_optimizer_close(o.exponent.upper, num(&case["k_upper"]), 1e-7, name);
        assert_eq!(
            o.exponent.lower_bounded,
            case["lower_bounded"] == true,
            "{name}"
        );
        assert_eq!(
            o.exponent.upper_bounded,
            case["upper_bounded"] == true,
            "{name}"
        );
        assert_eq!(fit.growth_exponent.model, ScalingModel::OffsetPowerLaw);
    }
}
