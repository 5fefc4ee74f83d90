//! Fusion candidates (issue 50, E.6, operator-free variant): the most frequent
//! sequences of short kernels launched back to back on one stream. Fusing such
//! a sequence (torch.compile, a hand-written kernel, CUDA graphs) removes
//! `len − 1` launches and the gaps between them per occurrence.
//!
//! Algorithm:
//! 1. Runs: per stream (sorted by `ts`), maximal runs of consecutive kernels
//!    with `end − ts < short_ns`, each after the first starting less than
//!    `max_gap_ns` after the previous one's end. At most `max_kernels`
//!    kernels are scanned over all streams (then `truncated`).
//! 2. Count n-grams of names, `n = min_len..=max_len`, inside runs only.
//!    Occurrences are non-overlapping within a run (greedy from the left per
//!    n-gram, the maximum count: a run of 9 identical kernels holds a 3-gram
//!    3 times, not 7), summed over runs and streams. The prototype
//!    (`scripts/geom_short.py`) counted overlapping 3-grams of names cut to
//!    40 characters; its "×269" is not this count. Per occurrence: Σ kernel
//!    time, Σ gaps between its kernels (clamped at 0: launch overhead the
//!    fusion would remove), earliest `ts`.
//! 3. Keys: a 64-bit hash of (n, names) (Fx-style fold, splitmix finish); a
//!    hit is checked against the names of the entry's first occurrence, so
//!    counts are exact. At most `max_distinct` n-grams are tracked; a new one
//!    beyond that, or a hash collision, is not counted and sets `truncated`.
//! 4. Keep n-grams with count ≥ `min_count`; drop one that a longer kept
//!    n-gram contains with the same count (report maximal ones).
//! 5. Rank by launches saved = occurrences × (len − 1), then `gap_ns`, then
//!    names (ascending); return the `top` first.
//!
//! Limits: a repeated block longer than `max_len` shows as several shifted
//! windows with close counts (the v100 216k trace's optimizer block gives
//! four 8-grams ×31–32 in the top 5); a name is the whole kernel name, so
//! template instances of one kernel family differ.
//!
//! Work: O(K·max_len) lookups for K scanned kernels, each hit comparing ≤
//! `max_len` names; O(kept·max_len²) for step 4. Memory: one 57-byte map slot
//! per tracked n-gram plus the map's slack (1M n-grams ≈ 120 MB).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// Upper bound on `max_len` (a longer window is clamped).
const MAX_LEN: usize = 32;

/// One kernel of one stream; streams are sorted by `ts` (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernel {
    pub name: u32,
    pub ts: i64,
    pub end: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SequenceLimits {
    /// A kernel is short when `end − ts < short_ns`.
    pub short_ns: i64,
    /// Back to back: the next short kernel starts less than this after the end.
    pub max_gap_ns: i64,
    /// Sequence lengths counted (`min_len` read as at least 2, `max_len` at most 32).
    pub min_len: usize,
    pub max_len: usize,
    /// Least occurrences reported.
    pub min_count: usize,
    /// Kernels scanned over all streams, at most.
    pub max_kernels: usize,
    /// Distinct n-grams tracked, at most.
    pub max_distinct: usize,
    /// Sequences returned, at most.
    pub top: usize,
}

