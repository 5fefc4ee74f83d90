//! What a decoded perf.data says about itself, as flameox reports it: the
//! decoder's counts and notes become typed limitations (each a rule
//! applied to the input, with a count), and the recording's facts — perf
//! version, host, command line, events sampled and how often, samples per
//! event, losses, where frame names came from — the summary's metadata.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::api::LimitationLog;

use super::attrs::{EventAttr, PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE, PERF_TYPE_TRACEPOINT};
use super::kernel_symbols::KernelSymbolStatus;
use super::model::PerfDataSummary;
use super::symbols::SymbolSource;

/// Whether samples of `attr` measure CPU time: `cpu-clock`, `task-clock`,
/// `cycles` or `ref-cycles` (on any core PMU of a hybrid machine).
pub fn is_cpu_time_event(attr: &EventAttr) -> bool {
    match attr.kind {
        PERF_TYPE_SOFTWARE => matches!(attr.config, 0 | 1),
        PERF_TYPE_HARDWARE => matches!(attr.config & 0xffff_ffff, 0 | 9),
        _ => false,
    }
}

/// The limitation code of one of the decoder's notes (`None`: the note
/// repeats a count reported on its own).
fn note_code(note: &str) -> Option<&'static str> {
    if note.starts_with("records end early") || note.starts_with("data section ends at") {
        Some("truncated_input")
    } else if note.ends_with("does not fit; skipped") || note == "further notes left out" {
        None
    } else if note.starts_with("zstd-compressed records") {
        Some("compressed_records_not_read")
    } else if note.starts_with("tracing data") {
        Some("tracing_data_incomplete")
    } else if note.starts_with("feature") {
        Some("feature_section_unreadable")
    } else if note.starts_with("data size 0 in the header") {
        Some("recording_unfinished")
    } else if note.starts_with("too many records between FINISHED_ROUNDs") {
        Some("records_released_out_of_order")
    } else {
        Some("perf_data_note")
    }
}

/// Notes every rule the decoder applied as a typed limitation.
pub fn note_limitations(log: &mut LimitationLog, s: &PerfDataSummary) {
    for note in &s.notes {
        if let Some(code) = note_code(note) {
            log.note(code, || note.clone());
        }
    }
    if !s.complete
        && !s
            .notes
            .iter()
            .any(|n| note_code(n) == Some("truncated_input"))
    {
        log.note("truncated_input", || {
            "the data section was not read to its end; the records before the damage are kept"
                .to_owned()
        });
    }
    log.note_n("malformed_record", s.malformed_records, || {
        "a record's body does not hold what its type says; skipped".to_owned()
    });
    log.note_n("sample_without_event", s.samples_without_event, || {
        "a sample's event id matches no recorded event; skipped".to_owned()
    });
    log.note_n("tracepoint_not_decoded", s.tracepoints_not_decoded, || {
        "a tracepoint sample has no format in the file's tracing data; counted only".to_owned()
    });
    log.note_n(
        "kernel_samples_lost",
        s.lost_records.saturating_add(s.lost_samples),
        || {
            format!(
                "the kernel dropped perf records before perf read them ({} records in LOST, {} samples in LOST_SAMPLES)",
                s.lost_records, s.lost_samples
            )
        },
    );
    log.note_n("sampling_throttled", s.throttles, || {
        "the kernel throttled sampling (too many samples per second); samples are missing while it was".to_owned()
    });
}

fn event_json(s: &PerfDataSummary, index: usize) -> Option<Value> {
    let ev = s.events.get(index)?;
    let samples = s.samples_per_event.get(index).copied().unwrap_or(0);
    let mut v = json!({
        "name": &*ev.name,
        "type": ev.attr.kind,
        "config": ev.attr.config,
        "samples": samples,
        "cpu_time": is_cpu_time_event(&ev.attr),
        "tracepoint": ev.attr.kind == PERF_TYPE_TRACEPOINT,
    });
    let rate = if ev.attr.freq() {
        "sample_freq_hz"
    } else {
        "sample_period"
    };
    if let Some(m) = v.as_object_mut() {
        m.insert(rate.to_owned(), json!(ev.attr.sample_period_or_freq));
    }
    Some(v)
}

fn symbol_source_text(source: &SymbolSource) -> String {
    match source {
        SymbolSource::DebugFile(path) => format!("debug file {}", path.display()),
        SymbolSource::MappedFile => "the mapped file".to_owned(),
        SymbolSource::NotFound => "not found on this machine".to_owned(),
        SymbolSource::BuildIdMismatch => "the file here has another build id: not used".to_owned(),
        SymbolSource::Unreadable(why) => format!("unreadable: {why}"),
    }
}

