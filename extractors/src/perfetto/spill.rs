//! Bounded memory for Perfetto: finished events leave the store for the
//! shared spill runs ([`crate::trace_events::external`]) while the
//! trace is decoded and while ftrace is replayed.
//!
//! Rows carry a slot, not a track, until every descriptor has been read,
//! so runs are sorted by slot and renamed once tracks are resolved
//! ([`crate::trace_events::runs::RunFile::retrack`]). Slices still waiting for
//! their end stay in the store (track-event begins while decoding, atrace
//! `B` and async begins while replaying), and what points at them is
//! renumbered after each run.

use std::io;
use std::path::Path;

use super::decoder::Decoder;
use crate::trace_events::external::Spill;
use crate::trace_events::spill_phases::PhaseCollector;
use crate::trace_events::store::EventStore;

/// The spill of one extraction: none until the store first holds
/// `budget` events, none at all without a folder.
pub struct Spilling<'a> {
    dir: Option<&'a Path>,
    budget: usize,
    pub spill: Option<Spill>,
}

impl<'a> Spilling<'a> {
    pub fn new(dir: Option<&'a Path>, budget: usize) -> Self {
        Spilling {
            dir,
            budget: budget.max(1),
            spill: None,
        }
    }

    /// The spill when `store` has grown enough to write a run.
    pub fn due(&mut self, store: &EventStore) -> io::Result<Option<&mut Spill>> {
        let Some(dir) = self.dir else {
            return Ok(None);
        };
        if store.len() < self.budget {
            return Ok(None);
        }
        if self.spill.is_none() {
            self.spill = Some(Spill::create(dir, self.budget, PhaseCollector::default())?);
        }
        Ok(self.spill.as_mut().filter(|spill| spill.due(store)))
    }
}

/// Writes every event of `d`'s store but the rows `open` lists as one run;
/// renumbers `open` to where those rows moved.
pub fn spill_keeping_open<'o>(
    d: &mut Decoder,
    spill: &mut Spill,
    open: impl Iterator<Item = &'o mut usize>,
    kept: &[usize],
) -> io::Result<()> {
    spill.write_run_keeping(&mut d.p, kept)?;
    for row in open {
        if let Ok(new) = kept.binary_search(row) {
            *row = new;
        }
    }
    Ok(())
}

/// The sorted, distinct rows of `open`.
pub fn kept_rows<'o>(open: impl Iterator<Item = &'o usize>) -> Vec<usize> {
    let mut kept: Vec<usize> = open.copied().collect();
    kept.sort_unstable();
    kept.dedup();
    kept
}

impl Decoder {
    /// Writes every finished event to one run of `spill`; the track-event
    /// slices still waiting for their end stay in the store.
    pub fn spill_finished(&mut self, spill: &mut Spill) -> io::Result<()> {
        let kept = kept_rows(self.open.values().flatten());
        let mut open = std::mem::take(&mut self.open);
        spill_keeping_open(self, spill, open.values_mut().flatten(), &kept)?;
        self.open = open;
        Ok(())
    }

    /// Writes every event left once the input and the scheduling replay
    /// are done, then names each run's tracks.
    pub fn spill_rest_and_resolve(&mut self, spill: &mut Spill) -> io::Result<()> {
        spill.write_run_keeping(&mut self.p, &[])?;
        let map = self.resolve_tracks();
        spill.retrack(&map)
    }
}
