//! Bounded-memory events: when a trace holds more events than fit the
//! in-memory budget, they leave the store in sorted runs and nesting,
//! flows, phases and output run as merges over those runs.
//!
//! 1. While reading, every `spill_after_events` events the finished ones
//!    (all but begins still waiting for their end) are sorted by
//!    `(track, ts, dur desc, event_id)` and written as one run; flow
//!    endpoints go to their own spill file; `ProfilerStep#N` slices are
//!    kept aside (there are few).
//! 2. The runs are merged per track, in nesting order, and walked with a
//!    stack, exactly like [`super::nesting::nest`]: a slice's parent is the
//!    stack top, its self time is known when it leaves the stack. The walk
//!    also binds flows, feeds the stack reductions, and writes the
//!    finished rows as runs sorted by `(ts, event_id)`.
//! 3. Those runs are merged into `trace_events` batches, with phases and
//!    flow-filled correlation ids applied on the way.
//!
//! The output is the in-memory path's, row for row and batch for batch
//! (`external_tests` compares them on the corpus). What stays in memory
//! grows with tracks, flows only when correlation ids must be filled from
//! them, and launches inside `ProfilerStep#N` (one entry each).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::FastHashMap;

use super::builder::TraceBuilder;
use super::emit::{SliceFrames, thread_info, write_slice_reductions};
use super::emitter::Emitter;
use super::event_batch::EventBatch;
use super::exclusive::{advance, finish};
use super::flow_records::for_each_flow;
use super::ids::{NO_ID, NONE};
use super::kinds::EventKind;
use super::nesting::{PHASE_CORRELATION, PHASE_NONE};
use super::record::EventRecord;
use super::run_writer::{RunWriter, Written};
use super::runs::{RunFile, RunSorter, nesting_key, output_key};
use super::spill_phases::{PhaseCollector, Phases};
use super::store::{EventStore, FlowPoint};
use crate::api::{ExtractError, ExtractObserver};
use crate::stacks::{MetricId, StackAggregator};

/// Events per run once spilling has started (about 30 MiB of columns).
const RUN_EVENTS: usize = 1 << 18;

/// How often (in records) the merges poll cancellation.
const POLL_EVERY: usize = 1 << 16;

/// What the event tables' production leaves for the extraction summary.
pub struct EventsOutcome {
    /// The slice reductions, unless already written (the spilled path
    /// writes them before `trace_events`, to free them sooner).
    pub agg: Option<StackAggregator>,
    pub span: Option<(i64, i64)>,
    pub any_correlation: bool,
    pub any_external: bool,
    pub has_phases: bool,
    pub flow_endpoints: u64,
    /// Events that went through spill runs (0: all in memory).
    pub spilled_events: u64,
}

/// Where the walk's slice reductions go: a fresh aggregator under metric
/// 0 for every kind (Chrome JSON, Nsight), or one the caller already
/// holds, such as Perfetto's with its callstack samples' stacks.
pub struct SliceReductions {
    pub agg: StackAggregator,
    pub metric: MetricId,
    /// Kinds whose slices are reduced (Perfetto keeps scheduling out).
    pub include: fn(EventKind) -> bool,
}

impl Default for SliceReductions {
    fn default() -> Self {
        SliceReductions {
            agg: StackAggregator::new(),
            metric: 0,
            include: |_| true,
        }
    }
}

/// The spilled part of a trace's events, built up while reading.
pub struct Spill {
    dir: PathBuf,
    writer: RunWriter,
    /// Rows per run after the first (which holds the whole in-memory
    /// budget), and per time-sorted run of pass 2.
    chunk: usize,
    /// Store size at which the next run is written (open begins stay).
    next_at: usize,
}

impl Spill {
    /// Spilling starts once the store holds `budget` events; `phases`
    /// says which slices define phases.
    pub fn create(dir: &Path, budget: usize, phases: PhaseCollector) -> io::Result<Self> {
        let budget = budget.max(1);
        let chunk = budget.min(RUN_EVENTS);
        Ok(Spill {
            dir: dir.to_path_buf(),
            writer: RunWriter::start(dir, phases, chunk)?,
            chunk,
            next_at: budget,
        })
    }

