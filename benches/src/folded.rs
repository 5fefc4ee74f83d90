//! A folded-stacks generator shaped like `perf script | stackcollapse-perf.pl
//! --all` output: one `comm;frame;…;frame COUNT` line per distinct stack,
//! in sorted-tree (depth-first) order as flamegraph tools write it.
//!
//! The root of each line is a process/thread name (`app-worker-3`); frames
//! are Rust-style qualified names from a fixed vocabulary; stacks whose
//! leaf function makes a syscall or faults (one function in six) continue
//! into a kernel chain annotated `_[k]` as perf marks them. Call
//! structure, depth and counts come from [`crate::calltree`]. Same seed and
//! size → same bytes.

use std::io::{self, Write};

use crate::calltree::{CallTree, CallTreeSpec};

/// What to generate.
#[derive(Debug, Clone)]
pub struct FoldedSpec {
    pub seed: u64,
    /// Lines (distinct stacks) to write.
    pub stacks: u64,
    /// Root process/thread names sharing the lines.
    pub roots: u64,
    pub max_depth: usize,
}

/// What was written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FoldedCounts {
    pub lines: u64,
    pub samples: i64,
    /// Distinct stack prefixes (the extractor's `stack_nodes`).
    pub stack_nodes: u64,
    /// Distinct frames (roots included).
    pub frames: u64,
    pub bytes: u64,
}

const VOCABULARY: u32 = 480;
const MODULES: &[&str] = &[
    "tokio::runtime::task",
    "hyper::proto::h1",
    "serde_json::de",
    "app::handlers",
    "app::db::pool",
    "alloc::raw_vec",
    "regex::exec",
    "flate2::zio",
    "std::io::buffered",
    "rayon_core::join",
    "core::slice::sort",
    "hashbrown::raw",
];
const VERBS: &[&str] = &[
    "poll", "read", "write", "parse", "encode", "decode", "flush", "insert", "lookup", "grow",
];
const NOUNS: &[&str] = &["frame", "buf", "row", "entry", "chunk", "request"];
/// Kernel call chains (perf's `_[k]` frames) that some stacks end in.
const KERNEL_TAILS: &[&[&str]] = &[
    &[
        "entry_SYSCALL_64_after_hwframe",
        "do_syscall_64",
        "__x64_sys_read",
        "ksys_read",
        "vfs_read",
    ],
    &[
        "entry_SYSCALL_64_after_hwframe",
        "do_syscall_64",
        "__x64_sys_write",
        "ksys_write",
        "vfs_write",
        "tcp_sendmsg",
    ],
    &[
        "entry_SYSCALL_64_after_hwframe",
        "do_syscall_64",
        "__x64_sys_epoll_wait",
        "do_epoll_wait",
        "ep_poll",
        "schedule_hrtimeout_range",
        "schedule",
        "__schedule",
    ],
    &[
        "asm_exc_page_fault",
        "exc_page_fault",
        "do_user_addr_fault",
        "handle_mm_fault",
        "clear_page_erms",
    ],
];

/// The frame text of vocabulary entry `f`.
pub fn frame_name(f: u32) -> String {
    let m = MODULES[f as usize % MODULES.len()];
    let rest = f as usize / MODULES.len();
    let verb = VERBS[rest % VERBS.len()];
    let noun = NOUNS[(rest / VERBS.len()) % NOUNS.len()];
    format!("{m}::{verb}_{noun}")
}

/// The kernel tail (index into `KERNEL_TAILS`) a stack ending in `leaf`
/// continues into: one leaf function in six makes a syscall or faults.
fn kernel_tail(leaf: u32) -> Option<usize> {
    leaf.is_multiple_of(6)
        .then_some((leaf as usize / 6) % KERNEL_TAILS.len())
}

