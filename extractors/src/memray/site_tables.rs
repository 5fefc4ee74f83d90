//! Allocation sites, the unit memray's reports group by: a full stack
//! (Python stack id + native stack id, threads merged, as memray's
//! `LocationKey` with `merge_threads`), and the same totals regrouped by
//! the innermost Python frame memray would report for them (function,
//! file, line; memray's launcher frames on the main thread dropped).
//! Builds the largest-first tables `summary.rs` returns.

use std::collections::HashMap;

use crate::memray::stacks::StackTables;

/// Where allocations came from: full Python stack and native stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct SiteKey {
    pub python_stack: usize,
    pub native_stack: u64,
}

/// A site's running totals; `tid`/`generation` of its first allocation.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Tally {
    bytes: u64,
    count: u64,
    tid: u64,
    generation: usize,
}

impl Tally {
    /// A site's first contribution, from thread `tid` (images `generation`).
    pub(crate) fn first(tid: u64, generation: usize) -> Self {
        Tally {
            tid,
            generation,
            ..Tally::default()
        }
    }

    pub(crate) fn add(&mut self, bytes: u64, count: u64) {
        self.bytes = self.bytes.saturating_add(bytes);
        self.count = self.count.saturating_add(count);
    }
}

/// Bytes and allocation count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ByteCount {
    pub bytes: u64,
    pub count: u64,
}

/// A site identified by its full stacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackSite {
    pub python_stack: usize,
    pub native_stack: Option<u64>,
    /// Image generation to resolve `native_stack` with.
    pub image_generation: usize,
    /// Thread of the site's first allocation.
    pub tid: u64,
    pub bytes: u64,
    pub count: u64,
}

/// A Python source line, the innermost reported frame of some stacks.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameLocation {
    pub function: String,
    pub filename: String,
    pub line: i32,
}

/// A site identified by its innermost Python frame (`None`: allocations
/// with no reported Python frame).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameSite {
    pub frame: Option<FrameLocation>,
    pub bytes: u64,
    pub count: u64,
}

/// Allocations grouped two ways, largest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SiteTable {
    pub total: ByteCount,
    /// Distinct full stacks (memray's record count for this view).
    pub stack_sites: usize,
    pub top_stacks: Vec<StackSite>,
    pub python_frame_sites: usize,
    pub top_python_frames: Vec<FrameSite>,
}

/// The table of `sites`, resolving the `top` largest of each grouping.
pub(crate) fn site_table(
    sites: &HashMap<SiteKey, Tally>,
    stacks: &StackTables,
    top: usize,
) -> SiteTable {
    let mut total = ByteCount::default();
    let mut by_frame: HashMap<Option<FrameLocation>, ByteCount> = HashMap::new();
    let mut by_stack: Vec<(&SiteKey, &Tally)> = sites.iter().collect();
    for (key, t) in &by_stack {
        total.bytes = total.bytes.saturating_add(t.bytes);
        total.count = total.count.saturating_add(t.count);
        let frame = stacks
            .python_leaf_reported(key.python_stack, t.tid)
            .map(|f| FrameLocation {
                function: f.function.to_string(),
                filename: f.filename.to_string(),
                line: f.line,
            });
        let slot = by_frame.entry(frame).or_default();
        slot.bytes = slot.bytes.saturating_add(t.bytes);
        slot.count = slot.count.saturating_add(t.count);
    }
    by_stack.sort_by(|a, b| (b.1.bytes, b.1.count, a.0).cmp(&(a.1.bytes, a.1.count, b.0)));
    let mut frames: Vec<(Option<FrameLocation>, ByteCount)> = by_frame.into_iter().collect();
    frames.sort_by(|a, b| (b.1.bytes, b.1.count, &a.0).cmp(&(a.1.bytes, a.1.count, &b.0)));
    SiteTable {
        total,
        stack_sites: by_stack.len(),
        python_frame_sites: frames.len(),
        top_stacks: by_stack
            .into_iter()
            .take(top)
            .map(|(k, t)| StackSite {
                python_stack: k.python_stack,
                native_stack: (k.native_stack != 0).then_some(k.native_stack),
                image_generation: t.generation,
                tid: t.tid,
                bytes: t.bytes,
                count: t.count,
            })
            .collect(),
        top_python_frames: frames
            .into_iter()
            .take(top)
            .map(|(frame, c)| FrameSite {
                frame,
                bytes: c.bytes,
                count: c.count,
            })
            .collect(),
    }
}
