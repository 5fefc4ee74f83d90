//! The direct writer against the `serde_json::Value` tree it replaced.

use serde_json::{Map, Value, json};

use super::*;
use crate::perfetto::proto::{SourceLocation, TrackEvent};
use crate::perfetto::track_event_view::EventFields;
use prost::Message;

fn lossy_text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `event_args` through one scratch shared by every call, as the decoder
/// uses it, on the event read in place from its bytes.
fn direct(seq: &Sequence, e: &TrackEvent, scratch: &mut ArgsScratch) -> (Option<String>, u64) {
    let mut missing = 0;
    let bytes = e.encode_to_vec();
    let mut fields = EventFields::default();
    let Ok(view) = TrackEventView::decode(&bytes, &mut fields) else {
        panic!("an encoded event reads back");
    };
    let written = event_args(seq, &view, scratch, &mut missing);
    (written.then(|| scratch.text().to_string()), missing)
}

/// The tree version `event_args` replaced, kept as the reference.
fn reference(seq: &Sequence, e: &TrackEvent) -> (Option<String>, u64) {
    let mut missing = 0;
    let mut map = Map::new();
    for a in &e.debug_annotations {
        let name = reference_name(seq, a, &mut missing);
        map.insert(name, reference_value(seq, a, 0, &mut missing));
    }
    let location = e.source_location.as_ref().or_else(|| {
        e.source_location_iid
            .and_then(|iid| seq.source_locations.get(&iid))
    });
    if let Some(loc) = location {
        map.insert(
            "source".into(),
            json!({
                "file": loc.file_name.as_deref().map(lossy_text),
                "function": loc.function_name.as_deref().map(lossy_text),
                "line": loc.line_number,
            }),
        );
    }
    let flows: Vec<u64> = e.flow_ids.iter().chain(&e.flow_ids_old).copied().collect();
    if !flows.is_empty() {
        map.insert("flow_ids".into(), json!(flows));
    }
    let terminating: Vec<u64> = e
        .terminating_flow_ids
        .iter()
        .chain(&e.terminating_flow_ids_old)
        .copied()
        .collect();
    if !terminating.is_empty() {
        map.insert("terminating_flow_ids".into(), json!(terminating));
    }
    (
        (!map.is_empty()).then(|| Value::Object(map).to_string()),
        missing,
    )
}

fn reference_name(seq: &Sequence, a: &DebugAnnotation, missing: &mut u64) -> String {
    annotation_name(seq, a, missing).into_owned()
}

fn reference_value(seq: &Sequence, a: &DebugAnnotation, depth: usize, missing: &mut u64) -> Value {
    if depth > MAX_ANNOTATION_DEPTH {
        return Value::String(TOO_DEEP.into());
    }
    if let Some(v) = a.bool_value {
        return json!(v);
    }
    if let Some(v) = a.uint_value {
        return json!(v);
    }
    if let Some(v) = a.int_value {
        return json!(v);
    }
    if let Some(v) = a.double_value {
        return json!(v);
    }
    if let Some(v) = a.pointer_value {
        return json!(format!("0x{v:x}"));
    }
    if let Some(v) = &a.string_value {
        return json!(lossy_text(v));
    }
    if let Some(iid) = a.string_value_iid {
        return match seq.annotation_strings.get(&iid) {
            Some(s) => json!(s),
            None => {
                *missing += 1;
                json!(UNKNOWN)
            }
        };
    }
    if let Some(v) = &a.legacy_json_value {
        return serde_json::from_slice(v).unwrap_or_else(|_| json!(lossy_text(v)));
    }
    if let Some(v) = &a.nested_value {
        return reference_nested(v, depth + 1);
    }
    if !a.dict_entries.is_empty() {
        let mut map = Map::new();
        for entry in &a.dict_entries {
            let name = reference_name(seq, entry, missing);
            map.insert(name, reference_value(seq, entry, depth + 1, missing));
        }
        return Value::Object(map);
    }
    if !a.array_values.is_empty() {
        return Value::Array(
            a.array_values
                .iter()
                .map(|v| reference_value(seq, v, depth + 1, missing))
                .collect(),
        );
    }
    Value::Null
}

fn reference_nested(v: &NestedValue, depth: usize) -> Value {
    if depth > MAX_ANNOTATION_DEPTH {
        return Value::String(TOO_DEEP.into());
    }
    match v.nested_type {
        Some(1) => Value::Object(
            v.dict_keys
                .iter()
                .zip(&v.dict_values)
                .map(|(k, v)| (lossy_text(k), reference_nested(v, depth + 1)))
                .collect(),
        ),
        Some(2) => Value::Array(
            v.array_values
                .iter()
                .map(|v| reference_nested(v, depth + 1))
                .collect(),
        ),
        _ => {
            if let Some(i) = v.int_value {
                json!(i)
            } else if let Some(d) = v.double_value {
                json!(d)
            } else if let Some(b) = v.bool_value {
                json!(b)
            } else if let Some(s) = &v.string_value {
                json!(lossy_text(s))
            } else {
                Value::Null
            }
        }
    }
}

fn named(name: &str) -> DebugAnnotation {
    DebugAnnotation {
        name: Some(name.as_bytes().to_vec()),
        ..Default::default()
    }
}

fn interned(iid: u64) -> DebugAnnotation {
    DebugAnnotation {
        name_iid: Some(iid),
        ..Default::default()
    }
}

