//! The lookup tables a memray capture builds up as it streams, and the
//! functions that turn an event's stack ids into frames:
//!
//! * Python stacks: a tree of (code object, instruction offset, entry
//!   flag) nodes, id 0 = empty stack; frames get their function and file
//!   from code-object records and their line from the code object's line
//!   table (`linetable.rs`), exactly as memray's reports do.
//! * Native stacks: node `k` = the k-th native-frame record, an
//!   instruction pointer and its caller's node.
//! * Loaded images per generation (a new generation after each
//!   dlopen/dlclose), mapping an instruction pointer to a module and an
//!   address inside it.
//!
//! The capture holds no native symbol names: memray symbolizes at report
//! time from the binaries on the machine (libbacktrace, debuginfod). This
//! stops at module + address, which a symbolizer can take from here.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::memray::linetable::line_for_offset;
use crate::memray::records::{CodeObjectRecord, ImageRecord};

/// One Python frame as memray records it (memray's `Frame`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PythonFrameKey {
    pub code_object_id: u64,
    pub instruction_offset: i32,
    /// The first frame of an interpreter loop (C code called into Python).
    pub is_entry_frame: bool,
}

/// A resolved Python frame. Unknown code objects give empty names and line
/// 0, as in memray.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PythonFrame<'a> {
    pub function: &'a str,
    pub filename: &'a str,
    pub line: i32,
    pub is_entry_frame: bool,
}

/// A native frame mapped to the image that contained it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NativeFrame<'a> {
    /// The address unwinding found (a return address above the innermost).
    pub ip: u64,
    /// The image's path, when a loaded segment contains `ip`.
    pub image: Option<&'a str>,
    /// `ip` minus the image's load bias: the address in the image file's
    /// own virtual-address space, what `addr2line -e IMAGE` takes.
    pub image_address: u64,
}

#[derive(Debug)]
struct PythonNode {
    frame: PythonFrameKey,
    parent: usize,
}

/// One segment's address span, for lookup.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: u64,
    end: u64,
    image: usize,
}

#[derive(Debug, Default)]
struct Generation {
    images: Vec<ImageRecord>,
    /// Spans sorted by start, built on first lookup.
    spans: OnceLock<Vec<Span>>,
}

impl Generation {
    fn spans(&self) -> &[Span] {
        self.spans.get_or_init(|| {
            let mut spans: Vec<Span> = self
                .images
                .iter()
                .enumerate()
                .flat_map(|(image, rec)| {
                    rec.segments.iter().filter_map(move |s| {
                        let start = rec.load_address.checked_add(s.vaddr)?;
                        let end = start.checked_add(s.memsz)?;
                        Some(Span { start, end, image })
                    })
                })
                .collect();
            spans.sort_by_key(|s| s.start);
            spans
        })
    }
}

/// Everything needed to resolve the stack ids of a capture's events.
#[derive(Debug)]
pub struct StackTables {
    python_version: u32,
    main_tid: u64,
    skipped_frames_on_main_tid: u64,
    code_objects: HashMap<u64, CodeObjectRecord>,
    /// Index 0 is the root (the empty stack); never read as a frame.
    python_nodes: Vec<PythonNode>,
    python_children: HashMap<(usize, PythonFrameKey), usize>,
    /// Native node `k` is `native_nodes[k - 1]`: (ip, parent node).
    native_nodes: Vec<(u64, u64)>,
    /// Generation `g` (1-based, as memray numbers them) is `generations[g - 1]`.
    generations: Vec<Generation>,
    thread_names: HashMap<u64, String>,
}

impl StackTables {
    pub(crate) fn new(python_version: u32, main_tid: u64, skipped_frames_on_main_tid: u64) -> Self {
        let root = PythonNode {
            frame: PythonFrameKey {
                code_object_id: 0,
                instruction_offset: 0,
                is_entry_frame: false,
            },
            parent: 0,
        };
        StackTables {
            python_version,
            main_tid,
            skipped_frames_on_main_tid,
            code_objects: HashMap::new(),
            python_nodes: vec![root],
            python_children: HashMap::new(),
            native_nodes: Vec::new(),
            generations: Vec::new(),
            thread_names: HashMap::new(),
        }
    }

    pub(crate) fn add_code_object(&mut self, code: CodeObjectRecord) {
        self.code_objects.insert(code.id, code);
    }

