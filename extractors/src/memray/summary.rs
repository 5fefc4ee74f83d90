//! What `analyze_memory` shows from a memray capture, computed in one pass
//! over the events the way memray's own reports compute it: total
//! allocated, the heap's high-water mark (memray's `HighWatermarkFinder`:
//! live bytes after each allocation record, frees of unknown addresses
//! ignored, a reused address counted again), what was live at that peak
//! and at exit grouped by allocation site (memray's snapshot aggregation,
//! threads merged), and RSS over time with the heap beside it.
//!
//! The live set at the peak is found without a second pass: an allocation
//! that goes away is kept (summed by site) only while it was live at the
//! best peak so far, and that pile is dropped whenever a new peak is set.

use std::collections::HashMap;
use std::io::Read;

use crate::memray::error::MemrayError;
use crate::memray::events::{AllocatorKind, MemrayEvent};
use crate::memray::mapped_ranges::MappedRanges;
use crate::memray::reader::MemrayReader;
use crate::memray::site_tables::{SiteKey, Tally, site_table};
use crate::memray::stacks::StackTables;

pub use crate::memray::site_tables::{ByteCount, FrameLocation, FrameSite, SiteTable, StackSite};

#[derive(Debug, Clone, Copy)]
struct Origin {
    site: SiteKey,
    tid: u64,
    generation: usize,
}

#[derive(Debug, Clone, Copy)]
struct Live {
    origin: Origin,
    size: u64,
    since: u64,
}

fn tally_into(map: &mut HashMap<SiteKey, Tally>, o: Origin, bytes: u64, count: u64) {
    map.entry(o.site)
        .or_insert(Tally::first(o.tid, o.generation))
        .add(bytes, count);
}

/// Allocator calls over the whole run (all-allocations captures only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocationTotals {
    pub allocations: u64,
    pub allocated_bytes: u64,
    pub deallocations: u64,
}

/// RSS and heap at one of memray's samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryPoint {
    pub ms_since_epoch: u64,
    pub rss_bytes: u64,
    pub heap_bytes: u64,
}

/// The fold's result.
#[derive(Debug)]
pub struct MemorySummary {
    /// Allocation records (frees included; aggregated: location records),
    /// memray's "total allocations".
    pub allocation_records: u64,
    /// `None` for aggregated captures, which keep no per-call history.
    pub totals: Option<AllocationTotals>,
    /// Heap high-water mark, memray's "peak memory".
    pub peak_heap_bytes: u64,
    /// Index of the allocation record at which it was (last) reached.
    pub peak_record_index: Option<u64>,
    /// Live at the high-water mark, by site.
    pub at_peak: SiteTable,
    /// Still allocated when tracking stopped (memray's "leaks"), by site.
    pub at_end: SiteTable,
    /// Everything allocated, by site (`None` for aggregated captures).
    pub allocated: Option<SiteTable>,
    pub memory_over_time: Vec<MemoryPoint>,
    /// Decoder notes, and the error that cut the stream short, if any.
    pub notes: Vec<String>,
    pub stopped_by: Option<MemrayError>,
}

/// The one-pass fold; feed it every event in order.
#[derive(Debug, Default)]
pub struct MemoryFold {
    records: u64,
    current: u64,
    peak: u64,
    peak_index: Option<u64>,
    live: HashMap<u64, Live>,
    mapped: MappedRanges<Origin>,
    gone_but_live_at_peak: HashMap<SiteKey, Tally>,
    allocated: HashMap<SiteKey, Tally>,
    totals: AllocationTotals,
    aggregated: bool,
    aggregated_at_peak: HashMap<SiteKey, Tally>,
    aggregated_at_end: HashMap<SiteKey, Tally>,
    points: Vec<MemoryPoint>,
}

impl MemoryFold {
    pub fn new() -> Self {
        Self::default()
    }

    /// Live heap bytes after the events so far.
    pub fn current_heap_bytes(&self) -> u64 {
        self.current
    }

    fn retire(&mut self, origin: Origin, bytes: u64, since: u64) {
        if self.peak_index.is_some_and(|p| since <= p) {
            tally_into(&mut self.gone_but_live_at_peak, origin, bytes, 1);
        }
    }

    fn update_peak(&mut self, index: u64) {
        if self.current >= self.peak {
            self.peak = self.current;
            self.peak_index = Some(index);
            self.gone_but_live_at_peak.clear();
        }
    }

