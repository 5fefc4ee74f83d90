//! Unit tests of `sequences`: synthetic streams, a naive oracle, and corpus
//! streams when a helper script has written them.

use std::collections::BTreeMap;

use super::*;

/// Kernels back to back from `ts`: (name, duration, gap before the next).
fn stream(ts: i64, spec: &[(u32, i64, i64)]) -> Vec<Kernel> {
    let mut t = ts;
    let mut out = Vec::new();
    for &(name, dur, gap) in spec {
        out.push(Kernel {
            name,
            ts: t,
            end: t + dur,
        });
        t += dur + gap;
    }
    out
}

/// `times` runs of `names` (1 µs kernels, 2 µs apart), runs 1 ms apart.
fn runs(names: &[u32], times: usize) -> Vec<(u32, i64, i64)> {
    let mut spec = Vec::new();
    for _ in 0..times {
        spec.extend(names.iter().map(|&n| (n, 1_000, 2_000)));
        if let Some(last) = spec.last_mut() {
            last.2 = 1_000_000;
        }
    }
    spec
}

fn limits(min_count: usize) -> SequenceLimits {
    SequenceLimits {
        min_count,
        ..SequenceLimits::default()
    }
}

#[test]
fn one_pattern_with_its_times() {
    let s = stream(5_000, &runs(&[1, 2, 3], 12));
    let got = frequent_sequences(&[&s], &limits(10));
    let expected = Sequence {
        names: vec![1, 2, 3],
        occurrences: 12,
        kernel_ns: 12 * 3_000,
        gap_ns: 12 * 2 * 2_000,
        first_ts: 5_000,
    };
    assert_eq!(got.found, vec![expected]);
    assert_eq!(
        (got.kernels_scanned, got.short_kernels, got.truncated),
        (36, 36, false)
    );
    assert_eq!(got.found[0].launches_saved(), 24);
}

#[test]
fn occurrences_do_not_overlap_within_a_run() {
    let s = stream(0, &runs(&[7; 9], 4));
    let got = frequent_sequences(
        &[&s],
        &SequenceLimits {
            max_len: 4,
            ..limits(1)
        },
    );
    let counts: Vec<(usize, usize)> = got
        .found
        .iter()
        .map(|q| (q.names.len(), q.occurrences))
        .collect();
    // 9 identical kernels: 3 × 3-gram and 2 × 4-gram per run.
    assert_eq!(counts, vec![(3, 12), (4, 8)]);
}

#[test]
fn only_maximal_sequences_are_reported() {
    // A B C D 10 times: A B C, B C D, A B C (…) have the same count and go.
    let s = stream(0, &runs(&[1, 2, 3, 4], 10));
    let got = frequent_sequences(&[&s], &limits(10));
    assert_eq!(
        got.found
            .iter()
            .map(|q| q.names.clone())
            .collect::<Vec<_>>(),
        vec![vec![1, 2, 3, 4]]
    );
    // Plus A B C X 5 times: A B C (15) now stands on its own.
    let mut spec = runs(&[1, 2, 3, 4], 10);
    spec.extend(runs(&[1, 2, 3, 9], 5));
    let s = stream(0, &spec);
    let got = frequent_sequences(&[&s], &limits(10));
    let found: Vec<(Vec<u32>, usize)> = got
        .found
        .iter()
        .map(|q| (q.names.clone(), q.occurrences))
        .collect();
    assert_eq!(found, vec![(vec![1, 2, 3], 15), (vec![1, 2, 3, 4], 10)]);
}

#[test]
fn runs_break_on_long_kernels_and_gaps() {
    // 1 2 | long | 3 4 5, then 6 7 ⟂ 8 9 (gap 20 µs): no 3-gram crosses a break.
    let spec = [
        (1, 1_000, 0),
        (2, 1_000, 0),
        (99, 50_000, 0),
        (3, 1_000, 0),
        (4, 1_000, 0),
        (5, 1_000, 0),
        (6, 1_000, 0),
        (7, 1_000, 20_000),
        (8, 1_000, 0),
        (9, 1_000, 0),
    ];
    let s = stream(0, &spec);
    let got = frequent_sequences(&[&s], &limits(1));
    let names: Vec<Vec<u32>> = got.found.iter().map(|q| q.names.clone()).collect();
    assert_eq!(names, vec![vec![3, 4, 5, 6, 7]]);
    assert_eq!((got.kernels_scanned, got.short_kernels), (10, 9));
}

