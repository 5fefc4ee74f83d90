//! `frame_totals` and `call_edges` of one metric, computed over the stack
//! tree instead of by walking every sample's path.
//!
//! Walking each (stack, thread) sample up to the root costs the sum of the
//! stacks' depths: a deep recursion sampled at every depth (a trace of N
//! nested slices, a V8 profile with a chain of N nodes) is N² hash updates.
//! Here each node a thread's samples reach is visited once per thread:
//! weights flow from children to parents in decreasing id order (a child's
//! id is always larger than its parent's), a frame's inclusive total is the
//! subtree weight of its topmost nodes (those with no ancestor of the same
//! frame — recursion counted once per stack), and the edge into a node
//! carries its subtree weight when it is the topmost occurrence of that
//! caller → callee pair on its path (so `fib → fib` in a recursion counts
//! each stack once, as pprof's cumulative values do, not once per level).
//! The results are the same sums as the path walk's
//! (`tree_totals_equal_the_path_walk` below).

use crate::FastHashMap;

/// No parent (a root node).
const NO_PARENT: u32 = u32::MAX;

/// (frame, thread) → [self weight, inclusive weight, self count].
pub type FrameTotals = FastHashMap<(u32, u32), [i64; 3]>;
/// (caller frame, callee frame) → [weight, count of samples at the callee].
pub type CallEdges = FastHashMap<(u32, u32), [i64; 2]>;

/// Per node: whether it is the topmost of its frame on its path (no
/// ancestor has the same frame), and whether the edge into it is the
/// topmost of its (caller frame, frame) pair (no edge above it on the path
/// joins the same two frames).
pub struct Topmost {
    pub node: Vec<bool>,
    pub edge: Vec<bool>,
}

/// [`Topmost`] of every node. `nodes` are (parent, frame, depth), parents
/// first.
pub fn topmost_nodes(nodes: &[(u32, u32, i32)], frames: usize) -> Topmost {
    // Children lists (CSR), then a depth-first walk keeping how often each
    // frame is on the current path.
    let n = nodes.len();
    let mut first_child = vec![0u32; n + 1];
    for &(parent, _, _) in nodes {
        if let Some(slot) = first_child.get_mut(parent as usize + 1)
            && parent != NO_PARENT
        {
            *slot += 1;
        }
    }
    for i in 0..n {
        first_child[i + 1] += first_child[i];
    }
    let mut fill = first_child.clone();
    let mut children = vec![0u32; first_child[n] as usize];
    for (id, &(parent, _, _)) in nodes.iter().enumerate() {
        if parent != NO_PARENT && (parent as usize) < n {
            children[fill[parent as usize] as usize] = id as u32;
            fill[parent as usize] += 1;
        }
    }
    let mut on_path = vec![0u32; frames];
    let mut edges_on_path: FastHashMap<(u32, u32), u32> = FastHashMap::default();
    let mut topmost = vec![false; n];
    let mut topmost_edge = vec![false; n];
    let caller = |v: u32| {
        let parent = nodes[v as usize].0;
        (parent != NO_PARENT && (parent as usize) < n).then(|| nodes[parent as usize].1)
    };
    // (node, entering): exit entries undo a node's frame on the path.
    let mut work: Vec<(u32, bool)> = Vec::new();
    for (id, &(parent, _, _)) in nodes.iter().enumerate() {
        if parent != NO_PARENT && (parent as usize) < n {
            continue;
        }
        work.push((id as u32, true));
        while let Some((v, entering)) = work.pop() {
            let frame = nodes[v as usize].1 as usize;
            let edge = caller(v).map(|c| (c, frame as u32));
            if !entering {
                if let Some(count) = on_path.get_mut(frame) {
                    *count -= 1;
                }
                if let Some(count) = edge.and_then(|e| edges_on_path.get_mut(&e)) {
                    *count -= 1;
                }
                continue;
            }
            topmost[v as usize] = on_path.get(frame).is_some_and(|&c| c == 0);
            if let Some(count) = on_path.get_mut(frame) {
                *count += 1;
            }
            if let Some(e) = edge {
                let count = edges_on_path.entry(e).or_insert(0);
                topmost_edge[v as usize] = *count == 0;
                *count += 1;
            }
            work.push((v, false));
            let range = first_child[v as usize] as usize..first_child[v as usize + 1] as usize;
            for &child in children[range].iter().rev() {
                work.push((child, true));
            }
        }
    }
    Topmost {
        node: topmost,
        edge: topmost_edge,
    }
}

