//! Reads a 1.22+ trace one generation at a time: collects the batches of
//! a generation (`events_v2.rs` reads them), reads its tables, and merges
//! the per-M event batches by time (each M's own order kept) into the
//! converter (`convert_v2.rs`). Go's reader also checks the partial order
//! given by sequence numbers; this merge relies on timestamps (monotonic
//! on the platforms Go traces with nanotime) and the timeline builder notes
//! any transition that does not fit. Damage after the first generation
//! ends the trace with a note; the generations before it are kept.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::io::BufRead;

use super::convert_v2::{GenConverter, MCtx, abs_ns, pid};
use super::error::{DecodeLimits, GoTraceError, NoteLog};
use super::events_v2::{
    EV_END_OF_GENERATION, GenTables, RawBatch, V2Event, read_batch, read_structural, read_timed,
};
use super::model::TimelineSink;
use super::sched_event::SchedEvent;
use super::states::TimelineBuilder;

/// What decoding a 1.22+ body counted.
pub(super) struct V2Outcome {
    pub(super) counts: HashMap<u8, u64>,
    pub(super) ticks_per_second: u64,
    pub(super) generations: u64,
    pub(super) unknown_events: u64,
    pub(super) notes: NoteLog,
}

/// State carried from one generation to the next.
struct V2State {
    minor: u32,
    ms: HashMap<u64, MCtx>,
    freq: Option<u64>,
    /// Absolute nanoseconds of the trace's first batch.
    origin: Option<u64>,
    out: V2Outcome,
}

/// Decodes the body (after the header) of a 1.22+ trace.
pub(super) fn decode_v2<S: TimelineSink>(
    r: &mut impl BufRead,
    minor: u32,
    limits: &DecodeLimits,
    builder: &mut TimelineBuilder<S>,
) -> Result<V2Outcome, GoTraceError> {
    let out = V2Outcome {
        counts: HashMap::new(),
        ticks_per_second: 0,
        generations: 0,
        unknown_events: 0,
        notes: NoteLog::default(),
    };
    let mut st = V2State {
        minor,
        ms: HashMap::new(),
        freq: None,
        origin: None,
        out,
    };
    let mut offset = 16u64;
    let mut spill: Option<RawBatch> = None;
    let mut end_markers = 0u64;
    loop {
        let mut batches: Vec<RawBatch> = spill.take().into_iter().collect();
        let mut size: u64 = batches.iter().map(|b| b.data.len() as u64).sum();
        let mut failure: Option<String> = None;
        loop {
            match read_batch(r, minor, &mut offset, &mut end_markers) {
                Ok(None) => break,
                Ok(Some(b)) => {
                    if batches
                        .first()
                        .is_some_and(|f| f.generation != b.generation)
                    {
                        spill = Some(b);
                        break;
                    }
                    size = size.saturating_add(b.data.len() as u64);
                    if size > limits.max_generation_bytes {
                        return Err(GoTraceError::TooLarge {
                            what: "a generation",
                            size,
                            limit: limits.max_generation_bytes,
                        });
                    }
                    batches.push(b);
                }
                Err(what) => {
                    failure = Some(what);
                    break;
                }
            }
        }
        if batches.is_empty() {
            match failure {
                Some(what) if st.out.generations == 0 => {
                    return Err(GoTraceError::Malformed { offset, what });
                }
                Some(what) => st.out.notes.add("damaged batch ended the trace", || what),
                None => {}
            }
            break;
        }
        if let Some(what) = &failure {
            let what = what.clone();
            st.out.notes.add(
                "damaged batch ended the trace; last generation read as far as it goes",
                || what,
            );
        }
        decode_generation(&mut st, &batches, builder);
        if failure.is_some() || spill.is_none() {
            break;
        }
    }
    if end_markers > 0 {
        *st.out.counts.entry(EV_END_OF_GENERATION).or_default() += end_markers;
    }
    if st.out.generations == 0 || st.freq.is_none() {
        return Err(GoTraceError::MissingFrequency);
    }
    st.out.ticks_per_second = st.freq.unwrap_or(0);
    Ok(st.out)
}

