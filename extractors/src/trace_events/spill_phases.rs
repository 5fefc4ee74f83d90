//! Phases on the spill path ([`super::external`]).
//!
//! The in-memory path labels events with [`super::nesting::assign_phases`]
//! (`ProfilerStep#N` slices) or, when a trace has none, with
//! [`super::nesting::assign_range_phases`] (the outermost annotated range of
//! the event's thread: Nsight's NVTX ranges). Both need every event at
//! once. Here the few slices that define phases are kept aside while the
//! events leave in runs ([`PhaseCollector`]), and each event looks its
//! phase up as it streams past ([`Phases::at`]), with the same answer.
//! Memory grows with steps and ranges (about 40 bytes each), not events.

use super::ids::NO_ID;
use super::interner::Interner;
use super::kinds::EventKind;
use super::nesting::{PHASE_PROFILER_STEP, PHASE_RANGE};
use super::store::EventStore;

/// A `ProfilerStep#N` slice.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    pub ts: i64,
    pub event_id: u64,
    pub end: i64,
    pub name: u32,
}

/// A closed annotated range, before the outermost ones are chosen.
#[derive(Debug, Clone, Copy)]
struct Range {
    track: u32,
    ts: i64,
    dur: i64,
    event_id: u64,
    name: u32,
}

/// Gathers the phase-defining slices from the events written to runs.
#[derive(Default)]
pub struct PhaseCollector {
    steps: Vec<Step>,
    /// Per interned name learnt so far, whether it is a step's.
    step_names: Vec<bool>,
    /// The kind of the annotated ranges that give phases when no step does.
    range_kind: Option<EventKind>,
    ranges: Vec<Range>,
}

impl PhaseCollector {
    /// Also collects slices of `kind` as phase ranges (used only when the
    /// trace has no `ProfilerStep#N`).
    pub fn with_ranges(kind: EventKind) -> Self {
        PhaseCollector {
            range_kind: Some(kind),
            ..PhaseCollector::default()
        }
    }

    /// Learns which of the names interned since the last call are
    /// `ProfilerStep#N` ([`step_name_flags`]).
    pub fn learn_step_names(&mut self, flags: &[bool]) {
        self.step_names.extend_from_slice(flags);
    }

    /// Looks at row `i` of `s` on its way to a run; its name must have
    /// been learnt.
    pub fn observe(&mut self, s: &EventStore, i: usize) {
        if !s.instant[i] && self.is_step(s.name[i]) {
            self.steps.push(Step {
                ts: s.ts[i],
                event_id: s.event_id[i],
                end: s.end(i),
                name: s.name[i],
            });
        }
        if self.range_kind == Some(s.kind[i]) && s.dur[i] >= 0 {
            self.ranges.push(Range {
                track: s.track[i],
                ts: s.ts[i],
                dur: s.dur[i],
                event_id: s.event_id[i],
                name: s.name[i],
            });
        }
    }

    fn is_step(&self, name: u32) -> bool {
        self.step_names.get(name as usize).copied().unwrap_or(false)
    }

    /// The phases of the trace: steps if any, else the ranges of tracks
    /// that `thread_of_track` places on a thread.
    pub fn into_phases(mut self, thread_of_track: &[Option<(i64, i64)>]) -> Phases {
        if !self.steps.is_empty() {
            self.steps.sort_unstable_by_key(|s| (s.ts, s.event_id));
            return Phases::Steps(self.steps);
        }
        let thread = |track: u32| thread_of_track.get(track as usize).copied().flatten();
        // Ranges on a thread, grouped by thread, each thread's in range order.
        let mut keyed: Vec<((i64, i64), Range)> = self
            .ranges
            .into_iter()
            .filter_map(|r| Some((thread(r.track)?, r)))
            .collect();
        if keyed.is_empty() {
            return Phases::None;
        }
        keyed.sort_unstable_by_key(|(t, r)| (*t, r.ts, std::cmp::Reverse(r.dur), r.event_id));
        let mut threads: Vec<(i64, i64)> = Vec::new();
        let mut lists: Vec<Vec<OuterRange>> = Vec::new();
        let mut covered_until = i64::MIN;
        for (t, r) in keyed {
            if threads.last() != Some(&t) {
                threads.push(t);
                lists.push(Vec::new());
                covered_until = i64::MIN;
            }
            let end = r.ts.saturating_add(r.dur);
            if r.ts >= covered_until
                && let Some(list) = lists.last_mut()
            {
                list.push(OuterRange {
                    ts: r.ts,
                    end,
                    name: r.name,
                });
            }
            covered_until = covered_until.max(end);
        }
        let list_of_track = thread_of_track
            .iter()
            .map(|t| {
                t.and_then(|t| threads.binary_search(&t).ok())
                    .map_or(NO_ID, |at| at as u32)
            })
            .collect();
        Phases::Ranges {
            lists,
            list_of_track,
        }
    }
}

/// Whether each name interned from id `from` on is a `ProfilerStep#N`
/// slice's, for [`PhaseCollector::learn_step_names`] on the thread that
/// writes the runs (the interner stays with the reader).
pub fn step_name_flags(strings: &Interner, from: usize) -> Vec<bool> {
    (from..strings.len())
        .map(|id| strings.get(id as u32).starts_with("ProfilerStep#"))
        .collect()
}

/// An outermost range of one thread.
#[derive(Debug, Clone, Copy)]
pub struct OuterRange {
    ts: i64,
    end: i64,
    name: u32,
}

/// The phase of any event, from its track and start.
pub enum Phases {
    None,
    /// Sorted by `(ts, event_id)`.
    Steps(Vec<Step>),
    Ranges {
        /// Per thread, its outermost ranges in start order.
        lists: Vec<Vec<OuterRange>>,
        /// Per track, its thread's entry in `lists` or [`NO_ID`].
        list_of_track: Vec<u32>,
    },
}

impl Phases {
    pub fn any(&self) -> bool {
        !matches!(self, Phases::None)
    }

    /// The phase name and source of an event before correlation
    /// inheritance: the step containing `ts` for any event, or the
    /// outermost range of the track's thread containing `ts` for host
    /// events.
    pub fn at(&self, track: u32, ts: i64, device_activity: bool) -> Option<(u32, u8)> {
        match self {
            Phases::None => None,
            Phases::Steps(steps) => {
                let upto = steps.partition_point(|s| s.ts <= ts);
                step_at(&steps[..upto], ts).map(|name| (name, PHASE_PROFILER_STEP))
            }
            Phases::Ranges {
                lists,
                list_of_track,
            } => {
                if device_activity {
                    return None;
                }
                let list = lists.get(*list_of_track.get(track as usize)? as usize)?;
                let upto = list.partition_point(|r| r.ts <= ts);
                let r = list.get(upto.checked_sub(1)?)?;
                (r.end > ts || r.ts == ts).then_some((r.name, PHASE_RANGE))
            }
        }
    }
}

/// The phase at `ts` among `steps` (sorted, all starting at or before
/// `ts`): as [`super::nesting::assign_phases`], the latest of the last
/// eight that contains `ts` or starts at it.
fn step_at(steps: &[Step], ts: i64) -> Option<u32> {
    steps
        .iter()
        .rev()
        .take(8)
        .find(|s| s.end > ts || s.ts == ts)
        .map(|s| s.name)
}
