//! Decoding an `XLine` with its events and their stats, in place.
//!
//! A damaged event (a cut payload, a bad varint inside it) is dropped
//! whole, with a note; the line keeps every event before and after it
//! that decodes. A line cut short keeps the events before the cut. The
//! events' starts are computed once the whole line is read, because a
//! writer may put `timestamp_ns` after the events.

use std::borrow::Cow;

use super::decode::Budget;
use super::fields::{Field, FieldReader, FieldValue};
use super::space::{Event, EventTiming, Line, PsTime, Stat, StatValue};

/// A string field, borrowed when it is UTF-8 (as protobuf requires), else
/// repaired.
pub(super) fn text(bytes: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

/// A field whose wire type is not the one the schema gives it: skipped,
/// noted.
pub(super) fn note_wrong_type(budget: &mut Budget<'_>, message: &str, field: &Field<'_>) {
    budget.notes.push(
        field.offset,
        format!(
            "{message} field {} has an unexpected wire type; skipped",
            field.number
        ),
    );
}

/// Decodes one `XStat`; `None` (noted) when it is damaged.
pub(super) fn decode_stat<'a>(
    bytes: &'a [u8],
    base: usize,
    budget: &mut Budget<'_>,
) -> Option<Stat<'a>> {
    let mut stat = Stat {
        metadata_id: 0,
        metadata: None,
        value: StatValue::Unset,
    };
    for field in FieldReader::new(bytes, base) {
        let field = match field {
            Ok(f) if !f.truncated => f,
            Ok(f) => {
                budget
                    .notes
                    .push(f.offset, "XStat value runs past its end; stat dropped");
                return None;
            }
            Err(damage) => {
                budget.notes.push(
                    damage.offset(),
                    format!("XStat: {}; stat dropped", damage.describe()),
                );
                return None;
            }
        };
        let value = field.value;
        let read = match field.number {
            1 => value.varint().map(|v| stat.metadata_id = v as i64),
            2 => value.double().map(|v| stat.value = StatValue::Double(v)),
            3 => value.varint().map(|v| stat.value = StatValue::Uint64(v)),
            4 => value
                .varint()
                .map(|v| stat.value = StatValue::Int64(v as i64)),
            5 => value
                .len_bytes()
                .map(|b| stat.value = StatValue::Str(text(b))),
            6 => value.len_bytes().map(|b| stat.value = StatValue::Bytes(b)),
            7 => value.varint().map(|v| {
                stat.value = StatValue::Ref {
                    id: v,
                    target: None,
                }
            }),
            _ => Some(()),
        };
        if read.is_none() {
            note_wrong_type(budget, "XStat", &field);
        }
    }
    Some(stat)
}

/// Decodes a repeated `XStat` occurrence into `out` if the budget allows.
pub(super) fn push_stat<'a>(
    field: &Field<'a>,
    out: &mut Vec<Stat<'a>>,
    budget: &mut Budget<'_>,
) -> bool {
    let FieldValue::Len(bytes) = field.value else {
        note_wrong_type(budget, "stat list", field);
        return false;
    };
    if field.truncated {
        budget.notes.push(
            field.offset,
            "XStat cut short by the end of its message; dropped",
        );
        return false;
    }
    if !budget.take_stat() {
        return true;
    }
    match decode_stat(bytes, field.offset, budget) {
        Some(stat) => {
            out.push(stat);
            true
        }
        None => false,
    }
}

