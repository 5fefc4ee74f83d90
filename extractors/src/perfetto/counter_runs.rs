//! Counter values past the budget (a system trace's `cpu_idle` and
//! `cpu_frequency` run to millions): the held rows are sorted by time,
//! stably, and written as a run ([`crate::sorted_runs::TimeOrderedRuns`]);
//! `counters` is written from the merge. Rows carry their slot until
//! tracks are resolved, so spilled rows are named on the way out with the
//! answers `resolve_tracks` gives held rows ([`CounterNaming`]).

use std::io;

use crate::sorted_runs::TimedRecord;
use crate::trace_events::ids::NO_ID;
use crate::trace_events::store::CounterRow;
use crate::{FastHashMap, FastHashSet};

/// `counters` is in time order, rows at one time in input order.
impl TimedRecord for CounterRow {
    fn ts(&self) -> i64 {
        self.ts
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.ts.to_le_bytes());
        out.extend_from_slice(&self.value.to_bits().to_le_bytes());
        out.extend_from_slice(&self.track.to_le_bytes());
        out.extend_from_slice(&self.name.to_le_bytes());
        out.extend_from_slice(&self.unit.to_le_bytes());
    }

    fn decode(b: &[u8]) -> Option<Self> {
        if b.len() != 28 {
            return None;
        }
        let u64_at = |k: usize| Some(u64::from_le_bytes(b.get(k..k + 8)?.try_into().ok()?));
        let u32_at = |k: usize| Some(u32::from_le_bytes(b.get(k..k + 4)?.try_into().ok()?));
        Some(CounterRow {
            ts: u64_at(0)? as i64,
            value: f64::from_bits(u64_at(8)?),
            track: u32_at(16)?,
            name: u32_at(20)?,
            unit: u32_at(24)?,
        })
    }
}

/// What `resolve_tracks` does to a counter row, kept for rows that were
/// spilled before the tracks were known.
pub struct CounterNaming {
    /// Slot → track.
    pub map: Vec<u32>,
    /// Units of uuid counters from their descriptors, by slot.
    pub units: FastHashMap<u32, u32>,
    /// Slots of uuid counter tracks (named after their track).
    pub counter_slots: FastHashSet<u32>,
    /// Slot → its track's interned display name.
    pub names: Vec<u32>,
}

impl CounterNaming {
    /// Puts a row written with its slot on its track, with the unit and
    /// name `resolve_tracks` gives a held row.
    pub fn apply(&self, row: &mut CounterRow) -> io::Result<()> {
        let slot = row.track;
        let unresolved = || {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "a spilled counter names a slot that was never resolved",
            )
        };
        row.track = *self.map.get(slot as usize).ok_or_else(unresolved)?;
        if row.unit == NO_ID
            && let Some(&unit) = self.units.get(&slot)
        {
            row.unit = unit;
        }
        if self.counter_slots.contains(&slot) || row.name == NO_ID {
            row.name = *self.names.get(slot as usize).ok_or_else(unresolved)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sorted_runs::TimeOrderedRuns;

    fn rows() -> Vec<CounterRow> {
        (0..500u32)
            .map(|i| CounterRow {
                track: i % 3,
                ts: i64::from((i * 31) % 40),
                value: f64::from(i) * -0.5,
                name: if i % 4 == 0 { NO_ID } else { 100 + i % 7 },
                unit: if i % 5 == 0 { NO_ID } else { 200 },
            })
            .collect()
    }

    fn naming() -> CounterNaming {
        CounterNaming {
            map: vec![7, 5, 9],
            units: [(1, 300)].into_iter().collect(),
            counter_slots: [2].into_iter().collect(),
            names: vec![17, 15, 19],
        }
    }

    fn text(rows: impl Iterator<Item = CounterRow>) -> Vec<String> {
        rows.map(|r| format!("{r:?}")).collect()
    }

    #[test]
    fn spilled_rows_come_back_in_time_order_named_like_held_ones() {
        let dir = crate::spill_compare::spill_dir("counter-runs");
        let naming = naming();
        // Held: a stable sort by time, each row named in place.
        let mut held = rows();
        held.sort_by_key(|r| r.ts);
        for r in &mut held {
            naming.apply(r).unwrap();
        }
        assert!(held.iter().any(|r| r.unit == 300) && held.iter().any(|r| r.name == 19));
        for budget in [1, 3, 499, 500] {
            let mut runs = TimeOrderedRuns::new(&dir, "counters", budget);
            let mut pending = Vec::new();
            for r in rows() {
                pending.push(r);
                if runs.full(pending.len()) {
                    runs.write(&mut pending);
                }
            }
            runs.write(&mut pending);
            let mut merged: Vec<CounterRow> =
                runs.merge().unwrap().collect::<io::Result<_>>().unwrap();
            for r in &mut merged {
                naming.apply(r).unwrap();
            }
            assert_eq!(
                text(merged.into_iter()),
                text(held.iter().copied()),
                "{budget}"
            );
        }
        crate::spill_compare::assert_no_spill_files_left(&dir);
    }

    #[test]
    fn a_slot_without_a_track_is_an_error_not_a_panic() {
        let mut row = rows()[0];
        row.track = 40;
        assert!(naming().apply(&mut row).is_err());
    }
}
