//! Clock snapshots and conversion to the trace clock.
//!
//! Producers stamp packets in different clocks (boottime for ftrace,
//! monotonic for apps, sequence-scoped incremental clocks in the SDK). A
//! `ClockSnapshot` reads several clocks at one instant; a timestamp in clock
//! A converts to the trace clock through the latest snapshot (at or before
//! it, else the first) that has both. Conversion through a chain of clocks
//! is not attempted: a clock with no direct snapshot is reported as a
//! limitation and its packets are kept at their raw value only when no
//! snapshot was ever seen (a trace with one clock needs none).

use crate::FastHashMap;

use super::proto::ClockSnapshot;

/// `BuiltinClock.BOOTTIME`, the default trace clock.
pub const BOOTTIME: u32 = 6;
/// Clock ids 64..=127 are scoped to one packet sequence.
fn is_sequence_scoped(clock: u32) -> bool {
    (64..=127).contains(&clock)
}

/// A clock as seen in a snapshot: key `(sequence or 0, clock id)`.
type ClockKey = (u32, u32);

#[derive(Default)]
pub struct Clocks {
    trace_clock: Option<u32>,
    /// Per clock: `(clock value in ns, trace clock value)` pairs, in
    /// snapshot order (clock values only grow within a trace).
    points: FastHashMap<ClockKey, Vec<(i64, i64)>>,
    /// Sequence-scoped clock definitions: unit and incremental flag.
    units: FastHashMap<ClockKey, (u64, bool)>,
    /// Last absolute value of each incremental clock, in its units.
    last_incremental: FastHashMap<ClockKey, u64>,
    pub snapshots: u64,
}

/// Why a timestamp could not be converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockError {
    /// Snapshots exist but none relates this clock to the trace clock.
    NoPath(u32),
}

impl Clocks {
    /// The clock all output timestamps are in.
    pub fn trace_clock(&self) -> u32 {
        self.trace_clock.unwrap_or(BOOTTIME)
    }

    fn key(sequence: u32, clock: u32) -> ClockKey {
        if is_sequence_scoped(clock) {
            (sequence, clock)
        } else {
            (0, clock)
        }
    }

    /// Records a snapshot written on `sequence`.
    pub fn add_snapshot(&mut self, sequence: u32, snapshot: &ClockSnapshot) {
        self.snapshots += 1;
        if let Some(primary) = snapshot.primary_trace_clock
            && self.trace_clock.is_none()
            && primary > 0
        {
            self.trace_clock = Some(primary as u32);
        }
        let trace = self.trace_clock();
        for clock in &snapshot.clocks {
            let Some(id) = clock.clock_id else { continue };
            let key = Self::key(sequence, id);
            let unit = clock.unit_multiplier_ns.filter(|&u| u > 0).unwrap_or(1);
            let incremental = clock.is_incremental.unwrap_or(false);
            if is_sequence_scoped(id) {
                self.units.insert(key, (unit, incremental));
                if incremental && let Some(ts) = clock.timestamp {
                    self.last_incremental.insert(key, ts);
                }
            }
        }
        let Some(trace_value) = snapshot
            .clocks
            .iter()
            .find(|c| c.clock_id == Some(trace))
            .and_then(|c| c.timestamp)
        else {
            return;
        };
        for clock in &snapshot.clocks {
            let (Some(id), Some(ts)) = (clock.clock_id, clock.timestamp) else {
                continue;
            };
            let key = Self::key(sequence, id);
            let unit = clock.unit_multiplier_ns.filter(|&u| u > 0).unwrap_or(1);
            let value_ns = (ts as i64).saturating_mul(unit as i64);
            self.points
                .entry(key)
                .or_default()
                .push((value_ns, trace_value as i64));
        }
    }

    /// Resolves a packet timestamp written in `clock` on `sequence` to
    /// nanoseconds of that clock (applying units and incremental deltas).
    pub fn absolute(&mut self, sequence: u32, clock: u32, raw: u64) -> i64 {
        let key = Self::key(sequence, clock);
        match self.units.get(&key).copied() {
            Some((unit, true)) => {
                let last = self.last_incremental.entry(key).or_insert(0);
                *last = last.wrapping_add(raw);
                (*last as i64).saturating_mul(unit as i64)
            }
            Some((unit, false)) => (raw as i64).saturating_mul(unit as i64),
            None => raw as i64,
        }
    }

    /// Converts `ts` (ns of `clock`, after [`Clocks::absolute`]) to the trace
    /// clock.
    pub fn to_trace(&self, sequence: u32, clock: u32, ts: i64) -> Result<i64, ClockError> {
        if clock == self.trace_clock() {
            return Ok(ts);
        }
        let key = Self::key(sequence, clock);
        match self.points.get(&key) {
            Some(points) if !points.is_empty() => {
                let at = points.partition_point(|&(v, _)| v <= ts);
                let (value, trace) = points[at.saturating_sub(1)];
                Ok(trace.saturating_add(ts.saturating_sub(value)))
            }
            _ if self.snapshots == 0 => Ok(ts),
            _ => Err(ClockError::NoPath(clock)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::proto::Clock;
    use super::*;

    fn clock(id: u32, ts: u64) -> Clock {
        Clock {
            clock_id: Some(id),
            timestamp: Some(ts),
            ..Default::default()
        }
    }

    #[test]
    fn monotonic_converts_through_the_nearest_earlier_snapshot() {
        let mut c = Clocks::default();
        c.add_snapshot(
            1,
            &ClockSnapshot {
                clocks: vec![clock(6, 1_000), clock(3, 100)],
                primary_trace_clock: None,
            },
        );
        c.add_snapshot(
            1,
            &ClockSnapshot {
                clocks: vec![clock(6, 5_000), clock(3, 2_100)],
                primary_trace_clock: None,
            },
        );
        assert_eq!(c.to_trace(1, 3, 150), Ok(1_050));
        assert_eq!(c.to_trace(1, 3, 2_200), Ok(5_100));
        assert_eq!(c.to_trace(1, 6, 7), Ok(7));
        assert_eq!(c.to_trace(1, 1, 7), Err(ClockError::NoPath(1)));
    }

    #[test]
    fn incremental_sequence_clocks_accumulate_in_their_units() {
        let mut c = Clocks::default();
        c.add_snapshot(
            9,
            &ClockSnapshot {
                clocks: vec![
                    clock(6, 10_000),
                    Clock {
                        clock_id: Some(64),
                        timestamp: Some(10),
                        is_incremental: Some(true),
                        unit_multiplier_ns: Some(1000),
                    },
                ],
                primary_trace_clock: None,
            },
        );
        let a = c.absolute(9, 64, 5);
        assert_eq!(a, 15_000);
        assert_eq!(c.to_trace(9, 64, a), Ok(15_000));
        let b = c.absolute(9, 64, 2);
        assert_eq!(c.to_trace(9, 64, b), Ok(17_000));
        // Another sequence's clock 64 is a different clock.
        assert_eq!(c.to_trace(8, 64, 1), Err(ClockError::NoPath(64)));
    }
}