    /// The stack id of `frame` called from stack `parent` (created once).
    pub(crate) fn push_python(&mut self, parent: usize, frame: PythonFrameKey) -> usize {
        let next = self.python_nodes.len();
        let parent = if parent < next { parent } else { 0 };
        *self
            .python_children
            .entry((parent, frame))
            .or_insert_with(|| {
                self.python_nodes.push(PythonNode { frame, parent });
                next
            })
    }

    /// Appends node `python_stack_count()` as given by an aggregated capture;
    /// false when `parent` is not an earlier node.
    pub(crate) fn append_python_node(&mut self, parent: usize, frame: PythonFrameKey) -> bool {
        if parent >= self.python_nodes.len() {
            return false;
        }
        self.python_nodes.push(PythonNode { frame, parent });
        true
    }

    /// Appends native node `native_frame_count() + 1`; false when `parent`
    /// is not an earlier node.
    pub(crate) fn append_native_frame(&mut self, ip: u64, parent: u64) -> bool {
        if parent > self.native_nodes.len() as u64 {
            return false;
        }
        self.native_nodes.push((ip, parent));
        true
    }

    /// Starts a new image generation; returns its number.
    pub(crate) fn start_generation(&mut self) -> usize {
        self.generations.push(Generation::default());
        self.generations.len()
    }

    /// Adds an image to the current generation (starting one if needed).
    pub(crate) fn add_image(&mut self, image: ImageRecord) {
        if self.generations.is_empty() {
            self.start_generation();
        }
        if let Some(current) = self.generations.last_mut() {
            current.images.push(image);
            current.spans = OnceLock::new();
        }
    }

    pub(crate) fn set_thread_name(&mut self, tid: u64, name: String) {
        self.thread_names.insert(tid, name);
    }

    /// The current image generation (0 before any image list).
    pub fn current_generation(&self) -> usize {
        self.generations.len()
    }

    /// Python stack ids in use: valid ids are `0..python_stack_count()`.
    pub fn python_stack_count(&self) -> usize {
        self.python_nodes.len()
    }

    /// Native node ids in use: valid ids are `1..=native_frame_count()`.
    pub fn native_frame_count(&self) -> usize {
        self.native_nodes.len()
    }

    pub fn code_object_count(&self) -> usize {
        self.code_objects.len()
    }

    pub fn code_object(&self, id: u64) -> Option<&CodeObjectRecord> {
        self.code_objects.get(&id)
    }

    pub fn thread_name(&self, tid: u64) -> Option<&str> {
        self.thread_names.get(&tid).map(String::as_str)
    }

    pub fn thread_names(&self) -> &HashMap<u64, String> {
        &self.thread_names
    }

    /// Images of generation `generation` (1-based; empty when unknown).
    pub fn images(&self, generation: usize) -> &[ImageRecord] {
        generation
            .checked_sub(1)
            .and_then(|g| self.generations.get(g))
            .map_or(&[], |g| g.images.as_slice())
    }