/// One M's event batches, read one event at a time.
struct Cursor {
    m: u64,
    batches: VecDeque<usize>,
    rest: Option<(usize, usize, u64)>,
}

impl Cursor {
    fn next(&mut self, batches: &[RawBatch], minor: u32, out: &mut V2Outcome) -> Option<V2Event> {
        loop {
            if self.rest.is_none() {
                let i = self.batches.pop_front()?;
                let b = batches.get(i)?;
                self.rest = Some((i, 0, b.ticks));
            }
            let (i, pos, last) = self.rest?;
            let data = batches.get(i).map_or(&[][..], |b| b.data.as_slice());
            let mut rest = data.get(pos..).unwrap_or(&[]);
            if rest.is_empty() {
                self.rest = None;
                continue;
            }
            match read_timed(&mut rest, last, minor) {
                Ok(ev) => {
                    self.rest = Some((i, data.len() - rest.len(), ev.ticks));
                    return Some(ev);
                }
                Err(what) => {
                    out.unknown_events = out.unknown_events.saturating_add(1);
                    let m = self.m;
                    out.notes
                        .add("undecodable event; rest of its batch skipped", || {
                            format!("{what} on M {m}")
                        });
                    self.rest = None;
                }
            }
        }
    }
}

fn decode_generation<S: TimelineSink>(
    st: &mut V2State,
    batches: &[RawBatch],
    b: &mut TimelineBuilder<S>,
) {
    st.out.generations += 1;
    let mut tables = GenTables::default();
    let mut per_m: Vec<Cursor> = Vec::new();
    for (i, batch) in batches.iter().enumerate() {
        *st.out
            .counts
            .entry(if batch.experimental { 49 } else { 1 })
            .or_insert(0) += 1;
        if batch.experimental {
            st.out.notes.add("experimental batch skipped", || {
                format!("generation {}", batch.generation)
            });
        } else if !read_structural(batch, st.minor, &mut tables, &mut st.out.notes) {
            match per_m.iter_mut().find(|c| c.m == batch.m) {
                Some(c) => c.batches.push_back(i),
                None => per_m.push(Cursor {
                    m: batch.m,
                    batches: VecDeque::from([i]),
                    rest: None,
                }),
            }
        }
    }
    for (&ty, &n) in &tables.counts {
        *st.out.counts.entry(ty).or_insert(0) += n;
    }
    let Some(freq) = tables.ticks_per_second.or(st.freq) else {
        st.out
            .notes
            .add("generation without a frequency skipped", || {
                format!("generation {}", batches.first().map_or(0, |b| b.generation))
            });
        return;
    };
    st.freq = Some(freq);
    let first = per_m
        .iter()
        .flat_map(|c| c.batches.iter())
        .filter_map(|&i| batches.get(i))
        .map(|b| b.ticks)
        .min();
    let origin = *st.origin.get_or_insert(abs_ns(first.unwrap_or(0), freq));
    let mut conv = GenConverter {
        tables: &tables,
        freq,
        origin,
    };
    let mut heap = BinaryHeap::new();
    let mut order = 0u64;
    for (ci, c) in per_m.iter_mut().enumerate() {
        if let Some(ev) = c.next(batches, st.minor, &mut st.out) {
            order += 1;
            heap.push(Reverse((ev.ticks, order, ci, ev)));
        }
    }
    while let Some(Reverse((_, _, ci, ev))) = heap.pop() {
        *st.out.counts.entry(ev.ty).or_insert(0) += 1;
        let Some(c) = per_m.get_mut(ci) else { continue };
        let m = c.m;
        conv.convert(&mut st.ms, b, m, ev);
        if let Some(next) = c.next(batches, st.minor, &mut st.out) {
            order += 1;
            heap.push(Reverse((next.ticks, order, ci, next)));
        }
    }
    let mut samples = tables.samples.clone();
    samples.sort_by_key(|s| s[0]);
    for [ticks, _m, p, g, stack] in samples {
        let stack = conv.stack(b, stack);
        b.apply(
            conv.ns(ticks),
            SchedEvent::CpuSample {
                g,
                p: Some(pid(p)),
                stack,
            },
        );
    }
}
