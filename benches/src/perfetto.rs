//! A Perfetto protobuf trace generator shaped like a Perfetto SDK app trace.
//!
//! Shape: `threads` packet sequences, one per thread, each with a thread
//! track descriptor; track events with interned names and categories
//! (`SEQ_INCREMENTAL_STATE_CLEARED` at the start and again every
//! `RESET_EVERY` packets, as the SDK does when its interning tables fill),
//! nested slices up to depth 6 (each function calls one of three others, so
//! distinct stacks stay bounded) with interned debug annotations, instants, a
//! per-process counter track, and a sampler sequence writing `perf_sample`s
//! with interned frames and callstacks. Sequences write in chunks, so
//! packets of different threads interleave as in a real trace buffer. Same
//! seed and size → same bytes.

use std::io::{self, Write};

use flameox_extractors::perfetto::proto::{
    Callstack, DebugAnnotation, Frame, InternedData, InternedName, InternedString, Mapping,
    PerfSample, SEQ_INCREMENTAL_STATE_CLEARED, SEQ_NEEDS_INCREMENTAL_STATE, TYPE_COUNTER,
    TYPE_INSTANT, TYPE_SLICE_BEGIN, TYPE_SLICE_END, ThreadDescriptor, TracePacket, TrackDescriptor,
    TrackEvent,
};
use prost::Message;

use crate::rng::SeededRng;

/// What to generate.
#[derive(Debug, Clone)]
pub struct PerfettoSpec {
    pub seed: u64,
    /// Stop once at least this many bytes are written.
    pub bytes: u64,
    pub threads: u64,
    /// `perf_sample` packets per round of `threads × CHUNK` thread packets.
    pub samples_per_round: u64,
}

const FUNCTIONS: &[&str] = &[
    "MessageLoop::RunTask",
    "Renderer::Draw",
    "Layout::Compute",
    "Paint::Record",
    "Raster::Tile",
    "Decode::Image",
    "Net::Read",
    "Net::Parse",
    "Db::Query",
    "Db::Commit",
    "Json::Serialize",
    "Json::Parse",
    "Cache::Lookup",
    "Cache::Insert",
    "Alloc::Grow",
    "Gc::Mark",
    "Gc::Sweep",
    "Io::Flush",
    "Io::Write",
    "Compress::Deflate",
];
const CATEGORIES: &[&str] = &["app", "render", "net", "db", "gc"];
const SAMPLED: &[&str] = &[
    "main",
    "run_loop",
    "dispatch",
    "handle_request",
    "parse_json",
    "memcpy",
    "hash_bytes",
    "write_all",
    "poll",
    "epoll_wait",
];
/// Packets per sequence between incremental-state resets.
const RESET_EVERY: u64 = 20_000;
/// Packets a sequence writes before the next sequence's chunk.
const CHUNK: u64 = 64;
const SAMPLER_SEQUENCE: u32 = 1;
const COUNTER_TRACK: u64 = 9_000;

fn interned_track_data() -> InternedData {
    let named = |items: &[&str]| -> Vec<InternedName> {
        items
            .iter()
            .enumerate()
            .map(|(i, n)| InternedName {
                iid: Some(i as u64 + 1),
                name: Some(n.as_bytes().to_vec()),
            })
            .collect()
    };
    InternedData {
        event_names: named(FUNCTIONS),
        event_categories: named(CATEGORIES),
        debug_annotation_names: named(&["bytes", "request_id", "phase"]),
        ..Default::default()
    }
}

fn interned_sampler_data() -> InternedData {
    let strings = |items: &[&str]| -> Vec<InternedString> {
        items
            .iter()
            .enumerate()
            .map(|(i, n)| InternedString {
                iid: Some(i as u64 + 1),
                str: Some(n.as_bytes().to_vec()),
            })
            .collect()
    };
    let frames = (0..SAMPLED.len() as u64)
        .map(|i| Frame {
            iid: Some(i + 1),
            function_name_id: Some(i + 1),
            mapping_id: Some(1),
            rel_pc: Some(0x1000 + i * 0x40),
        })
        .collect();
    // Callstacks: main → run_loop → dispatch → one of the leaves (+ depth).
    let callstacks = (0..16u64)
        .map(|i| {
            let mut ids = vec![1, 2, 3];
            ids.push(4 + i % 3);
            if i >= 8 {
                ids.push(7 + i % 4);
            }
            Callstack {
                iid: Some(i + 1),
                frame_ids: ids,
            }
        })
        .collect();
    InternedData {
        function_names: strings(SAMPLED),
        mapping_paths: strings(&["usr", "bin", "app"]),
        mappings: vec![Mapping {
            iid: Some(1),
            path_string_ids: vec![1, 2, 3],
            ..Default::default()
        }],
        frames,
        callstacks,
        ..Default::default()
    }
}

