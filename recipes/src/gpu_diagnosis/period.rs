//! Iterations without markers (issue 50, E.4): the repeating structure of one
//! stream's kernel-name sequence, for traces without `ProfilerStep`. Per
//! stream: the CUDA-graph trace's global launch order has no period, its
//! stream 7 has one.
//!
//! Over `s` (interned names, length `N`), `tol(g) = ⌊g·(1 − min_ratio)⌋`:
//! 1. Candidates: per name and lag `m ∈ 1..=MAX_LAG` (names occurring up to
//!    `MAX_LAG` times per iteration), the gaps between occurrences `j` and
//!    `j + m`; the value most gaps agree with (± tol) is proposed when ≥ half
//!    agree (near-constant spacing; warm-up occurrences disagree). Keep the
//!    `max_candidates` values most names propose, in `[min_distinct, N/min_repeats]`.
//! 2. Per candidate `p`, ascending. Anchor chain: per (name, lag), every `m`-th
//!    occurrence with gaps ≥ `p − tol`, from the first gap within `p ± tol`
//!    whose occurrence recurs exactly `p` later (earlier ones are warm-up),
//!    skipping ≤ `(1 − min_ratio)·gaps` occurrences closer than `p − tol`.
//!    Best: most gaps exactly `p`, most within `p ± tol` (a name occurring
//!    several times per iteration can drift within tolerance), earliest,
//!    smallest lag.
//! 3. Phase: Kineto records from a step boundary, so iterations start where
//!    the periodic part does: move the chain back by the largest `δ < p` with
//!    `s[i] = s[i + p]` on `[head − δ, head)` and one name `δ` before every
//!    element. `starts` = that chain, `first = starts[0]`.
//! 4. Accept: ≥ `min_repeats` starts, half their gaps within tolerance;
//!    `[first, N)` ≥ `N/2`; periodic to the end (of the last `END_CHECK` names
//!    at most one differs from the name `p` earlier: a warm-up prefix is
//!    allowed, a non-periodic suffix is not — identical layers then a head are
//!    one forward, as in the BERT and vLLM decode traces); ≥ `min_distinct`
//!    names in `s[first..first + p]` (rejects one repeated kernel, p = 1 or 2);
//!    `r(p) = #{i ∈ [first, N − p): s[i] = s[i + p]} / (N − p − first)` ≥
//!    `min_ratio`. The smallest accepted `p` wins (multiples verify too).
//!
//! Limits: inside a periodic part names cannot tell where a step begins (the
//! CUDA-graph stream 7 is periodic from kernel 0, its first `ProfilerStep`
//! starts at kernel 700); an iteration whose every name occurs more than
//! `MAX_LAG` times has no anchor, hence no period.
//!
//! Work: O(N·MAX_LAG·log N) for candidates; per candidate O(N) for a
//! necessary check on `[N/2, N)` (stops at the mismatch cap), O(N·MAX_LAG)
//! for the anchor, O(N) for `r`. Memory O(N).

use std::cmp::Reverse;
use std::collections::HashMap;

/// Largest lag (occurrences of one name per iteration) used.
const MAX_LAG: usize = 8;
/// Trailing names checked for periodicity (one may differ).
const END_CHECK: usize = 4;

/// An anchor chain's rank: (gaps exactly p, gaps within p ± tol, Reverse((start, lag))).
type Rank = (usize, usize, Reverse<(usize, usize)>);

#[derive(Debug, Clone, PartialEq)]
pub struct Period {
    pub length: usize,
    /// Share of positions `i` in `[first, n - length)` with `seq[i] == seq[i + length]`.
    pub match_ratio: f64,
    /// Indices where iteration k starts (`first` = `starts[0]`), ascending, at
    /// least 2; the last iteration runs to the end and may be partial.
    pub starts: Vec<usize>,
    /// The name at every start (it may also occur inside iterations).
    pub anchor: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PeriodLimits {
    /// Least `r(p)`; a non-finite value is read as 1.
    pub min_ratio: f64,
    /// Least distinct names within one iteration.
    pub min_distinct: usize,
    /// Least iterations (read as at least 2).
    pub min_repeats: usize,
    /// Candidate periods verified, at most.
    pub max_candidates: usize,
}

impl Default for PeriodLimits {
    fn default() -> Self {
        PeriodLimits {
            min_ratio: 0.9,
            min_distinct: 3,
            min_repeats: 2,
            max_candidates: 64,
        }
    }
}

/// The sequence with its names made dense (first-appearance order); the
/// positions of dense name `d` are `pos[off[d]..off[d + 1]]`, ascending.
struct Scan<'a> {
    seq: &'a [u32],
    dense: Vec<u32>,
    off: Vec<usize>,
    pos: Vec<usize>,
    /// `1 − min_ratio`.
    slack: f64,
    min_repeats: usize,
}