fn sequence() -> Sequence {
    let mut seq = Sequence::default();
    seq.annotation_names.insert(1, "bytes".into());
    seq.annotation_names.insert(2, "request_id".into());
    seq.annotation_names.insert(3, "zeta \"quoted\"".into());
    seq.annotation_strings.insert(7, "interned\nvalue".into());
    seq.source_locations.insert(
        4,
        SourceLocation {
            iid: Some(4),
            file_name: Some(b"src/main.rs".to_vec()),
            function_name: None,
            line_number: Some(42),
        },
    );
    seq
}

/// Annotations of every kind: scalars, odd floats, escapes, invalid
/// UTF-8, duplicate and unordered keys, missing ids, nesting past the cut.
fn events() -> Vec<TrackEvent> {
    let deep = (0..40).fold(
        NestedValue {
            int_value: Some(1),
            ..Default::default()
        },
        |inner, _| NestedValue {
            nested_type: Some(2),
            array_values: vec![inner],
            ..Default::default()
        },
    );
    let dict = NestedValue {
        nested_type: Some(1),
        dict_keys: vec![b"b".to_vec(), b"a".to_vec(), b"b".to_vec()],
        dict_values: vec![
            NestedValue {
                double_value: Some(f64::INFINITY),
                ..Default::default()
            },
            NestedValue {
                string_value: Some(b"caf\xc3\xa9 \xff".to_vec()),
                ..Default::default()
            },
            NestedValue {
                bool_value: Some(true),
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let scalars = vec![
        DebugAnnotation {
            uint_value: Some(u64::MAX),
            ..interned(1)
        },
        DebugAnnotation {
            int_value: Some(-5),
            ..interned(2)
        },
        DebugAnnotation {
            double_value: Some(0.1),
            ..named("ratio")
        },
        DebugAnnotation {
            double_value: Some(f64::NAN),
            ..named("nan")
        },
        DebugAnnotation {
            double_value: Some(1e300),
            ..named("huge")
        },
        DebugAnnotation {
            pointer_value: Some(0xdead_beef),
            ..named("ptr")
        },
        DebugAnnotation {
            string_value: Some(b"tab\there \x01 \xf0\x9f\x94\xa5".to_vec()),
            ..interned(3)
        },
        DebugAnnotation {
            string_value_iid: Some(7),
            ..named("s")
        },
        DebugAnnotation {
            string_value_iid: Some(99),
            ..interned(98)
        },
        DebugAnnotation {
            bool_value: Some(false),
            ..named("ratio")
        },
        DebugAnnotation {
            legacy_json_value: Some(br#"{"z":1,"a":[true,null]}"#.to_vec()),
            ..named("legacy")
        },
        DebugAnnotation {
            legacy_json_value: Some(b"{not json".to_vec()),
            ..named("broken")
        },
        named("empty"),
        DebugAnnotation::default(),
    ];
    let structured = vec![
        DebugAnnotation {
            nested_value: Some(deep),
            ..named("deep")
        },
        DebugAnnotation {
            nested_value: Some(dict),
            ..named("dict")
        },
        DebugAnnotation {
            dict_entries: vec![
                DebugAnnotation {
                    int_value: Some(2),
                    ..named("y")
                },
                DebugAnnotation {
                    int_value: Some(1),
                    ..named("x")
                },
                DebugAnnotation {
                    int_value: Some(3),
                    ..named("y")
                },
            ],
            ..named("entries")
        },
        DebugAnnotation {
            array_values: vec![
                DebugAnnotation {
                    uint_value: Some(1),
                    ..Default::default()
                },
                DebugAnnotation {
                    string_value_iid: Some(7),
                    ..Default::default()
                },
            ],
            ..named("list")
        },
    ];
    vec![
        TrackEvent::default(),
        TrackEvent {
            debug_annotations: scalars,
            ..Default::default()
        },
        TrackEvent {
            debug_annotations: structured,
            source_location_iid: Some(4),
            flow_ids: vec![3, 1],
            flow_ids_old: vec![9],
            terminating_flow_ids_old: vec![2],
            ..Default::default()
        },
        TrackEvent {
            source_location: Some(SourceLocation {
                function_name: Some(b"run".to_vec()),
                ..Default::default()
            }),
            terminating_flow_ids: vec![5],
            ..Default::default()
        },
        TrackEvent {
            source_location_iid: Some(404),
            debug_annotations: vec![DebugAnnotation {
                uint_value: Some(3),
                ..named("source")
            }],
            ..Default::default()
        },
    ]
}

#[test]
fn the_direct_writer_prints_what_the_value_tree_printed() {
    let seq = sequence();
    let mut scratch = ArgsScratch::default();
    // Twice over, so every event follows every other in the scratch.
    let events = events();
    for (i, e) in events.iter().chain(events.iter().rev()).enumerate() {
        assert_eq!(
            direct(&seq, e, &mut scratch),
            reference(&seq, e),
            "event {i}"
        );
    }
}

#[test]
fn the_written_args_are_json_with_each_key_once() {
    let seq = sequence();
    let (Some(text), missing) = direct(&seq, &events()[1], &mut ArgsScratch::default()) else {
        panic!("annotations give args");
    };
    assert_eq!(missing, 2, "the unknown name and the unknown string");
    let parsed: Value = serde_json::from_str(&text).expect("valid JSON");
    assert_eq!(parsed["ratio"], json!(false), "the last duplicate wins");
    assert_eq!(parsed["nan"], Value::Null);
    assert_eq!(text.matches("\"ratio\"").count(), 1);
}