/// The totals and edges of `samples` (stack, thread, weight, count).
pub fn tree_totals(
    nodes: &[(u32, u32, i32)],
    topmost: &Topmost,
    samples: impl Iterator<Item = (u32, u32, i64, i64)>,
) -> (FrameTotals, CallEdges) {
    let mut totals = FrameTotals::default();
    let mut edges = CallEdges::default();
    let mut by_thread: Vec<(u32, u32, i64, i64)> = samples
        .filter(|s| (s.0 as usize) < nodes.len())
        .map(|(stack, thread, w, c)| (thread, stack, w, c))
        .collect();
    by_thread.sort_unstable_by_key(|s| (s.0, s.1));
    // Subtree weight per node, and the nodes one thread reached (reset
    // after each thread, so a thread costs what it touched).
    let mut sub = vec![0i64; nodes.len()];
    let mut reached = vec![false; nodes.len()];
    let mut touched: Vec<u32> = Vec::new();
    for group in by_thread.chunk_by(|a, b| a.0 == b.0) {
        let thread = group[0].0;
        for &(_, stack, weight, count) in group {
            let (parent, frame, _) = nodes[stack as usize];
            let t = totals.entry((frame, thread)).or_insert([0; 3]);
            t[0] = t[0].saturating_add(weight);
            t[2] = t[2].saturating_add(count);
            if parent != NO_PARENT {
                let e = edges
                    .entry((nodes[parent as usize].1, frame))
                    .or_insert([0; 2]);
                e[1] = e[1].saturating_add(count);
            }
            sub[stack as usize] = sub[stack as usize].saturating_add(weight);
            let mut v = stack;
            while v != NO_PARENT && !reached[v as usize] {
                reached[v as usize] = true;
                touched.push(v);
                v = nodes[v as usize].0;
            }
        }
        touched.sort_unstable_by(|a, b| b.cmp(a));
        for &v in &touched {
            let parent = nodes[v as usize].0;
            if parent != NO_PARENT {
                sub[parent as usize] = sub[parent as usize].saturating_add(sub[v as usize]);
            }
        }
        for &v in &touched {
            let (parent, frame, _) = nodes[v as usize];
            let weight = sub[v as usize];
            let t = totals.entry((frame, thread)).or_insert([0; 3]);
            if topmost.node[v as usize] {
                t[1] = t[1].saturating_add(weight);
            }
            if parent != NO_PARENT && topmost.edge[v as usize] {
                let e = edges
                    .entry((nodes[parent as usize].1, frame))
                    .or_insert([0; 2]);
                e[0] = e[0].saturating_add(weight);
            }
            sub[v as usize] = 0;
            reached[v as usize] = false;
        }
        touched.clear();
    }
    (totals, edges)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The path walk these totals replace, kept as the oracle.
    fn path_walk(
        nodes: &[(u32, u32, i32)],
        frames: usize,
        samples: &[(u32, u32, i64, i64)],
    ) -> (FrameTotals, CallEdges) {
        let mut totals = FrameTotals::default();
        let mut edges = CallEdges::default();
        let mut seen = vec![u64::MAX; frames];
        for (n, &(stack, thread, weight, count)) in samples.iter().enumerate() {
            let mut path = Vec::new();
            let mut s = stack;
            while s != NO_PARENT {
                path.push(nodes[s as usize].1);
                s = nodes[s as usize].0;
            }
            let t = totals.entry((path[0], thread)).or_insert([0; 3]);
            t[0] += weight;
            t[2] += count;
            for &f in &path {
                if seen[f as usize] != n as u64 {
                    seen[f as usize] = n as u64;
                    totals.entry((f, thread)).or_insert([0; 3])[1] += weight;
                }
            }
            let mut pairs_seen = std::collections::HashSet::new();
            for (k, pair) in path.windows(2).enumerate() {
                let e = edges.entry((pair[1], pair[0])).or_insert([0; 2]);
                if pairs_seen.insert((pair[1], pair[0])) {
                    e[0] += weight;
                }
                if k == 0 {
                    e[1] += count;
                }
            }
        }
        (totals, edges)
    }

    #[test]
    fn tree_totals_equal_the_path_walk() {
        // A seeded random forest with recursion (few frames, deep paths),
        // samples on several threads at every depth.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for round in 0..20 {
            let frames = 1 + next(6) as usize;
            let mut nodes: Vec<(u32, u32, i32)> = Vec::new();
            for i in 0..(50 + round * 10) {
                let parent = if i == 0 || next(8) == 0 {
                    NO_PARENT
                } else {
                    next(i as u64) as u32
                };
                let depth = if parent == NO_PARENT {
                    0
                } else {
                    nodes[parent as usize].2 + 1
                };
                nodes.push((parent, next(frames as u64) as u32, depth));
            }
            let samples: Vec<(u32, u32, i64, i64)> = (0..200)
                .map(|_| {
                    (
                        next(nodes.len() as u64) as u32,
                        next(3) as u32,
                        next(1000) as i64,
                        1 + next(4) as i64,
                    )
                })
                .collect();
            let topmost = topmost_nodes(&nodes, frames);
            let got = tree_totals(&nodes, &topmost, samples.iter().copied());
            let want = path_walk(&nodes, frames, &samples);
            assert_eq!(got.0, want.0, "totals, round {round}");
            assert_eq!(got.1, want.1, "edges, round {round}");
        }
    }

    #[test]
    fn a_deep_chain_sampled_at_every_depth_is_linear() {
        // 200,000 nested nodes with a sample at each: the path walk would
        // take 2·10^10 steps.
        let n = 200_000u32;
        let nodes: Vec<(u32, u32, i32)> = (0..n)
            .map(|i| (if i == 0 { NO_PARENT } else { i - 1 }, i % 2, i as i32))
            .collect();
        let started = std::time::Instant::now();
        let topmost = topmost_nodes(&nodes, 2);
        let (totals, edges) = tree_totals(&nodes, &topmost, (0..n).map(|i| (i, 0, 1, 1)));
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        // Frame 0 is on every path: inclusive weight = every sample.
        assert_eq!(
            totals[&(0, 0)],
            [i64::from(n / 2), i64::from(n), i64::from(n / 2)]
        );
        assert_eq!(edges[&(0, 1)][1], i64::from(n / 2));
        // Each stack crosses 0 → 1 once in the count: the weight of the
        // edge is every sample below its first occurrence, not a sum over
        // the 100,000 levels.
        assert_eq!(edges[&(0, 1)][0], i64::from(n - 1));
    }

    #[test]
    fn a_recursive_edge_counts_each_stack_once() {
        // main → fib → fib → fib, 10 ns at the innermost fib, 5 at the
        // second, 1 at the first.
        let nodes = vec![(NO_PARENT, 0, 0), (0, 1, 1), (1, 1, 2), (2, 1, 3)];
        let topmost = topmost_nodes(&nodes, 2);
        let (totals, edges) = tree_totals(
            &nodes,
            &topmost,
            [(3, 0, 10, 1), (2, 0, 5, 1), (1, 0, 1, 1)].into_iter(),
        );
        assert_eq!(totals[&(1, 0)][1], 16, "fib inclusive: every sample once");
        assert_eq!(edges[&(0, 1)][0], 16, "main → fib");
        assert_eq!(
            edges[&(1, 1)][0],
            15,
            "fib → fib: stacks below the first recursion, once"
        );
    }
}
