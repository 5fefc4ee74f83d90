//! The trace's stacks and the CPU profile samples taken while tracing
//! (`CPUSample`, Go 1.19+ with `pprof.StartCPUProfile` on): each sample
//! becomes a timed `cpu.samples` row of the shared [`StackAggregator`] on
//! its goroutine, so `hotspots`, callers and callees read them like any
//! profile. Frames are per source line (function, file, line), as the
//! pprof extractor makes them, language `go`.
//!
//! Samples wait here until the goroutines are described (the decoder names
//! them last): 24 bytes each, bounded by the input's `CPUSample` events.
//! The stack table holds each distinct stack once (the decoder's own table
//! is of the same size); a stack becomes aggregator nodes on first use.

use super::model::{Frame, StackId};
use crate::api::LimitationLog;
use crate::stacks::{MetricId, StackAggregator, ThreadInfo};

/// Longest `where` text kept in a row's args.
const MAX_WHERE_BYTES: usize = 256;

/// Every stack the decoder delivered, by id.
#[derive(Default)]
pub(super) struct StackTable {
    frames: Vec<Vec<Frame>>,
    /// The aggregator's leaf node of each stack, once converted.
    nodes: Vec<Option<u32>>,
}

impl StackTable {
    /// Keeps the frames (innermost first) of stack `id`. The decoder
    /// numbers stacks densely from 0, so the table grows with the input's
    /// stacks.
    pub(super) fn insert(&mut self, id: StackId, frames: Vec<Frame>) {
        let index = id as usize;
        if self.frames.len() <= index {
            self.frames.resize_with(index.saturating_add(1), Vec::new);
        }
        if let Some(slot) = self.frames.get_mut(index) {
            *slot = frames;
        }
    }

    fn frames(&self, id: StackId) -> &[Frame] {
        self.frames.get(id as usize).map_or(&[], Vec::as_slice)
    }

    /// Where an interval began: the innermost frame outside the runtime
    /// package (else the innermost), as `function (file:line)`.
    pub(super) fn where_of(&self, id: Option<StackId>) -> Option<String> {
        let frames = self.frames(id?);
        let frame = frames
            .iter()
            .find(|f| !f.function.starts_with("runtime."))
            .or_else(|| frames.first())?;
        let text = format!("{} ({}:{})", function_name(frame), frame.file, frame.line);
        Some(cut(&text, MAX_WHERE_BYTES).to_owned())
    }

    /// The aggregator's leaf node of stack `id` (`[no frames]` for none).
    fn node(&mut self, agg: &mut StackAggregator, id: Option<StackId>) -> u32 {
        let index = id.map(|i| i as usize);
        if let Some(Some(node)) = index.and_then(|i| self.nodes.get(i)) {
            return *node;
        }
        let frames = id.map_or(&[][..], |i| self.frames(i));
        let mut parent = None;
        // Innermost first in the trace; roots first in the aggregator.
        for f in frames.iter().rev() {
            let symbolized = !f.function.is_empty();
            let file = (!f.file.is_empty()).then_some(f.file.as_str());
            let line = i64::try_from(f.line).ok().filter(|&l| l > 0);
            let frame = agg.frame(&function_name(f), file, line, None, "go", symbolized);
            parent = Some(agg.stack(parent, frame));
        }
        let node = match parent {
            Some(node) => node,
            None => {
                let frame = agg.frame("[no frames]", None, None, None, "unknown", false);
                agg.stack(None, frame)
            }
        };
        if let Some(i) = index {
            if self.nodes.len() <= i {
                self.nodes.resize(i.saturating_add(1), None);
            }
            if let Some(slot) = self.nodes.get_mut(i) {
                *slot = Some(node);
            }
        }
        node
    }
}

/// A frame's function, or its PC when the trace did not name it.
fn function_name(f: &Frame) -> String {
    if f.function.is_empty() {
        format!("0x{:x}", f.pc)
    } else {
        f.function.clone()
    }
}

/// `text` cut to at most `max` bytes at a character boundary.
pub(super) fn cut(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.get(..end).unwrap_or("")
}

/// One sample waiting for its goroutine's name.
#[derive(Debug, Clone, Copy)]
pub(super) struct PendingSample {
    pub(super) ts: i64,
    pub(super) stack: Option<StackId>,
    /// The goroutine it caught; 0 when none ran (on a P, or off any P).
    pub(super) g: u64,
}

/// Adds every sample under `metric`, each on its goroutine's thread
/// (`thread_of(g)`); returns the earliest and latest sample time.
pub(super) fn add_samples(
    agg: &mut StackAggregator,
    metric: MetricId,
    samples: &[PendingSample],
    stacks: &mut StackTable,
    thread_of: impl Fn(u64) -> ThreadInfo,
    log: &mut LimitationLog,
) -> Option<(i64, i64)> {
    let mut threads: crate::FastHashMap<u64, u32> = crate::FastHashMap::default();
    let mut span: Option<(i64, i64)> = None;
    agg.reserve_unit_samples(metric, samples.len());
    for s in samples {
        if s.stack.is_none() {
            log.note("sample_without_stack", || {
                "a CPU sample's stack is empty or missing from the trace's stack table; it is counted under `[no frames]`".to_owned()
            });
        }
        let node = stacks.node(agg, s.stack);
        let thread = match threads.get(&s.g) {
            Some(&t) => t,
            None => {
                let t = agg.thread(thread_of(s.g));
                threads.insert(s.g, t);
                t
            }
        };
        agg.add_metric_sample(metric, node, thread, Some(s.ts), 1, 1);
        span = Some(match span {
            None => (s.ts, s.ts),
            Some((a, b)) => (a.min(s.ts), b.max(s.ts)),
        });
    }
    span
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(function: &str, line: u64) -> Frame {
        Frame {
            pc: 0x40,
            function: function.to_owned(),
            file: "/src/main.go".to_owned(),
            line,
        }
    }

    #[test]
    fn where_skips_the_runtime_and_stacks_are_converted_once() {
        let mut table = StackTable::default();
        table.insert(
            2,
            vec![frame("runtime.chanrecv1", 10), frame("main.worker", 42)],
        );
        table.insert(0, vec![frame("", 0)]);
        assert_eq!(
            table.where_of(Some(2)).as_deref(),
            Some("main.worker (/src/main.go:42)")
        );
        assert_eq!(table.where_of(Some(1)), None);
        assert_eq!(table.where_of(None), None);
        let mut agg = StackAggregator::new();
        let a = table.node(&mut agg, Some(2));
        assert_eq!(table.node(&mut agg, Some(2)), a);
        assert_eq!(agg.frame_count(), 2);
        // An unnamed frame is its PC, unsymbolized; a missing stack is
        // `[no frames]`.
        table.node(&mut agg, Some(0));
        assert!(!agg.all_symbolized());
        let none = table.node(&mut agg, None);
        assert_ne!(none, a);
        assert_eq!(cut("héllo", 2), "h");
    }
}