pub fn detect_period(seq: &[u32], limits: &PeriodLimits) -> Option<Period> {
    let n = seq.len();
    let min_ratio = Some(limits.min_ratio)
        .filter(|r| r.is_finite())
        .map_or(1.0, |r| r.clamp(0.0, 1.0));
    let (min_distinct, min_repeats) = (limits.min_distinct.max(1), limits.min_repeats.max(2));
    let max_p = n / min_repeats;
    if max_p < min_distinct || limits.max_candidates == 0 {
        return None;
    }
    let mut ids: HashMap<u32, u32> = HashMap::new();
    let dense: Vec<u32> = seq
        .iter()
        .map(|&id| {
            let next = ids.len() as u32;
            *ids.entry(id).or_insert(next)
        })
        .collect();
    let mut off = vec![0usize; ids.len() + 1];
    // Bound: N positions, then ≤ N names.
    for &d in &dense {
        off[d as usize + 1] += 1;
    }
    for d in 0..ids.len() {
        off[d + 1] += off[d];
    }
    let mut pos: Vec<usize> = (0..n).collect();
    pos.sort_by_key(|&i| dense[i]); // stable: ascending within a name
    let scan = Scan {
        seq,
        dense,
        off,
        pos,
        slack: 1.0 - min_ratio,
        min_repeats,
    };
    let mut seen = vec![usize::MAX; ids.len()];
    // Bound: at most max_candidates candidates.
    for p in scan.candidates(min_distinct, max_p, limits.max_candidates) {
        // Necessary for r(p) ≥ min_ratio as [first, N) ⊇ [N/2, N): a cheap reject.
        if scan.mismatches(n / 2, p, scan.tol(n - p)).is_none() {
            continue;
        }
        let Some(starts) = scan.anchor_chain(p).map(|chain| scan.align(chain, p)) else {
            continue;
        };
        let first = starts[0];
        let end = (n - p).saturating_sub(END_CHECK);
        if (n - first) * 2 < n || first + p >= n || scan.mismatches(end, p, 1).is_none() {
            continue;
        }
        // Bound: p positions; `seen` holds the candidate that last saw a name.
        let mut distinct = 0;
        for &d in &scan.dense[first..first + p] {
            distinct += usize::from(std::mem::replace(&mut seen[d as usize], p) != p);
        }
        let total = n - p - first;
        // r(p) ≥ min_ratio ⇔ mismatches ≤ ⌊total·(1 − min_ratio)⌋.
        let miss = scan.mismatches(first, p, scan.tol(total));
        if let (Some(miss), true) = (miss, distinct >= min_distinct) {
            let match_ratio = (total - miss) as f64 / total as f64;
            return Some(Period {
                length: p,
                match_ratio,
                starts,
                anchor: seq[first],
            });
        }
    }
    None
}