    /// Whether the store has grown enough to write a run.
    pub fn due(&self, store: &EventStore) -> bool {
        store.len() >= self.next_at
    }

    /// Writes the store's finished events as one run and keeps only the
    /// open begins (all events when `all`); flows go to their file.
    pub fn write_run(&mut self, p: &mut TraceBuilder, all: bool) -> io::Result<()> {
        let _phase = crate::phase_cpu::enter(crate::phase_cpu::Phase::Spill);
        let kept = if all { Vec::new() } else { p.open_rows() };
        self.write_run_keeping(p, &kept)?;
        p.renumber_open(&kept);
        Ok(())
    }

    /// Writes every event of the store but the rows `kept` (sorted) as
    /// one run, on the run writer's thread ([`RunWriter`]); the kept rows
    /// move to the front in order, so the caller renumbers what points at
    /// them (`kept[k]` is now row `k`).
    pub fn write_run_keeping(&mut self, p: &mut TraceBuilder, kept: &[usize]) -> io::Result<()> {
        let _phase = crate::phase_cpu::enter(crate::phase_cpu::Phase::Spill);
        self.writer.hand_over(p, kept)?;
        self.next_at = p.store.len() + self.chunk;
        Ok(())
    }

    /// Puts the events already written on their real tracks: `map[slot]`
    /// for runs whose track column held slots (Perfetto).
    pub fn retrack(&mut self, map: &[u32]) -> io::Result<()> {
        self.writer.finish()?.runs.retrack(&self.dir, map)
    }

    /// Writes the rest of the events and produces `trace_events` (passes 2
    /// and 3 above). The store is left empty. `thread_of_track` places
    /// tracks on threads for range phases (see [`PhaseCollector`]). The
    /// slice reductions are written before `trace_events`.
    pub fn finish(
        self,
        p: &mut TraceBuilder,
        em: &mut Emitter,
        observer: &dyn ExtractObserver,
        thread_of_track: &[Option<(i64, i64)>],
    ) -> Result<EventsOutcome, ExtractError> {
        self.finish_with(p, em, observer, thread_of_track, None)
    }

