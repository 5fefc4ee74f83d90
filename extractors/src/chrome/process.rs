//! Turning one parsed event into store rows, track updates and counters.
//!
//! This is where the Chrome phases are interpreted: `X`, `B`/`E` matching
//! per thread, instants, counters, metadata names, async `b`/`e`/`n`, flow
//! endpoints and Kineto `[memory]` instants. Every input that is handled by
//! a rule instead of read as written is counted in the limitation log.

use crate::FastHashMap;

use super::event::{RawEvent, args_pairs, raw_f64, raw_i64, raw_micros, raw_str, scalar_text};
use super::event_index::{EventIndex, Indexer};
use super::time::TimeError;
use crate::api::ARGS_TRUNCATED_MARKER;
use crate::trace_events::args_arena::bound_args;
use crate::trace_events::builder::TraceBuilder;
use crate::trace_events::device_columns::DeviceFields;
use crate::trace_events::ids::{NO_ID, NONE};
use crate::trace_events::interner::Interner;
use crate::trace_events::kinds::{Classified, classify};
use crate::trace_events::store::{CounterRow, FlowPoint, NewEvent};
use crate::trace_events::tracks::Ident;

/// Categories only the PyTorch profiler writes.
const KINETO_CATEGORIES: [&str; 8] = [
    "cpu_op",
    "cuda_runtime",
    "python_function",
    "gpu_memcpy",
    "Operator",
    "Runtime",
    "ac2g",
    "cuda_driver",
];

/// Chrome's reading state around the shared [`TraceBuilder`].
pub struct Processor {
    pub trace: TraceBuilder,
    max_args_bytes: usize,
    pub kineto_seen: bool,
    pub pyspy_seen: bool,
    /// Reused buffer for composed keys (no allocation per flow event).
    key_text: String,
    /// Flow keys of integer ids: `(category, id)` → key (see [`Self::flow_key`]).
    flow_keys: FastHashMap<(u32, i64), u32>,
    /// For events not indexed by the scanner thread (see [`Self::handle`]).
    indexer: Indexer,
}

/// Flow keys with this bit set come from [`Processor::flow_key`]'s integer
/// map; the others are interned texts (fewer than 2^31 of them).
const NUMERIC_FLOW_KEY: u32 = 1 << 31;

/// `text` as an integer when it is the canonical decimal form of one (so
/// the integer stands for exactly that text: no `+`, leading zeros, `-0`).
fn canonical_int(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && text != "-0";
    canonical.then(|| text.parse().ok()).flatten()
}

fn ident(v: Option<&str>, strings: &mut Interner) -> Ident {
    let Some(v) = v else { return Ident::None };
    if let Some(i) = raw_i64(v) {
        return Ident::Int(i);
    }
    match scalar_text(v) {
        Some(text) => Ident::Label(strings.intern(&text)),
        None => Ident::None,
    }
}

impl Processor {
    pub fn new(max_args_bytes: usize) -> Self {
        Processor {
            trace: TraceBuilder::default(),
            max_args_bytes,
            kineto_seen: false,
            pyspy_seen: false,
            key_text: String::new(),
            flow_keys: FastHashMap::default(),
            indexer: Indexer::default(),
        }
    }

    pub fn malformed(&mut self, index: u64, why: &str) {
        self.trace.log.note("malformed_event", || {
            format!("event #{index} was skipped: {why}")
        });
    }

    /// Handles the event at array position `index` whose text is `text`
    /// (indexing it here; the scanner thread indexes the usual events).
    pub fn handle(&mut self, index: u64, text: &str) {
        let mut spans = EventIndex::default();
        match self.indexer.index(text.as_bytes(), &mut spans) {
            Ok(()) => self.handle_indexed(index, text, &spans),
            Err(e) => self.malformed(index, &e.to_string()),
        }
    }

