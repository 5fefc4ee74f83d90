//! The state every trace-event format fills while its input streams in:
//! interned strings, the kept events, tracks, counters, flow endpoints, the
//! limitation log, and the begins still waiting for their end. Chrome JSON,
//! Perfetto and Nsight each read their own input into one [`TraceBuilder`];
//! nesting, spill runs and emission then read it the same way for all three.

use crate::FastHashMap;

use super::interner::Interner;
use super::store::{CounterRow, EventStore, FlowPoint};
use super::tracks::Tracks;
use crate::api::LimitationLog;

/// The trace events of one extraction while they are read.
pub struct TraceBuilder {
    pub strings: Interner,
    pub store: EventStore,
    pub tracks: Tracks,
    pub counters: Vec<CounterRow>,
    pub flows: Vec<FlowPoint>,
    pub log: LimitationLog,
    /// The interned unit `bytes` (memory counters).
    pub bytes_unit: u32,
    /// Store rows of `B` begins waiting for their `E`, per track.
    pub open_slices: FastHashMap<u32, Vec<usize>>,
    /// Store rows of async begins waiting for their end, per `(track, key)`.
    pub open_async: FastHashMap<(u32, u32), Vec<usize>>,
}

impl Default for TraceBuilder {
    fn default() -> Self {
        let mut strings = Interner::default();
        let bytes_unit = strings.intern("bytes");
        TraceBuilder {
            strings,
            store: EventStore::default(),
            tracks: Tracks::default(),
            counters: Vec::new(),
            flows: Vec::new(),
            log: LimitationLog::default(),
            bytes_unit,
            open_slices: FastHashMap::default(),
            open_async: FastHashMap::default(),
        }
    }
}

impl TraceBuilder {
    /// Store rows of begins still waiting for their end (ascending).
    pub fn open_rows(&self) -> Vec<usize> {
        let mut rows: Vec<usize> = self
            .open_slices
            .values()
            .chain(self.open_async.values())
            .flatten()
            .copied()
            .collect();
        rows.sort_unstable();
        rows.dedup();
        rows
    }

    /// Renumbers the open rows after [`EventStore::retain_rows`] kept
    /// `kept` (which holds every open row).
    pub fn renumber_open(&mut self, kept: &[usize]) {
        let lists = self
            .open_slices
            .values_mut()
            .chain(self.open_async.values_mut());
        for row in lists.flatten() {
            if let Ok(new) = kept.binary_search(row) {
                *row = new;
            }
        }
    }

    /// Counts begins that never ended (they keep `dur_ns = -1`).
    pub fn close_open(&mut self) {
        let open: u64 = self
            .open_slices
            .values()
            .chain(self.open_async.values())
            .map(|v| v.len() as u64)
            .sum();
        self.log.note_n("unterminated_slice", open, || {
            "a begin event has no matching end; kept with dur_ns = -1".to_string()
        });
    }
}
