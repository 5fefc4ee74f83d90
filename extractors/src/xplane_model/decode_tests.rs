//! Synthetic XSpaces for the decoder's edge cases: ids resolved whatever
//! the field order, repeated map keys, every stat kind, wrong wire types,
//! bad UTF-8, caps, and a file cut at every byte.

use prost::Message;

use super::decode::{Limits, XSpaceError, decode_space, decode_space_with};
use super::proto::{
    EventMetadataEntry, StatMetadataEntry, XEvent, XEventData, XEventMetadata, XLine, XPlane,
    XSpace, XStat, XStatMetadata, XStatValue,
};
use super::space::{PsTime, StatValue, ValueRef};

fn stat(id: i64, value: XStatValue) -> XStat {
    XStat {
        metadata_id: id,
        value: Some(value),
    }
}

fn event_md(key: i64, name: &str, stats: Vec<XStat>) -> EventMetadataEntry {
    EventMetadataEntry {
        key,
        value: Some(XEventMetadata {
            id: key,
            name: name.into(),
            stats,
            ..Default::default()
        }),
    }
}

fn stat_md(key: i64, name: &str) -> StatMetadataEntry {
    StatMetadataEntry {
        key,
        value: Some(XStatMetadata {
            id: key,
            name: name.into(),
            description: String::new(),
        }),
    }
}

fn span(metadata_id: i64, offset_ps: i64, duration_ps: i64, stats: Vec<XStat>) -> XEvent {
    XEvent {
        metadata_id,
        data: Some(XEventData::OffsetPs(offset_ps)),
        duration_ps,
        stats,
    }
}

/// A GPU plane with a stream of two kernels, and a host plane whose
/// launches carry the kernels' correlation ids.
fn sample_space() -> XSpace {
    let gpu = XPlane {
        id: 0,
        name: "/device:GPU:0".into(),
        lines: vec![XLine {
            id: 7,
            name: "Stream #7(Kernel)".into(),
            timestamp_ns: 1_000,
            events: vec![
                span(1, 5_500, 2_000, vec![stat(1, XStatValue::Uint64Value(11))]),
                span(2, 9_000, 1_000, vec![stat(1, XStatValue::Uint64Value(12))]),
            ],
            ..Default::default()
        }],
        // Out of id order, and id 2 written twice: the last one counts.
        event_metadata: vec![
            event_md(2, "old_name", vec![]),
            event_md(1, "gemm", vec![stat(3, XStatValue::RefValue(4))]),
            event_md(2, "fusion", vec![]),
        ],
        stat_metadata: vec![
            stat_md(4, "jit_f"),
            stat_md(1, "correlation_id"),
            stat_md(3, "hlo_module"),
            stat_md(5, "device_vendor"),
        ],
        stats: vec![stat(5, XStatValue::StrValue("AMD".into()))],
    };
    let host = XPlane {
        id: 1,
        name: "/host:CPU".into(),
        lines: vec![XLine {
            id: 3,
            name: "Host Threads/3".into(),
            timestamp_ns: 900,
            events: vec![
                span(1, 0, 3_000, vec![stat(1, XStatValue::Int64Value(11))]),
                span(1, 4_000, 3_000, vec![stat(1, XStatValue::Int64Value(12))]),
                XEvent {
                    metadata_id: 9,
                    data: Some(XEventData::NumOccurrences(3)),
                    duration_ps: 10,
                    stats: vec![stat(2, XStatValue::DoubleValue(1.5))],
                },
            ],
            ..Default::default()
        }],
        event_metadata: vec![event_md(1, "hipLaunchKernel", vec![])],
        stat_metadata: vec![stat_md(1, "correlation_id"), stat_md(2, "ratio")],
        stats: vec![stat(6, XStatValue::BytesValue(vec![1, 2, 3]))],
    };
    XSpace {
        planes: vec![gpu, host],
        errors: vec!["e".into()],
        warnings: vec!["w".into()],
        hostnames: vec!["vm".into()],
    }
}