fn kernel_symbols_text(status: &KernelSymbolStatus) -> String {
    match status {
        KernelSymbolStatus::NotRequested => "not requested".to_owned(),
        KernelSymbolStatus::NoRecordedBuildId => {
            "the file records no kernel build id: not used".to_owned()
        }
        KernelSymbolStatus::RunningBuildIdUnknown => {
            "the running kernel's build id is unknown: not used".to_owned()
        }
        KernelSymbolStatus::BuildIdMismatch { recorded, running } => {
            format!("recorded on another kernel (build id {recorded}, running {running}): not used")
        }
        KernelSymbolStatus::KallsymsUnusable(why) => format!("/proc/kallsyms unusable: {why}"),
        KernelSymbolStatus::Loaded { symbols } => {
            format!("{symbols} symbols from /proc/kallsyms (same kernel build id)")
        }
    }
}

/// The recording's facts for the summary's metadata.
pub fn recording_metadata(s: &PerfDataSummary) -> BTreeMap<String, Value> {
    let m = &s.meta;
    let mut out = BTreeMap::new();
    let mut put = |k: &str, v: Value| {
        if !v.is_null() {
            out.insert(k.to_owned(), v);
        }
    };
    put("perf_version", json!(m.perf_version));
    put("hostname", json!(m.hostname));
    put("os_release", json!(m.os_release));
    put("arch", json!(m.arch));
    put("cpu_desc", json!(m.cpu_desc));
    put("cpus", json!(m.nr_cpus_online));
    put("cpus_available", json!(m.nr_cpus_available));
    if !m.cmdline.is_empty() {
        put("cmdline", json!(m.cmdline.join(" ")));
    }
    let events: Vec<Value> = (0..s.events.len())
        .filter_map(|i| event_json(s, i))
        .collect();
    put("events", json!(events));
    let mut by_event: BTreeMap<String, u64> = BTreeMap::new();
    for (ev, n) in s.events.iter().zip(&s.samples_per_event) {
        *by_event.entry(ev.name.to_string()).or_insert(0) += n;
    }
    put("samples_by_event", json!(by_event));
    put("samples", json!(s.samples));
    put("lost_records", json!(s.lost_records));
    put("lost_samples", json!(s.lost_samples));
    put("throttles", json!(s.throttles));
    put("pipe_mode", json!(s.pipe_mode));
    put(
        "byte_order",
        json!(if s.big_endian { "big" } else { "little" }),
    );
    put("complete", json!(s.complete));
    let records: BTreeMap<String, u64> = s
        .record_counts
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    put("records_by_type", json!(records));
    put("tracepoint_formats", json!(s.tracepoint_formats));
    if let Some((first, last)) = m.sample_time {
        put("sample_time_ns", json!([first, last]));
    }
    let sources: BTreeMap<&str, String> = s
        .symbol_sources
        .iter()
        .map(|(module, source)| (module.as_str(), symbol_source_text(source)))
        .collect();
    put("symbol_sources", json!(sources));
    if let Some(status) = &s.kernel_symbols {
        put("kernel_symbols", json!(kernel_symbols_text(status)));
    }
    if !s.notes.is_empty() {
        put("decoder_notes", json!(s.notes));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_and_counts_become_typed_limitations() {
        let mut s = PerfDataSummary {
            complete: false,
            malformed_records: 2,
            lost_records: 3,
            lost_samples: 4,
            ..PerfDataSummary::default()
        };
        s.note("records end early: perf.data truncated: record at offset 9");
        s.note("record type 9 at offset 1 (8 bytes): sample does not fit; skipped");
        s.note("zstd-compressed records (perf record -z) are not decoded; skipped");
        s.note("feature sections unreadable: cut");
        s.note("something new");
        let mut log = LimitationLog::default();
        note_limitations(&mut log, &s);
        assert_eq!(log.count("truncated_input"), 1);
        assert_eq!(log.count("malformed_record"), 2);
        assert_eq!(log.count("kernel_samples_lost"), 7);
        assert_eq!(log.count("compressed_records_not_read"), 1);
        assert_eq!(log.count("perf_data_note"), 1);
        assert_eq!(log.count("feature_section_unreadable"), 1);
        let cpu = EventAttr {
            kind: PERF_TYPE_SOFTWARE,
            ..EventAttr::default()
        };
        let misses = EventAttr {
            kind: PERF_TYPE_HARDWARE,
            config: 3,
            ..EventAttr::default()
        };
        assert!(is_cpu_time_event(&cpu) && !is_cpu_time_event(&misses));
    }
}
