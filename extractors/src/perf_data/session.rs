//! Decoding a whole perf.data: reads the file's header, attrs and features
//! (file mode, which needs `Read + Seek`: the features follow the records
//! but name them) or takes them from the record stream (pipe mode, plain
//! `Read`), then streams the records, puts them in time order one round at
//! a time, replays maps and thread names, and hands each sample — call
//! chain resolved — and each task event to a callback. Only the current
//! round of records, the maps and the thread table are held in memory.
//! A damaged data section ends the decode with a note; what came before is
//! still delivered.

use std::io::{Read, Seek, SeekFrom};

use super::attrs::{EventAttr, EventTable, PERF_TYPE_TRACEPOINT};
use super::bytes::Endian;
use super::error::PerfDataError;
use super::features::PerfMeta;
use super::file_layout::read_file_layout;
use super::frames::FrameResolver;
use super::header::{PIPE_HEADER_SIZE, Start, parse_start};
use super::kernel_symbols::{KernelSymbolStatus, load_kernel_symbols};
use super::model::{PerfDataOptions, PerfDataSummary, PerfEvent};
use super::record_stream::{RecordHeader, RecordStream};
use super::records::*;
use super::reorder::RoundReorder;
use super::replay::{Pending, Replay};
use super::sample::parse_sample;
use super::tracepoints::Tracepoints;

/// Records (and their bytes) held for reordering before all are released
/// anyway: a file without `FINISHED_ROUND` records cannot fill memory.
const MAX_PENDING: usize = 500_000;
const MAX_PENDING_BYTES: usize = 256 << 20;

/// Decodes a perf.data file (file or pipe mode), calling `on_event` for
/// each sample and task event in time order.
pub fn read_perf_data<R: Read + Seek>(
    mut reader: R,
    options: &PerfDataOptions,
    on_event: impl FnMut(PerfEvent),
) -> Result<PerfDataSummary, PerfDataError> {
    let mut first = [0u8; 16];
    let got = read_up_to(&mut reader, &mut first)?;
    match parse_start(first.get(..got).unwrap_or(&[]))? {
        Start::Pipe { endian } => {
            let session = Session::new(
                endian,
                EventTable::default(),
                PerfMeta::default(),
                options,
                true,
            );
            session.run(reader, PIPE_HEADER_SIZE, None, on_event)
        }
        Start::File {
            endian,
            header_size,
        } => {
            let layout = read_file_layout(&mut reader, endian, header_size)?;
            let mut session = Session::new(endian, layout.events, layout.meta, options, false);
            for n in layout.notes {
                session.replay.summary.note(n);
            }
            reader.seek(SeekFrom::Start(layout.data_offset))?;
            session.run(reader, layout.data_offset, layout.data_size, on_event)
        }
    }
}

/// Decodes a pipe-mode perf.data (`perf record -o -`) from a plain stream.
pub fn read_perf_pipe<R: Read>(
    mut reader: R,
    options: &PerfDataOptions,
    on_event: impl FnMut(PerfEvent),
) -> Result<PerfDataSummary, PerfDataError> {
    let mut first = [0u8; 16];
    let got = read_up_to(&mut reader, &mut first)?;
    match parse_start(first.get(..got).unwrap_or(&[]))? {
        Start::Pipe { endian } => {
            let session = Session::new(
                endian,
                EventTable::default(),
                PerfMeta::default(),
                options,
                true,
            );
            session.run(reader, PIPE_HEADER_SIZE, None, on_event)
        }
        Start::File { .. } => Err(PerfDataError::Malformed(
            "a file-mode perf.data needs random access (use read_perf_data)".into(),
        )),
    }
}

