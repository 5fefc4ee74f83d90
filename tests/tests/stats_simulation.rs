//! The statistics kernels on data whose truth is known: seeded simulations
//! of paired timings (a 10 % speedup, no change, a 10 % regression) and of
//! scaling curves (n, n log n, n², n^1.5, constant). The rates asserted here
//! were measured with 2 000 experiments per case (docs/statistics.md gives
//! the numbers and the command); each bound leaves a margin of about four
//! binomial standard errors at this file's experiment count.
//!
//! `FLAMEOX_STATS_SIM_EXPERIMENTS=2000` re-measures (the bounds still apply).

use flameox_recipes::stats::compare::compare_paired;
use flameox_recipes::stats::rng::Xoshiro256StarStar;
use flameox_recipes::stats::{
    BootstrapSettings, CompareSettings, Decision, Polarity, ScalingConclusion, ScalingFit,
    ScalingModel, ScalingPoint, Validity, fit_scaling,
};

const DEFAULT_EXPERIMENTS: usize = 300;

fn experiments() -> usize {
    std::env::var("FLAMEOX_STATS_SIM_EXPERIMENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_EXPERIMENTS)
}

/// Share of `hits` among `total`.
fn rate(hits: usize, total: usize) -> f64 {
    hits as f64 / total as f64
}

/// Decision counts (improvement, regression, no meaningful difference,
/// inconclusive) and how often the BCa interval held the true log ratio,
/// over `experiments` paired experiments with true ratio
/// `candidate / baseline = ratio`: 10 blocks, each with its own level
/// (blocks differ by up to ±20 %), 3 % log-normal noise on every timing.
fn decisions(ratio: f64, experiments: usize, seed: u64) -> ([usize; 4], usize) {
    let mut rng = Xoshiro256StarStar::from_seed(seed);
    let mut counts = [0usize; 4];
    let mut covered = 0;
    for experiment in 0..experiments {
        let mut baseline = Vec::new();
        let mut candidate = Vec::new();
        for _ in 0..10 {
            let block = 1.0 + 0.4 * (rng.next_f64() - 0.5);
            baseline.push(block * (0.03 * rng.standard_normal()).exp());
            candidate.push(block * ratio * (0.03 * rng.standard_normal()).exp());
        }
        let settings = CompareSettings {
            polarity: Polarity::LowerIsBetter,
            practical_threshold: 0.02,
            bootstrap: BootstrapSettings {
                confidence_level: 0.95,
                resamples: 2_000,
                seed: seed ^ experiment as u64,
            },
        };
        let result = compare_paired(&baseline, &candidate, &settings).unwrap();
        assert_eq!(result.validity, Validity::Valid);
        let slot = match result.decision {
            Decision::Improvement => 0,
            Decision::Regression => 1,
            Decision::NoMeaningfulDifference => 2,
            Decision::Inconclusive => 3,
        };
        counts[slot] += 1;
        let interval = result.log_ratio_interval.bounds().unwrap();
        if interval.lower <= ratio.ln() && ratio.ln() <= interval.upper {
            covered += 1;
        }
    }
    (counts, covered)
}

#[test]
fn compare_decides_right_at_the_measured_rates() {
    let n = experiments();
    let (speedup, speedup_covered) = decisions(0.9, n, 11);
    let (same, same_covered) = decisions(1.0, n, 12);
    let (regression, regression_covered) = decisions(1.1, n, 13);
    for (name, c, covered) in [
        ("speedup", speedup, speedup_covered),
        ("same", same, same_covered),
        ("regression", regression, regression_covered),
    ] {
        println!(
            "{name}: improvement {:.3} regression {:.3} no_meaningful_difference {:.3} \
             inconclusive {:.3} ci-coverage {:.3}",
            rate(c[0], n),
            rate(c[1], n),
            rate(c[2], n),
            rate(c[3], n),
            rate(covered, n)
        );
        // Measured 0.88-0.90 (docs/statistics.md): the median of 10 has a
        // discrete bootstrap distribution, so coverage sits below nominal.
        assert!(
            (0.82..=0.96).contains(&rate(covered, n)),
            "{name}: coverage {covered}/{n}"
        );
    }
    // Measured with 2 000 experiments: a true 10 % speedup is an
    // improvement 99.7 % of the time and a regression never; symmetric for
    // a 10 % regression (99.4 %); no change gives a false improvement 0.1 %,
    // a false regression 0 %.
    assert!(rate(speedup[0], n) >= 0.98, "{speedup:?}");
    assert!(rate(speedup[1], n) <= 0.01, "{speedup:?}");
    assert!(rate(regression[1], n) >= 0.98, "{regression:?}");
    assert!(rate(regression[0], n) <= 0.01, "{regression:?}");
    assert!(rate(same[0], n) <= 0.02, "{same:?}");
    assert!(rate(same[1], n) <= 0.02, "{same:?}");
}

/// Sizes 64 … 8192 (2.1 decades), three repetitions, 5 % log-normal noise.
fn scaling_experiment(truth: fn(f64) -> f64, rng: &mut Xoshiro256StarStar) -> ScalingFit {
    let mut points = Vec::new();
    for doubling in 0..8 {
        let n = 64.0 * f64::from(1u32 << doubling);
        for _ in 0..3 {
            let value = truth(n) * (0.05 * rng.standard_normal()).exp();
            points.push(ScalingPoint { n, value });
        }
    }
    fit_scaling(&points, 0.95).unwrap()
}

/// A true growth, the conclusions that name it, and the rate bounds.
struct GrowthCase {
    name: &'static str,
    truth: fn(f64) -> f64,
    model: ScalingModel,
    /// The power-law exponent of the same curve (also the `k` to cover).
    true_k: Option<f64>,
    min_right: f64,
    max_wrong: f64,
}

impl GrowthCase {
    /// The named model is this case's, or the power law whose interval on
    /// `k` holds the true exponent (the same curve, see `stats::scaling`).
    fn accepts(&self, fit: &ScalingFit, named: ScalingModel) -> bool {
        let k = fit.power_law_exponent;
        let growth = fit.growth_exponent;
        named == self.model
            || (named == ScalingModel::PowerLaw
                && self.true_k.is_some_and(|t| k.lower <= t && t <= k.upper))
            || (named == ScalingModel::OffsetPowerLaw
                && self
                    .true_k
                    .is_some_and(|t| growth.lower <= t && t <= growth.upper))
    }
}

/// How often the conclusion is right, wrong, or inconclusive, and how often
/// the power law's interval on `k` holds `true_k`.
struct Recognition {
    right: usize,
    wrong: usize,
    inconclusive: usize,
    k_covered: usize,
}

fn recognize(case: &GrowthCase, experiments: usize, seed: u64) -> Recognition {
    let mut rng = Xoshiro256StarStar::from_seed(seed);
    let mut r = Recognition {
        right: 0,
        wrong: 0,
        inconclusive: 0,
        k_covered: 0,
    };
    for _ in 0..experiments {
        let fit = scaling_experiment(case.truth, &mut rng);
        let k = fit.power_law_exponent;
        if case.true_k.is_some_and(|t| k.lower <= t && t <= k.upper) {
            r.k_covered += 1;
        }
        match fit.conclusion {
            ScalingConclusion::Best { model, .. } if case.accepts(&fit, model) => r.right += 1,
            ScalingConclusion::Best { .. } => r.wrong += 1,
            ScalingConclusion::Inconclusive { .. } => r.inconclusive += 1,
        }
    }
    r
}

#[test]
fn scaling_fits_recognize_the_true_growth() {
    let n = experiments();
    // Bounds: the rates measured with 2 000 experiments (in the comments,
    // right / wrong) minus (or plus) about four binomial standard errors at
    // 300 experiments.
    let cases = [
        // Measured 0.875 / 0.021: a growth model ranks first but within 2 of
        // its rival in 11 % of flat data sets and wins by >= 2 in 2 %
        // (AICc's liberal side, docs/statistics.md).
        GrowthCase {
            name: "constant",
            truth: |_| 3e-3,
            model: ScalingModel::Constant,
            true_k: Some(0.0),
            min_right: 0.79,
            max_wrong: 0.06,
        },
        // 0.951 / 0.036
        GrowthCase {
            name: "n",
            truth: |x| 2e-6 * x,
            model: ScalingModel::N,
            true_k: Some(1.0),
            min_right: 0.90,
            max_wrong: 0.06,
        },
        // 0.841 / 0.042
        GrowthCase {
            name: "n log n",
            truth: |x| 2e-7 * x * x.ln(),
            model: ScalingModel::NLogN,
            true_k: None,
            min_right: 0.75,
            max_wrong: 0.09,
        },
        // 0.946 / 0.046
        GrowthCase {
            name: "n^2",
            truth: |x| 1e-9 * x * x,
            model: ScalingModel::NSquared,
            true_k: Some(2.0),
            min_right: 0.90,
            max_wrong: 0.08,
        },
        // 0.990 / 0.010 (1.000 / 0.000 before the offset power law, a
        // fourth parameter, joined the models)
        GrowthCase {
            name: "n^1.5",
            truth: |x| 1e-7 * x.powf(1.5),
            model: ScalingModel::PowerLaw,
            true_k: Some(1.5),
            min_right: 0.96,
            max_wrong: 0.04,
        },
    ];
    for (seed, case) in cases.iter().enumerate() {
        let r = recognize(case, n, 100 + seed as u64);
        let (name, min_right, max_wrong) = (case.name, case.min_right, case.max_wrong);
        let (right, wrong, k_coverage) = (rate(r.right, n), rate(r.wrong, n), rate(r.k_covered, n));
        println!(
            "{name}: right {right:.3} wrong {wrong:.3} inconclusive {:.3} k-coverage {k_coverage:.3}",
            rate(r.inconclusive, n)
        );
        assert!(
            right >= min_right && wrong <= max_wrong,
            "{name}: right {right} wrong {wrong}"
        );
        if case.true_k.is_some() {
            // Where the power law is the true curve, its 95 % interval on k
            // covers the true exponent at about the nominal rate (measured
            // 0.943-0.952, constant data included).
            assert!(
                (0.90..=0.99).contains(&k_coverage),
                "{name}: k coverage {k_coverage}"
            );
        }
    }
}

/// Sizes 1000 … 16 000 (four doublings, the span `experiment plan` asks
/// for), three runs each, 3 % log-normal noise, and a fixed cost that is
/// `share` of the time at the smallest size: `share + (1 - share) (n/1000)^k`.
fn fixed_cost_experiment(k: f64, share: f64, rng: &mut Xoshiro256StarStar) -> ScalingFit {
    let mut points = Vec::new();
    for doubling in 0..5 {
        let n = 1000.0 * f64::from(1u32 << doubling);
        for _ in 0..3 {
            let truth = share + (1.0 - share) * (n / 1000.0).powf(k);
            let value = truth * (0.03 * rng.standard_normal()).exp();
            points.push(ScalingPoint { n, value });
        }
    }
    fit_scaling(&points, 0.95).unwrap()
}

/// The model that is the true curve: `a + b n` and `a + b n²` are models of
/// their own; `a + b n^1.5` only the offset power law describes. A power
/// law (plain or offset) named with a stated interval that holds the true
/// exponent names the right family too.
fn true_family(k: f64) -> ScalingModel {
    if k == 1.0 {
        ScalingModel::N
    } else if k == 2.0 {
        ScalingModel::NSquared
    } else {
        ScalingModel::OffsetPowerLaw
    }
}

/// At least 1 000 experiments per case (about 35 s in the dev profile):
/// the 0.93 coverage bar sits one to two percentage points under
/// the measured rates, so fewer would leave too little room.
#[test]
fn a_fixed_cost_does_not_bend_the_stated_exponent() {
    let n = experiments().max(1000);
    for (case, &(k, share)) in [
        (1.0, 0.1),
        (1.0, 0.3),
        (1.0, 0.6),
        (1.5, 0.1),
        (1.5, 0.3),
        (1.5, 0.6),
        (2.0, 0.1),
        (2.0, 0.3),
        (2.0, 0.6),
    ]
    .iter()
    .enumerate()
    {
        let mut rng = Xoshiro256StarStar::from_seed(500 + case as u64);
        let (mut covered, mut right, mut plain_covered, mut inconclusive) = (0, 0, 0, 0);
        for _ in 0..n {
            let fit = fixed_cost_experiment(k, share, &mut rng);
            let growth = fit.growth_exponent;
            assert_eq!(growth.model, ScalingModel::OffsetPowerLaw);
            if growth.lower <= k && k <= growth.upper {
                covered += 1;
            }
            let plain = fit.power_law_exponent;
            if plain.lower <= k && k <= plain.upper {
                plain_covered += 1;
            }
            let named = match fit.conclusion {
                ScalingConclusion::Best { model, .. } => Some(model),
                ScalingConclusion::Inconclusive { .. } => {
                    inconclusive += 1;
                    None
                }
            };
            let family = true_family(k);
            let holds_k = growth.lower <= k && k <= growth.upper;
            let a_power_law = matches!(
                named,
                Some(ScalingModel::OffsetPowerLaw | ScalingModel::PowerLaw)
            );
            if named == Some(family) || (a_power_law && holds_k) {
                right += 1;
            }
        }
        let (coverage, right, plain) = (rate(covered, n), rate(right, n), rate(plain_covered, n));
        let inconclusive = rate(inconclusive, n);
        println!(
            "k {k} fixed cost {share}: stated interval covers k {coverage:.3}, right family {right:.3}, inconclusive {inconclusive:.3}, plain power law covers k {plain:.3}"
        );
        // The bars: coverage >= 0.93 everywhere, the right family
        // >= 0.9 at a 30 % fixed cost.
        assert!(coverage >= 0.93, "k {k} share {share}: coverage {coverage}");
        if share == 0.3 {
            assert!(right >= 0.9, "k {k} share {share}: right family {right}");
        }
    }
}