impl Default for SequenceLimits {
    fn default() -> Self {
        SequenceLimits {
            short_ns: 10_000,
            max_gap_ns: 10_000,
            min_len: 3,
            max_len: 8,
            min_count: 10,
            max_kernels: 2_000_000,
            max_distinct: 1_000_000,
            top: 20,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sequence {
    pub names: Vec<u32>,
    /// Non-overlapping occurrences inside runs.
    pub occurrences: usize,
    /// Σ kernel time inside the occurrences.
    pub kernel_ns: i64,
    /// Σ gaps between consecutive kernels inside the occurrences (launch
    /// overhead the fusion would remove).
    pub gap_ns: i64,
    pub first_ts: i64,
}

impl Sequence {
    /// Launches a fusion of every occurrence would save: occurrences × (len − 1).
    pub fn launches_saved(&self) -> usize {
        self.occurrences * self.names.len().saturating_sub(1)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sequences {
    pub found: Vec<Sequence>,
    pub kernels_scanned: usize,
    /// Kernels not scanned (`max_kernels`), n-grams not tracked
    /// (`max_distinct`) or a hash collision: counts may be low.
    pub truncated: bool,
    /// Scanned kernels shorter than `short_ns`.
    pub short_kernels: usize,
}

pub fn frequent_sequences(streams: &[&[Kernel]], limits: &SequenceLimits) -> Sequences {
    let mut counter = Counter {
        streams,
        min_len: limits.min_len.max(2),
        max_len: limits.max_len.min(MAX_LEN),
        max_distinct: limits.max_distinct,
        entries: HashMap::default(),
        truncated: false,
    };
    // Scan positions and stream indices are stored as u32.
    let max_kernels = limits.max_kernels.min(u32::MAX as usize);
    let (mut scanned, mut short_kernels) = (0usize, 0usize);
    // Bound: at most max_kernels kernels over all streams.
    'streams: for (s, stream) in streams.iter().enumerate() {
        let (base, mut run_start) = (scanned, None);
        for (i, k) in stream.iter().enumerate() {
            if scanned == max_kernels || s > u32::MAX as usize {
                counter.truncated = true;
                if let Some(a) = run_start {
                    counter.count_run(s, a, i, base + a);
                }
                break 'streams;
            }
            scanned += 1;
            let short = k.end.saturating_sub(k.ts) < limits.short_ns;
            short_kernels += usize::from(short);
            let joins = short
                && run_start.is_some()
                && k.ts.saturating_sub(stream[i - 1].end) < limits.max_gap_ns;
            if !joins {
                if let Some(a) = run_start {
                    counter.count_run(s, a, i, base + a);
                }
                run_start = short.then_some(i);
            }
        }
        if let Some(a) = run_start {
            counter.count_run(s, a, stream.len(), base + a);
        }
    }
    let mut found = counter.maximal(limits.min_count);
    found.sort_by(|a, b| {
        (b.launches_saved(), b.gap_ns)
            .cmp(&(a.launches_saved(), a.gap_ns))
            .then_with(|| a.names.cmp(&b.names))
    });
    found.truncate(limits.top);
    Sequences {
        found,
        kernels_scanned: scanned,
        truncated: counter.truncated,
        short_kernels,
    }
}

/// One tracked n-gram (48 bytes).
struct Entry {
    kernel_ns: i64,
    gap_ns: i64,
    first_ts: i64,
    count: u32,
    /// Greedy state: the scan position just after the last counted occurrence.
    next_free: u32,
    /// Its first occurrence: `streams[stream][index..index + len]`.
    stream: u32,
    index: u32,
    len: u8,
}

impl Entry {
    fn at(&self) -> (usize, usize, usize) {
        (
            self.stream as usize,
            self.index as usize,
            usize::from(self.len),
        )
    }
}

struct Counter<'a> {
    streams: &'a [&'a [Kernel]],
    min_len: usize,
    max_len: usize,
    max_distinct: usize,
    entries: HashMap<u64, Entry, BuildHasherDefault<PassThrough>>,
    truncated: bool,
}

impl Counter<'_> {
    /// Counts the n-grams of run `streams[s][a..b]`, whose first kernel is
    /// the `pos`-th scanned.
    fn count_run(&mut self, s: usize, a: usize, b: usize, pos: usize) {
        let streams = self.streams;
        let run = &streams[s][a..b];
        if run.len() < self.min_len {
            return;
        }
        // Bound: run.len() × max_len (≤ MAX_LEN) n-grams.
        for i in 0..run.len() {
            let (mut h, mut kernel_ns, mut gap_ns) = (0u64, 0i64, 0i64);
            for n in 1..=self.max_len.min(run.len() - i) {
                let k = run[i + n - 1];
                h = fold(h, k.name);
                kernel_ns = kernel_ns.saturating_add(k.end.saturating_sub(k.ts).max(0));
                if n > 1 {
                    let gap = k.ts.saturating_sub(run[i + n - 2].end).max(0);
                    gap_ns = gap_ns.saturating_add(gap);
                }
                if n < self.min_len {
                    continue;
                }
                // Casts: positions < max_kernels ≤ u32::MAX, s ≤ u32::MAX, n ≤ MAX_LEN.
                let (key, at, ts) = (finish(h, n), (s, a + i, n), run[i].ts);
                let (start, end) = ((pos + i) as u32, (pos + i + n) as u32);
                let room = self.entries.len() < self.max_distinct;
                match self.entries.get_mut(&key) {
                    None if room => {
                        let (stream, index, len) = (s as u32, (a + i) as u32, n as u8);
                        let e = Entry {
                            kernel_ns,
                            gap_ns,
                            first_ts: ts,
                            count: 1,
                            next_free: end,
                            stream,
                            index,
                            len,
                        };
                        self.entries.insert(key, e);
                    }
                    None => self.truncated = true,
                    // A hash collision: not counted.
                    Some(e)
                        if e.at().2 != n
                            || !names_of(streams, e.at()).eq(names_of(streams, at)) =>
                    {
                        self.truncated = true
                    }
                    // Overlaps the last occurrence counted (in this run).
                    Some(e) if start < e.next_free => {}
                    Some(e) => {
                        e.count += 1;
                        e.kernel_ns = e.kernel_ns.saturating_add(kernel_ns);
                        e.gap_ns = e.gap_ns.saturating_add(gap_ns);
                        e.first_ts = e.first_ts.min(ts);
                        e.next_free = end;
                    }
                }
            }
        }
    }

    /// Entries with count ≥ `min_count` that no longer such entry contains
    /// with the same count.
    fn maximal(&self, min_count: usize) -> Vec<Sequence> {
        let kept: HashMap<u64, &Entry> = self
            .entries
            .iter()
            .filter(|(_, e)| e.count as usize >= min_count.max(1))
            .map(|(&k, e)| (k, e))
            .collect();
        let mut dropped: HashSet<u64> = HashSet::new();
        // Bound: kept × (sub-grams of one n-gram ≤ MAX_LEN²/2).
        for e in kept.values() {
            let names: Vec<u32> = names_of(self.streams, e.at()).collect();
            for len in self.min_len..names.len() {
                for start in 0..=names.len() - len {
                    let sub = &names[start..start + len];
                    let key = finish(sub.iter().fold(0, |h, &x| fold(h, x)), len);
                    let same = |o: &&Entry| {
                        o.at().2 == len && names_of(self.streams, o.at()).eq(sub.iter().copied())
                    };
                    if kept
                        .get(&key)
                        .is_some_and(|o| o.count == e.count && same(o))
                    {
                        dropped.insert(key);
                    }
                }
            }
        }
        kept.iter()
            .filter(|(k, _)| !dropped.contains(k))
            .map(|(_, e)| Sequence {
                names: names_of(self.streams, e.at()).collect(),
                occurrences: e.count as usize,
                kernel_ns: e.kernel_ns,
                gap_ns: e.gap_ns,
                first_ts: e.first_ts,
            })
            .collect()
    }
}

/// The names of `streams[s][i..i + n]`.
fn names_of<'a>(
    streams: &[&'a [Kernel]],
    (s, i, n): (usize, usize, usize),
) -> impl Iterator<Item = u32> + 'a {
    streams[s][i..i + n].iter().map(|k| k.name)
}

fn fold(h: u64, name: u32) -> u64 {
    (h.rotate_left(5) ^ u64::from(name)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95)
}

/// splitmix64's finalizer over the fold and the length.
fn finish(h: u64, n: usize) -> u64 {
    let mut z = h ^ (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Keys are already mixed: hash them as they are.
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Bound: bytes.len() (only u64 keys are hashed here).
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

#[cfg(test)]
#[path = "sequences_tests.rs"]
mod tests;