/// Writes the folded stacks.
pub fn write_folded<W: Write>(spec: &FoldedSpec, mut out: W) -> io::Result<FoldedCounts> {
    let mut tree = CallTree::new(&CallTreeSpec {
        seed: spec.seed,
        stacks: spec.stacks,
        roots: spec.roots,
        vocabulary: VOCABULARY,
        max_depth: spec.max_depth,
    });
    let names: Vec<String> = (0..VOCABULARY).map(frame_name).collect();
    let mut used = vec![false; VOCABULARY as usize];
    let mut kernel_frames = std::collections::BTreeSet::new();
    let mut roots_used = 0u64;
    let mut counts = FoldedCounts::default();
    let mut line = String::with_capacity(1024);
    while let Some(stack) = tree.next_stack() {
        line.clear();
        for (depth, &f) in stack.path.iter().enumerate() {
            if depth == 0 {
                roots_used = roots_used.max(f as u64 + 1);
                line.push_str(&format!("app-worker-{f}"));
            } else {
                used[f as usize] = true;
                line.push(';');
                line.push_str(&names[f as usize]);
            }
        }
        // A kernel tail is new below this exact stack: distinct stacks
        // differ above it, and user frames never match kernel frames.
        let leaf = stack.path.last().copied().filter(|_| stack.path.len() > 1);
        if let Some(tail) = leaf.and_then(kernel_tail) {
            for frame in KERNEL_TAILS[tail] {
                kernel_frames.insert(*frame);
                line.push(';');
                line.push_str(frame);
                line.push_str("_[k]");
            }
            counts.stack_nodes += KERNEL_TAILS[tail].len() as u64;
        }
        line.push_str(&format!(" {}\n", stack.count));
        out.write_all(line.as_bytes())?;
        counts.lines += 1;
        counts.samples += stack.count;
        counts.stack_nodes += (stack.path.len() - stack.shared_prefix) as u64;
        counts.bytes += line.len() as u64;
    }
    counts.frames =
        roots_used + used.iter().filter(|&&u| u).count() as u64 + kernel_frames.len() as u64;
    out.flush()?;
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{RowCounts, import_file};
    use flameox_extractors::{EvidenceTable, ExtractOptions, NoObserver, extract_folded_stacks};

    fn spec(seed: u64) -> FoldedSpec {
        FoldedSpec {
            seed,
            stacks: 3_000,
            roots: 4,
            max_depth: 32,
        }
    }

    #[test]
    fn folded_same_seed_same_bytes_other_seed_other_bytes() {
        let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
        let counts = write_folded(&spec(5), &mut a).expect("write");
        write_folded(&spec(5), &mut b).expect("write");
        write_folded(&spec(6), &mut c).expect("write");
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(counts.bytes, a.len() as u64);
        assert_eq!(counts.lines, 3_000);
        let names: std::collections::HashSet<String> = (0..VOCABULARY).map(frame_name).collect();
        assert_eq!(names.len(), VOCABULARY as usize, "frame names collide");
    }

    #[test]
    fn folded_extracts_and_imports_with_the_counts_the_generator_reports() {
        let mut bytes = Vec::new();
        let counts = write_folded(&spec(7), &mut bytes).expect("write");
        let mut rows = RowCounts::default();
        let options = ExtractOptions::new("r", "a");
        let summary = extract_folded_stacks(bytes.as_slice(), &options, &mut rows, &NoObserver)
            .expect("extract");
        assert!(summary.limitations.is_empty(), "{:?}", summary.limitations);
        assert_eq!(summary.input_events, counts.lines);
        assert_eq!(summary.metadata["total_samples"], counts.samples);
        assert_eq!(rows.get(EvidenceTable::StackNodes), counts.stack_nodes);
        assert_eq!(rows.get(EvidenceTable::Frames), counts.frames);
        assert_eq!(rows.get(EvidenceTable::Samples), counts.lines);

        let imported = import_file("stacks.folded", &bytes);
        assert_eq!(imported.kind, "folded_stacks");
        assert_eq!(imported.rows["stack_nodes"], counts.stack_nodes);
        assert_eq!(imported.rows["samples"], counts.lines);
    }
}