impl Scan<'_> {
    fn of(&self, d: usize) -> &[usize] {
        &self.pos[self.off[d]..self.off[d + 1]]
    }

    /// `⌊x·(1 − min_ratio)⌋`, robust to `1 − 0.9 < 0.1` in floating point.
    fn tol(&self, x: usize) -> usize {
        (x as f64 * self.slack + 1e-9) as usize
    }

    /// Proposed periods (one vote per proposing name), the best `keep`, ascending.
    fn candidates(&self, min_p: usize, max_p: usize, keep: usize) -> Vec<usize> {
        let (mut proposals, mut local, mut gaps) = (Vec::new(), Vec::new(), Vec::new());
        // Bound: Σ over names of count × MAX_LAG ≤ N·MAX_LAG gaps, each sorted once.
        for d in 0..self.off.len() - 1 {
            let pos = self.of(d);
            local.clear();
            for lag in 1..=MAX_LAG {
                if pos.len() < lag + self.min_repeats - 1 {
                    break;
                }
                gaps.clear();
                gaps.extend(pos.iter().zip(&pos[lag..]).map(|(a, b)| b - a));
                gaps.sort_unstable();
                // Two pointers: the window [g − tol(g), g + tol(g)] only moves
                // right. Bound: lo and hi each advance ≤ gaps.len() times.
                let (mut lo, mut hi, mut best) = (0usize, 0usize, (0usize, 0usize));
                for &g in &gaps {
                    while gaps[lo] + self.tol(g) < g {
                        lo += 1;
                    }
                    while hi < gaps.len() && gaps[hi] <= g + self.tol(g) {
                        hi += 1;
                    }
                    if hi - lo > best.0 {
                        best = (hi - lo, g);
                    }
                }
                let (agree, g) = best;
                if agree * 2 >= gaps.len()
                    && agree + 1 >= self.min_repeats
                    && (min_p..=max_p).contains(&g)
                {
                    local.push(g);
                }
            }
            local.sort_unstable();
            local.dedup();
            proposals.extend_from_slice(&local);
        }
        proposals.sort_unstable();
        let mut ranked: Vec<(usize, usize)> = proposals
            .chunk_by(|a, b| a == b)
            .map(|r| (r.len(), r[0]))
            .collect();
        ranked.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut out: Vec<usize> = ranked.into_iter().take(keep).map(|(_, g)| g).collect();
        out.sort_unstable();
        out
    }

    /// The best anchor chain for period `p` over every name and lag (step 2).
    fn anchor_chain(&self, p: usize) -> Option<Vec<usize>> {
        let (lo, hi) = (p - self.tol(p), p + self.tol(p));
        let mut best: Option<(Rank, Vec<usize>)> = None;
        // Bound: names × lags; each walk visits a name's occurrences at most twice.
        for d in 0..self.off.len() - 1 {
            let pos = self.of(d);
            for lag in 1..=MAX_LAG {
                if pos.len() < lag * (self.min_repeats - 1) + 1 {
                    break;
                }
                let head = |j: usize| {
                    pos.get(j + lag)
                        .is_some_and(|&b| (lo..=hi).contains(&(b - pos[j])))
                        && self.dense.get(pos[j] + p) == Some(&(d as u32))
                };
                let Some(f) = (0..pos.len()).find(|&j| head(j)) else {
                    continue;
                };
                let (mut j, mut skipped, mut exact, mut good, mut starts) =
                    (f, 0, 0, 0, vec![pos[f]]);
                // Bound: j strictly increases up to pos.len(); k from j + lag to it.
                while j + lag < pos.len() {
                    let mut k = j + lag;
                    while k + 1 < pos.len() && pos[k] - pos[j] < lo {
                        (k, skipped) = (k + 1, skipped + 1);
                    }
                    if pos[k] - pos[j] < lo {
                        break;
                    }
                    good += usize::from(pos[k] - pos[j] <= hi);
                    exact += usize::from(pos[k] - pos[j] == p);
                    starts.push(pos[k]);
                    j = k;
                }
                let gaps = starts.len() - 1;
                if starts.len() < self.min_repeats || good * 2 < gaps || skipped > self.tol(gaps) {
                    continue;
                }
                let key = (exact, good, Reverse((starts[0], lag)));
                if best.as_ref().is_none_or(|b| key > b.0) {
                    best = Some((key, starts));
                }
            }
        }
        best.map(|b| b.1)
    }

    /// The chain moved back by the largest `δ < p` with `s[i] = s[i + p]` on
    /// `[head − δ, head)` and one name `δ` before every element (step 3).
    fn align(&self, mut starts: Vec<usize>, p: usize) -> Vec<usize> {
        let (s, head) = (self.seq, starts[0]);
        let mut back = 0usize;
        // Bound: back < min(head, p).
        while back < head && back + 1 < p && s[head - back - 1] == s[head - back - 1 + p] {
            back += 1;
        }
        // Bound: back × starts.len() ≤ p × (N / (p − tol) + 1) = O(N).
        for delta in (1..=back).rev() {
            if starts.iter().all(|&c| s[c - delta] == s[head - delta]) {
                starts.iter_mut().for_each(|c| *c -= delta);
                break;
            }
        }
        starts
    }

    /// `#{i ∈ [from, N − p): s[i] ≠ s[i + p]}`, or None once it exceeds `cap`.
    fn mismatches(&self, from: usize, p: usize, cap: usize) -> Option<usize> {
        let (s, mut count) = (self.seq, 0usize);
        // Bound: N − p − from positions.
        for i in from..s.len().saturating_sub(p) {
            count += usize::from(s[i] != s[i + p]);
            if count > cap {
                return None;
            }
        }
        Some(count)
    }
}

#[cfg(test)]
#[path = "period_tests.rs"]
mod tests;
