//! A `TrackEvent` read in place from its packet's bytes.
//!
//! Track events are most of a Perfetto trace's packets. prost built an
//! owned message for each (its name and categories copied into fresh
//! vectors, the previous one cleared): about a tenth of an import's CPU.
//! Here the scalar fields are read in one pass over the bytes, names and
//! categories stay borrowed, and repeated fields land in buffers kept from
//! one event to the next ([`EventFields`]). Debug annotations, the source
//! location and the legacy event are still prost messages (decoded from
//! their borrowed bytes; the annotations' writer reads them as such).
//!
//! The result equals prost's decoding of the same bytes (the last of a
//! repeated scalar wins, embedded messages merge, repeated fields accept
//! packed and unpacked runs, a wrong wire type on a known field or bytes
//! that are not protobuf fail): `tests::views_equal_prost_messages`.

use prost::Message;

use super::proto::{DebugAnnotation, LegacyEvent, SourceLocation};
use super::wire::{Fields, Malformed, Value, fixed64s, varints};

/// The fields of `TrackEvent` that flameox reads (see `proto::TrackEvent`
/// for their numbers), decoded in place: the buffers are kept from one
/// event to the next, and names and inline categories are byte ranges of
/// the event's bytes (read them through [`TrackEventView`]).
#[derive(Debug, Default)]
pub struct EventFields {
    pub category_iids: Vec<u64>,
    /// Byte ranges of the inline categories in the event's bytes.
    categories: Vec<(usize, usize)>,
    pub name_iid: Option<u64>,
    /// Byte range of the inline name.
    name: Option<(usize, usize)>,
    pub r#type: Option<i32>,
    pub track_uuid: Option<u64>,
    pub counter_value: Option<i64>,
    pub double_counter_value: Option<f64>,
    pub extra_counter_track_uuids: Vec<u64>,
    extra_counter_values: Vec<u64>,
    pub extra_double_counter_track_uuids: Vec<u64>,
    extra_double_counter_values: Vec<u64>,
    pub flow_ids_old: Vec<u64>,
    pub flow_ids: Vec<u64>,
    pub terminating_flow_ids_old: Vec<u64>,
    pub terminating_flow_ids: Vec<u64>,
    pub correlation_id: Option<u64>,
    pub debug_annotations: Vec<DebugAnnotation>,
    pub source_location: Option<SourceLocation>,
    pub source_location_iid: Option<u64>,
    pub timestamp_delta_us: Option<i64>,
    pub timestamp_absolute_us: Option<i64>,
    pub legacy_event: Option<LegacyEvent>,
}

impl EventFields {
    fn clear(&mut self) {
        self.category_iids.clear();
        self.categories.clear();
        self.name_iid = None;
        self.name = None;
        self.r#type = None;
        self.track_uuid = None;
        self.counter_value = None;
        self.double_counter_value = None;
        self.extra_counter_track_uuids.clear();
        self.extra_counter_values.clear();
        self.extra_double_counter_track_uuids.clear();
        self.extra_double_counter_values.clear();
        self.flow_ids_old.clear();
        self.flow_ids.clear();
        self.terminating_flow_ids_old.clear();
        self.terminating_flow_ids.clear();
        self.correlation_id = None;
        self.debug_annotations.clear();
        self.source_location = None;
        self.source_location_iid = None;
        self.timestamp_delta_us = None;
        self.timestamp_absolute_us = None;
        self.legacy_event = None;
    }
}

/// One track event: its bytes and the fields read from them. Field
/// access goes through to [`EventFields`]; the view itself is two
/// pointers, so passing it around copies nothing.
#[derive(Debug, Clone, Copy)]
pub struct TrackEventView<'a> {
    bytes: &'a [u8],
    fields: &'a EventFields,
}

impl std::ops::Deref for TrackEventView<'_> {
    type Target = EventFields;
    fn deref(&self) -> &EventFields {
        self.fields
    }
}