/// One thread's writer state.
struct Thread {
    sequence: u32,
    uuid: u64,
    tid: i32,
    ts: u64,
    open: Vec<u64>,
    written: u64,
}

struct Out<W: Write> {
    out: W,
    bytes: u64,
    buf: Vec<u8>,
}

impl<W: Write> Out<W> {
    fn packet(&mut self, p: &TracePacket) -> io::Result<()> {
        self.buf.clear();
        self.buf.push(0x0a);
        p.encode_length_delimited(&mut self.buf)
            .map_err(|e| io::Error::other(e.to_string()))?;
        self.out.write_all(&self.buf)?;
        self.bytes += self.buf.len() as u64;
        Ok(())
    }
}

/// Writes the trace; returns (packets, bytes).
pub fn write_perfetto<W: Write>(spec: &PerfettoSpec, out: W) -> io::Result<(u64, u64)> {
    let mut rng = SeededRng::new(spec.seed);
    let mut out = Out {
        out,
        bytes: 0,
        buf: Vec::with_capacity(1024),
    };
    let pid = 4242;
    let mut threads: Vec<Thread> = (0..spec.threads.max(1))
        .map(|i| Thread {
            sequence: 10 + i as u32,
            uuid: 100 + i,
            tid: pid + 1 + i as i32,
            ts: 1_000_000_000 + rng.range(0, 1000),
            open: Vec::new(),
            written: 0,
        })
        .collect();
    let counter = TrackDescriptor {
        uuid: Some(COUNTER_TRACK),
        name: Some(b"queue depth".to_vec()),
        counter: Some(Default::default()),
        ..Default::default()
    };
    out.packet(&TracePacket {
        trusted_packet_sequence_id: Some(2),
        track_descriptor: Some(Box::new(counter)),
        ..Default::default()
    })?;
    out.packet(&TracePacket {
        trusted_packet_sequence_id: Some(SAMPLER_SEQUENCE),
        sequence_flags: Some(SEQ_INCREMENTAL_STATE_CLEARED),
        interned_data: Some(Box::new(interned_sampler_data())),
        ..Default::default()
    })?;
    let mut packets = 2u64;
    let mut sample_ts = 1_000_000_000u64;
    while out.bytes < spec.bytes {
        for t in threads.iter_mut() {
            for _ in 0..CHUNK {
                packets += write_thread_packet(&mut out, &mut rng, t, pid)?;
            }
        }
        // The sampler: a few samples per round, on random threads.
        for _ in 0..spec.samples_per_round {
            sample_ts += rng.range(900_000, 1_100_000) / spec.samples_per_round.max(1);
            let t = &threads[rng.range(0, threads.len() as u64) as usize];
            packets += 1;
            out.packet(&TracePacket {
                timestamp: Some(sample_ts),
                trusted_packet_sequence_id: Some(SAMPLER_SEQUENCE),
                sequence_flags: Some(SEQ_NEEDS_INCREMENTAL_STATE),
                perf_sample: Some(Box::new(PerfSample {
                    cpu: Some(rng.range(0, 2) as u32),
                    pid: Some(pid as u32),
                    tid: Some(t.tid as u32),
                    callstack_iid: Some(rng.range(1, 17)),
                    ..Default::default()
                })),
                ..Default::default()
            })?;
        }
    }
    // Close what is open so every slice has an end.
    for t in threads.iter_mut() {
        while t.open.pop().is_some() {
            t.ts += 1_000;
            out.packet(&event_packet(t, TYPE_SLICE_END, None, false))?;
            packets += 1;
        }
    }
    out.out.flush()?;
    Ok((packets, out.bytes))
}

fn event_packet(t: &Thread, kind: i32, name: Option<u64>, cleared: bool) -> TracePacket {
    TracePacket {
        timestamp: Some(t.ts),
        trusted_packet_sequence_id: Some(t.sequence),
        sequence_flags: Some(if cleared {
            SEQ_INCREMENTAL_STATE_CLEARED
        } else {
            SEQ_NEEDS_INCREMENTAL_STATE
        }),
        track_event: Some(Box::new(TrackEvent {
            r#type: Some(kind),
            track_uuid: Some(t.uuid),
            name_iid: name,
            ..Default::default()
        })),
        ..Default::default()
    }
}

