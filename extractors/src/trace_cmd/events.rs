//! A trace-cmd buffer's records as kernel events, in time order.
//!
//! Each CPU's ring buffer is in time order on its own; the trace is their
//! k-way merge, smallest timestamp first and the lower CPU first on a tie
//! (as `trace-cmd report` and the kernel's `trace` file print). Each CPU
//! keeps one block of pages in memory. Timestamps are converted as
//! `trace-cmd report` does by default: `TSC2NSEC` cycles → ns when present,
//! then the `OFFSET` and `DATE` options added; guest `TIME_SHIFT` host
//! sync is not applied (it needs the host's file).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{Read, Seek};

use super::cpu_stream::{CpuStream, PageContext};
use super::file_source::FileSource;
use super::options::Tsc2Nsec;
use super::summary::TraceCmdSummary;
use crate::kernel_events::model::KernelEvent;
use crate::kernel_events::tracefs_decode::record_event_id;
use crate::kernel_events::tracing_data::TracingData;

/// Raw ring-buffer time → the event's `ts_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimeConversion {
    pub tsc2nsec: Option<Tsc2Nsec>,
    pub offset_ns: i64,
}

impl TimeConversion {
    pub fn apply(&self, raw: u64) -> i64 {
        let scaled = match self.tsc2nsec {
            Some(t) => {
                let wide = u128::from(raw) * u128::from(t.mult);
                let shifted = wide.checked_shr(t.shift).unwrap_or(0);
                u64::try_from(shifted).unwrap_or(u64::MAX)
            }
            None => raw,
        };
        i64::try_from(scaled)
            .unwrap_or(i64::MAX)
            .saturating_add(self.offset_ns)
    }
}

/// Iterator over one buffer's events, merged across CPUs by time. I/O
/// errors and damaged pages end the affected CPU or page and are counted
/// in [`TraceEvents::summary`] rather than stopping the iteration.
pub struct TraceEvents<'a, R> {
    source: &'a mut FileSource<R>,
    tracing: &'a TracingData,
    ctx: PageContext,
    clock: TimeConversion,
    streams: Vec<CpuStream>,
    heap: BinaryHeap<Reverse<(i64, u32, usize)>>,
    summary: TraceCmdSummary,
}

impl<'a, R: Read + Seek> TraceEvents<'a, R> {
    pub(crate) fn new(
        source: &'a mut FileSource<R>,
        tracing: &'a TracingData,
        ctx: PageContext,
        clock: TimeConversion,
        mut streams: Vec<CpuStream>,
        mut summary: TraceCmdSummary,
    ) -> Self {
        streams.sort_by_key(|s| s.cpu);
        summary.cpus = streams.len() as u32;
        for s in &streams {
            summary.events_per_cpu.insert(s.cpu, 0);
        }
        let mut events = TraceEvents {
            source,
            tracing,
            ctx,
            clock,
            streams,
            heap: BinaryHeap::new(),
            summary,
        };
        for index in 0..events.streams.len() {
            events.refill(index);
        }
        events
    }

    /// What was counted so far (all of it once the iterator is exhausted).
    pub fn summary(&self) -> &TraceCmdSummary {
        &self.summary
    }

    /// Reads the whole buffer, handing each event to `each`; returns the summary.
    pub fn for_each_event(mut self, mut each: impl FnMut(KernelEvent)) -> TraceCmdSummary {
        for event in self.by_ref() {
            each(event);
        }
        self.summary
    }

    /// Advances stream `index` and queues its next record.
    fn refill(&mut self, index: usize) {
        let Some(stream) = self.streams.get_mut(index) else {
            return;
        };
        stream.advance(self.source, &self.ctx, &mut self.summary);
        if let Some(raw) = stream.pending_ts() {
            let ts = self.clock.apply(raw);
            self.heap.push(Reverse((ts, stream.cpu, index)));
        }
    }

    /// The event for stream `index`'s pending record, if it decodes.
    fn decode(&mut self, index: usize, ts_ns: i64) -> Option<KernelEvent> {
        let stream = self.streams.get(index)?;
        let cpu = stream.cpu;
        let raw = stream.pending_payload()?;
        let big = self.tracing.big_endian;
        let Some(id) = record_event_id(raw, big) else {
            self.summary.undecodable_records += 1;
            return None;
        };
        let Some(format) = self.tracing.format(id) else {
            self.summary.count_unknown(id);
            return None;
        };
        let Some((pid, fields)) = format.decode(raw, big) else {
            self.summary.undecodable_records += 1;
            return None;
        };
        if let Some(n) = self.summary.events_per_cpu.get_mut(&cpu) {
            *n += 1;
        }
        let comm = match self.tracing.cmdlines.get(&pid) {
            Some(comm) => Some(comm.clone()),
            None if pid == 0 => Some("<idle>".to_string()),
            None => None,
        };
        Some(KernelEvent {
            ts_ns,
            cpu,
            pid,
            comm,
            name: format.name.clone(),
            fields,
        })
    }
}

impl<R: Read + Seek> Iterator for TraceEvents<'_, R> {
    type Item = KernelEvent;

    fn next(&mut self) -> Option<KernelEvent> {
        while let Some(Reverse((ts, _, index))) = self.heap.pop() {
            let event = self.decode(index, ts);
            self.refill(index);
            if event.is_some() {
                return event;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_conversion_scales_then_offsets_without_overflow() {
        let plain = TimeConversion {
            tsc2nsec: None,
            offset_ns: -5,
        };
        assert_eq!(plain.apply(100), 95);
        assert_eq!(plain.apply(u64::MAX), i64::MAX - 5);
        let tsc = TimeConversion {
            tsc2nsec: Some(Tsc2Nsec {
                mult: 3,
                shift: 1,
                offset: 0,
            }),
            offset_ns: 0,
        };
        assert_eq!(tsc.apply(10), 15);
        assert_eq!(tsc.apply(u64::MAX), i64::MAX);
        let wild = TimeConversion {
            tsc2nsec: Some(Tsc2Nsec {
                mult: u32::MAX,
                shift: 500,
                offset: 0,
            }),
            offset_ns: i64::MIN,
        };
        assert_eq!(wild.apply(7), i64::MIN);
    }
}