impl<'a> TrackEventView<'a> {
    /// Reads the event in `bytes` (the concatenation of its occurrences in
    /// the packet, as protobuf merges them) into `fields`.
    pub fn decode(bytes: &'a [u8], fields: &'a mut EventFields) -> Result<Self, Malformed> {
        let f = &mut *fields;
        f.clear();
        let range = |text: &[u8]| {
            let start = text.as_ptr() as usize - bytes.as_ptr() as usize;
            (start, start + text.len())
        };
        for field in Fields::new(bytes) {
            let (number, value) = field?;
            match number {
                3 => varints(value, &mut f.category_iids)?,
                22 => f.categories.push(range(value.bytes()?)),
                10 => f.name_iid = Some(value.varint()?),
                23 => f.name = Some(range(value.bytes()?)),
                9 => f.r#type = Some(value.varint()? as i32),
                11 => f.track_uuid = Some(value.varint()?),
                30 => f.counter_value = Some(value.varint()? as i64),
                44 => f.double_counter_value = Some(value.double()?),
                31 => varints(value, &mut f.extra_counter_track_uuids)?,
                12 => varints(value, &mut f.extra_counter_values)?,
                45 => varints(value, &mut f.extra_double_counter_track_uuids)?,
                46 => fixed64s(value, &mut f.extra_double_counter_values)?,
                36 => varints(value, &mut f.flow_ids_old)?,
                47 => fixed64s(value, &mut f.flow_ids)?,
                42 => varints(value, &mut f.terminating_flow_ids_old)?,
                48 => fixed64s(value, &mut f.terminating_flow_ids)?,
                52 => f.correlation_id = Some(value.varint()?),
                4 => {
                    // Decoded where it lies: the message is large to move.
                    let bytes = value.bytes()?;
                    f.debug_annotations.push(DebugAnnotation::default());
                    if let Some(a) = f.debug_annotations.last_mut() {
                        a.merge(bytes).map_err(|_| Malformed)?;
                    }
                }
                33 => merge(&mut f.source_location, value)?,
                34 => f.source_location_iid = Some(value.varint()?),
                1 => f.timestamp_delta_us = Some(value.varint()? as i64),
                16 => f.timestamp_absolute_us = Some(value.varint()? as i64),
                6 => merge(&mut f.legacy_event, value)?,
                _ => {}
            }
        }
        Ok(TrackEventView { bytes, fields })
    }

    /// The inline name.
    pub fn name(&self) -> Option<&'a [u8]> {
        let bytes = self.bytes;
        self.fields.name.map(|(start, end)| &bytes[start..end])
    }

    /// The inline categories, in order.
    pub fn categories(&self) -> impl ExactSizeIterator<Item = &'a [u8]> + Clone + use<'a> {
        let bytes = self.bytes;
        self.fields
            .categories
            .iter()
            .map(move |&(start, end)| &bytes[start..end])
    }

    /// The `int64` extra counter values.
    pub fn extra_counter_values(&self) -> impl ExactSizeIterator<Item = i64> + use<'a> {
        self.fields.extra_counter_values.iter().map(|&v| v as i64)
    }

    /// The `double` extra counter values.
    pub fn extra_double_counter_values(&self) -> impl ExactSizeIterator<Item = f64> + use<'a> {
        self.fields
            .extra_double_counter_values
            .iter()
            .map(|&v| f64::from_bits(v))
    }

    /// Whether the event carries extra counter values of either kind.
    pub fn has_extra_counters(&self) -> bool {
        !(self.fields.extra_counter_values.is_empty()
            && self.fields.extra_double_counter_values.is_empty())
    }
}

