//! The second half of decoding: records released in time order are
//! replayed — maps and thread names updated, samples' call chains resolved
//! against the state at their time, tracepoint records decoded — and
//! handed out as [`PerfEvent`]s, while the summary is counted.

use std::sync::Arc;

use super::address_space::AddressSpaces;
use super::attrs::{EventTable, PERF_TYPE_TRACEPOINT};
use super::features::{BuildIdEntry, PerfMeta};
use super::frames::FrameResolver;
use super::model::{PerfDataSummary, PerfEvent, PerfSample};
use super::records::{CommRecord, MmapRecord, TaskRecord};
use super::sample::SampleFields;
use super::symbols::same_build_id;
use super::tracepoints::Tracepoints;

/// A sample's fields, owned, waiting for its turn.
#[derive(Debug)]
pub struct PendingSample {
    event: usize,
    misc: u16,
    ip: Option<u64>,
    pid: Option<i32>,
    tid: Option<i32>,
    time: Option<u64>,
    addr: Option<u64>,
    cpu: Option<u32>,
    period: Option<u64>,
    callchain: Vec<u64>,
    raw: Option<Vec<u8>>,
}

/// A record waiting to be replayed in time order.
#[derive(Debug)]
pub enum Pending {
    Sample(Box<PendingSample>),
    Mmap(MmapRecord, Option<u64>),
    Comm(CommRecord, Option<u64>),
    Fork(TaskRecord),
    Exit(TaskRecord),
    /// Count, whether samples (`LOST_SAMPLES`), time.
    Lost(u64, bool, Option<u64>),
    /// Throttled (vs unthrottled), time.
    Throttle(bool, Option<u64>),
}

impl Pending {
    pub fn sample(event: usize, misc: u16, f: SampleFields<'_>) -> Pending {
        Pending::Sample(Box::new(PendingSample {
            event,
            misc,
            ip: f.ip,
            pid: f.pid,
            tid: f.tid,
            time: f.time,
            addr: f.addr,
            cpu: f.cpu,
            period: f.period,
            callchain: f.callchain,
            raw: f.raw.map(<[u8]>::to_vec),
        }))
    }

    /// The time the record happened, if it says.
    pub fn time(&self) -> Option<u64> {
        match self {
            Pending::Sample(s) => s.time,
            Pending::Mmap(_, t) | Pending::Comm(_, t) => *t,
            Pending::Fork(t) | Pending::Exit(t) => Some(t.time),
            Pending::Lost(_, _, t) | Pending::Throttle(_, t) => *t,
        }
    }
}

/// The state replayed records build, and the summary.
pub struct Replay {
    pub meta: PerfMeta,
    pub summary: PerfDataSummary,
    pub tracepoints: Tracepoints,
    spaces: AddressSpaces,
    resolver: FrameResolver,
}

impl Replay {
    pub fn new(meta: PerfMeta, resolver: FrameResolver) -> Replay {
        Replay {
            meta,
            summary: PerfDataSummary::default(),
            tracepoints: Tracepoints::default(),
            spaces: AddressSpaces::default(),
            resolver,
        }
    }