/// Writes one thread packet (preceded by a reset packet every
/// `RESET_EVERY`); returns how many packets were written.
fn write_thread_packet<W: Write>(
    out: &mut Out<W>,
    rng: &mut SeededRng,
    t: &mut Thread,
    pid: i32,
) -> io::Result<u64> {
    t.ts += rng.range(200, 5_000);
    let mut written = 1;
    if t.written.is_multiple_of(RESET_EVERY) {
        written += 1;
        // (Re)start the sequence: descriptor, interning tables.
        out.packet(&TracePacket {
            trusted_packet_sequence_id: Some(t.sequence),
            sequence_flags: Some(SEQ_INCREMENTAL_STATE_CLEARED),
            interned_data: Some(Box::new(interned_track_data())),
            track_descriptor: Some(Box::new(TrackDescriptor {
                uuid: Some(t.uuid),
                thread: Some(ThreadDescriptor {
                    pid: Some(pid),
                    tid: Some(t.tid),
                    thread_name: Some(format!("worker-{}", t.tid - pid).into_bytes()),
                    ..Default::default()
                }),
                ..Default::default()
            })),
            ..Default::default()
        })?;
    }
    t.written += 1;
    let roll = rng.range(0, 100);
    let packet = if roll < 2 {
        let mut p = event_packet(t, TYPE_INSTANT, Some(rng.range(1, 21)), false);
        if let Some(e) = p.track_event.as_mut() {
            e.category_iids = vec![rng.range(1, 6)];
        }
        p
    } else if roll < 5 {
        let mut p = event_packet(t, TYPE_COUNTER, None, false);
        if let Some(e) = p.track_event.as_mut() {
            e.track_uuid = Some(COUNTER_TRACK);
            e.counter_value = Some(rng.range(0, 500) as i64);
        }
        p
    } else if !t.open.is_empty() && (t.open.len() >= 6 || roll < 52) {
        t.open.pop();
        event_packet(t, TYPE_SLICE_END, None, false)
    } else {
        // Call trees are structured: a function calls one of three others
        // (roots: any), so distinct stacks stay bounded as in real code.
        let n = FUNCTIONS.len() as u64;
        let name = match t.open.last() {
            Some(&parent) => (parent * 3 + rng.range(0, 3)) % n + 1,
            None => rng.range(1, n + 1),
        };
        t.open.push(name);
        let mut p = event_packet(t, TYPE_SLICE_BEGIN, Some(name), false);
        if let Some(e) = p.track_event.as_mut() {
            // A function always logs under its subsystem's category.
            e.category_iids = vec![name % CATEGORIES.len() as u64 + 1];
            e.debug_annotations = vec![
                DebugAnnotation {
                    name_iid: Some(1),
                    uint_value: Some(rng.range(0, 1 << 20)),
                    ..Default::default()
                },
                DebugAnnotation {
                    name_iid: Some(2),
                    int_value: Some(rng.range(0, 1_000_000) as i64),
                    ..Default::default()
                },
            ];
        }
        p
    };
    out.packet(&packet)?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::RowCounts;
    use flameox_extractors::{EvidenceTable, ExtractOptions, NoObserver, extract_perfetto};

    #[test]
    fn same_seed_same_bytes_and_the_extractor_reads_all_of_it() {
        let spec = PerfettoSpec {
            seed: 3,
            bytes: 2 << 20,
            threads: 3,
            samples_per_round: 8,
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let (packets, bytes) = write_perfetto(&spec, &mut a).expect("write");
        write_perfetto(&spec, &mut b).expect("write");
        assert_eq!(a, b);
        assert_eq!(bytes, a.len() as u64);
        let mut rows = RowCounts::default();
        let options = ExtractOptions::new("r", "a");
        let summary =
            extract_perfetto(a.as_slice(), &options, &mut rows, &NoObserver).expect("extract");
        assert!(summary.limitations.is_empty(), "{:?}", summary.limitations);
        assert_eq!(summary.input_events, packets);
        assert!(rows.get(EvidenceTable::TraceEvents) > 10_000);
        assert!(summary.coverage["callstack_samples"]);
    }
}