    /// Handles an event the indexer accepted; `spans` locate its fields in `text`.
    pub fn handle_indexed(&mut self, index: u64, text: &str, spans: &EventIndex) {
        let raw = RawEvent::from_index(text, spans);
        if raw.duplicate_keys > 0 {
            self.trace
                .log
                .note_n("duplicate_keys", raw.duplicate_keys.into(), || {
                    format!("event #{index} repeats a key; the last value was used")
                });
        }
        let Some(ph) = raw.ph.and_then(raw_str) else {
            self.trace.log.note("missing_phase", || {
                format!("event #{index} has no `ph` and was skipped")
            });
            return;
        };
        let name = raw.name.map_or(std::borrow::Cow::Borrowed(""), |n| {
            raw_str(n).unwrap_or(std::borrow::Cow::Borrowed(n))
        });
        let cat = raw.cat.and_then(raw_str);
        if let Some(c) = cat.as_deref() {
            if !self.kineto_seen && KINETO_CATEGORIES.contains(&c) {
                self.kineto_seen = true;
            }
            if c == "py-spy" {
                self.pyspy_seen = true;
            }
        }
        let pid = ident(raw.pid, &mut self.trace.strings);
        match ph.as_ref() {
            "M" => self.metadata(&raw, &name, pid),
            "X" | "B" | "E" | "i" | "I" | "R" | "n" | "b" | "e" | "S" | "T" | "F" | "p" | "C"
            | "s" | "t" | "f" => {
                let ts = match raw.ts.map(raw_micros) {
                    Some(Ok(ts)) => ts,
                    Some(Err(TimeError::Overflow)) => {
                        self.trace.log.note("timestamp_overflow", || {
                            format!("event #{index} has a `ts` that does not fit in i64 ns")
                        });
                        return;
                    }
                    Some(Err(TimeError::Invalid)) => {
                        return self.malformed(index, "`ts` is not a number");
                    }
                    None => return self.malformed(index, "no `ts`"),
                };
                let ph = ph.as_bytes()[0];
                match ph {
                    b'C' => self.counter(&raw, &name, pid, ts, index),
                    b's' | b't' | b'f' => self.flow(&raw, cat.as_deref(), pid, ts, ph),
                    _ => self.timed(&raw, ph, &name, cat.as_deref(), pid, ts, index),
                }
            }
            "P" => self.trace.log.note("profile_chunks_not_extracted", || {
                "sampled CPU profile events (`P`) are counted but not extracted".to_string()
            }),
            other => {
                let other = other.to_string();
                self.trace.log.note("unknown_phase", || {
                    format!("event #{index} has phase `{other}`, which is not extracted")
                });
            }
        }
    }

    fn metadata(&mut self, raw: &RawEvent, name: &str, pid: Ident) {
        let Some(value) = raw
            .args_view
            .name
            .and_then(|v| scalar_text(v).map(|s| s.into_owned()))
        else {
            return;
        };
        let id = self.trace.strings.intern(&value);
        match name {
            "process_name" => {
                self.trace.tracks.process_names.insert(pid, id);
            }
            "thread_name" => {
                let tid = ident(raw.tid, &mut self.trace.strings);
                self.trace.tracks.thread_names.insert((pid, tid), id);
            }
            _ => {}
        }
    }

    fn counter(&mut self, raw: &RawEvent, name: &str, pid: Ident, ts: i64, index: u64) {
        let Some(pairs) = raw.args.and_then(args_pairs) else {
            return self.malformed(index, "counter without an `args` object");
        };
        let single = pairs.len() == 1;
        for (key, value) in pairs {
            let Some(v) = raw_f64(value) else {
                self.trace.log.note("non_numeric_counter", || {
                    format!("counter `{name}` key `{key}` is not a number (event #{index})")
                });
                continue;
            };
            let series = if single {
                self.trace.strings.intern(name)
            } else {
                self.trace.strings.intern(&format!("{name}.{key}"))
            };
            let track = self.trace.tracks.counter_track(pid, series);
            self.trace.counters.push(CounterRow {
                track,
                ts,
                value: v,
                name: series,
                unit: NO_ID,
            });
        }
    }

    fn flow(&mut self, raw: &RawEvent, cat: Option<&str>, pid: Ident, ts: i64, ph: u8) {
        let Some(id) = raw.id.and_then(scalar_text) else {
            return;
        };
        let key = self.flow_key(cat.unwrap_or(""), &id);
        let enclosing = ph == b's' || raw.bp.and_then(raw_str).is_some_and(|b| b == "e");
        let tid = ident(raw.tid, &mut self.trace.strings);
        self.trace.flows.push(FlowPoint {
            key,
            numeric_id: raw.id.and_then(raw_i64).unwrap_or(NONE),
            phase: ph,
            pid,
            tid,
            ts,
            enclosing,
        });
    }

