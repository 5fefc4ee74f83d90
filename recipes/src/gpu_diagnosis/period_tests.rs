//! Unit tests of `period`: synthetic structures, a brute-force oracle, and
//! corpus streams when a helper script has written them.

use super::*;

/// Deterministic pseudo-random names in `0..k`.
fn lcg(seed: &mut u64, k: u32) -> u32 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*seed >> 33) % u64::from(k)) as u32
}

fn rep(body: impl IntoIterator<Item = u32>, times: usize) -> Vec<u32> {
    let body: Vec<u32> = body.into_iter().collect();
    body.iter()
        .copied()
        .cycle()
        .take(body.len() * times)
        .collect()
}

fn detect(seq: &[u32]) -> Option<Period> {
    detect_period(seq, &PeriodLimits::default())
}

#[test]
fn structures() {
    let mut seed = 5u64;
    let random: Vec<u32> = (0..1000).map(|_| lcg(&mut seed, 400)).collect();
    let warm_up: Vec<u32> = (0..300).map(|_| lcg(&mut seed, 100)).collect();
    let body = [0, 1, 2, 1, 3, 4, 1, 5, 6, 7, 1, 8];
    let twice = [
        1, 2, 3, 1, 2, 3, 4, 4, 5, 5, 6, 6, 3, 1, 2, 7, 7, 8, 9, 8, 9, 10, 11, 10, 11, 12, 12,
    ];
    let cases: [(&str, Vec<u32>, usize, Vec<usize>); 6] = [
        ("exact", rep(100..110, 5), 10, vec![0, 10, 20, 30, 40]),
        // Warm-up with an early copy of the first name; partial last iteration.
        (
            "warm-up",
            [90, 91, 0, 92, 93]
                .into_iter()
                .chain(rep(body, 4))
                .chain(0..3)
                .collect(),
            12,
            vec![5, 17, 29, 41, 53],
        ),
        // Warm-up occurrences within tolerance of the first iteration's.
        (
            "long warm-up",
            warm_up.into_iter().chain(rep(random, 5)).collect(),
            1000,
            vec![300, 1300, 2300, 3300, 4300],
        ),
        ("every name ≥ twice", rep(twice, 3), 27, vec![0, 27, 54]),
        // Layers may reach r ≥ 0.9, but the sequence ends with the tail.
        (
            "layers + tail",
            rep(rep(1..7, 4).into_iter().chain(20..40), 3),
            44,
            vec![0, 44, 88],
        ),
        (
            "layers + short tail",
            rep(rep(1..7, 12).into_iter().chain(20..22), 3),
            74,
            vec![0, 74, 148],
        ),
    ];
    for (name, seq, length, starts) in cases {
        let found = detect(&seq).unwrap_or_else(|| panic!("{name}: none"));
        assert_eq!((found.length, found.match_ratio), (length, 1.0), "{name}");
        assert_eq!(
            (found.anchor, found.starts),
            (seq[starts[0]], starts),
            "{name}"
        );
    }
}

#[test]
fn no_period() {
    let mut seed = 3u64;
    let cases: [(&str, Vec<u32>); 7] = [
        ("empty", vec![]),
        ("one kernel", vec![7; 500]),
        ("two names", rep([1, 2], 200)),
        ("1.4 iterations", (0..50).chain(0..20).collect()),
        (
            "alexnet-like noise",
            (0..73).map(|_| lcg(&mut seed, 13)).collect(),
        ),
        ("noise", (0..5000).map(|_| lcg(&mut seed, 60)).collect()),
        (
            "one forward",
            [30, 31, 32]
                .into_iter()
                .chain(rep(1..7, 8))
                .chain([33, 34, 35])
                .collect(),
        ),
    ];
    for (name, seq) in cases {
        assert_eq!(detect(&seq), None, "{name}");
    }
}

#[test]
fn imperfect_iterations() {
    let mut seed = 7u64;
    let mut seq = rep((0..200).map(|_| lcg(&mut seed, 40)), 6);
    for _ in 0..seq.len() / 25 {
        let i = lcg(&mut seed, seq.len() as u32 - 8) as usize;
        seq[i] = 1000; // 4 % of positions replaced
    }
    let found = detect(&seq).unwrap();
    assert_eq!((found.length, found.starts.len()), (200, 6));
    assert!(found.match_ratio >= 0.9 && found.match_ratio < 1.0);
    // Iteration 3 of 12 launches one kernel more (r ≈ 0.91): starts follow.
    let seq: Vec<u32> = (0..12)
        .flat_map(|k| (0..50).chain((k == 3).then_some(500)).chain(50..100))
        .collect();
    let found = detect(&seq).unwrap();
    assert_eq!(
        found.starts,
        (0..12)
            .map(|k| k * 100 + usize::from(k > 3))
            .collect::<Vec<_>>()
    );
}

#[test]
fn agrees_with_brute_force() {
    // The prototype's rule: smallest p, r over all of s ≥ 0.9, ≥ 3 names.
    let brute = |s: &[u32]| {
        (1..=s.len() / 2).find(|&p| {
            let mut names = s[..p].to_vec();
            names.sort_unstable();
            names.dedup();
            let m = (0..s.len() - p).filter(|&i| s[i] == s[i + p]).count();
            m as f64 >= 0.9 * (s.len() - p) as f64 && names.len() >= 3
        })
    };
    let mut seed = 11u64;
    for case in 0..200 {
        let (len, names) = (3 + lcg(&mut seed, 40) as usize, 3 + lcg(&mut seed, 30));
        let body: Vec<u32> = (0..len).map(|_| lcg(&mut seed, names)).collect();
        let seq = rep(body.clone(), 2 + lcg(&mut seed, 5) as usize);
        let (found, expected) = (detect(&seq).map(|p| p.length), brute(&seq));
        // Refused only when every name occurs more than MAX_LAG times per body.
        let fewest = body
            .iter()
            .map(|a| body.iter().filter(|&b| b == a).count())
            .min();
        assert!(
            found == expected || (found.is_none() && fewest > Some(MAX_LAG)),
            "case {case}"
        );
    }
}

#[test]
fn limits() {
    let seq = rep(0..10, 3);
    let with = |f: fn(&mut PeriodLimits)| {
        let mut limits = PeriodLimits::default();
        f(&mut limits);
        detect_period(&seq, &limits).map(|p| p.length)
    };
    assert_eq!(with(|l| l.min_repeats = 4), None);
    assert_eq!(with(|l| l.min_distinct = 11), None);
    assert_eq!(with(|l| l.max_candidates = 0), None);
    assert_eq!(with(|l| l.min_ratio = f64::NAN), Some(10));
}