/// Decodes one `XEvent`, appending its stats to `stats`; `None` (noted,
/// with any stats it appended removed) when it is damaged.
fn decode_event<'a>(
    bytes: &'a [u8],
    base: usize,
    stats: &mut Vec<Stat<'a>>,
    budget: &mut Budget<'_>,
) -> Option<Event> {
    let first_stat = stats.len();
    let mut event = Event {
        metadata_id: 0,
        metadata: None,
        timing: EventTiming::At {
            offset_ps: 0,
            start: None,
        },
        duration_ps: 0,
        stats_start: 0,
        stats_len: 0,
    };
    let mut damaged = false;
    for field in FieldReader::new(bytes, base) {
        let field = match field {
            Ok(f) => f,
            Err(damage) => {
                let message = format!("XEvent: {}; event dropped", damage.describe());
                budget.notes.push(damage.offset(), message);
                damaged = true;
                break;
            }
        };
        let value = field.value;
        let read = match field.number {
            1 => value.varint().map(|v| event.metadata_id = v as i64),
            2 => value.varint().map(|v| {
                event.timing = EventTiming::At {
                    offset_ps: v as i64,
                    start: None,
                }
            }),
            5 => value.varint().map(|v| {
                event.timing = EventTiming::Aggregated {
                    num_occurrences: v as i64,
                }
            }),
            3 => value.varint().map(|v| event.duration_ps = v as i64),
            4 => {
                if !push_stat(&field, stats, budget) {
                    damaged = true;
                    break;
                }
                Some(())
            }
            _ => Some(()),
        };
        if read.is_none() {
            note_wrong_type(budget, "XEvent", &field);
        }
        if field.truncated {
            budget
                .notes
                .push(field.offset, "XEvent field cut short; event dropped");
            damaged = true;
            break;
        }
    }
    let count = stats.len().saturating_sub(first_stat);
    let range = u32::try_from(first_stat)
        .ok()
        .zip(u32::try_from(count).ok());
    match (damaged, range) {
        (false, Some((start, len))) => {
            event.stats_start = start;
            event.stats_len = len;
            Some(event)
        }
        _ => {
            stats.truncate(first_stat);
            None
        }
    }
}

