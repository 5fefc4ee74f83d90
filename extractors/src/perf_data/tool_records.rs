//! The records the perf tool (not the kernel) writes into the stream:
//! in pipe mode the attrs, feature sections, build ids, tracing data and
//! event names arrive this way; AUX-area trace data is skipped past; the
//! rest (id index, thread and CPU maps, stat, time conversion, …) is
//! counted and ignored.

use std::io::Read;

use super::Session;
use crate::perf_data::attrs::EventAttr;
use crate::perf_data::bytes::{ByteReader, c_string};
use crate::perf_data::error::PerfDataError;
use crate::perf_data::features::{HEADER_EVENT_DESC, HEADER_TRACING_DATA, parse_build_id_body};
use crate::perf_data::record_stream::{RecordHeader, RecordStream};
use crate::perf_data::records::*;

impl Session {
    /// The perf-tool records: attrs, features, build ids, tracing data and
    /// event names (pipe mode), payloads to skip, and the ones ignored.
    pub(super) fn stream_record<R: Read>(
        &mut self,
        header: RecordHeader,
        at: u64,
        stream: &mut RecordStream<R>,
    ) -> Result<(), PerfDataError> {
        let endian = self.endian;
        let body = stream.body();
        let mut r = ByteReader::new(body, endian);
        match header.kind {
            RECORD_HEADER_ATTR => {
                let size = ByteReader::new(body.get(4..).unwrap_or(&[]), endian)
                    .u32()
                    .unwrap_or(0);
                let size = if size == 0 { 64 } else { size as usize };
                match (body.get(..size), body.get(size..)) {
                    (Some(a), Some(rest)) => {
                        let Some(attr) = EventAttr::parse(a, endian) else {
                            return Ok(());
                        };
                        let mut ir = ByteReader::new(rest, endian);
                        let ids = std::iter::from_fn(|| ir.u64()).collect();
                        match self.events.push(attr, ids) {
                            Some(index) => {
                                self.events.apply_names(&self.replay.meta.event_names);
                                self.name_tracepoint(index);
                            }
                            None => self
                                .replay
                                .summary
                                .note("too many event attrs: the rest are ignored"),
                        }
                    }
                    _ => {
                        self.malformed(header, at, "attr");
                    }
                }
            }
            RECORD_EVENT_UPDATE => {
                // type 2 = name: { u64 type, u64 id, char name[] }.
                if let (Some(2), Some(id)) = (r.u64(), r.u64()) {
                    self.events.set_name_of_id(id, &c_string(r.rest()));
                }
            }
            RECORD_HEADER_FEATURE => {
                if let Some(feature) = r.u64().and_then(|f| u32::try_from(f).ok()) {
                    if !self.replay.meta.apply_feature(feature, r.rest(), endian) {
                        let note = format!("feature {feature} record did not parse");
                        self.replay.summary.note(note);
                    }
                    match feature {
                        HEADER_EVENT_DESC => self.events.apply_names(&self.replay.meta.event_names),
                        HEADER_TRACING_DATA => self.load_tracepoints(),
                        _ => {}
                    }
                }
            }
            RECORD_HEADER_BUILD_ID => {
                if let Some(b) = parse_build_id_body(header.misc, body, endian) {
                    self.replay.late_build_id(&b);
                    self.replay.meta.build_ids.push(b);
                }
            }
            RECORD_HEADER_TRACING_DATA => {
                let size = r.u32().unwrap_or(0);
                let data = stream.read_payload(u64::from(size))?;
                self.replay.meta.tracing_data = Some(data);
                self.load_tracepoints();
            }
            RECORD_AUXTRACE => {
                let size = r.u64().unwrap_or(0);
                stream.skip_payload(size)?;
            }
            RECORD_COMPRESSED | RECORD_COMPRESSED2
                if self.replay.summary.record_counts.get(&header.kind) == Some(&1) =>
            {
                self.replay
                    .summary
                    .note("zstd-compressed records (perf record -z) are not decoded; skipped");
            }
            // ID_INDEX, THREAD_MAP, CPU_MAP, STAT*, TIME_CONV, KSYMBOL,
            // BPF_EVENT, CGROUP, SWITCH, NAMESPACES, AUX, … : skipped.
            _ => {}
        }
        Ok(())
    }
}