    /// The key of flow `(cat, id)`: one per distinct pair, as if the text
    /// `cat \u{1} id` were interned. Integer ids (Kineto writes one per
    /// launch) are keyed without a string each.
    fn flow_key(&mut self, cat: &str, id: &str) -> u32 {
        if let Some(number) = canonical_int(id)
            && self.flow_keys.len() < NUMERIC_FLOW_KEY as usize
        {
            let cat = self.trace.strings.intern(cat);
            let next = NUMERIC_FLOW_KEY | self.flow_keys.len() as u32;
            return *self.flow_keys.entry((cat, number)).or_insert(next);
        }
        self.key_text.clear();
        self.key_text.push_str(cat);
        self.key_text.push('\u{1}');
        self.key_text.push_str(id);
        self.trace.strings.intern(&self.key_text)
    }

    fn async_key(&mut self, raw: &RawEvent) -> u32 {
        if let Some(id) = raw.id.and_then(scalar_text) {
            self.key_text.clear();
            self.key_text.push_str("id:");
            self.key_text.push_str(&id);
            return self.trace.strings.intern(&self.key_text);
        }
        let pairs = raw.id2.and_then(args_pairs).unwrap_or_default();
        if let Some((scope, v)) = pairs.first() {
            let text = scalar_text(v).map(|t| t.into_owned()).unwrap_or_default();
            return self.trace.strings.intern(&format!("{scope}:{text}"));
        }
        self.trace.strings.intern("id:")
    }

    #[allow(clippy::too_many_arguments)]
    fn timed(
        &mut self,
        raw: &RawEvent,
        ph: u8,
        name: &str,
        cat: Option<&str>,
        pid: Ident,
        ts: i64,
        index: u64,
    ) {
        let name_id = self.trace.strings.intern(name);
        // Ends: close an open slice, no new row.
        if matches!(ph, b'E' | b'e' | b'F') {
            let open = if ph == b'E' {
                let tid = ident(raw.tid, &mut self.trace.strings);
                let track = self.trace.tracks.thread(pid, tid);
                self.trace.open_slices.get_mut(&track).and_then(Vec::pop)
            } else {
                let cat_id = self.trace.strings.intern(cat.unwrap_or(""));
                let key = self.async_key(raw);
                let pid = if self.trace.strings.get(key).starts_with("global:") {
                    Ident::None
                } else {
                    pid
                };
                let track = self.trace.tracks.async_track(pid, cat_id, key, name_id);
                self.trace
                    .open_async
                    .get_mut(&(track, name_id))
                    .and_then(Vec::pop)
            };
            let Some(begin) = open else {
                self.trace.log.note("unmatched_end", || {
                    format!("end event #{index} (`{name}`) has no open begin; dropped")
                });
                return;
            };
            let mut dur = ts.saturating_sub(self.trace.store.ts[begin]);
            if dur < 0 {
                self.trace.log.note("negative_duration", || {
                    format!("event #{index} ends before it begins; duration clamped to 0")
                });
                dur = 0;
            }
            self.trace.store.dur[begin] = dur;
            return;
        }
        let instant = matches!(ph, b'i' | b'I' | b'R' | b'n' | b'T' | b'p');
        let class: Classified = classify(cat, name, instant);
        let args = &raw.args_view;
        if args.duplicate_keys > 0 {
            self.trace
                .log
                .note_n("duplicate_keys", args.duplicate_keys.into(), || {
                    format!("event #{index} args repeat a key; the last value was used")
                });
        }
        let get = |v: Option<&str>| v.and_then(raw_i64).unwrap_or(NONE);
        let mut device = get(args.device);
        let is_async = matches!(ph, b'b' | b'n' | b'S' | b'T' | b'p');
        let track = if is_async {
            let cat_id = self.trace.strings.intern(cat.unwrap_or(""));
            let key = self.async_key(raw);
            let pid = if self.trace.strings.get(key).starts_with("global:") {
                Ident::None
            } else {
                pid
            };
            self.trace.tracks.async_track(pid, cat_id, key, name_id)
        } else {
            let tid = ident(raw.tid, &mut self.trace.strings);
            self.trace.tracks.thread(pid, tid)
        };
        let stream = get(args.stream);
        if class.on_device && !is_async {
            self.trace.tracks.mark_gpu(track, device, stream);
        }
        let mut dur = 0;
        if ph == b'X' {
            dur = match raw.dur.map(raw_micros) {
                Some(Ok(d)) => d,
                Some(Err(TimeError::Overflow)) => {
                    self.trace.log.note("timestamp_overflow", || {
                        format!("event #{index} has a `dur` that does not fit in i64 ns")
                    });
                    return;
                }
                Some(Err(TimeError::Invalid)) | None => {
                    self.trace.log.note("missing_duration", || {
                        format!("complete event #{index} (`{name}`) has no usable `dur`; kept with duration 0")
                    });
                    0
                }
            };
            if dur < 0 {
                self.trace.log.note("negative_duration", || {
                    format!("event #{index} (`{name}`) has a negative `dur`; clamped to 0")
                });
                dur = 0;
            }
            if ts.checked_add(dur).is_none() {
                self.trace.log.note("timestamp_overflow", || {
                    format!("event #{index} ends past the i64 ns range")
                });
                return;
            }
        } else if matches!(ph, b'B' | b'b' | b'S') {
            dur = -1;
        }
        let bytes = get(args.bytes);
        if instant && name == "[memory]" {
            let dev = get(args.device_id);
            if dev >= 0 {
                device = dev;
            }
            self.memory(pid, device, ts, args);
        }
        let args_text = raw
            .args
            .filter(|t| *t != "{}")
            .map(|t| bound_args(t, self.max_args_bytes, ARGS_TRUNCATED_MARKER));
        let cat_id = cat.map_or(NO_ID, |c| self.trace.strings.intern(c));
        let row = self.trace.store.push(
            NewEvent {
                event_id: index,
                ts,
                dur,
                name: name_id,
                cat: cat_id,
                kind: class.kind,
                track,
                device_activity: class.device_activity,
                fields: DeviceFields {
                    device,
                    context: get(args.context),
                    stream,
                    correlation: get(args.correlation),
                    external: get(args.external_id),
                    graph_id: get(args.graph_id),
                    graph_node_id: get(args.graph_node_id),
                    bytes,
                },
            },
            instant,
            args_text.as_deref(),
        );
        if dur == -1 {
            if ph == b'B' {
                self.trace.open_slices.entry(track).or_default().push(row);
            } else {
                self.trace
                    .open_async
                    .entry((track, name_id))
                    .or_default()
                    .push(row);
            }
        }
    }

