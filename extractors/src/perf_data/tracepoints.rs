//! Tracepoint samples into kernel events: a tracepoint event's samples
//! carry the kernel's raw record (`PERF_SAMPLE_RAW`) and its attr's
//! `config` is the tracepoint id; the formats in the file's tracing data
//! (`HEADER_TRACING_DATA`) say how to read it. The decoding itself is
//! [`crate::kernel_events`]'s, shared with trace-cmd and ftrace.

use crate::kernel_events::model::KernelEvent;
use crate::kernel_events::tracing_data::{TracingData, parse_tracing_data};

/// The tracepoint formats of one recording (possibly none).
#[derive(Debug, Default)]
pub struct Tracepoints {
    data: Option<TracingData>,
}

impl Tracepoints {
    /// Parses the tracing data; the error text when it does not parse.
    pub fn load(bytes: &[u8]) -> Result<Tracepoints, String> {
        parse_tracing_data(bytes)
            .map(|data| Tracepoints { data: Some(data) })
            .map_err(|e| e.to_string())
    }

    /// How many formats were read.
    pub fn format_count(&self) -> usize {
        self.data.as_ref().map_or(0, |d| d.formats.len())
    }

    /// Notes the tracing-data reader left (formats skipped, …).
    pub fn notes(&self) -> &[String] {
        self.data.as_ref().map_or(&[], |d| d.notes.as_slice())
    }

    /// `system:name` of tracepoint `id`.
    pub fn name_of(&self, id: u64) -> Option<String> {
        let format = self.data.as_ref()?.format(u32::try_from(id).ok()?)?;
        Some(format!("{}:{}", format.system, format.name))
    }

    /// Decodes a tracepoint sample's raw record. `config` is the event's
    /// tracepoint id (the record's own `common_type` is used when the
    /// formats do not know `config`). `None` without formats, for an
    /// unknown id or a record too short for its format.
    pub fn decode(
        &self,
        config: u64,
        raw: &[u8],
        ts_ns: Option<u64>,
        cpu: Option<u32>,
        comm: Option<&str>,
    ) -> Option<KernelEvent> {
        let data = self.data.as_ref()?;
        let by_config = u32::try_from(config).ok().and_then(|id| data.format(id));
        let (name, pid, fields) = match by_config {
            Some(format) => {
                let (pid, fields) = format.decode(raw, data.big_endian)?;
                (format.name.clone(), pid, fields)
            }
            None => {
                let (format, pid, fields) = data.decode_record(raw)?;
                (format.name.clone(), pid, fields)
            }
        };
        Some(KernelEvent {
            ts_ns: ts_ns.and_then(|t| i64::try_from(t).ok()).unwrap_or(0),
            cpu: cpu.unwrap_or(0),
            pid,
            comm: comm.map(str::to_owned),
            name,
            fields,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_formats_nothing_decodes() {
        let t = Tracepoints::default();
        assert_eq!(t.format_count(), 0);
        assert_eq!(t.decode(1, &[0; 16], Some(1), Some(0), None), None);
        assert_eq!(t.name_of(1), None);
        assert!(Tracepoints::load(b"not tracing data").is_err());
    }
}