    fn resolve(&self, key: PythonFrameKey) -> PythonFrame<'_> {
        let Some(code) = self.code_objects.get(&key.code_object_id) else {
            return PythonFrame {
                function: "",
                filename: "",
                line: 0,
                is_entry_frame: key.is_entry_frame,
            };
        };
        PythonFrame {
            function: &code.function,
            filename: &code.filename,
            line: line_for_offset(
                self.python_version,
                &code.linetable,
                key.instruction_offset,
                code.first_line,
            ),
            is_entry_frame: key.is_entry_frame,
        }
    }

    /// The raw frames of Python stack `id`, innermost first.
    pub fn python_frame_keys(&self, id: usize) -> Vec<PythonFrameKey> {
        let mut frames = Vec::new();
        let mut at = id;
        // Parents are always earlier nodes, so this walk ends.
        while at != 0 {
            let Some(node) = self.python_nodes.get(at) else {
                break;
            };
            frames.push(node.frame);
            at = node.parent;
        }
        frames
    }

    /// Python stack `id`, innermost first, every frame.
    pub fn python_stack(&self, id: usize) -> Vec<PythonFrame<'_>> {
        let keys = self.python_frame_keys(id);
        keys.into_iter().map(|k| self.resolve(k)).collect()
    }

    /// Python stack `id` as memray reports it for thread `tid`: on the
    /// main thread the outermost frames of memray's launcher are dropped.
    pub fn python_stack_reported(&self, id: usize, tid: u64) -> Vec<PythonFrame<'_>> {
        let mut frames = self.python_stack(id);
        if tid == self.main_tid {
            let skip = usize::try_from(self.skipped_frames_on_main_tid).unwrap_or(usize::MAX);
            frames.truncate(frames.len().saturating_sub(skip));
        }
        frames
    }

    /// The innermost reported frame of stack `id` on thread `tid`.
    pub fn python_leaf_reported(&self, id: usize, tid: u64) -> Option<PythonFrame<'_>> {
        let depth = self.python_frame_keys(id).len() as u64;
        if tid == self.main_tid && depth <= self.skipped_frames_on_main_tid {
            return None;
        }
        let node = self.python_nodes.get(id).filter(|_| id != 0)?;
        Some(self.resolve(node.frame))
    }

    /// Native stack `id` (innermost first) mapped through the images of
    /// `generation`. Unknown ids give an empty stack.
    pub fn native_stack(&self, id: u64, generation: usize) -> Vec<NativeFrame<'_>> {
        let spans = generation
            .checked_sub(1)
            .and_then(|g| self.generations.get(g))
            .map(|g| (g, g.spans()));
        let mut frames = Vec::new();
        let mut at = id;
        // Parents are always earlier nodes, so this walk ends.
        while let Some(&(ip, parent)) = at
            .checked_sub(1)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| self.native_nodes.get(i))
        {
            let mut frame = NativeFrame {
                ip,
                image: None,
                image_address: ip,
            };
            if let Some((generation, spans)) = spans {
                let after = spans.partition_point(|s| s.start <= ip);
                let containing = after
                    .checked_sub(1)
                    .and_then(|i| spans.get(i))
                    .filter(|s| ip < s.end);
                if let Some(image) = containing.and_then(|s| generation.images.get(s.image)) {
                    frame.image = Some(&image.filename);
                    frame.image_address = ip.wrapping_sub(image.load_address);
                }
            }
            frames.push(frame);
            at = parent;
        }
        frames
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memray::records::Segment;

    fn key(code: u64, off: i32) -> PythonFrameKey {
        PythonFrameKey {
            code_object_id: code,
            instruction_offset: off,
            is_entry_frame: false,
        }
    }

    #[test]
    fn python_tree_dedups_and_resolves_innermost_first() {
        let mut t = StackTables::new(0x030b_07f0, 1, 1);
        t.add_code_object(CodeObjectRecord {
            id: 1,
            function: "main".into(),
            filename: "m.py".into(),
            first_line: 3,
            linetable: vec![],
        });
        let a = t.push_python(0, key(1, 0));
        let b = t.push_python(a, key(2, 4));
        assert_eq!(t.push_python(a, key(2, 4)), b);
        assert_ne!(t.push_python(0, key(2, 4)), b);
        let stack = t.python_stack(b);
        assert_eq!(stack.len(), 2);
        assert_eq!((stack[0].function, stack[0].line), ("", 0));
        assert_eq!((stack[1].function, stack[1].line), ("main", 3));
        // Main thread drops 1 outermost frame; other threads keep it.
        assert_eq!(t.python_stack_reported(b, 1).len(), 1);
        assert_eq!(t.python_stack_reported(b, 2).len(), 2);
        assert_eq!(t.python_leaf_reported(a, 1), None);
        assert_eq!(
            t.python_leaf_reported(a, 2).map(|f| f.function),
            Some("main")
        );
        assert!(t.python_stack(999).is_empty());
        assert!(!t.append_python_node(99, key(1, 0)));
    }

    #[test]
    fn native_frames_map_to_images_of_their_generation() {
        let mut t = StackTables::new(0, 1, 0);
        assert!(t.append_native_frame(0x1500, 0));
        assert!(t.append_native_frame(0x9000, 1));
        assert!(!t.append_native_frame(0x9000, 5));
        t.start_generation();
        t.add_image(ImageRecord {
            filename: "/lib/a.so".into(),
            load_address: 0x1000,
            segments: vec![Segment {
                vaddr: 0,
                memsz: 0x1000,
            }],
        });
        let frames = t.native_stack(2, 1);
        assert_eq!(frames.len(), 2);
        assert_eq!((frames[0].ip, frames[0].image), (0x9000, None));
        assert_eq!(frames[1].image, Some("/lib/a.so"));
        assert_eq!(frames[1].image_address, 0x500);
        assert_eq!(t.native_stack(2, 0)[1].image, None);
        assert!(t.native_stack(0, 1).is_empty());
        assert!(t.native_stack(77, 1).is_empty());
    }
}