/// Decodes one `XLine` (its payload starts at absolute offset `base`).
pub(super) fn decode_line<'a>(bytes: &'a [u8], base: usize, budget: &mut Budget<'_>) -> Line<'a> {
    let mut line = Line::default();
    for field in FieldReader::new(bytes, base) {
        let field = match field {
            Ok(f) => f,
            Err(damage) => {
                let message = format!("XLine: {}; rest of the line skipped", damage.describe());
                budget.notes.push(damage.offset(), message);
                break;
            }
        };
        let value = field.value;
        let read = match field.number {
            1 => value.varint().map(|v| line.id = v as i64),
            10 => value.varint().map(|v| line.display_id = v as i64),
            2 => value.len_bytes().map(|b| line.name = text(b)),
            11 => value.len_bytes().map(|b| line.display_name = text(b)),
            3 => value.varint().map(|v| line.timestamp_ns = v as i64),
            9 => value.varint().map(|v| line.duration_ps = v as i64),
            4 => value.len_bytes().map(|b| {
                if field.truncated {
                    budget.notes.push(
                        field.offset,
                        "XEvent cut short by the end of its line; dropped",
                    );
                } else if budget.take_event() {
                    let event = decode_event(b, field.offset, &mut line.event_stats, budget);
                    line.events.extend(event);
                }
            }),
            _ => Some(()),
        };
        if read.is_none() {
            note_wrong_type(budget, "XLine", &field);
        }
    }
    let timestamp_ns = line.timestamp_ns;
    for event in &mut line.events {
        if let EventTiming::At { offset_ps, start } = &mut event.timing {
            *start = PsTime::new(timestamp_ns, *offset_ps);
            if start.is_none() {
                budget.times_out_of_range = budget.times_out_of_range.saturating_add(1);
            }
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::super::decode::{Budget, Limits};
    use super::super::proto::{XEvent, XEventData, XLine, XStat, XStatValue};
    use super::super::space::Notes;
    use super::*;
    use prost::Message;

    fn stat(id: i64, value: XStatValue) -> XStat {
        XStat {
            metadata_id: id,
            value: Some(value),
        }
    }

    fn sample_line() -> XLine {
        XLine {
            id: 7,
            display_id: 3,
            name: "Stream #2".into(),
            display_name: "s2".into(),
            timestamp_ns: 100,
            duration_ps: 9,
            events: vec![
                XEvent {
                    metadata_id: 1,
                    data: Some(XEventData::OffsetPs(2_500)),
                    duration_ps: 1_000,
                    stats: vec![
                        stat(1, XStatValue::Uint64Value(42)),
                        stat(2, XStatValue::StrValue("x".into())),
                    ],
                },
                XEvent {
                    metadata_id: 2,
                    data: Some(XEventData::NumOccurrences(5)),
                    duration_ps: 0,
                    stats: vec![stat(3, XStatValue::RefValue(1))],
                },
                XEvent {
                    metadata_id: 3,
                    data: None,
                    duration_ps: 1,
                    stats: vec![
                        stat(4, XStatValue::DoubleValue(0.5)),
                        stat(5, XStatValue::Int64Value(-3)),
                        stat(6, XStatValue::BytesValue(vec![1, 2])),
                    ],
                },
            ],
        }
    }

    #[test]
    fn a_line_decodes_with_starts_in_picoseconds() {
        let bytes = sample_line().encode_to_vec();
        let mut notes = Notes::default();
        let mut budget = Budget::new(&Limits::default(), &mut notes);
        let line = decode_line(&bytes, 0, &mut budget);
        assert_eq!((line.id, line.display_id, line.timestamp_ns), (7, 3, 100));
        assert_eq!((&*line.name, &*line.display_name), ("Stream #2", "s2"));
        assert_eq!(line.events.len(), 3);
        assert_eq!(
            line.events[0].start(),
            Some(PsTime {
                ns: 102,
                sub_ns_ps: 500
            })
        );
        assert_eq!(
            line.events[0].end(),
            Some(PsTime {
                ns: 103,
                sub_ns_ps: 500
            })
        );
        assert_eq!(
            line.events[1].timing,
            EventTiming::Aggregated { num_occurrences: 5 }
        );
        // No oneof field written: offset 0, as protobuf readers default it.
        assert_eq!(
            line.events[2].start(),
            Some(PsTime {
                ns: 100,
                sub_ns_ps: 0
            })
        );
        let values: Vec<&StatValue<'_>> = line.event_stats.iter().map(|s| &s.value).collect();
        assert_eq!(values.len(), 6);
        assert_eq!(
            line.stats_of(&line.events[0])[0].value,
            StatValue::Uint64(42)
        );
        assert_eq!(
            line.stats_of(&line.events[2])[1].value,
            StatValue::Int64(-3)
        );
        assert_eq!(
            line.stats_of(&line.events[2])[2].value,
            StatValue::Bytes(&[1, 2])
        );
        assert!(matches!(
            line.stats_of(&line.events[1])[0].value,
            StatValue::Ref { id: 1, .. }
        ));
        assert!(notes.is_empty());
    }

    #[test]
    fn a_damaged_event_is_dropped_with_its_stats_and_the_line_goes_on() {
        let mut line = sample_line();
        // A stat whose string field has an invalid length inside a valid event.
        let good = line.events.remove(0).encode_to_vec();
        let bad_event = [0x08, 0x01, 0x22, 0x03, 0x2a, 0x05, b'x'];
        let mut bytes = Vec::new();
        for payload in [&good[..], &bad_event[..]] {
            bytes.push(0x22);
            crate::varint::put_u64(&mut bytes, payload.len() as u64);
            bytes.extend_from_slice(payload);
        }
        bytes.extend(line.encode_to_vec());
        let mut notes = Notes::default();
        let mut budget = Budget::new(&Limits::default(), &mut notes);
        let decoded = decode_line(&bytes, 0, &mut budget);
        assert_eq!(decoded.events.len(), 3);
        assert_eq!(decoded.event_stats.len(), 2 + 1 + 3);
        assert_eq!(notes.kept.len(), 1, "{notes:?}");
    }

    #[test]
    fn budgets_cap_events_and_stats() {
        let bytes = sample_line().encode_to_vec();
        let mut notes = Notes::default();
        let limits = Limits {
            max_events: 2,
            max_stats: 1,
        };
        let mut budget = Budget::new(&limits, &mut notes);
        let line = decode_line(&bytes, 0, &mut budget);
        let (events, stats) = (budget.events_skipped, budget.stats_skipped);
        assert_eq!((line.events.len(), events), (2, 1));
        assert_eq!((line.event_stats.len(), stats), (1, 2));
    }

    #[test]
    fn offsets_out_of_range_leave_the_start_unknown() {
        let line = XLine {
            timestamp_ns: i64::MAX,
            events: vec![XEvent {
                data: Some(XEventData::OffsetPs(i64::MAX)),
                ..Default::default()
            }],
            ..Default::default()
        };
        let bytes = line.encode_to_vec();
        let mut notes = Notes::default();
        let mut budget = Budget::new(&Limits::default(), &mut notes);
        let decoded = decode_line(&bytes, 0, &mut budget);
        assert_eq!(decoded.events[0].start(), None);
        assert_eq!(budget.times_out_of_range, 1);
    }
}