    pub fn add(&mut self, event: &MemrayEvent) {
        match event {
            MemrayEvent::Allocation(a) => {
                let index = self.records;
                self.records = self.records.saturating_add(1);
                let origin = Origin {
                    site: SiteKey {
                        python_stack: a.python_stack,
                        native_stack: a.native_stack.unwrap_or(0),
                    },
                    tid: a.tid,
                    generation: a.image_generation,
                };
                self.totals.allocations = self.totals.allocations.saturating_add(1);
                self.totals.allocated_bytes = self.totals.allocated_bytes.saturating_add(a.size);
                tally_into(&mut self.allocated, origin, a.size, 1);
                let replaced = if a.allocator.kind() == AllocatorKind::RangedAllocator {
                    self.mapped.map(a.address, a.size, origin, index);
                    None
                } else {
                    let live = Live {
                        origin,
                        size: a.size,
                        since: index,
                    };
                    self.live.insert(a.address, live)
                };
                if let Some(old) = replaced {
                    self.retire(old.origin, old.size, old.since);
                }
                self.current = self.current.saturating_add(a.size);
                self.update_peak(index);
            }
            MemrayEvent::Deallocation(d) => {
                let index = self.records;
                self.records = self.records.saturating_add(1);
                self.totals.deallocations = self.totals.deallocations.saturating_add(1);
                if d.allocator.kind() == AllocatorKind::RangedDeallocator {
                    let (freed, pieces) = self.mapped.unmap(d.address, d.size, index);
                    for p in pieces {
                        self.retire(p.owner, p.span_bytes(), p.since);
                    }
                    self.current = self.current.saturating_sub(freed);
                } else if let Some(old) = self.live.remove(&d.address) {
                    self.retire(old.origin, old.size, old.since);
                    self.current = self.current.saturating_sub(old.size);
                }
                self.update_peak(index);
            }
            MemrayEvent::Aggregated(s) => {
                self.aggregated = true;
                self.records = self.records.saturating_add(1);
                let origin = Origin {
                    site: SiteKey {
                        python_stack: s.python_stack,
                        native_stack: s.native_stack.unwrap_or(0),
                    },
                    tid: s.tid,
                    generation: s.image_generation,
                };
                if s.allocations_at_peak != 0 {
                    tally_into(
                        &mut self.aggregated_at_peak,
                        origin,
                        s.bytes_at_peak,
                        s.allocations_at_peak,
                    );
                }
                if s.allocations_leaked != 0 {
                    tally_into(
                        &mut self.aggregated_at_end,
                        origin,
                        s.bytes_leaked,
                        s.allocations_leaked,
                    );
                }
                self.peak = self.peak.saturating_add(s.bytes_at_peak);
            }
            MemrayEvent::MemorySample {
                ms_since_epoch,
                rss_bytes,
                heap_bytes,
            } => self.points.push(MemoryPoint {
                ms_since_epoch: *ms_since_epoch,
                rss_bytes: *rss_bytes,
                heap_bytes: heap_bytes.unwrap_or(self.current),
            }),
            _ => {}
        }
    }

    /// The summary, resolving the `top` largest sites of each view.
    pub fn finish(self, stacks: &StackTables, top: usize) -> MemorySummary {
        let (at_peak, at_end) = if self.aggregated {
            (self.aggregated_at_peak, self.aggregated_at_end)
        } else {
            let mut at_peak = self.gone_but_live_at_peak;
            let mut at_end = HashMap::new();
            let peak = self.peak_index;
            let mut add = |o: Origin, bytes: u64, since: u64| {
                tally_into(&mut at_end, o, bytes, 1);
                if peak.is_some_and(|p| since <= p) {
                    tally_into(&mut at_peak, o, bytes, 1);
                }
            };
            for l in self.live.values() {
                add(l.origin, l.size, l.since);
            }
            for p in self.mapped.pieces() {
                add(p.owner, p.span_bytes(), p.since);
            }
            (at_peak, at_end)
        };
        MemorySummary {
            allocation_records: self.records,
            totals: (!self.aggregated).then_some(self.totals),
            peak_heap_bytes: self.peak,
            peak_record_index: if self.aggregated {
                None
            } else {
                self.peak_index
            },
            at_peak: site_table(&at_peak, stacks, top),
            at_end: site_table(&at_end, stacks, top),
            allocated: (!self.aggregated).then(|| site_table(&self.allocated, stacks, top)),
            memory_over_time: self.points,
            notes: Vec::new(),
            stopped_by: None,
        }
    }
}

/// Reads `reader` to its end and folds every event; keeps the `top`
/// largest sites per view. A stream error ends the fold early: the
/// summary covers what came before and says why in `stopped_by`.
pub fn leaks_and_peak<R: Read>(reader: &mut MemrayReader<R>, top: usize) -> MemorySummary {
    let mut fold = MemoryFold::new();
    let mut stopped_by = None;
    loop {
        match reader.next_event() {
            Ok(Some(event)) => fold.add(&event),
            Ok(None) => break,
            Err(e) => {
                stopped_by = Some(e);
                break;
            }
        }
    }
    let mut summary = fold.finish(reader.stacks(), top);
    summary.notes = reader.notes().describe(reader.header());
    if let Some(e) = &stopped_by {
        summary.notes.push(format!("decoding stopped early: {e}"));
    }
    summary.stopped_by = stopped_by;
    summary
}

#[cfg(test)]
#[path = "summary_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "corpus_tests.rs"]
mod corpus_tests;
