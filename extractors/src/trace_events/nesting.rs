//! Per-track nesting, flow binding and phase labels, once all events are in.
//!
//! Parent, depth and self time depend on every slice of a track, and Chrome
//! producers do not write events in time order (Kineto writes CPU ops,
//! then runtime calls, then kernels). So each track's events are sorted by
//! `(ts asc, dur desc, event_id asc)` and walked with a stack. Flows are
//! bound to slices here (to fill missing correlation ids), and
//! `ProfilerStep#N` phases are propagated by time and by correlation.

use crate::FastHashMap;

use super::exclusive::{advance, finish};
use super::ids::{NO_ID, NONE};
use super::interner::Interner;
use super::store::{EventStore, FlowPoint};
use super::tracks::Tracks;
use crate::api::LimitationLog;

/// How a row's phase was derived.
pub const PHASE_NONE: u8 = 0;
pub const PHASE_PROFILER_STEP: u8 = 1;
pub const PHASE_CORRELATION: u8 = 2;
pub const PHASE_RANGE: u8 = 3;

/// Derived per-event columns.
pub struct Derived {
    /// Store index of the parent, or `NO_ID`.
    pub parent: Vec<u32>,
    pub depth: Vec<i32>,
    pub self_ns: Vec<i64>,
    pub phase: Vec<u32>,
    pub phase_source: Vec<u8>,
    /// Store indices grouped by track (`track_offsets`), each group in nesting order.
    pub track_order: Vec<u32>,
    pub track_offsets: Vec<usize>,
}

impl Derived {
    pub fn track_events(&self, track: usize) -> &[u32] {
        &self.track_order[self.track_offsets[track]..self.track_offsets[track + 1]]
    }
}

/// Sort key of a slice within its track: unterminated slices sort as longest.
fn eff_dur(store: &EventStore, i: usize) -> i64 {
    if store.dur[i] < 0 {
        i64::MAX
    } else {
        store.dur[i]
    }
}

/// Order of two slices of one track for nesting: `(ts asc, dur desc with
/// unterminated longest, event_id asc)`. [`super::runs::nesting_key`] is
/// the same order for spilled records.
pub fn nesting_order(store: &EventStore, a: usize, b: usize) -> std::cmp::Ordering {
    store.ts[a]
        .cmp(&store.ts[b])
        .then(eff_dur(store, b).cmp(&eff_dur(store, a)))
        .then(store.event_id[a].cmp(&store.event_id[b]))
}

/// Computes parent, depth and self time for every stored event.
pub fn nest(store: &EventStore, tracks: &mut Tracks, log: &mut LimitationLog) -> Derived {
    let n = store.len();
    let track_count = tracks.list.len();
    let mut track_offsets = vec![0usize; track_count + 1];
    for &t in &store.track {
        track_offsets[t as usize + 1] += 1;
    }
    for t in 0..track_count {
        track_offsets[t + 1] += track_offsets[t];
    }
    let mut fill = track_offsets.clone();
    let mut track_order = vec![0u32; n];
    for (i, &t) in store.track.iter().enumerate() {
        track_order[fill[t as usize]] = i as u32;
        fill[t as usize] += 1;
    }
    let mut parent = vec![NO_ID; n];
    let mut depth = vec![0i32; n];
    let mut own = vec![0i64; n];
    let mut stack: Vec<usize> = Vec::new();
    for t in 0..track_count {
        let group = &mut track_order[track_offsets[t]..track_offsets[t + 1]];
        group.sort_unstable_by(|&a, &b| nesting_order(store, a as usize, b as usize));
        stack.clear();
        let mut cursor = None;
        for &i in group.iter() {
            let i = i as usize;
            let ts = store.ts[i];
            advance(
                &mut cursor,
                &mut stack,
                ts,
                |&k| store.end(k),
                |&mut k, ns| {
                    own[k] = own[k].saturating_add(ns);
                },
            );
            while let Some(&top) = stack.last() {
                if store.end(top) <= ts {
                    stack.pop();
                } else {
                    break;
                }
            }
            if let Some(&top) = stack.last() {
                parent[i] = top as u32;
                depth[i] = stack.len() as i32;
                if !store.instant[i] {
                    let end = store.end(i);
                    let top_end = store.end(top);
                    if end > top_end {
                        tracks.list[t].improper = true;
                        log.note("improper_nesting", || {
                            format!(
                                "event #{} starts inside event #{} and ends after it",
                                store.event_id[i], store.event_id[top]
                            )
                        });
                    }
                }
            }
            if !store.instant[i] {
                stack.push(i);
            }
        }
        finish(
            &mut cursor,
            &mut stack,
            |&k| store.end(k),
            |&mut k, ns| {
                own[k] = own[k].saturating_add(ns);
            },
        );
    }
    let self_ns = (0..n)
        .map(|i| {
            let d = store.dur[i];
            if d < 0 {
                -1
            } else if store.instant[i] {
                0
            } else {
                own[i].clamp(0, d)
            }
        })
        .collect();
    Derived {
        parent,
        depth,
        self_ns,
        phase: vec![NO_ID; n],
        phase_source: vec![PHASE_NONE; n],
        track_order,
        track_offsets,
    }
}

