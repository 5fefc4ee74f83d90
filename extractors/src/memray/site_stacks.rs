//! memray allocation sites as flameox call stacks.
//!
//! A site is memray's location: a Python stack, a native stack (`--native`)
//! and a thread. Its stack reads root to leaf: the Python frames as
//! memray's reports show them (the launcher's frames on the main thread
//! dropped; function, file and executing line), then the native frames
//! outermost first, each its image's basename and the address inside the
//! image (`0x…`, unsymbolized: the capture holds no symbol names). The
//! native stack runs from the program's entry to the allocator, so it
//! also holds the interpreter frames that ran the Python ones; splitting
//! them needs symbols, which memray resolves at report time on the
//! traced machine.
//!
//! The summary fold keys sites by (Python stack, native stack) with
//! threads merged, as memray's reports do; flameox keeps threads apart,
//! so the extractor hands the fold a per-thread Python stack id
//! ([`ThreadStacks`]) and maps it back here.

use std::collections::{HashMap, HashSet};

use crate::memray::stacks::StackTables;
use crate::memray::summary::StackSite;
use crate::stacks::{MetricId, StackAggregator, ThreadInfo};

/// The frame of a site with neither a Python nor a native frame (the
/// name pprof gives a sample without locations).
pub use crate::pprof::NO_FRAMES;
/// The function name of a Python frame whose code object the capture
/// never described.
pub const UNKNOWN_CODE_OBJECT: &str = "[unknown code object]";

/// (Python stack id, memray thread) pairs, numbered in first-seen order:
/// the ids the fold sees in place of Python stack ids.
#[derive(Debug, Default)]
pub struct ThreadStacks {
    ids: HashMap<(usize, u64), usize>,
    pairs: Vec<(usize, u64)>,
}

impl ThreadStacks {
    /// The id of Python stack `python_stack` on thread `tid`.
    pub fn id(&mut self, python_stack: usize, tid: u64) -> usize {
        let next = self.pairs.len();
        *self.ids.entry((python_stack, tid)).or_insert_with(|| {
            self.pairs.push((python_stack, tid));
            next
        })
    }

    /// The (Python stack, thread) behind `id`.
    pub fn pair(&self, id: usize) -> Option<(usize, u64)> {
        self.pairs.get(id).copied()
    }
}

/// (bytes metric, count metric) of each view of the sites, named as
/// pprof names the same ideas: every allocation; still allocated when
/// tracking stopped (memray's leaks; pprof's in-use space at the end of
/// its profile); live at the heap's high-water mark.
pub const ALLOCATED_METRICS: (&str, &str) = ("memory.alloc_bytes", "memory.alloc_objects");
pub const AT_END_METRICS: (&str, &str) = ("memory.inuse_bytes", "memory.inuse_objects");
pub const AT_PEAK_METRICS: (&str, &str) = ("memory.peak_bytes", "memory.peak_objects");

/// A bytes metric and the count metric beside it (`memory.alloc_bytes`
/// and `memory.alloc_objects`).
#[derive(Debug, Clone, Copy)]
pub struct MetricPair {
    pub bytes: MetricId,
    pub count: MetricId,
}

/// Turns sites into aggregator stacks, interning each part once.
pub struct SiteStacks<'a> {
    tables: &'a StackTables,
    threads: &'a ThreadStacks,
    pid: i64,
    /// memray's number of the main thread (its launcher frames are dropped).
    main_tid: u64,
    process_name: Option<String>,
    /// (Python stack, thread is main) → the stack of its innermost frame.
    python: HashMap<(usize, bool), Option<u32>>,
    /// (Python part, native stack, image generation) → leaf stack.
    leaves: HashMap<(Option<u32>, u64, usize), u32>,
    thread_ids: HashMap<u64, u32>,
    native_frames: HashSet<u32>,
    unknown_code_objects: u64,
}

impl<'a> SiteStacks<'a> {
    pub fn new(
        tables: &'a StackTables,
        threads: &'a ThreadStacks,
        pid: i64,
        main_tid: u64,
        process_name: Option<String>,
    ) -> Self {
        SiteStacks {
            tables,
            threads,
            pid,
            main_tid,
            process_name,
            python: HashMap::new(),
            leaves: HashMap::new(),
            thread_ids: HashMap::new(),
            native_frames: HashSet::new(),
            unknown_code_objects: 0,
        }
    }