    /// Replays one record against the events known now.
    pub fn apply(&mut self, p: Pending, events: &EventTable, out: &mut impl FnMut(PerfEvent)) {
        match p {
            Pending::Sample(s) => {
                let sample = self.sample(*s, events);
                out(PerfEvent::Sample(Box::new(sample)));
            }
            Pending::Mmap(m, ts_ns) => {
                self.spaces.mmap(&m);
                out(PerfEvent::Mmap {
                    ts_ns,
                    pid: m.pid,
                    start: m.start,
                    len: m.len,
                    pgoff: m.pgoff,
                    filename: m.filename,
                });
            }
            Pending::Comm(c, ts_ns) => {
                self.spaces.comm(&c, ts_ns);
                let name = self
                    .spaces
                    .thread_name(c.tid)
                    .unwrap_or_else(|| Arc::from(c.comm.as_str()));
                out(PerfEvent::Comm {
                    ts_ns,
                    pid: c.pid,
                    tid: c.tid,
                    name,
                    exec: c.exec,
                });
            }
            Pending::Fork(t) => {
                self.spaces.fork(&t);
                out(PerfEvent::Fork {
                    ts_ns: t.time,
                    pid: t.pid,
                    ppid: t.ppid,
                    tid: t.tid,
                    ptid: t.ptid,
                });
            }
            Pending::Exit(t) => {
                self.spaces.exit(&t);
                out(PerfEvent::Exit {
                    ts_ns: t.time,
                    pid: t.pid,
                    ppid: t.ppid,
                    tid: t.tid,
                    ptid: t.ptid,
                });
            }
            Pending::Lost(count, samples, ts_ns) => {
                if samples {
                    self.summary.lost_samples = self.summary.lost_samples.saturating_add(count);
                } else {
                    self.summary.lost_records = self.summary.lost_records.saturating_add(count);
                }
                out(PerfEvent::Lost {
                    ts_ns,
                    count,
                    samples,
                });
            }
            Pending::Throttle(throttled, ts_ns) => {
                self.summary.throttles += u64::from(throttled);
                out(PerfEvent::Throttle { ts_ns, throttled });
            }
        }
    }

    fn sample(&mut self, s: PendingSample, events: &EventTable) -> PerfSample {
        self.summary.samples += 1;
        let counts = &mut self.summary.samples_per_event;
        if counts.len() < events.events.len() {
            counts.resize(events.events.len(), 0);
        }
        if let Some(n) = counts.get_mut(s.event) {
            *n += 1;
        }
        let (name, kind, config) = match events.events.get(s.event) {
            Some(e) => (e.name.clone(), e.attr.kind, e.attr.config),
            None => (Arc::from("unknown"), u32::MAX, 0),
        };
        let callchain =
            self.resolver
                .resolve(&self.spaces, &self.meta, s.pid, s.misc, s.ip, &s.callchain);
        let comm = s.tid.and_then(|t| self.spaces.thread_name(t));
        let tracepoint_id = (kind == PERF_TYPE_TRACEPOINT).then_some(config);
        let kernel_event = match (&s.raw, tracepoint_id) {
            (Some(raw), Some(id)) => {
                let ev = self
                    .tracepoints
                    .decode(id, raw, s.time, s.cpu, comm.as_deref());
                if ev.is_none() {
                    self.summary.tracepoints_not_decoded += 1;
                }
                ev
            }
            _ => None,
        };
        PerfSample {
            attr_index: s.event,
            event_name: name,
            ts_ns: s.time,
            pid: s.pid,
            tid: s.tid,
            cpu: s.cpu,
            period: s.period,
            ip: s.ip,
            addr: s.addr,
            comm,
            callchain,
            raw: s.raw,
            tracepoint_id,
            kernel_event,
        }
    }

    /// A build id that arrives after samples were named (pipe mode sends
    /// them at the end): says so when the named file was another build.
    pub fn late_build_id(&mut self, entry: &BuildIdEntry) {
        let used = self
            .resolver
            .symbol_cache()
            .and_then(|c| c.loaded(&entry.filename));
        if let Some(syms) = used
            && !same_build_id(&entry.build_id, syms.build_id.as_deref().unwrap_or(&[]))
        {
            let note = format!(
                "{}: symbols were read from a file whose build id differs from the one recorded after the samples; its frame names may be wrong",
                entry.filename
            );
            self.summary.note(note);
        }
    }

    /// The summary, with the final thread table, symbol sources and events.
    pub fn finish(mut self, table: &EventTable) -> PerfDataSummary {
        self.summary.events = table.events.clone();
        let counts = &mut self.summary.samples_per_event;
        if counts.len() < table.events.len() {
            counts.resize(table.events.len(), 0);
        }
        self.summary.threads = std::mem::take(&mut self.spaces.threads);
        if let Some(cache) = self.resolver.symbol_cache() {
            self.summary.symbol_sources = cache.sources.clone();
        }
        self.summary.meta = self.meta;
        self.summary
    }
}