    /// [`Self::finish`], with the slice reductions going into `into` and
    /// coming back in [`EventsOutcome::agg`] unwritten when given.
    pub fn finish_with(
        mut self,
        p: &mut TraceBuilder,
        em: &mut Emitter,
        observer: &dyn ExtractObserver,
        thread_of_track: &[Option<(i64, i64)>],
        into: Option<SliceReductions>,
    ) -> Result<EventsOutcome, ExtractError> {
        let write_reductions = into.is_none();
        self.write_run(p, true)?;
        // Every flow endpoint is in its file now.
        p.flows = Vec::new();
        let Written {
            mut runs,
            mut flows,
            flow_count,
            phases,
            needs_flow_fill,
            spilled_events,
        } = self.writer.into_written()?;
        // Drop the columns' capacity; the arena stays (rows point into it).
        let arena = std::mem::take(&mut p.store.arena);
        p.store = EventStore {
            arena,
            ..EventStore::default()
        };
        flows.flush()?;
        // Flows matter only when some device activity lacks a correlation
        // id; then they are read twice from their file rather than held.
        let mut track_flows = Vec::new();
        if needs_flow_fill {
            for_each_flow(flows.get_ref(), flow_count, |f| {
                if f.numeric_id != NONE
                    && let Some(track) = p.tracks.find_thread(f.pid, f.tid)
                {
                    track_flows.push(TrackFlow {
                        track,
                        ts: f.ts,
                        key: f.key,
                        enclosing: f.enclosing,
                    });
                }
            })?;
        }
        let phases = phases.into_phases(thread_of_track);
        let mut walk = Walk::new(
            &phases,
            &self.dir,
            self.chunk,
            needs_flow_fill,
            track_flows,
            into.unwrap_or_default(),
        )?;
        walk.run(&mut runs, p, observer)?;
        let Walk {
            by_time,
            agg,
            span,
            any_correlation,
            any_external,
            bound,
            launches,
            ..
        } = walk;
        let agg = if write_reductions {
            write_slice_reductions(em, agg)?;
            None
        } else {
            Some(agg)
        };
        let filled = fill_from_flows(bound, |each| {
            for_each_flow(flows.get_ref(), flow_count, |f| each(&f))
        })?;
        p.log.note_n("correlation_from_flow", filled.len() as u64, || {
            "device activity without a correlation id was linked to its launch through a flow id"
                .to_string()
        });
        let launch_phase = launch_phases(launches, &filled);
        let mut batch = EventBatch::default();
        let mut n = 0usize;
        let mut by_time = by_time.finish()?;
        by_time.for_each_merged(output_key, |mut r| -> Result<(), ExtractError> {
            if n.is_multiple_of(POLL_EVERY) && observer.cancelled() {
                return Err(ExtractError::Cancelled);
            }
            n += 1;
            if r.fields.correlation == NONE
                && let Some(&id) = filled.get(&r.event_id)
            {
                r.fields.correlation = id;
            }
            let (mut phase, mut source) = (NO_ID, PHASE_NONE);
            if phases.any() {
                if let Some(found) = phases.at(r.track, r.ts, r.device_activity) {
                    (phase, source) = found;
                }
                if r.device_activity
                    && r.fields.correlation != NONE
                    && let Some(&launch) = launch_phase.get(&r.fields.correlation)
                {
                    (phase, source) = (launch, PHASE_CORRELATION);
                }
            }
            let track = &p.tracks.list[r.track as usize];
            batch.push(&r, track, phase, source);
            if batch.len() >= em.batch_rows.max(1) {
                batch.write(em, &p.strings, &p.store.arena)?;
                batch.clear();
            }
            Ok(())
        })?;
        if !batch.is_empty() {
            batch.write(em, &p.strings, &p.store.arena)?;
        }
        Ok(EventsOutcome {
            agg,
            span,
            any_correlation: any_correlation || !filled.is_empty(),
            any_external,
            has_phases: phases.any(),
            flow_endpoints: flow_count,
            spilled_events,
        })
    }
}

/// A slice still on the nesting stack.
struct Open {
    r: EventRecord,
    /// Time it owned so far ([`super::exclusive`]).
    own: i64,
    /// Its stack-reduction node (`NO_ID`: not aggregated).
    stack_id: u32,
    /// The node its children hang under: its own, else the nearest
    /// aggregated ancestor's (kept here so no child walks the stack).
    inherited: u32,
}

/// A flow endpoint on a track, ready to bind.
#[derive(Clone, Copy)]
struct TrackFlow {
    track: u32,
    ts: i64,
    key: u32,
    enclosing: bool,
}

/// A flow bound to a slice: `(flow key, event id, device activity, has
/// no correlation id)`.
type Bound = (u32, u64, bool, bool);

/// Pass 2's state.
struct Walk<'a> {
    phases: &'a Phases,
    flows: Vec<TrackFlow>,
    next_flow: usize,
    /// Non-enclosing flows waiting for the next slice.
    pending: Vec<u32>,
    bound: Vec<Bound>,
    stack: Vec<Open>,
    /// How far the current track's exclusive time is credited.
    cursor: Option<i64>,
    /// The last non-instant slice of the current track.
    last_slice: Option<EventRecord>,
    frames: SliceFrames,
    agg: StackAggregator,
    metric: MetricId,
    include: fn(EventKind) -> bool,
    thread: u32,
    by_time: RunSorter,
    finished: Vec<EventRecord>,
    /// Rows per time-ordered run: half the run size, as two lists exist
    /// at once (one filling, one being written).
    chunk: usize,
    keep_uncorrelated_launches: bool,
    launches: Vec<(u64, i64, u32)>,
    span: Option<(i64, i64)>,
    any_correlation: bool,
    any_external: bool,
}