fn read_up_to<R: Read>(r: &mut R, buf: &mut [u8]) -> Result<usize, PerfDataError> {
    let mut got = 0;
    while let Some(dest) = buf.get_mut(got..).filter(|d| !d.is_empty()) {
        match r.read(dest) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(got)
}

struct Session {
    endian: Endian,
    events: EventTable,
    replay: Replay,
    reorder: RoundReorder<Pending>,
    options: PerfDataOptions,
}

impl Session {
    fn new(
        endian: Endian,
        events: EventTable,
        meta: PerfMeta,
        options: &PerfDataOptions,
        pipe: bool,
    ) -> Session {
        let (kernel_syms, kernel_status) = if options.kernel_symbols && !pipe {
            load_kernel_symbols(meta.build_id_of("[kernel.kallsyms]"))
        } else if options.kernel_symbols {
            (None, KernelSymbolStatus::NoRecordedBuildId)
        } else {
            (None, KernelSymbolStatus::NotRequested)
        };
        let resolver = FrameResolver::new(options.resolve_symbols, kernel_syms);
        let mut replay = Replay::new(meta, resolver);
        replay.summary.pipe_mode = pipe;
        replay.summary.big_endian = endian.is_big();
        replay.summary.kernel_symbols = Some(kernel_status);
        let mut session = Session {
            endian,
            events,
            replay,
            reorder: RoundReorder::default(),
            options: options.clone(),
        };
        session.load_tracepoints();
        session
    }

    /// Parses the tracing data (when there is some and none was parsed
    /// yet: the first tracing data wins) and names tracepoint events that
    /// have no name yet.
    pub(super) fn load_tracepoints(&mut self) {
        if !self.options.decode_tracepoints || self.replay.tracepoints.format_count() > 0 {
            return;
        }
        let Some(bytes) = self.replay.meta.tracing_data.as_deref() else {
            return;
        };
        match Tracepoints::load(bytes) {
            Ok(t) => {
                for n in t.notes().iter().take(20) {
                    self.replay.summary.note(format!("tracing data: {n}"));
                }
                self.replay.tracepoints = t;
            }
            Err(e) => {
                let note = format!("tracing data not decoded: {e}");
                self.replay.summary.note(note);
            }
        }
        self.replay.summary.tracepoint_formats = self.replay.tracepoints.format_count();
        for index in 0..self.events.events.len() {
            self.name_tracepoint(index);
        }
    }

    /// Gives tracepoint event `index` its `system:name` if it has no name.
    pub(super) fn name_tracepoint(&mut self, index: usize) {
        let Some(ev) = self.events.events.get_mut(index) else {
            return;
        };
        if ev.attr.kind == PERF_TYPE_TRACEPOINT
            && ev.name.starts_with("tracepoint:")
            && let Some(name) = self.replay.tracepoints.name_of(ev.attr.config)
        {
            ev.name = name.into();
        }
    }

    fn run<R: Read>(
        mut self,
        reader: R,
        offset: u64,
        limit: Option<u64>,
        mut on_event: impl FnMut(PerfEvent),
    ) -> Result<PerfDataSummary, PerfDataError> {
        // Records are read 8 bytes then a body at a time: buffer the input.
        let reader = std::io::BufReader::with_capacity(1 << 16, reader);
        let mut stream = RecordStream::new(reader, self.endian, offset, limit);
        self.replay.summary.complete = true;
        loop {
            let (header, at) = match stream.next_record() {
                Ok(Some(h)) => h,
                Ok(None) => break,
                Err(e) => {
                    self.replay.summary.complete = false;
                    self.replay.summary.note(format!("records end early: {e}"));
                    break;
                }
            };
            *self
                .replay
                .summary
                .record_counts
                .entry(header.kind)
                .or_insert(0) += 1;
            if let Err(e) = self.record(header, at, &mut stream, &mut on_event) {
                self.replay.summary.complete = false;
                self.replay.summary.note(format!("records end early: {e}"));
                break;
            }
            if self.reorder.len() > MAX_PENDING || self.reorder.weight() > MAX_PENDING_BYTES {
                self.replay.summary.note(
                    "too many records between FINISHED_ROUNDs: released early (order may differ)",
                );
                let replay = &mut self.replay;
                let events = &self.events;
                self.reorder
                    .finish(|p| replay.apply(p, events, &mut on_event));
            }
        }
        let (replay, events) = (&mut self.replay, &self.events);
        self.reorder
            .finish(|p| replay.apply(p, events, &mut on_event));
        Ok(self.replay.finish(&self.events))
    }

    fn trailer_attr(&self, body: &[u8]) -> Option<&EventAttr> {
        let index = self.events.event_of_trailer(body, self.endian).unwrap_or(0);
        self.events.events.get(index).map(|e| &e.attr)
    }

    /// One record: parsed into a pending item (or acted on at once for the
    /// perf-tool records that describe the stream).
    fn record<R: Read>(
        &mut self,
        header: RecordHeader,
        at: u64,
        stream: &mut RecordStream<R>,
        on_event: &mut impl FnMut(PerfEvent),
    ) -> Result<(), PerfDataError> {
        let endian = self.endian;
        let body = stream.body();
        let attr = self.trailer_attr(body).cloned().unwrap_or_default();
        let trailer = attr.sample_id_trailer_size();
        let sample_id = || parse_sample_id(body, &attr, endian).unwrap_or_default();
        let pending = match header.kind {
            RECORD_SAMPLE => {
                let Some(index) = self.events.event_of_sample(body, endian) else {
                    self.replay.summary.samples_without_event += 1;
                    return Ok(());
                };
                let Some(ev) = self.events.events.get(index) else {
                    return Ok(());
                };
                match parse_sample(body, &ev.attr, endian) {
                    Ok(fields) => Some(Pending::sample(index, header.misc, fields)),
                    Err(e) => {
                        self.malformed(header, at, e.0);
                        None
                    }
                }
            }
            RECORD_MMAP | RECORD_MMAP2 => {
                match parse_mmap(
                    body,
                    header.misc,
                    header.kind == RECORD_MMAP2,
                    trailer,
                    endian,
                ) {
                    Some(m) => Some(Pending::Mmap(m, sample_id().time)),
                    None => self.malformed(header, at, "mmap"),
                }
            }
            RECORD_COMM => match parse_comm(body, header.misc, trailer, endian) {
                Some(c) => Some(Pending::Comm(c, sample_id().time)),
                None => self.malformed(header, at, "comm"),
            },
            RECORD_FORK | RECORD_EXIT => match parse_task(body, endian) {
                Some(t) if header.kind == RECORD_FORK => Some(Pending::Fork(t)),
                Some(t) => Some(Pending::Exit(t)),
                None => self.malformed(header, at, "fork/exit"),
            },
            RECORD_LOST => leading_words::<2>(body, endian)
                .map(|[_, n]| Pending::Lost(n, false, sample_id().time)),
            RECORD_LOST_SAMPLES => {
                leading_words::<1>(body, endian).map(|[n]| Pending::Lost(n, true, sample_id().time))
            }
            RECORD_THROTTLE | RECORD_UNTHROTTLE => leading_words::<1>(body, endian)
                .map(|[t]| Pending::Throttle(header.kind == RECORD_THROTTLE, Some(t))),
            RECORD_FINISHED_ROUND => {
                let (replay, events) = (&mut self.replay, &self.events);
                self.reorder
                    .finish_round(|p| replay.apply(p, events, on_event));
                None
            }
            _ => {
                self.stream_record(header, at, stream)?;
                None
            }
        };
        if let Some(p) = pending {
            let time = p.time();
            self.reorder.push(time, usize::from(header.size), p);
        }
        Ok(())
    }

    pub(super) fn malformed(
        &mut self,
        header: RecordHeader,
        at: u64,
        what: &str,
    ) -> Option<Pending> {
        self.replay.summary.malformed_records += 1;
        self.replay.summary.note(format!(
            "record type {} at offset {at} ({} bytes): {what} does not fit; skipped",
            header.kind, header.size
        ));
        None
    }
}

#[path = "tool_records.rs"]
mod tool_records;

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "synthetic_tests.rs"]
mod synthetic_tests;
