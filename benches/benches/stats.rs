//! Latency of the statistics kernels behind `analyze compare` and `analyze
//! scaling`, at the sizes those analyses feed them: seeded bootstrap
//! intervals of a median (BCa, 10,000 resamples), the paired and the
//! two-sample comparison, the six-model scaling fit, Spearman ρ with
//! Benjamini–Hochberg over many frames, and the robust summary.
//!
//! Inputs are log-normal draws from the kernels' own seeded generator, so
//! every run times the same numbers. Throughput is set to the values a
//! call reads. In test mode each bench runs once and its result is
//! checked (an interval exists, the fit names a model), so a kernel that
//! stops producing an answer fails the suite. See docs/performance.md,
//! "Statistics kernels".

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use flameox_recipes::stats::bootstrap::median_interval;
use flameox_recipes::stats::compare::compare_paired;
use flameox_recipes::stats::rng::Xoshiro256StarStar;
use flameox_recipes::stats::{
    BootstrapSettings, CompareSettings, Correlation, Polarity, ScalingPoint, benjamini_hochberg,
    compare_two_samples, fit_scaling, robust_summary, spearman,
};

/// `n` positive values around `scale` with a 10 % log spread.
fn lognormal(rng: &mut Xoshiro256StarStar, n: usize, scale: f64) -> Vec<f64> {
    (0..n)
        .map(|_| scale * (0.1 * rng.standard_normal()).exp())
        .collect()
}

fn group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(500));
    g
}

/// The median's seeded percentile and BCa intervals (`analyze scaling`
/// per size, `analyze compare` per metric).
fn bootstrap(c: &mut Criterion) {
    let mut rng = Xoshiro256StarStar::from_seed(1);
    let settings = BootstrapSettings::default();
    let mut g = group(c, "stats_median_interval_10k_resamples");
    for n in [10usize, 100, 1000] {
        let values = lognormal(&mut rng, n, 100.0);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(format!("n_{n}"), |b| {
            b.iter(|| {
                let r = median_interval(black_box(&values), &settings).expect("valid sample");
                assert!(r.bca.bounds().is_some(), "no BCa interval at n = {n}");
                r
            })
        });
    }
    g.finish();
}

/// Paired runs (`analyze compare` with blocks) and two independent samples
/// (pyperf-style values).
fn comparisons(c: &mut Criterion) {
    let mut rng = Xoshiro256StarStar::from_seed(2);
    let settings = CompareSettings {
        polarity: Polarity::LowerIsBetter,
        practical_threshold: 0.02,
        bootstrap: BootstrapSettings::default(),
    };
    let mut g = group(c, "stats_compare");
    for pairs in [10usize, 30, 100] {
        let baseline = lognormal(&mut rng, pairs, 100.0);
        let candidate = lognormal(&mut rng, pairs, 90.0);
        g.throughput(Throughput::Elements(2 * pairs as u64));
        g.bench_function(format!("paired_{pairs}_pairs"), |b| {
            b.iter(|| {
                let r = compare_paired(black_box(&baseline), black_box(&candidate), &settings)
                    .expect("valid pairs");
                assert!(
                    r.relative_interval.is_some(),
                    "no interval for {pairs} pairs"
                );
                r
            })
        });
    }
    for n in [20usize, 1000] {
        let baseline = lognormal(&mut rng, n, 100.0);
        let candidate = lognormal(&mut rng, n, 90.0);
        g.throughput(Throughput::Elements(2 * n as u64));
        g.bench_function(format!("two_sample_{n}_each"), |b| {
            b.iter(|| {
                compare_two_samples(
                    black_box(&baseline),
                    black_box(&candidate),
                    Polarity::LowerIsBetter,
                    0.02,
                    &settings.bootstrap,
                )
                .expect("valid samples")
            })
        });
    }
    g.finish();
}

/// The seven scaling models ranked by AICc (`analyze scaling`), the offset
/// power law's profile over k included: sizes × trials.
fn scaling(c: &mut Criterion) {
    let mut rng = Xoshiro256StarStar::from_seed(3);
    let mut g = group(c, "stats_fit_scaling");
    for (sizes, trials) in [(8usize, 5usize), (30, 10)] {
        let points: Vec<ScalingPoint> = (0..sizes)
            .flat_map(|i| {
                let n = 1000.0 * 2f64.powi(i as i32 % 20) * (1.0 + (i / 20) as f64);
                lognormal(&mut rng, trials, n * n.ln())
                    .into_iter()
                    .map(move |value| ScalingPoint { n, value })
            })
            .collect();
        g.throughput(Throughput::Elements(points.len() as u64));
        g.bench_function(format!("{sizes}_sizes_x_{trials}_trials"), |b| {
            b.iter(|| fit_scaling(black_box(&points), 0.95).expect("enough sizes"))
        });
    }
    g.finish();
}

/// Spearman ρ of each frame's share against the size, then BH over all
/// frames' p-values (`analyze scaling`'s frame trends).
fn frame_trends(c: &mut Criterion) {
    let mut rng = Xoshiro256StarStar::from_seed(4);
    let frames = 1000;
    let sizes: Vec<f64> = (0..12).map(|i| 2f64.powi(i)).collect();
    let shares: Vec<Vec<f64>> = (0..frames)
        .map(|_| lognormal(&mut rng, sizes.len(), 0.01))
        .collect();
    let mut g = group(c, "stats_frame_trends");
    g.throughput(Throughput::Elements(frames as u64));
    g.bench_function("spearman_and_bh_1000_frames_12_sizes", |b| {
        b.iter(|| {
            let p: Vec<f64> = shares
                .iter()
                .filter_map(|share| spearman(&sizes, black_box(share)).ok())
                .filter_map(|r| match r {
                    Correlation::Available { p_value, .. } => Some(p_value),
                    Correlation::Unavailable { .. } => None,
                })
                .collect();
            assert_eq!(p.len(), frames, "a frame had no p-value");
            benjamini_hochberg(&p).expect("valid p-values")
        })
    });
    g.finish();
}

/// Median, MAD and quartiles of one metric's samples.
fn summary(c: &mut Criterion) {
    let mut rng = Xoshiro256StarStar::from_seed(5);
    let values = lognormal(&mut rng, 100_000, 100.0);
    let mut g = group(c, "stats_robust_summary");
    g.throughput(Throughput::Elements(values.len() as u64));
    g.bench_function("n_100000", |b| {
        b.iter(|| robust_summary(black_box(&values)).expect("valid values"))
    });
    g.finish();
}

criterion_group!(
    benches,
    bootstrap,
    comparisons,
    scaling,
    frame_trends,
    summary
);
criterion_main!(benches);