impl<'a> Walk<'a> {
    fn new(
        phases: &'a Phases,
        dir: &Path,
        chunk: usize,
        needs_flow_fill: bool,
        mut track_flows: Vec<TrackFlow>,
        reductions: SliceReductions,
    ) -> io::Result<Self> {
        // At one timestamp, non-enclosing flows first: they wait for the
        // slice starting there, enclosing ones for everything starting there.
        track_flows.sort_by_key(|f| (f.track, f.ts, f.enclosing));
        Ok(Walk {
            phases,
            flows: track_flows,
            next_flow: 0,
            pending: Vec::new(),
            bound: Vec::new(),
            stack: Vec::new(),
            cursor: None,
            last_slice: None,
            frames: SliceFrames::default(),
            agg: reductions.agg,
            metric: reductions.metric,
            include: reductions.include,
            thread: 0,
            by_time: RunSorter::start(RunFile::create(dir, "events-by-time")?, output_key)?,
            finished: Vec::with_capacity(chunk.div_ceil(2)),
            chunk: chunk.div_ceil(2),
            keep_uncorrelated_launches: needs_flow_fill,
            launches: Vec::new(),
            span: None,
            any_correlation: false,
            any_external: false,
        })
    }

    fn run(
        &mut self,
        runs: &mut RunFile,
        p: &mut TraceBuilder,
        observer: &dyn ExtractObserver,
    ) -> Result<(), ExtractError> {
        let mut track = None;
        let mut n = 0usize;
        runs.for_each_merged(nesting_key, |r| -> Result<(), ExtractError> {
            if n.is_multiple_of(POLL_EVERY) && observer.cancelled() {
                return Err(ExtractError::Cancelled);
            }
            n += 1;
            if track != Some(r.track) {
                if let Some(done) = track {
                    self.end_track(done)?;
                }
                track = Some(r.track);
                self.start_track(p, r.track);
            }
            self.slice(p, r)?;
            Ok(())
        })?;
        if let Some(done) = track {
            self.end_track(done)?;
        }
        self.flush_finished()?;
        // Pass 3 needs none of these.
        self.finished = Vec::new();
        self.flows = Vec::new();
        self.stack = Vec::new();
        Ok(())
    }

    fn start_track(&mut self, p: &TraceBuilder, track: u32) {
        let info = thread_info(p, &p.tracks.list[track as usize]);
        self.thread = self.agg.thread(info);
        self.last_slice = None;
        self.cursor = None;
        // Flows on tracks without events bind to nothing.
        while self.next_flow < self.flows.len() && self.flows[self.next_flow].track < track {
            self.next_flow += 1;
        }
    }

    /// Takes the next record of the track, in nesting order.
    fn slice(&mut self, p: &mut TraceBuilder, mut r: EventRecord) -> io::Result<()> {
        self.bind_flows_before(r.track, r.ts);
        advance(
            &mut self.cursor,
            &mut self.stack,
            r.ts,
            |o| o.r.end(),
            |o, ns| {
                o.own = o.own.saturating_add(ns);
            },
        );
        while let Some(top) = self.stack.last() {
            if top.r.end() > r.ts {
                break;
            }
            self.pop()?;
        }
        let depth = self.stack.len() as i32;
        if let Some(top) = self.stack.last_mut() {
            r.parent_event_id = top.r.event_id;
            r.depth = depth;
            if !r.instant {
                let (end, top_end) = (r.end(), top.r.end());
                if end > top_end {
                    p.tracks.list[r.track as usize].improper = true;
                    let (inner, outer) = (r.event_id, top.r.event_id);
                    p.log.note("improper_nesting", || {
                        format!("event #{inner} starts inside event #{outer} and ends after it")
                    });
                }
            }
        }
        if r.instant {
            return self.finish_row(r, 0);
        }
        let mut stack_id = NO_ID;
        if r.dur >= 0 && (self.include)(r.kind) && r.kind.in_stacks() {
            let frame = self
                .frames
                .frame(&mut self.agg, &p.strings, r.name, r.cat, r.kind);
            let parent = self
                .stack
                .last()
                .map(|o| o.inherited)
                .filter(|&id| id != NO_ID);
            stack_id = self.agg.stack(parent, frame);
        }
        let inherited = match (stack_id, self.stack.last()) {
            (NO_ID, Some(open)) => open.inherited,
            _ => stack_id,
        };
        for key in self.pending.drain(..) {
            self.bound.push((
                key,
                r.event_id,
                r.device_activity,
                r.fields.correlation == NONE,
            ));
        }
        self.last_slice = Some(r);
        self.stack.push(Open {
            r,
            own: 0,
            stack_id,
            inherited,
        });
        Ok(())
    }

