//! What a pass over a trace-cmd buffer found besides the events: counts
//! per CPU, losses the kernel reported, and the damage and unknowns the
//! decoder stepped over instead of stopping.

use std::collections::BTreeMap;

/// Diagnostics kept word for word; later ones are only counted.
const MAX_NOTES: usize = 64;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceCmdSummary {
    /// File format version (6 or 7).
    pub version: u32,
    /// `zstd 1.5.4`, `zlib 1.2.13`, or `None` when not compressed.
    pub compression: Option<String>,
    /// The buffer (instance) read; empty for the top one.
    pub buffer: String,
    /// The trace clock (`local`, `mono`, `x86-tsc`, …) when the file says.
    pub clock: Option<String>,
    /// The timestamps are nanoseconds: an ns clock, or a `TSC2NSEC`
    /// conversion was applied. `false` for counter clocks left as counts.
    pub timestamps_in_ns: bool,
    /// Added to every timestamp: the `OFFSET` options plus the `DATE`
    /// option (µs × 1000), as `trace-cmd report` does.
    pub ts_offset_ns: i64,
    /// Cycles were converted with the file's `TSC2NSEC` factors.
    pub tsc2nsec_applied: bool,
    /// CPUs with data in this buffer.
    pub cpus: u32,
    /// Records decoded into events, per CPU.
    pub events_per_cpu: BTreeMap<u32, u64>,
    /// Ring-buffer pages read.
    pub pages: u64,
    /// Pages (or the rest of a page) that could not be framed, and data
    /// blocks that could not be read or decompressed.
    pub page_errors: u64,
    /// Events the kernel says it dropped (stored counts in page headers).
    pub lost_events: u64,
    /// Pages after which events were lost without a stored count.
    pub pages_with_unknown_loss: u64,
    /// Sum of `overrun` in the per-CPU stats options (events overwritten).
    pub overruns: u64,
    /// Sum of `dropped events` in the per-CPU stats options.
    pub dropped_events: u64,
    /// Records whose event id has no format, by id.
    pub unknown_event_ids: BTreeMap<u32, u64>,
    /// Records of a known event too short for its fixed fields.
    pub undecodable_records: u64,
    pub notes: Vec<String>,
}

impl TraceCmdSummary {
    /// All records with an unknown id.
    pub fn unknown_records(&self) -> u64 {
        self.unknown_event_ids.values().sum()
    }

    /// All events decoded.
    pub fn events(&self) -> u64 {
        self.events_per_cpu.values().sum()
    }

    pub fn note(&mut self, text: String) {
        if self.notes.len() < MAX_NOTES {
            self.notes.push(text);
        } else if self.notes.len() == MAX_NOTES {
            self.notes.push("further notes left out".to_string());
        }
    }

    pub(crate) fn count_unknown(&mut self, id: u32) {
        // Damaged data can make every record a new id: keep the map small.
        if self.unknown_event_ids.len() < 1024 || self.unknown_event_ids.contains_key(&id) {
            *self.unknown_event_ids.entry(id).or_insert(0) += 1;
        } else {
            *self.unknown_event_ids.entry(u32::MAX).or_insert(0) += 1;
        }
    }
}