#[test]
fn a_space_decodes_with_every_id_resolved() {
    let bytes = sample_space().encode_to_vec();
    let space = decode_space(&bytes).unwrap();
    assert!(space.notes.is_empty(), "{:?}", space.notes);
    assert_eq!(
        (&*space.errors[0], &*space.warnings[0], &*space.hostnames[0]),
        ("e", "w", "vm")
    );
    let gpu = &space.planes[0];
    assert_eq!(
        gpu.event_metadata.iter().map(|m| m.id).collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(&*gpu.event_metadata[1].name, "fusion");
    let line = &gpu.lines[0];
    let names: Vec<&str> = line.events.iter().map(|e| gpu.event_name(e)).collect();
    assert_eq!(names, ["gemm", "fusion"]);
    assert_eq!(
        line.events[0].start(),
        Some(PsTime {
            ns: 1_005,
            sub_ns_ps: 500
        })
    );
    let correlation = &line.stats_of(&line.events[1])[0];
    assert_eq!(gpu.stat_name(correlation), Some("correlation_id"));
    assert_eq!(gpu.stat_value(correlation), ValueRef::Uint64(12));
    // A stat on event metadata, holding a reference.
    let module = &gpu.event_metadata[0].stats[0];
    assert_eq!(gpu.stat_name(module), Some("hlo_module"));
    assert_eq!(gpu.stat_value(module), ValueRef::Text("jit_f"));
    assert_eq!(gpu.plane_stat("device_vendor"), Some(ValueRef::Text("AMD")));
    let host = &space.planes[1];
    let line = &host.lines[0];
    assert!(line.events[2].is_aggregated());
    // Metadata 9 and stat metadata 6 do not exist: kept, unresolved.
    assert_eq!(line.events[2].metadata, None);
    assert_eq!(host.event_name(&line.events[2]), "");
    assert_eq!(host.stats[0].metadata, None);
    assert_eq!(host.stats[0].value, StatValue::Bytes(&[1, 2, 3]));
    assert_eq!(
        host.stat_value(&line.stats_of(&line.events[2])[0]),
        ValueRef::Double(1.5)
    );
}

#[test]
fn the_in_place_walk_agrees_with_prost() {
    let original = sample_space();
    let bytes = original.encode_to_vec();
    let reference = XSpace::decode(bytes.as_slice()).unwrap();
    let space = decode_space(&bytes).unwrap();
    assert_eq!(space.planes.len(), reference.planes.len());
    for (plane, want) in space.planes.iter().zip(&reference.planes) {
        assert_eq!(plane.name, want.name);
        for (line, want) in plane.lines.iter().zip(&want.lines) {
            assert_eq!(line.events.len(), want.events.len());
            for (event, want) in line.events.iter().zip(&want.events) {
                assert_eq!(event.metadata_id, want.metadata_id);
                assert_eq!(event.duration_ps, want.duration_ps);
                assert_eq!(line.stats_of(event).len(), want.stats.len());
            }
        }
    }
}

#[test]
fn metadata_before_lines_resolves_too() {
    // Write the plane's fields in reverse order, as a foreign writer may.
    let plane = &sample_space().planes[0];
    let mut inner = Vec::new();
    for entry in &plane.stat_metadata {
        prost::encoding::message::encode(5, entry, &mut inner);
    }
    for entry in &plane.event_metadata {
        prost::encoding::message::encode(4, entry, &mut inner);
    }
    for line in &plane.lines {
        prost::encoding::message::encode(3, line, &mut inner);
    }
    prost::encoding::string::encode(2, &plane.name, &mut inner);
    let mut bytes = Vec::new();
    prost::encoding::bytes::encode(1, &inner, &mut bytes);
    let space = decode_space(&bytes).unwrap();
    let p = &space.planes[0];
    assert_eq!(p.event_name(&p.lines[0].events[1]), "fusion");
}

#[test]
fn not_an_xspace_is_told_apart() {
    assert_eq!(decode_space(&[]).unwrap_err(), XSpaceError::Empty);
    // A varint first field; a group; a cut varint.
    for bytes in [&[0x08, 0x01][..], &[0x0b], &[0x0a, 0x80]] {
        let err = decode_space(bytes).unwrap_err();
        assert!(
            matches!(err, XSpaceError::NotXSpace { .. }),
            "{bytes:?}: {err}"
        );
        assert!(err.to_string().starts_with("not an XSpace"));
    }
}

#[test]
fn wrong_wire_types_and_bad_utf8_are_noted_not_fatal() {
    let mut bytes = sample_space().encode_to_vec();
    // A plane whose name is a varint, then one named with invalid UTF-8.
    bytes.extend([0x0a, 0x02, 0x10, 0x05]);
    bytes.extend([0x0a, 0x04, 0x12, 0x02, 0xff, b'A']);
    let space = decode_space(&bytes).unwrap();
    assert_eq!(space.planes.len(), 4);
    assert_eq!(space.planes[3].name, "\u{fffd}A");
    assert_eq!(space.notes.kept.len(), 1, "{:?}", space.notes);
    assert!(space.notes.kept[0].message.contains("wire type"));
}

#[test]
fn child_ids_read_packed_and_unpacked() {
    let mut md = XEventMetadata {
        id: 1,
        child_id: vec![3, 4],
        ..Default::default()
    };
    let packed = md.encode_to_vec();
    md.child_id.clear();
    let mut unpacked = md.encode_to_vec();
    unpacked.extend([0x30, 0x05]);
    for value in [packed, unpacked] {
        let mut entry = vec![0x08, 0x01];
        prost::encoding::bytes::encode(2, &value, &mut entry);
        let mut plane = Vec::new();
        prost::encoding::bytes::encode(4, &entry, &mut plane);
        let mut bytes = Vec::new();
        prost::encoding::bytes::encode(1, &plane, &mut bytes);
        let space = decode_space(&bytes).unwrap();
        let ids = &space.planes[0].event_metadata[0].child_ids;
        assert!(ids == &[3, 4] || ids == &[5], "{ids:?}");
    }
}

#[test]
fn limits_skip_events_with_a_note() {
    let bytes = sample_space().encode_to_vec();
    let limits = Limits {
        max_events: 3,
        max_stats: 100,
    };
    let space = decode_space_with(&bytes, &limits).unwrap();
    let events: usize = space.planes.iter().map(|p| p.event_count()).sum();
    assert_eq!(events, 3);
    assert!(
        space
            .notes
            .kept
            .iter()
            .any(|n| n.message.contains("2 events skipped"))
    );
}

#[test]
fn a_file_cut_anywhere_keeps_a_growing_prefix() {
    let bytes = sample_space().encode_to_vec();
    let full = decode_space(&bytes).unwrap();
    let total: usize = full.planes.iter().map(|p| p.event_count()).sum();
    let mut previous = 0;
    for cut in 1..bytes.len() {
        let Ok(space) = decode_space(&bytes[..cut]) else {
            continue;
        };
        let events: usize = space.planes.iter().map(|p| p.event_count()).sum();
        assert!(events >= previous && events <= total, "cut at {cut}");
        previous = events;
    }
    assert_eq!(previous, total);
}

#[test]
fn flipped_bits_never_panic() {
    let bytes = sample_space().encode_to_vec();
    for at in 0..bytes.len() {
        for bit in 0..8 {
            let mut damaged = bytes.clone();
            damaged[at] ^= 1 << bit;
            let _ = decode_space(&damaged);
        }
    }
}