    /// Binds the track's flows that every slice up to `ts` decides:
    /// enclosing ones before `ts`, and queues non-enclosing ones up to it
    /// for the next slice.
    fn bind_flows_before(&mut self, track: u32, ts: i64) {
        while let Some(&f) = self.flows.get(self.next_flow) {
            if f.track != track || f.ts > ts || (f.ts == ts && f.enclosing) {
                break;
            }
            self.next_flow += 1;
            if f.enclosing {
                if let Some(b) = self.enclosing(f) {
                    self.bound.push(b);
                }
            } else {
                self.pending.push(f.key);
            }
        }
    }

    /// The slice an enclosing flow binds to once every slice starting at
    /// or before it was taken: the last slice if it contains (or starts at)
    /// the flow, else its nearest such ancestor. Ancestors that already
    /// left the stack ended before the flow, so the stack is enough.
    fn enclosing(&self, f: TrackFlow) -> Option<Bound> {
        let last = self.last_slice?;
        let holds = |r: &EventRecord| r.ts == f.ts || r.end() > f.ts;
        let hit = std::iter::once(last)
            .chain(self.stack.iter().rev().map(|o| o.r))
            .find(|r| holds(r))?;
        Some((
            f.key,
            hit.event_id,
            hit.device_activity,
            hit.fields.correlation == NONE,
        ))
    }

    /// Binds the track's remaining flows (non-enclosing ones after its
    /// last slice bind to nothing) and finishes the slices still open.
    fn end_track(&mut self, track: u32) -> io::Result<()> {
        while let Some(&f) = self.flows.get(self.next_flow) {
            if f.track != track {
                break;
            }
            self.next_flow += 1;
            if f.enclosing
                && let Some(b) = self.enclosing(f)
            {
                self.bound.push(b);
            }
        }
        self.pending.clear();
        finish(
            &mut self.cursor,
            &mut self.stack,
            |o| o.r.end(),
            |o, ns| {
                o.own = o.own.saturating_add(ns);
            },
        );
        while !self.stack.is_empty() {
            self.pop()?;
        }
        Ok(())
    }

    fn pop(&mut self) -> io::Result<()> {
        let Some(open) = self.stack.pop() else {
            return Ok(());
        };
        let self_ns = self_time(&open.r, open.own);
        if open.stack_id != NO_ID {
            self.agg
                .add_metric_sample(self.metric, open.stack_id, self.thread, None, self_ns, 1);
        }
        self.finish_row(open.r, open.own)
    }

