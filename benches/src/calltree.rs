//! A seeded call-tree walker shared by the stack-sample generators (folded
//! stacks, pprof): it yields distinct stacks in depth-first order, so the
//! generators can say exactly how many distinct stacks (trie nodes) and
//! frames they wrote without keeping every stack in memory.
//!
//! Shape: `roots` entry points (thread or process roots) share the sample
//! budget evenly; below them each function calls a few distinct functions
//! picked from a window of the vocabulary that depends on the caller, so
//! the same callees recur under different callers as in real code. Fan-out
//! is 2–6 on the first levels (as many levels as each root's share of the
//! stacks needs) and mostly 1 below; a node below them is a leaf with a
//! probability that grows with depth, up to `max_depth`. Leaves always get
//! a stack line; inner nodes get one (self time) 15 % of the time. Counts
//! are heavy-tailed: mostly 1–10, sometimes hundreds, rarely tens of
//! thousands.

use crate::rng::SeededRng;

/// What to walk.
#[derive(Debug, Clone)]
pub struct CallTreeSpec {
    pub seed: u64,
    /// Stack lines to yield.
    pub stacks: u64,
    /// Entry points sharing the budget; more appear if their trees run
    /// dry before their share (rare: the wide levels scale with it).
    pub roots: u64,
    /// Functions below the roots (`0..vocabulary` in yielded paths).
    pub vocabulary: u32,
    /// Deepest path (root included).
    pub max_depth: usize,
}

/// Callees of a function are drawn from this many consecutive functions.
const CALLEE_WINDOW: u32 = 24;

/// One yielded stack: `path[0]` is the root index, the rest are function
/// indices below `vocabulary`, outermost first.
pub struct Stack<'a> {
    pub path: &'a [u32],
    pub count: i64,
    /// Length of the prefix shared with the previous stack (in DFS order
    /// every earlier prefix that this stack shares is shared with it).
    pub shared_prefix: usize,
}

/// Walks the tree; call [`CallTree::next_stack`] until it returns `None`.
pub struct CallTree {
    spec: CallTreeSpec,
    rng: SeededRng,
    path: Vec<u32>,
    /// Children still to visit of each node on `path`.
    pending: Vec<Vec<u32>>,
    previous: Vec<u32>,
    yielded: u64,
    next_root: u32,
    root_yielded: u64,
    fresh: bool,
    /// Levels below the root with fan-out 2–6 and no leaves.
    wide_levels: usize,
}

impl CallTree {
    pub fn new(spec: &CallTreeSpec) -> CallTree {
        // A root's tree is about 20 × 4^wide stacks below the wide levels;
        // make it twice the root's share.
        let per_root = spec.stacks.div_ceil(spec.roots.max(1));
        let mut wide_levels = 2;
        while 20 * 4u64.saturating_pow(wide_levels as u32) < 2 * per_root {
            wide_levels += 1;
        }
        CallTree {
            wide_levels,
            rng: SeededRng::new(spec.seed ^ 0xC411_7EE5),
            spec: CallTreeSpec {
                vocabulary: spec.vocabulary.max(CALLEE_WINDOW),
                roots: spec.roots.max(1),
                max_depth: spec.max_depth.max(2),
                ..spec.clone()
            },
            path: Vec::new(),
            pending: Vec::new(),
            previous: Vec::new(),
            yielded: 0,
            next_root: 0,
            root_yielded: 0,
            fresh: false,
        }
    }

    /// Distinct callees of the node at the top of `path`.
    fn callees(&mut self) -> Vec<u32> {
        let depth = self.path.len();
        let (max, wide) = (self.spec.max_depth, self.wide_levels);
        if depth >= max {
            return Vec::new();
        }
        // Below the wide levels the leaf probability grows from 5 % to
        // 100 % with depth.
        if depth > wide {
            let leaf_percent = 5 + (95 * (depth - wide) / max.saturating_sub(wide).max(1)) as u64;
            if self.rng.chance(leaf_percent) {
                return Vec::new();
            }
        }
        let fan_out = if depth <= wide {
            self.rng.range(2, 7)
        } else if self.rng.chance(55) {
            1
        } else {
            self.rng.range(2, 5)
        } as usize;
        let caller = self.path.last().copied().unwrap_or(0);
        let base = caller.wrapping_mul(7).wrapping_add(depth as u32 * 31);
        let mut out: Vec<u32> = Vec::with_capacity(fan_out);
        while out.len() < fan_out {
            let f = (base + self.rng.range(0, CALLEE_WINDOW as u64) as u32) % self.spec.vocabulary;
            if !out.contains(&f) {
                out.push(f);
            }
        }
        out.reverse(); // popped from the end: visit in drawn order
        out
    }

    fn count(&mut self) -> i64 {
        let r = self.rng.range(0, 1000);
        (if r < 5 {
            self.rng.range(1_000, 50_000)
        } else if r < 60 {
            self.rng.range(50, 1_000)
        } else {
            self.rng.range(1, 11)
        }) as i64
    }

    /// The next stack, or `None` once `stacks` were yielded.
    pub fn next_stack(&mut self) -> Option<Stack<'_>> {
        let per_root = self.spec.stacks.div_ceil(self.spec.roots).max(1);
        loop {
            if self.yielded >= self.spec.stacks {
                return None;
            }
            if self.fresh {
                self.fresh = false;
                let children = self.callees();
                let leaf = children.is_empty();
                self.pending.push(children);
                if leaf || self.rng.chance(15) {
                    return Some(self.emit());
                }
                continue;
            }
            let Some(top) = self.pending.last_mut() else {
                // A new root (past `roots` only if trees ran dry early).
                self.path.push(self.next_root);
                self.next_root += 1;
                self.root_yielded = 0;
                self.fresh = true;
                continue;
            };
            match top.pop() {
                Some(child) if self.root_yielded < per_root => {
                    self.path.push(child);
                    self.fresh = true;
                }
                _ => {
                    self.pending.pop();
                    self.path.pop();
                }
            }
        }
    }

    fn emit(&mut self) -> Stack<'_> {
        self.yielded += 1;
        self.root_yielded += 1;
        let shared_prefix = self
            .path
            .iter()
            .zip(&self.previous)
            .take_while(|(a, b)| a == b)
            .count();
        self.previous.clear();
        self.previous.extend_from_slice(&self.path);
        let count = self.count();
        Stack {
            path: &self.path,
            count,
            shared_prefix,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn stacks_are_distinct_and_shared_prefixes_count_trie_nodes() {
        let spec = CallTreeSpec {
            seed: 9,
            stacks: 5_000,
            roots: 4,
            vocabulary: 200,
            max_depth: 30,
        };
        let mut tree = CallTree::new(&spec);
        let (mut seen, mut prefixes) = (HashSet::new(), HashSet::new());
        let (mut n, mut nodes, mut deepest) = (0, 0, 0);
        while let Some(s) = tree.next_stack() {
            n += 1;
            assert!(s.count >= 1);
            assert!(seen.insert(s.path.to_vec()), "stack repeated");
            nodes += s.path.len() - s.shared_prefix;
            deepest = deepest.max(s.path.len());
            for end in 1..=s.path.len() {
                prefixes.insert(s.path[..end].to_vec());
            }
        }
        assert_eq!(n, 5_000);
        assert_eq!(nodes, prefixes.len());
        assert!(deepest > 8, "depth {deepest}");
        let roots: HashSet<u32> = seen.iter().map(|p| p[0]).collect();
        assert!(roots.len() >= 4, "{roots:?}");
    }
}