/// For each position of a track's nesting order, the nearest slice (not
/// instant) at or before it and at or after it: a flow finds its slice in
/// one lookup, however many instants lie between (scanning past them once
/// per flow was quadratic).
struct SliceNeighbours {
    at_or_before: Vec<u32>,
    at_or_after: Vec<u32>,
}

impl SliceNeighbours {
    fn of(store: &EventStore, group: &[u32]) -> SliceNeighbours {
        let mut at_or_before = Vec::with_capacity(group.len());
        let mut last = NO_ID;
        for &i in group {
            if !store.instant[i as usize] {
                last = i;
            }
            at_or_before.push(last);
        }
        let mut at_or_after = vec![NO_ID; group.len()];
        let mut next = NO_ID;
        for (k, &i) in group.iter().enumerate().rev() {
            if !store.instant[i as usize] {
                next = i;
            }
            at_or_after[k] = next;
        }
        SliceNeighbours {
            at_or_before,
            at_or_after,
        }
    }
}

/// The slice a flow endpoint binds to: the deepest slice enclosing (or
/// starting at) `ts`, or — for a non-enclosing end — the next slice starting
/// at or after `ts`.
fn bind(
    store: &EventStore,
    d: &Derived,
    track: usize,
    neighbours: &SliceNeighbours,
    ts: i64,
    enclosing: bool,
) -> Option<usize> {
    let group = d.track_events(track);
    let found = |id: Option<&u32>| id.copied().filter(|&i| i != NO_ID).map(|i| i as usize);
    if enclosing {
        let upto = group.partition_point(|&i| store.ts[i as usize] <= ts);
        let mut candidate = found(
            upto.checked_sub(1)
                .and_then(|k| neighbours.at_or_before.get(k)),
        )?;
        loop {
            if store.ts[candidate] == ts || store.end(candidate) > ts {
                return Some(candidate);
            }
            let p = d.parent[candidate];
            if p == NO_ID {
                return None;
            }
            candidate = p as usize;
        }
    }
    let from = group.partition_point(|&i| store.ts[i as usize] < ts);
    found(neighbours.at_or_after.get(from))
}

/// Fills missing correlation ids from flows that link device activity to the
/// call that launched it. Returns how many ids were filled.
pub fn fill_correlation_from_flows(
    store: &mut EventStore,
    d: &Derived,
    tracks: &Tracks,
    flows: &[FlowPoint],
) -> u64 {
    let needed =
        (0..store.len()).any(|i| store.device_activity[i] && store.device.correlation(i) == NONE);
    if !needed {
        return 0;
    }
    // (flow key, bound slice), sorted so each key's slices are one run:
    // no map of vectors (one allocation per flow key).
    let mut neighbours: FastHashMap<usize, SliceNeighbours> = FastHashMap::default();
    let mut bound: Vec<(u32, usize)> = flows
        .iter()
        .filter(|f| f.numeric_id != NONE)
        .filter_map(|f| {
            let track = tracks.find_thread(f.pid, f.tid)? as usize;
            let near = neighbours
                .entry(track)
                .or_insert_with(|| SliceNeighbours::of(store, d.track_events(track)));
            bind(store, d, track, near, f.ts, f.enclosing).map(|slice| (f.key, slice))
        })
        .collect();
    bound.sort_unstable();
    let runs = || bound.chunk_by(|a, b| a.0 == b.0);
    let linked: FastHashMap<u32, i64> = runs()
        .filter(|run| run.iter().any(|&(_, i)| store.device_activity[i]))
        .map(|run| (run[0].0, NONE))
        .collect();
    if linked.is_empty() {
        return 0;
    }
    // A key's id is the last flow's with that key (as before: any flow).
    let mut ids = linked;
    for f in flows {
        if let Some(id) = ids.get_mut(&f.key) {
            *id = f.numeric_id;
        }
    }
    let mut filled = 0;
    for run in runs() {
        let Some(&id) = ids.get(&run[0].0) else {
            continue;
        };
        for &(_, i) in run {
            if store.device.correlation(i) == NONE {
                store.device.set_correlation(i, id);
                filled += 1;
            }
        }
    }
    filled
}

