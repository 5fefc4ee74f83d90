//! A perf sample's call chain as a stack of the shared
//! [`StackAggregator`]: frames root → leaf, each frame named by its
//! function when the decoder found one, else `module+0xoffset` in its
//! mapped file (unsymbolized), else the bare address. A frame is interned
//! once per distinct (context, module, offset), so the aggregator's key
//! digest is computed once per address, not once per sample.

use std::collections::HashMap;
use std::sync::Arc;

use crate::stacks::StackAggregator;

use super::frames::Frame;

/// The frame of a sample that recorded neither an address nor a chain.
pub const NO_FRAMES: &str = "[no frames]";

/// One frame's identity: kernel or user context, the mapped file, and the
/// offset in it (the address itself when no mapping holds it).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct FrameKey {
    kernel: bool,
    module: Option<Arc<str>>,
    at: u64,
}

/// Interns call-chain frames into the aggregator. Memory: one entry per
/// distinct frame address (never more than the frames in the input).
#[derive(Debug, Default)]
pub struct SampleStacks {
    frames: HashMap<FrameKey, u32>,
    no_frames: Option<u32>,
    /// Distinct frame addresses without a function name.
    pub unsymbolized_frames: u64,
    /// Distinct frame addresses with one.
    pub symbolized_frames: u64,
    /// Samples that had no frame at all.
    pub samples_without_frames: u64,
}

/// The file name a mapping's path ends in (`libc.so.6`, `[kernel.kallsyms]`).
pub fn module_name(path: &str) -> &str {
    match path.rsplit('/').next() {
        Some(base) if !base.is_empty() => base,
        _ => path,
    }
}

impl SampleStacks {
    /// The stack node of `chain` (innermost frame first, as the decoder
    /// gives it).
    pub fn stack(&mut self, agg: &mut StackAggregator, chain: &[Frame]) -> u32 {
        if chain.is_empty() {
            self.samples_without_frames += 1;
            let frame = *self
                .no_frames
                .get_or_insert_with(|| agg.frame(NO_FRAMES, None, None, None, "unknown", false));
            return agg.stack(None, frame);
        }
        let mut parent = None;
        for frame in chain.iter().rev() {
            let id = self.frame(agg, frame);
            parent = Some(agg.stack(parent, id));
        }
        parent.unwrap_or_default()
    }

    fn frame(&mut self, agg: &mut StackAggregator, f: &Frame) -> u32 {
        let key = FrameKey {
            kernel: f.kernel,
            module: f.module.clone(),
            at: f.offset_in_module.unwrap_or(f.ip),
        };
        if let Some(&id) = self.frames.get(&key) {
            return id;
        }
        let module = f.module.as_deref().map(module_name);
        let language = if f.kernel { "kernel" } else { "native" };
        let id = match (&f.symbol, module, f.offset_in_module) {
            (Some(symbol), _, _) => {
                self.symbolized_frames += 1;
                agg.frame(symbol, None, None, module, language, true)
            }
            (None, Some(m), Some(off)) => {
                self.unsymbolized_frames += 1;
                agg.frame(
                    &format!("{m}+{off:#x}"),
                    None,
                    None,
                    module,
                    language,
                    false,
                )
            }
            _ => {
                self.unsymbolized_frames += 1;
                agg.frame(&format!("{:#x}", f.ip), None, None, module, language, false)
            }
        };
        self.frames.insert(key, id);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(ip: u64, module: Option<&str>, off: Option<u64>, symbol: Option<&str>) -> Frame {
        Frame {
            ip,
            kernel: module == Some("[kernel.kallsyms]"),
            module: module.map(Arc::from),
            offset_in_module: off,
            symbol: symbol.map(Arc::from),
            symbol_offset: symbol.map(|_| 4),
        }
    }

    #[test]
    fn chains_become_root_to_leaf_stacks_with_named_and_offset_frames() {
        let mut agg = StackAggregator::new();
        let mut stacks = SampleStacks::default();
        let leaf = frame(
            0xffff_0010,
            Some("[kernel.kallsyms]"),
            Some(0x10),
            Some("clear_page"),
        );
        let user = frame(0x7000, Some("/usr/lib/libc.so.6"), Some(0xd4353), None);
        let lost = frame(0x9999, None, None, None);
        let a = stacks.stack(&mut agg, &[leaf.clone(), user.clone(), lost.clone()]);
        let b = stacks.stack(&mut agg, &[leaf, user, lost]);
        assert_eq!(a, b, "the same chain is the same stack");
        assert_eq!(agg.frame_count(), 3);
        assert_eq!(
            (stacks.symbolized_frames, stacks.unsymbolized_frames),
            (1, 2)
        );
        // The libc frame is interned under its file name and offset.
        let again = agg.frame(
            "libc.so.6+0xd4353",
            None,
            None,
            Some("libc.so.6"),
            "native",
            false,
        );
        assert!(again < 3, "already interned");
        let none = stacks.stack(&mut agg, &[]);
        assert_eq!(stacks.samples_without_frames, 1);
        assert_eq!(none, stacks.stack(&mut agg, &[]));
        assert_eq!(module_name("/a/b/libm.so"), "libm.so");
        assert_eq!(module_name("[vdso]"), "[vdso]");
        assert_eq!(module_name("dir/"), "dir/");
    }
}
