//! The bounded writer against the full one: once both are cut to the args
//! bound (`bound_args`), the bytes are the same, and the work stays small
//! however long the interned strings an event names.

use std::time::{Duration, Instant};

use super::*;
use crate::api::ARGS_TRUNCATED_MARKER;
use crate::perfetto::proto::TrackEvent;
use crate::perfetto::track_event_view::EventFields;
use crate::trace_events::args_arena::bound_args;
use prost::Message;

/// Calls `f` with `e` read in place from its bytes, as the decoder reads it.
fn with_view<T>(e: &TrackEvent, f: impl FnOnce(&TrackEventView<'_>) -> T) -> T {
    let bytes = e.encode_to_vec();
    let mut fields = EventFields::default();
    let Ok(view) = TrackEventView::decode(&bytes, &mut fields) else {
        panic!("an encoded event reads back");
    };
    f(&view)
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// Texts that share long starts, escape, hold multi-byte characters near
/// every cut and one invalid byte.
fn texts() -> Vec<Vec<u8>> {
    let long = "k".repeat(300);
    vec![
        b"a".to_vec(),
        b"b".to_vec(),
        b"".to_vec(),
        b"source".to_vec(),
        b"flow_ids".to_vec(),
        long.clone().into_bytes(),
        format!("{long}x").into_bytes(),
        format!("{long}y").into_bytes(),
        "é".repeat(200).into_bytes(),
        "tab\t\"quote\"\n\u{1}🔥".repeat(40).into_bytes(),
        b"caf\xc3\xa9 \xff end".to_vec(),
        [&b"x"[..], &[0xf0, 0x9f, 0x94][..]].concat().repeat(50),
    ]
}

fn sequence(texts: &[Vec<u8>]) -> Sequence {
    let mut seq = Sequence::default();
    for (i, t) in texts.iter().enumerate() {
        let text = String::from_utf8_lossy(t).into_owned();
        seq.annotation_names.insert(i as u64 + 1, text.clone());
        seq.annotation_strings.insert(i as u64 + 1, text);
    }
    seq.source_locations.insert(
        1,
        SourceLocation {
            iid: Some(1),
            file_name: Some("ñ".repeat(500).into_bytes()),
            function_name: Some(b"run\xff".to_vec()),
            line_number: Some(7),
        },
    );
    seq
}

fn nested_value(rng: &mut Rng, texts: &[Vec<u8>], depth: usize) -> NestedValue {
    match rng.below(if depth > 3 { 3 } else { 6 }) {
        0 => NestedValue {
            int_value: Some(rng.next() as i64),
            ..Default::default()
        },
        1 => NestedValue {
            string_value: Some(rng.pick(texts).clone()),
            ..Default::default()
        },
        2 => NestedValue::default(),
        3 => NestedValue {
            double_value: Some(*rng.pick(&[0.5, f64::NAN, 1e300])),
            ..Default::default()
        },
        4 => {
            let n = rng.below(6) as usize;
            NestedValue {
                nested_type: Some(1),
                dict_keys: (0..n).map(|_| rng.pick(texts).clone()).collect(),
                dict_values: (0..n)
                    .map(|_| nested_value(rng, texts, depth + 1))
                    .collect(),
                ..Default::default()
            }
        }
        _ => NestedValue {
            nested_type: Some(2),
            array_values: (0..rng.below(5))
                .map(|_| nested_value(rng, texts, depth + 1))
                .collect(),
            ..Default::default()
        },
    }
}

fn annotation(rng: &mut Rng, texts: &[Vec<u8>], depth: usize) -> DebugAnnotation {
    let ids = texts.len() as u64 + 2;
    let mut a = DebugAnnotation::default();
    // Names: inline, interned, or an id never defined.
    match rng.below(3) {
        0 => a.name = Some(rng.pick(texts).clone()),
        _ => a.name_iid = Some(rng.below(ids) + 1),
    }
    match rng.below(if depth > 3 { 7 } else { 10 }) {
        0 => a.uint_value = Some(rng.next()),
        1 => a.bool_value = Some(rng.below(2) == 0),
        2 => a.string_value = Some(rng.pick(texts).clone()),
        3 | 4 => a.string_value_iid = Some(rng.below(ids) + 1),
        5 => a.legacy_json_value = Some(br#"{"z":[1,"\u00e9"],"a":null}"#.to_vec()),
        6 => a.pointer_value = Some(rng.next()),
        7 => a.nested_value = Some(nested_value(rng, texts, depth)),
        8 => {
            a.dict_entries = (0..rng.below(8))
                .map(|_| annotation(rng, texts, depth + 1))
                .collect()
        }
        _ => {
            a.array_values = (0..rng.below(8))
                .map(|_| annotation(rng, texts, depth + 1))
                .collect()
        }
    }
    a
}

fn event(rng: &mut Rng, texts: &[Vec<u8>]) -> TrackEvent {
    // Up to a few hundred members, so objects compact more than once.
    let n = *rng.pick(&[0u64, 1, 3, 10, 70, 300]);
    let mut e = TrackEvent {
        debug_annotations: (0..rng.below(n + 1))
            .map(|_| annotation(rng, texts, 0))
            .collect(),
        ..Default::default()
    };
    match rng.below(4) {
        0 => e.source_location_iid = Some(1),
        1 => e.source_location_iid = Some(2),
        _ => {}
    }
    if rng.below(3) == 0 {
        e.flow_ids = (0..rng.below(300)).map(|_| rng.next()).collect();
        e.terminating_flow_ids_old = vec![1, 2];
    }
    e
}

#[test]
fn bounded_args_cut_to_the_bytes_the_full_args_cut_to() {
    let texts = texts();
    let seq = sequence(&texts);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut full = ArgsScratch::default();
    let mut bounded = ArgsScratch::default();
    for round in 0..3000 {
        let e = event(&mut rng, &texts);
        let max = *rng.pick(&[0usize, 1, 5, 14, 15, 16, 40, 200, 700, 4096, 100_000]);
        let (mut m1, mut m2) = (0, 0);
        let w1 = with_view(&e, |e| event_args(&seq, e, &mut full, &mut m1));
        let w2 = with_view(&e, |e| {
            event_args_bounded(&seq, e, &mut bounded, &mut m2, max)
        });
        assert_eq!((w1, m1), (w2, m2), "round {round}");
        if !w1 {
            continue;
        }
        let expected = bound_args(full.text(), max, ARGS_TRUNCATED_MARKER);
        let got = bound_args(bounded.text(), max, ARGS_TRUNCATED_MARKER);
        assert_eq!(got, expected, "round {round}, max {max}");
        if full.text().len() <= max {
            assert_eq!(bounded.text(), full.text(), "round {round}: nothing is cut");
        }
    }
}

#[test]
fn one_long_interned_string_named_many_times_costs_the_bound_not_its_length() {
    let mut seq = Sequence::default();
    let long = "n".repeat(1 << 20);
    seq.annotation_names.insert(1, long.clone());
    seq.annotation_strings.insert(1, long.clone());
    seq.source_locations.insert(
        1,
        SourceLocation {
            iid: Some(1),
            file_name: Some(long.clone().into_bytes()),
            function_name: Some(long.into_bytes()),
            line_number: None,
        },
    );
    let same = DebugAnnotation {
        name_iid: Some(1),
        string_value_iid: Some(1),
        ..Default::default()
    };
    let mut distinct = Vec::new();
    for i in 0..20_000u64 {
        distinct.push(DebugAnnotation {
            name: Some(format!("k{i:05}").into_bytes()),
            string_value_iid: Some(1),
            ..Default::default()
        });
    }
    let events = [
        // One long key and value, named 100 000 times.
        TrackEvent {
            debug_annotations: vec![same.clone(); 100_000],
            source_location_iid: Some(1),
            ..Default::default()
        },
        // Many short keys, each with the long value.
        TrackEvent {
            debug_annotations: distinct,
            ..Default::default()
        },
        // The long value in a long array, nested.
        TrackEvent {
            debug_annotations: vec![DebugAnnotation {
                name: Some(b"list".to_vec()),
                array_values: vec![
                    DebugAnnotation {
                        dict_entries: vec![same; 1000],
                        ..Default::default()
                    };
                    1000
                ],
                ..Default::default()
            }],
            ..Default::default()
        },
    ];
    let mut scratch = ArgsScratch::default();
    for (i, e) in events.iter().enumerate() {
        let bytes = e.encode_to_vec();
        let mut fields = EventFields::default();
        let Ok(e) = TrackEventView::decode(&bytes, &mut fields) else {
            panic!("an encoded event reads back");
        };
        let start = Instant::now();
        let mut missing = 0;
        assert!(event_args_bounded(
            &seq,
            &e,
            &mut scratch,
            &mut missing,
            4096
        ));
        let text = scratch.text();
        assert!(
            text.len() > 4096 && text.len() < 3 * 4096,
            "event {i}: {}",
            text.len()
        );
        assert_eq!(missing, 0);
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "event {i} took {:?}",
            start.elapsed()
        );
    }
}