/// Merges one occurrence of an embedded message into `slot`, as prost does.
fn merge<M: Message + Default>(slot: &mut Option<M>, value: Value<'_>) -> Result<(), Malformed> {
    let bytes = value.bytes()?;
    slot.get_or_insert_with(M::default)
        .merge(bytes)
        .map_err(|_| Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perfetto::proto::TrackEvent;

    /// The view's fields as the owned message they stand for.
    fn owned(v: &TrackEventView<'_>) -> TrackEvent {
        TrackEvent {
            category_iids: v.category_iids.clone(),
            categories: v.categories().map(<[u8]>::to_vec).collect(),
            name_iid: v.name_iid,
            name: v.name().map(<[u8]>::to_vec),
            r#type: v.r#type,
            track_uuid: v.track_uuid,
            counter_value: v.counter_value,
            double_counter_value: v.double_counter_value,
            extra_counter_track_uuids: v.extra_counter_track_uuids.clone(),
            extra_counter_values: v.extra_counter_values().collect(),
            extra_double_counter_track_uuids: v.extra_double_counter_track_uuids.clone(),
            extra_double_counter_values: v.extra_double_counter_values().collect(),
            flow_ids_old: v.flow_ids_old.clone(),
            flow_ids: v.flow_ids.clone(),
            terminating_flow_ids_old: v.terminating_flow_ids_old.clone(),
            terminating_flow_ids: v.terminating_flow_ids.clone(),
            correlation_id: v.correlation_id,
            debug_annotations: v.debug_annotations.clone(),
            source_location: v.source_location.clone(),
            source_location_iid: v.source_location_iid,
            timestamp_delta_us: v.timestamp_delta_us,
            timestamp_absolute_us: v.timestamp_absolute_us,
            legacy_event: v.legacy_event.clone(),
        }
    }

    fn full_event() -> TrackEvent {
        TrackEvent {
            category_iids: vec![1, 2],
            categories: vec![b"gpu".to_vec(), b"".to_vec(), b"x,y".to_vec()],
            name_iid: Some(7),
            name: Some("op ✓".as_bytes().to_vec()),
            r#type: Some(-3),
            track_uuid: Some(u64::MAX),
            counter_value: Some(-5),
            double_counter_value: Some(2.5),
            extra_counter_track_uuids: vec![10, 11],
            extra_counter_values: vec![-1, i64::MAX],
            extra_double_counter_track_uuids: vec![12],
            extra_double_counter_values: vec![f64::NAN.copysign(-1.0), 0.25],
            flow_ids_old: vec![3],
            flow_ids: vec![u64::MAX, 4],
            terminating_flow_ids_old: vec![5],
            terminating_flow_ids: vec![6],
            correlation_id: Some(99),
            debug_annotations: vec![DebugAnnotation {
                name: Some(b"k".to_vec()),
                int_value: Some(4),
                ..Default::default()
            }],
            source_location: Some(SourceLocation {
                file_name: Some(b"a.cc".to_vec()),
                line_number: Some(3),
                ..Default::default()
            }),
            source_location_iid: Some(8),
            timestamp_delta_us: Some(-9),
            timestamp_absolute_us: Some(1 << 40),
            legacy_event: Some(LegacyEvent {
                phase: Some(i32::from(b'X')),
                duration_us: Some(12),
                ..Default::default()
            }),
        }
    }

    fn same(a: &TrackEvent, b: &TrackEvent) -> bool {
        // NaN payloads compare by bits.
        let bits = |e: &TrackEvent| {
            e.extra_double_counter_values
                .iter()
                .map(|v| v.to_bits())
                .collect::<Vec<_>>()
        };
        let mut a2 = a.clone();
        let mut b2 = b.clone();
        a2.extra_double_counter_values.clear();
        b2.extra_double_counter_values.clear();
        a2 == b2 && bits(a) == bits(b)
    }

    #[test]
    fn views_equal_prost_messages() {
        let mut scratch = EventFields::default();
        let full = full_event();
        let mut cases = vec![TrackEvent::default(), full.clone()];
        // Two occurrences merge: scalars of the second win, lists append,
        // embedded messages merge.
        let mut second = TrackEvent {
            name: Some(b"later".to_vec()),
            categories: vec![b"more".to_vec()],
            legacy_event: Some(LegacyEvent {
                pid_override: Some(4),
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut bytes = full.encode_to_vec();
        bytes.extend(second.encode_to_vec());
        second.name = None;
        cases.push(TrackEvent::decode(bytes.as_slice()).unwrap());
        for expected in &cases {
            let bytes = expected.encode_to_vec();
            let merged = TrackEvent::decode(bytes.as_slice()).unwrap();
            let view = TrackEventView::decode(&bytes, &mut scratch).unwrap();
            assert!(same(&owned(&view), &merged), "{expected:?}");
        }
        // Unpacked repeated scalars read as prost reads them.
        let mut unpacked = Vec::new();
        for (field, v) in [(3u64, 1u64), (3, 2), (31, 10)] {
            crate::varint::put_u64(&mut unpacked, field << 3);
            crate::varint::put_u64(&mut unpacked, v);
        }
        let merged = TrackEvent::decode(unpacked.as_slice()).unwrap();
        let view = TrackEventView::decode(&unpacked, &mut scratch).unwrap();
        assert!(same(&owned(&view), &merged));
        assert_eq!(view.category_iids, &[1, 2]);
    }

    #[test]
    fn what_prost_refuses_the_view_refuses() {
        let mut scratch = EventFields::default();
        let bytes = full_event().encode_to_vec();
        let mut refused = 0;
        // Every truncation, and the wrong wire type on each known field.
        for cut in 0..bytes.len() {
            let part = &bytes[..cut];
            let prost = TrackEvent::decode(part).is_ok();
            let view = TrackEventView::decode(part, &mut scratch).is_ok();
            assert_eq!(prost, view, "cut at {cut}");
            refused += usize::from(!view);
        }
        assert!(refused > 0);
        for field in [3u64, 22, 10, 23, 9, 44, 47, 4, 33, 6] {
            for wire in [0u64, 1, 2, 5] {
                let mut b = Vec::new();
                crate::varint::put_u64(&mut b, field << 3 | wire);
                match wire {
                    0 => b.push(1),
                    1 => b.extend_from_slice(&[0; 8]),
                    2 => b.extend_from_slice(&[0]),
                    _ => b.extend_from_slice(&[0; 4]),
                }
                let prost = TrackEvent::decode(b.as_slice()).is_ok();
                let view = TrackEventView::decode(&b, &mut scratch).is_ok();
                assert_eq!(prost, view, "field {field} wire {wire}");
            }
        }
    }
}
