//! Perfetto traces for tests, built and read with the `perfetto_protos`
//! crate's full generated types (the reference encoder), never with the
//! extractor's own declarations.
#![allow(dead_code)]

use std::io::{Read, Write};

use perfetto_protos::trace::Trace;
use perfetto_protos::trace_packet::TracePacket;
use perfetto_protos::track_descriptor::TrackDescriptor;
use perfetto_protos::track_event::{TrackEvent, track_event::Type};
use protobuf::{Message, MessageField};

pub const CLEARED: u32 = 1;
pub const NEEDS_STATE: u32 = 2;

/// Serializes packets as a `Trace`.
pub fn trace(packets: Vec<TracePacket>) -> Vec<u8> {
    let mut t = Trace::new();
    t.packet = packets;
    t.write_to_bytes().expect("encode trace")
}

/// Packets wrapped in one zlib `compressed_packets` packet.
pub fn compressed(packets: Vec<TracePacket>) -> TracePacket {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&trace(packets)).expect("deflate");
    let mut p = TracePacket::new();
    p.set_compressed_packets(z.finish().expect("deflate"));
    p
}

/// Every packet of an encoded trace, compressed packets inflated in place.
pub fn decode(bytes: &[u8]) -> Vec<TracePacket> {
    let t = Trace::parse_from_bytes(bytes).expect("reference decoder");
    let mut out = Vec::new();
    for p in t.packet {
        if p.has_compressed_packets() {
            let mut inflated = Vec::new();
            flate2::read::ZlibDecoder::new(p.compressed_packets())
                .read_to_end(&mut inflated)
                .expect("inflate");
            out.extend(decode(&inflated));
        } else {
            out.push(p);
        }
    }
    out
}

/// A packet at `ts` on sequence `seq`.
pub fn packet(ts: u64, seq: u32) -> TracePacket {
    let mut p = TracePacket::new();
    p.set_timestamp(ts);
    p.set_trusted_packet_sequence_id(seq);
    p
}

/// A thread track descriptor packet.
pub fn thread_track(seq: u32, uuid: u64, pid: i32, tid: i32, name: &str) -> TracePacket {
    let mut thread = perfetto_protos::thread_descriptor::ThreadDescriptor::new();
    thread.set_pid(pid);
    thread.set_tid(tid);
    thread.set_thread_name(name.into());
    let mut d = TrackDescriptor::new();
    d.set_uuid(uuid);
    d.thread = MessageField::some(thread);
    let mut p = TracePacket::new();
    p.set_trusted_packet_sequence_id(seq);
    p.set_track_descriptor(d);
    p
}

/// A track event of `kind` on `track`.
pub fn event(kind: Type, track: u64) -> TrackEvent {
    let mut e = TrackEvent::new();
    e.set_type(kind);
    e.set_track_uuid(track);
    e
}

pub fn named(kind: Type, track: u64, name: &str) -> TrackEvent {
    let mut e = event(kind, track);
    e.set_name(name.into());
    e
}

pub fn with_event(mut p: TracePacket, e: TrackEvent) -> TracePacket {
    p.set_track_event(e);
    p
}

/// Interned event names.
pub fn interned_names(names: &[(u64, &str)]) -> perfetto_protos::interned_data::InternedData {
    let mut d = perfetto_protos::interned_data::InternedData::new();
    for (iid, name) in names {
        let mut n = perfetto_protos::track_event::EventName::new();
        n.set_iid(*iid);
        n.set_name((*name).into());
        d.event_names.push(n);
    }
    d
}