#[test]
fn streams_add_up_and_ranking() {
    let a = stream(0, &runs(&[1, 2, 3], 6));
    let b = stream(
        0,
        &[runs(&[1, 2, 3], 6), runs(&[4, 5, 6, 7, 8], 5)].concat(),
    );
    let got = frequent_sequences(&[&a, &b], &limits(5));
    let found: Vec<(Vec<u32>, usize)> = got
        .found
        .iter()
        .map(|q| (q.names.clone(), q.occurrences))
        .collect();
    // 12 × 2 launches saved > 5 × 4.
    assert_eq!(found, vec![(vec![1, 2, 3], 12), (vec![4, 5, 6, 7, 8], 5)]);
    let one = frequent_sequences(
        &[&a, &b],
        &SequenceLimits {
            top: 1,
            ..limits(5)
        },
    );
    assert_eq!(one.found.len(), 1);
}

#[test]
fn bounds_set_truncated() {
    let s = stream(0, &runs(&[1, 2, 3], 12));
    let got = frequent_sequences(
        &[&s, &s],
        &SequenceLimits {
            max_kernels: 30,
            ..limits(1)
        },
    );
    assert_eq!(
        (got.kernels_scanned, got.truncated, got.found[0].occurrences),
        (30, true, 10)
    );
    let got = frequent_sequences(
        &[&s],
        &SequenceLimits {
            max_distinct: 0,
            ..limits(1)
        },
    );
    assert!(got.truncated && got.found.is_empty());
    let got = frequent_sequences(&[], &limits(1));
    assert_eq!(got, Sequences::default());
}

/// Naive count: every n-gram of every run, greedy non-overlapping.
fn naive(stream: &[Kernel], l: &SequenceLimits) -> BTreeMap<Vec<u32>, usize> {
    let mut runs: Vec<Vec<u32>> = Vec::new();
    for (i, k) in stream.iter().enumerate() {
        let short = k.end - k.ts < l.short_ns;
        let joins = i > 0
            && short
            && k.ts - stream[i - 1].end < l.max_gap_ns
            && stream[i - 1].end - stream[i - 1].ts < l.short_ns;
        match runs.last_mut() {
            Some(run) if joins => run.push(k.name),
            _ if short => runs.push(vec![k.name]),
            _ => runs.push(Vec::new()),
        }
    }
    let mut counts = BTreeMap::new();
    for run in &runs {
        for n in l.min_len..=l.max_len {
            let mut next: BTreeMap<&[u32], usize> = BTreeMap::new();
            for i in 0..run.len().saturating_sub(n - 1) {
                let gram = &run[i..i + n];
                if next.get(gram).is_none_or(|&e| e <= i) {
                    next.insert(gram, i + n);
                    *counts.entry(gram.to_vec()).or_insert(0) += 1;
                }
            }
        }
    }
    counts.retain(|_, c| *c >= l.min_count);
    let keep = |g: &Vec<u32>, c: usize| {
        !counts.iter().any(|(h, &d)| {
            d == c && h.len() > g.len() && h.windows(g.len()).any(|w| w == g.as_slice())
        })
    };
    counts
        .iter()
        .filter(|&(g, &c)| keep(g, c))
        .map(|(g, &c)| (g.clone(), c))
        .collect()
}

#[test]
fn agrees_with_naive_count() {
    let mut seed = 9u64;
    let mut next = |k: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % k
    };
    let mut reported = 0;
    for case in 0..50 {
        let spec: Vec<(u32, i64, i64)> = (0..400)
            .map(|_| {
                (
                    next(4) as u32,
                    1_000 + 5_000 * next(3) as i64,
                    3_000 * next(5) as i64,
                )
            })
            .collect();
        let s = stream(0, &spec);
        let l = SequenceLimits {
            max_len: 5,
            top: usize::MAX,
            ..limits(3)
        };
        let got = frequent_sequences(&[&s], &l);
        let found: BTreeMap<Vec<u32>, usize> = got
            .found
            .iter()
            .map(|q| (q.names.clone(), q.occurrences))
            .collect();
        assert_eq!(found, naive(&s, &l), "case {case}");
        reported += found.len();
    }
    assert!(reported > 100, "{reported}");
}
