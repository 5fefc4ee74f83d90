//! Track events that carry only a `legacy_event`: Chrome's JSON-era phases,
//! which Chromium's Perfetto backend still writes for trace macros without
//! a typed equivalent (310 of them in a headless page load). They read as
//! the Chrome JSON extractor reads the same phases: `B`/`E` slices, `X`
//! complete slices with their duration, `I`/`i`/`R` instants, and `C`
//! counters from the numeric debug annotations (one series per annotation,
//! named `event` or `event.annotation` when there are several, on a counter
//! track of the process). `pid_override`/`tid_override` move an event to
//! that thread, as in Trace Processor. Async (`b`/`e`/`n`, `S`/`T`/`F`),
//! flow (`s`/`t`/`f`) and metadata (`M`) phases are counted
//! (`legacy_phase_skipped`) and skipped.

use super::decoder::{Decoder, SlotKey};
use super::proto::{DebugAnnotation, LegacyEvent};
use super::track_event::{Shape, event_name};
use super::track_event_view::TrackEventView;

impl Decoder {
    pub(super) fn legacy_event(
        &mut self,
        sequence_id: u32,
        uuid: Option<u64>,
        sequence_thread: Option<(i32, i32)>,
        ts: i64,
        e: &TrackEventView<'_>,
    ) {
        let Some(legacy) = e.legacy_event.as_ref() else {
            return;
        };
        let Some(slot) = self.legacy_slot(uuid, sequence_thread, legacy) else {
            self.p.log.note("event_without_track", || {
                "a track event names no track and its sequence no thread; skipped".to_string()
            });
            return;
        };
        let phase = legacy.phase.and_then(|p| u8::try_from(p).ok()).unwrap_or(0);
        match phase {
            b'B' => self.slice_or_instant(sequence_id, slot, ts, e, Shape::Begin),
            b'E' => self.slice_end(slot, ts),
            b'X' => {
                let dur = legacy
                    .duration_us
                    .and_then(|us| us.checked_mul(1000))
                    .filter(|d| *d >= 0);
                match dur {
                    Some(dur) => {
                        self.slice_or_instant(sequence_id, slot, ts, e, Shape::Complete(dur))
                    }
                    None => self.p.log.note("complete_without_duration", || {
                        "a legacy complete event (`X`) has no valid duration; skipped".to_string()
                    }),
                }
            }
            b'I' | b'i' | b'R' => self.slice_or_instant(sequence_id, slot, ts, e, Shape::Instant),
            b'C' => self.legacy_counter(sequence_id, slot, ts, e),
            other => {
                let phase = char::from(other);
                self.p.log.note("legacy_phase_skipped", || {
                    format!(
                        "a legacy track event of phase `{}` (async, flow or metadata) was \
                         skipped",
                        phase.escape_default()
                    )
                });
            }
        }
    }

    /// The event's track: the thread named by the overrides (completed by
    /// the sequence's thread), else the event's own track.
    fn legacy_slot(
        &mut self,
        uuid: Option<u64>,
        sequence_thread: Option<(i32, i32)>,
        legacy: &LegacyEvent,
    ) -> Option<u32> {
        let overridden = match (legacy.pid_override, legacy.tid_override, sequence_thread) {
            (Some(pid), Some(tid), _) => Some((pid, tid)),
            (Some(pid), None, Some((_, tid))) => Some((pid, tid)),
            (None, Some(tid), Some((pid, _))) => Some((pid, tid)),
            _ => None,
        };
        let key = match (overridden, uuid, sequence_thread) {
            (Some((pid, tid)), _, _) => SlotKey::Thread(pid, tid),
            (None, Some(u), thread) if u != 0 || thread.is_none() => SlotKey::Uuid(u),
            (None, _, Some((pid, tid))) => SlotKey::Thread(pid, tid),
            _ => return None,
        };
        Some(self.slot(key))
    }

    /// The process of a track (0 when it has none).
    fn pid_of(&self, slot: u32) -> i32 {
        match self.slots.get(slot as usize) {
            Some(SlotKey::Thread(pid, _)) => *pid,
            Some(SlotKey::Uuid(u)) => self.descriptors.get(u).map_or(0, |d| {
                d.thread
                    .as_ref()
                    .and_then(|t| t.pid)
                    .or_else(|| d.process.as_ref().and_then(|p| p.pid))
                    .unwrap_or(0)
            }),
            _ => 0,
        }
    }

    fn legacy_counter(&mut self, sequence_id: u32, slot: u32, ts: i64, e: &TrackEventView<'_>) {
        let pid = self.pid_of(slot);
        let Some(seq) = self.sequences.get_mut(&sequence_id) else {
            return;
        };
        let (name, _) = event_name(seq, &mut self.p.strings, e);
        let name = self.p.strings.get(name).to_owned();
        let values: Vec<(String, f64)> = e
            .debug_annotations
            .iter()
            .filter_map(|a| Some((annotation_name(seq, a), numeric(a)?)))
            .collect();
        if values.len() < e.debug_annotations.len() || values.is_empty() {
            self.p.log.note("non_numeric_counter", || {
                format!(
                    "legacy counter `{name}` has no value or one that is not a number; those \
                     are skipped"
                )
            });
        }
        let single = values.len() == 1;
        for (key, value) in values {
            let series = if single {
                self.p.strings.intern(&name)
            } else {
                self.p.strings.intern(&format!("{name}.{key}"))
            };
            let counter = self.slot(SlotKey::Counter(pid, series));
            self.counter_row(counter, series, ts, value, None);
        }
    }
}

fn annotation_name(seq: &super::sequence::Sequence, a: &DebugAnnotation) -> String {
    match (&a.name, a.name_iid) {
        (Some(n), _) => String::from_utf8_lossy(n).into_owned(),
        (None, Some(iid)) => seq
            .annotation_names
            .get(&iid)
            .cloned()
            .unwrap_or_else(|| super::annotations::UNKNOWN.to_owned()),
        (None, None) => String::new(),
    }
}

fn numeric(a: &DebugAnnotation) -> Option<f64> {
    a.int_value
        .map(|v| v as f64)
        .or(a.uint_value.map(|v| v as f64))
        .or(a.double_value)
        .filter(|v| v.is_finite())
}