/// Labels events with the `ProfilerStep#N` slice containing them, and device
/// activity with the phase of the call that launched it.
pub fn assign_phases(store: &EventStore, strings: &Interner, d: &mut Derived) -> bool {
    let is_step: Vec<bool> = (0..strings.len() as u32)
        .map(|id| strings.get(id).starts_with("ProfilerStep#"))
        .collect();
    let mut steps: Vec<usize> = (0..store.len())
        .filter(|&i| !store.instant[i] && is_step.get(store.name[i] as usize) == Some(&true))
        .collect();
    if steps.is_empty() {
        return false;
    }
    steps.sort_unstable_by_key(|&i| (store.ts[i], store.event_id[i]));
    for i in 0..store.len() {
        let ts = store.ts[i];
        let upto = steps.partition_point(|&s| store.ts[s] <= ts);
        let hit = steps[..upto]
            .iter()
            .rev()
            .take(8)
            .find(|&&s| store.end(s) > ts || store.ts[s] == ts);
        if let Some(&s) = hit {
            d.phase[i] = store.name[s];
            d.phase_source[i] = PHASE_PROFILER_STEP;
        }
    }
    inherit_through_correlation(store, d);
    true
}

/// Device activity takes the phase of the host call that launched it
/// (same correlation id).
fn inherit_through_correlation(store: &EventStore, d: &mut Derived) {
    let mut launch_phase: FastHashMap<i64, u32> = FastHashMap::default();
    for i in 0..store.len() {
        if store.kind[i].is_launch() && store.device.correlation(i) != NONE && d.phase[i] != NO_ID {
            launch_phase.insert(store.device.correlation(i), d.phase[i]);
        }
    }
    for i in 0..store.len() {
        if !store.device_activity[i] || store.device.correlation(i) == NONE {
            continue;
        }
        if let Some(&p) = launch_phase.get(&store.device.correlation(i)) {
            d.phase[i] = p;
            d.phase_source[i] = PHASE_CORRELATION;
        }
    }
}

/// Phases from annotated ranges (NVTX push/pop and start/end) when the
/// trace has no `ProfilerStep#N`: every host event takes the name of the
/// outermost range that contains its start on the same thread (outermost,
/// because phases are regions like steps, not the innermost label), and
/// device work inherits it through correlation ids. `thread_of_track`
/// gives each track's thread, or `None` for tracks that belong to no
/// thread (device streams, counters). Outermost ranges are the ones not
/// starting inside an earlier range of the thread; the rare tail of a range
/// that outlives an enclosing one gets no phase.
pub fn assign_range_phases(
    store: &EventStore,
    d: &mut Derived,
    is_range: impl Fn(usize) -> bool,
    thread_of_track: &[Option<(i64, i64)>],
) -> bool {
    let thread = |i: usize| {
        thread_of_track
            .get(store.track[i] as usize)
            .copied()
            .flatten()
    };
    let mut ranges: FastHashMap<(i64, i64), Vec<usize>> = FastHashMap::default();
    for i in 0..store.len() {
        if is_range(i)
            && store.dur[i] >= 0
            && let Some(t) = thread(i)
        {
            ranges.entry(t).or_default().push(i);
        }
    }
    if ranges.is_empty() {
        return false;
    }
    for list in ranges.values_mut() {
        list.sort_unstable_by_key(|&i| {
            (
                store.ts[i],
                std::cmp::Reverse(store.dur[i]),
                store.event_id[i],
            )
        });
        let mut covered_until = i64::MIN;
        list.retain(|&i| {
            let outermost = store.ts[i] >= covered_until;
            covered_until = covered_until.max(store.end(i));
            outermost
        });
    }
    for i in 0..store.len() {
        if store.device_activity[i] {
            continue;
        }
        let Some(list) = thread(i).and_then(|t| ranges.get(&t)) else {
            continue;
        };
        let ts = store.ts[i];
        let upto = list.partition_point(|&r| store.ts[r] <= ts);
        if let Some(&r) = upto.checked_sub(1).map(|k| &list[k])
            && (store.end(r) > ts || store.ts[r] == ts)
        {
            d.phase[i] = store.name[r];
            d.phase_source[i] = PHASE_RANGE;
        }
    }
    inherit_through_correlation(store, d);
    true
}
