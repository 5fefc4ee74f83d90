//! The XSpace messages (`xla/tsl/profiler/protobuf/xplane.proto`, package
//! `tensorflow.profiler`), hand-declared for prost with that file's field
//! numbers.
//!
//! The product decoder does not go through these: it walks the same fields
//! in place ([`super::decode`]) so event names, strings and byte stats stay
//! borrowed from the input and a cut file still yields the events before
//! the cut. These owned messages are the encoder the tests build synthetic
//! XSpaces with, and a whole-tree reference decode the tests compare the
//! in-place walk against.
//!
//! The two `map<int64, …>` fields are declared as their wire form, repeated
//! key/value entry messages, so a test can write duplicate keys or entries
//! out of order, as a foreign writer might.

// The derive generates the field accessors; docs live on the messages.
#![allow(missing_docs)]

use prost::Message;

/// `XSpace`: parallel planes from one or more profiling sources.
#[derive(Clone, PartialEq, Message)]
pub struct XSpace {
    #[prost(message, repeated, tag = "1")]
    pub planes: Vec<XPlane>,
    #[prost(string, repeated, tag = "2")]
    pub errors: Vec<String>,
    #[prost(string, repeated, tag = "3")]
    pub warnings: Vec<String>,
    #[prost(string, repeated, tag = "4")]
    pub hostnames: Vec<String>,
}

/// `XPlane`: timelines (lines) of one source, with the metadata tables
/// their events and stats refer to.
#[derive(Clone, PartialEq, Message)]
pub struct XPlane {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(message, repeated, tag = "3")]
    pub lines: Vec<XLine>,
    /// `map<int64, XEventMetadata> event_metadata = 4`.
    #[prost(message, repeated, tag = "4")]
    pub event_metadata: Vec<EventMetadataEntry>,
    /// `map<int64, XStatMetadata> stat_metadata = 5`.
    #[prost(message, repeated, tag = "5")]
    pub stat_metadata: Vec<StatMetadataEntry>,
    #[prost(message, repeated, tag = "6")]
    pub stats: Vec<XStat>,
}

/// One entry of `XPlane.event_metadata`.
#[derive(Clone, PartialEq, Message)]
pub struct EventMetadataEntry {
    #[prost(int64, tag = "1")]
    pub key: i64,
    #[prost(message, optional, tag = "2")]
    pub value: Option<XEventMetadata>,
}

/// One entry of `XPlane.stat_metadata`.
#[derive(Clone, PartialEq, Message)]
pub struct StatMetadataEntry {
    #[prost(int64, tag = "1")]
    pub key: i64,
    #[prost(message, optional, tag = "2")]
    pub value: Option<XStatMetadata>,
}

/// `XLine`: one timeline (a thread, a stream, a derived row).
#[derive(Clone, PartialEq, Message)]
pub struct XLine {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(int64, tag = "10")]
    pub display_id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "11")]
    pub display_name: String,
    /// Nanoseconds; events' `offset_ps` count from here.
    #[prost(int64, tag = "3")]
    pub timestamp_ns: i64,
    #[prost(int64, tag = "9")]
    pub duration_ps: i64,
    #[prost(message, repeated, tag = "4")]
    pub events: Vec<XEvent>,
}

/// `XEvent`: one span (or, aggregated, a count of occurrences).
#[derive(Clone, PartialEq, Message)]
pub struct XEvent {
    #[prost(int64, tag = "1")]
    pub metadata_id: i64,
    /// `oneof data { offset_ps = 2; num_occurrences = 5; }`.
    #[prost(oneof = "XEventData", tags = "2, 5")]
    pub data: Option<XEventData>,
    #[prost(int64, tag = "3")]
    pub duration_ps: i64,
    #[prost(message, repeated, tag = "4")]
    pub stats: Vec<XStat>,
}

/// `XEvent.data`.
#[derive(Clone, Copy, PartialEq, prost::Oneof)]
pub enum XEventData {
    #[prost(int64, tag = "2")]
    OffsetPs(i64),
    #[prost(int64, tag = "5")]
    NumOccurrences(i64),
}

/// `XStat`: a value named by stat metadata.
#[derive(Clone, PartialEq, Message)]
pub struct XStat {
    #[prost(int64, tag = "1")]
    pub metadata_id: i64,
    #[prost(oneof = "XStatValue", tags = "2, 3, 4, 5, 6, 7")]
    pub value: Option<XStatValue>,
}

/// `XStat.value`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum XStatValue {
    #[prost(double, tag = "2")]
    DoubleValue(f64),
    #[prost(uint64, tag = "3")]
    Uint64Value(u64),
    #[prost(int64, tag = "4")]
    Int64Value(i64),
    #[prost(string, tag = "5")]
    StrValue(String),
    #[prost(bytes = "vec", tag = "6")]
    BytesValue(Vec<u8>),
    /// A string held as the name of the stat metadata with this id.
    #[prost(uint64, tag = "7")]
    RefValue(u64),
}

/// `XEventMetadata`: what all events with one `metadata_id` share.
#[derive(Clone, PartialEq, Message)]
pub struct XEventMetadata {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "4")]
    pub display_name: String,
    #[prost(bytes = "vec", tag = "3")]
    pub metadata: Vec<u8>,
    #[prost(message, repeated, tag = "5")]
    pub stats: Vec<XStat>,
    #[prost(int64, repeated, tag = "6")]
    pub child_id: Vec<i64>,
}

/// `XStatMetadata`: a stat's name.
#[derive(Clone, PartialEq, Message)]
pub struct XStatMetadata {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub description: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_with_the_proto_field_numbers() {
        let event = XEvent {
            metadata_id: 3,
            data: Some(XEventData::OffsetPs(-5)),
            duration_ps: 7,
            stats: vec![XStat {
                metadata_id: 1,
                value: Some(XStatValue::RefValue(2)),
            }],
        };
        let bytes = event.encode_to_vec();
        // metadata_id (1, varint), offset_ps (2, varint), duration (3), stats (4, LEN).
        assert_eq!(&bytes[..2], &[0x08, 3]);
        assert_eq!(bytes[2], 0x10);
        assert_eq!(XEvent::decode(bytes.as_slice()).ok(), Some(event));
        let entry = EventMetadataEntry {
            key: 4,
            value: Some(XEventMetadata {
                id: 4,
                name: "k".into(),
                ..Default::default()
            }),
        };
        assert_eq!(entry.encode_to_vec()[..2], [0x08, 4]);
    }
}