    /// Distinct native frames (module + address, unsymbolized).
    pub fn native_frame_count(&self) -> u64 {
        self.native_frames.len() as u64
    }

    /// Python frames, once per distinct stack they end or pass through,
    /// whose code object the capture never described.
    pub fn unknown_code_objects(&self) -> u64 {
        self.unknown_code_objects
    }

    /// Adds `site`'s bytes and count under `metrics`. False when the
    /// site's id is not one [`ThreadStacks`] gave (nothing added).
    pub fn add(
        &mut self,
        agg: &mut StackAggregator,
        site: &StackSite,
        metrics: MetricPair,
    ) -> bool {
        let Some((python_stack, tid)) = self.threads.pair(site.python_stack) else {
            return false;
        };
        let leaf = self.leaf(agg, python_stack, tid, site);
        let thread = self.thread(agg, tid);
        let bytes = i64::try_from(site.bytes).unwrap_or(i64::MAX);
        let count = i64::try_from(site.count).unwrap_or(i64::MAX);
        agg.add_metric_sample(metrics.bytes, leaf, thread, None, bytes, count);
        agg.add_metric_sample(metrics.count, leaf, thread, None, count, count);
        true
    }

    fn thread(&mut self, agg: &mut StackAggregator, tid: u64) -> u32 {
        if let Some(&id) = self.thread_ids.get(&tid) {
            return id;
        }
        let info = ThreadInfo {
            pid: Some(self.pid),
            tid: i64::try_from(tid).ok(),
            thread_name: self
                .tables
                .thread_name(tid)
                .filter(|n| !n.is_empty())
                .map(str::to_owned),
            process_name: self.process_name.clone(),
        };
        let id = agg.thread(info);
        self.thread_ids.insert(tid, id);
        id
    }

    fn leaf(
        &mut self,
        agg: &mut StackAggregator,
        python_stack: usize,
        tid: u64,
        site: &StackSite,
    ) -> u32 {
        let python = self.python_part(agg, python_stack, tid);
        let native = site.native_stack.unwrap_or(0);
        let key = (python, native, site.image_generation);
        if let Some(&leaf) = self.leaves.get(&key) {
            return leaf;
        }
        let mut parent = python;
        let frames = self.tables.native_stack(native, site.image_generation);
        for f in frames.iter().rev() {
            let module = f.image.map(|path| path.rsplit('/').next().unwrap_or(path));
            let function = format!("0x{:x}", f.image_address);
            let frame = agg.frame(&function, None, None, module, "native", false);
            self.native_frames.insert(frame);
            parent = Some(agg.stack(parent, frame));
        }
        let leaf = match parent {
            Some(leaf) => leaf,
            None => {
                let frame = agg.frame(NO_FRAMES, None, None, None, "unknown", false);
                agg.stack(None, frame)
            }
        };
        self.leaves.insert(key, leaf);
        leaf
    }

    /// The stack of the innermost reported Python frame (`None`: none).
    fn python_part(
        &mut self,
        agg: &mut StackAggregator,
        python_stack: usize,
        tid: u64,
    ) -> Option<u32> {
        let main = tid == self.main_tid;
        if let Some(&done) = self.python.get(&(python_stack, main)) {
            return done;
        }
        let mut parent = None;
        for f in self
            .tables
            .python_stack_reported(python_stack, tid)
            .iter()
            .rev()
        {
            let function = if f.function.is_empty() && f.filename.is_empty() {
                self.unknown_code_objects = self.unknown_code_objects.saturating_add(1);
                UNKNOWN_CODE_OBJECT
            } else {
                f.function
            };
            let file = (!f.filename.is_empty()).then_some(f.filename);
            let line = (f.line > 0).then_some(i64::from(f.line));
            let frame = agg.frame(function, file, line, None, "python", true);
            parent = Some(agg.stack(parent, frame));
        }
        self.python.insert((python_stack, main), parent);
        parent
    }
}