    fn memory(&mut self, pid: Ident, device: i64, ts: i64, args: &super::event::ArgsView) {
        let series = [
            ("Total Allocated", args.total_allocated),
            ("Total Reserved", args.total_reserved),
        ];
        if series.iter().all(|(_, v)| v.is_none()) {
            return;
        }
        let track = self
            .trace
            .tracks
            .memory_track(pid, device, &mut self.trace.strings);
        for (label, value) in series {
            if let Some(v) = value.and_then(raw_f64) {
                let name = self.trace.strings.intern(label);
                self.trace.counters.push(CounterRow {
                    track,
                    ts,
                    value: v,
                    name,
                    unit: self.trace.bytes_unit,
                });
            }
        }
    }

    /// Frees what only reading needed: the key of every integer flow id
    /// (millions on a large Kineto trace), before nesting and output.
    pub fn finish_reading(&mut self) {
        self.flow_keys = FastHashMap::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_canonical_integers_skip_the_interner() {
        for (text, want) in [
            ("0", Some(0)),
            ("12", Some(12)),
            ("-7", Some(-7)),
            ("9223372036854775807", Some(i64::MAX)),
            ("9223372036854775808", None),
            ("-0", None),
            ("007", None),
            ("+1", None),
            ("1.0", None),
            ("1e3", None),
            ("", None),
            ("-", None),
            ("0x1f", None),
        ] {
            assert_eq!(canonical_int(text), want, "{text:?}");
        }
    }

    #[test]
    fn a_flow_key_names_exactly_one_category_and_id_text() {
        let mut p = Processor::new(4096);
        let a = p.flow_key("ac2g", "12");
        assert_eq!(p.flow_key("ac2g", "12"), a);
        assert_ne!(p.flow_key("ac2g", "13"), a);
        assert_ne!(p.flow_key("fwdbwd", "12"), a);
        // Texts that are not the canonical integer keep their own keys.
        let text = p.flow_key("ac2g", "12.0");
        assert_ne!(text, a);
        assert_eq!(p.flow_key("ac2g", "12.0"), text);
        assert_ne!(p.flow_key("ac2g", "012"), a);
        assert_ne!(p.flow_key("ac2g", "012"), text);
    }
}
