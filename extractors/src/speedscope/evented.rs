//! Evented speedscope profiles: frames opened (`O`) and closed (`C`) at
//! times. The innermost open stack is charged the time to the next event,
//! so a frame's self time is the time it was on top and its inclusive time
//! the time it was open; time with nothing open is charged to nobody.

use crate::FastHashMap;
use crate::stacks::MetricId;

use super::build::{Builder, Unit, spec, unit_of};
use super::model::Profile;

impl Builder<'_> {
    pub(super) fn evented(&mut self, n: usize, profile: &Profile, thread: u32) {
        let Some(events) = &profile.events else {
            self.log.note("profile_without_events", || {
                format!("evented profile {n} has no `events`; skipped")
            });
            return;
        };
        let unit = unit_of(profile.unit.as_deref());
        let (metric, pow) = match unit {
            Unit::Time(pow) => (spec("trace.wall_ns", "ns"), pow),
            Unit::Bytes => (spec("memory.alloc_bytes", "bytes"), 0),
            Unit::None | Unit::Unknown => (spec("trace.wall_units", "count"), 0),
        };
        if unit == Unit::Unknown {
            self.log.note("unknown_unit", || {
                format!(
                    "profile {n} has unit {:?}; values are read as plain numbers (`none`)",
                    profile.unit
                )
            });
        }
        let metric = self.agg.metric(metric);
        let mut open = OpenFrames::default();
        let mut last: Option<i64> = None;
        for event in events {
            self.events += 1;
            let Some(at) = event.at.scaled(pow) else {
                self.log.note("invalid_event_time", || {
                    format!(
                        "profile {n}: event `at` {:?} is not a number; event skipped",
                        event.at
                    )
                });
                continue;
            };
            if let Some(prev) = last {
                if at < prev {
                    self.log.note("events_out_of_order", || {
                        format!("profile {n}: an event at {at} follows one at {prev}; no time is counted backwards")
                    });
                } else if let Some(&(_, top)) = open.last() {
                    self.add_interval(metric, top, thread, at.saturating_sub(prev));
                }
            }
            last = Some(last.map_or(at, |prev| prev.max(at)));
            match event.kind.as_str() {
                "O" => {
                    let frame = self.frame(event.frame);
                    let stack = self.agg.stack(open.last().map(|o| o.1), frame);
                    open.push((event.frame, stack));
                }
                "C" => match open.position_of(event.frame) {
                    Some(p) if p + 1 == open.len() => {
                        open.pop();
                    }
                    Some(p) => {
                        self.log.note("mismatched_close", || {
                            format!(
                                "profile {n}: closing frame {} at {at} while {} inner frame(s) are open; they are closed with it",
                                event.frame,
                                open.len() - p - 1
                            )
                        });
                        open.truncate(p);
                    }
                    None => self.log.note("unmatched_close", || {
                        format!(
                            "profile {n}: closing frame {} at {at}, which is not open; ignored",
                            event.frame
                        )
                    }),
                },
                other => self.log.note("unknown_event_type", || {
                    format!("profile {n}: event type {other:?} (want O or C); ignored")
                }),
            }
        }
        if let Some(&(_, top)) = open.last() {
            let end = profile.end_value.and_then(|e| e.scaled(pow));
            if let (Some(end), Some(prev)) = (end, last)
                && end > prev
            {
                self.add_interval(metric, top, thread, end.saturating_sub(prev));
            }
            self.log.note_n("unclosed_frame", open.len() as u64, || {
                format!(
                    "profile {n}: {} frame(s) still open after the last event; closed at endValue",
                    open.len()
                )
            });
        }
    }

    fn add_interval(&mut self, metric: MetricId, stack: u32, thread: u32, length: i64) {
        if length > 0 {
            self.agg
                .add_metric_sample(metric, stack, thread, None, length, 1);
        }
    }
}

/// The open frames, innermost last: (frame index as written, stack id),
/// with how often each frame is open, so closing a frame that is not open
/// costs nothing (N such closes after N opens would otherwise scan the
/// whole stack N times).
#[derive(Default)]
struct OpenFrames {
    stack: Vec<(i64, u32)>,
    open_count: FastHashMap<i64, u32>,
}

impl OpenFrames {
    fn push(&mut self, entry: (i64, u32)) {
        *self.open_count.entry(entry.0).or_insert(0) += 1;
        self.stack.push(entry);
    }

    fn last(&self) -> Option<&(i64, u32)> {
        self.stack.last()
    }

    fn len(&self) -> usize {
        self.stack.len()
    }

    /// Where the innermost open `frame` is. The scan stops at it, and what
    /// it passed is closed with it, so scans cost at most what was pushed.
    fn position_of(&self, frame: i64) -> Option<usize> {
        if self.open_count.get(&frame).copied().unwrap_or(0) == 0 {
            return None;
        }
        self.stack.iter().rposition(|o| o.0 == frame)
    }

    fn pop(&mut self) {
        self.truncate(self.stack.len().saturating_sub(1));
    }

    fn truncate(&mut self, len: usize) {
        while self.stack.len() > len {
            if let Some((frame, _)) = self.stack.pop()
                && let Some(n) = self.open_count.get_mut(&frame)
            {
                *n = n.saturating_sub(1);
            }
        }
    }
}