    /// A row whose nesting is complete: counted, and queued for output.
    fn finish_row(&mut self, mut r: EventRecord, own: i64) -> io::Result<()> {
        r.self_ns = self_time(&r, own);
        let end = if r.dur < 0 { r.ts } else { r.end() };
        self.span = Some(match self.span {
            None => (r.ts, end),
            Some((a, b)) => (a.min(r.ts), b.max(end)),
        });
        self.any_correlation |= r.fields.correlation != NONE;
        self.any_external |= r.fields.external != NONE;
        if r.kind.is_launch()
            && (r.fields.correlation != NONE || self.keep_uncorrelated_launches)
            && let Some((phase, _)) = self.phases.at(r.track, r.ts, r.device_activity)
        {
            self.launches
                .push((r.event_id, r.fields.correlation, phase));
        }
        self.finished.push(r);
        if self.finished.len() >= self.chunk {
            self.flush_finished()?;
        }
        Ok(())
    }

    /// Hands the finished rows over to be written as one run in output
    /// order ([`RunSorter`]).
    fn flush_finished(&mut self) -> io::Result<()> {
        if !self.finished.is_empty() {
            self.finished = self.by_time.write(std::mem::take(&mut self.finished))?;
        }
        Ok(())
    }
}

/// Self time as [`super::nesting::nest`] computes it, from the time the
/// slice owned.
fn self_time(r: &EventRecord, own: i64) -> i64 {
    if r.dur < 0 {
        -1
    } else if r.instant {
        0
    } else {
        own.clamp(0, r.dur)
    }
}

/// Correlation ids for slices bound to a flow that also reaches device
/// activity, as [`super::nesting::fill_correlation_from_flows`]: a key's id
/// is its last flow's, and a slice takes the first key's (by key order).
/// `flows` calls its argument with every flow endpoint in input order.
fn fill_from_flows(
    mut bound: Vec<Bound>,
    flows: impl FnOnce(&mut dyn FnMut(&FlowPoint)) -> io::Result<()>,
) -> io::Result<FastHashMap<u64, i64>> {
    let mut filled = FastHashMap::default();
    if bound.is_empty() {
        return Ok(filled);
    }
    bound.sort_unstable_by_key(|b| (b.0, b.1));
    let runs = || bound.chunk_by(|a, b| a.0 == b.0);
    let mut ids: FastHashMap<u32, i64> = runs()
        .filter(|run| run.iter().any(|b| b.2))
        .map(|run| (run[0].0, NONE))
        .collect();
    flows(&mut |f: &FlowPoint| {
        if let Some(id) = ids.get_mut(&f.key) {
            *id = f.numeric_id;
        }
    })?;
    for run in runs() {
        let Some(&id) = ids.get(&run[0].0) else {
            continue;
        };
        for &(_, event_id, _, uncorrelated) in run {
            if uncorrelated {
                filled.entry(event_id).or_insert(id);
            }
        }
    }
    Ok(filled)
}

/// Correlation id → the phase of the last launch (in input order) that has
/// it, as [`super::nesting::assign_phases`]' correlation inheritance.
fn launch_phases(
    mut launches: Vec<(u64, i64, u32)>,
    filled: &FastHashMap<u64, i64>,
) -> LaunchPhases {
    launches.retain_mut(|(event_id, correlation, _)| {
        if *correlation == NONE {
            match filled.get(event_id) {
                Some(&c) => *correlation = c,
                None => return false,
            }
        }
        true
    });
    launches.sort_unstable_by_key(|&(event_id, correlation, _)| (correlation, event_id));
    let mut last: Vec<(i64, u32)> = Vec::new();
    for (_, correlation, phase) in launches {
        match last.last_mut() {
            Some(entry) if entry.0 == correlation => entry.1 = phase,
            _ => last.push((correlation, phase)),
        }
    }
    last.shrink_to_fit();
    LaunchPhases(last)
}

/// Correlation id → phase, sorted by correlation id: 16 bytes per launch,
/// where a hash map took 24 and twice the table while it grew.
struct LaunchPhases(Vec<(i64, u32)>);

impl LaunchPhases {
    fn get(&self, correlation: &i64) -> Option<&u32> {
        let at = self.0.binary_search_by_key(correlation, |&(c, _)| c).ok()?;
        self.0.get(at).map(|(_, phase)| phase)
    }
}
