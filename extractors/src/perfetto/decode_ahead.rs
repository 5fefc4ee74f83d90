//! Packets framed and decoded on a thread of their own, a batch ahead of
//! the dispatch that applies them.
//!
//! A Perfetto import spent its first half on one core: framing, the walk
//! over each packet's fields and prost's merge, then the dispatch that
//! interns, converts clocks and stores events (`docs/performance.md`,
//! "Spill runs: …": decode ≈ 2.0 s of `p150`'s 4–5 s). The first three need
//! nothing of the decoder's state, so thread `flameox-decode` does them
//! and hands [`DecodedPacket`]s over in batches; the dispatch stays on the
//! calling thread, in the input's order, so every table is what the single
//! thread produced. Batches come back emptied, and their packets keep
//! their boxed sub-messages and list capacities for the next packets, as
//! the single-thread path did with one spare of each.

use std::io::{self, BufRead};
use std::sync::mpsc::{Receiver, Sender, SyncSender};

use super::proto::{self, PerfSample, TracePacket, TrackEvent};
use super::reader::{Next, PacketReader, for_each_field};

/// Packets per batch; a batch is also cut after [`BATCH_BYTES`].
const BATCH_PACKETS: usize = 256;
/// Packet bytes per batch (a larger packet goes alone).
const BATCH_BYTES: usize = 1 << 20;
/// Batches decoded ahead of the dispatch, beside the one being filled and
/// the one being applied.
const BATCHES_AHEAD: usize = 2;
/// Boxed sub-messages kept for reuse, of each kind.
const SPARES_KEPT: usize = 4 * BATCH_PACKETS;

/// Why a packet was skipped.
#[derive(Debug)]
pub enum Malformed {
    /// prost refused it.
    Decode(prost::DecodeError),
    /// prost took it, but its top-level fields are not well-formed.
    Fields,
}

/// One packet as the dispatch needs it.
#[derive(Default)]
pub struct DecodedPacket {
    pub packet: TracePacket,
    /// The packet's data fields, each once (a packet has one: its oneof;
    /// more are counted up to four).
    fields: [u32; 4],
    field_count: u8,
    pub malformed: Option<Malformed>,
}

impl DecodedPacket {
    pub fn fields(&self) -> &[u32] {
        &self.fields[..usize::from(self.field_count)]
    }
}

/// Boxed sub-messages of earlier packets, cleared and decoded into again:
/// a box and its lists per packet were a tenth of the decode.
#[derive(Default)]
// Boxed on purpose: the boxes themselves go back into `TracePacket`s,
// whose sub-messages are `Option<Box<_>>`.
#[allow(clippy::vec_box)]
pub struct Spares {
    events: Vec<Box<TrackEvent>>,
    samples: Vec<Box<PerfSample>>,
}

impl Spares {
    /// Takes the boxes of a packet that has been applied.
    fn reclaim(&mut self, packet: &mut TracePacket) {
        if let Some(e) = packet.track_event.take()
            && self.events.len() < SPARES_KEPT
        {
            self.events.push(e);
        }
        if let Some(s) = packet.perf_sample.take()
            && self.samples.len() < SPARES_KEPT
        {
            self.samples.push(s);
        }
    }
}

/// Decodes `bytes` into `out`, reusing `out`'s and `spares`' boxes.
pub fn decode_into(bytes: &[u8], out: &mut DecodedPacket, spares: &mut Spares) {
    spares.reclaim(&mut out.packet);
    prost::Message::clear(&mut out.packet);
    out.malformed = None;
    let mut seen = [0u32; 4];
    let mut n_seen = 0;
    let well_formed = for_each_field(bytes, |f| {
        if proto::is_packet_envelope_field(f) || seen[..n_seen].contains(&f) {
            return;
        }
        if n_seen < seen.len() {
            seen[n_seen] = f;
            n_seen += 1;
        }
    });
    out.fields = seen;
    out.field_count = n_seen as u8;
    let seen = &seen[..n_seen];
    if seen.contains(&proto::TRACK_EVENT_FIELD) {
        out.packet.track_event = spares.events.pop().map(|mut e| {
            prost::Message::clear(&mut *e);
            e
        });
    }
    if seen.contains(&proto::PERF_SAMPLE_FIELD) {
        out.packet.perf_sample = spares.samples.pop().map(|mut s| {
            prost::Message::clear(&mut *s);
            s
        });
    }
    // Merging into cleared messages is decoding them afresh.
    out.malformed = match (well_formed, prost::Message::merge(&mut out.packet, bytes)) {
        (_, Err(e)) => Some(Malformed::Decode(e)),
        (false, Ok(())) => Some(Malformed::Fields),
        (true, Ok(())) => None,
    };
}

/// A batch of decoded packets: the first `len` of `packets` are new.
pub struct Batch {
    pub packets: Vec<DecodedPacket>,
    pub len: usize,
    /// Input bytes consumed once this batch was framed.
    pub offset: u64,
}

/// How the input ended, after the last batch.
pub struct Ending {
    /// `Next::End`, `Next::Truncated` or `Next::Corrupt`.
    pub how: Next,
    pub offset: u64,
    /// Top-level fields other than packets that were skipped.
    pub skipped_fields: u64,
}

/// What the decoding thread sends.
pub enum Ahead {
    Batch(Batch),
    End(Ending),
    Failed(io::Error),
}

/// The channels of one decoding thread, seen from the dispatch.
pub struct DecodeAhead {
    batches: Receiver<Ahead>,
    emptied: Sender<Vec<DecodedPacket>>,
}

impl DecodeAhead {
    /// Starts thread `flameox-decode` on `reader` inside `scope`.
    pub fn start<'scope, 'env, R: BufRead + Send + 'scope>(
        scope: &'scope std::thread::Scope<'scope, 'env>,
        reader: R,
    ) -> io::Result<Self> {
        let (sender, batches) = std::sync::mpsc::sync_channel(BATCHES_AHEAD);
        let (emptied, returned) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("flameox-decode".into())
            .spawn_scoped(scope, move || decode_all(reader, sender, returned))?;
        Ok(DecodeAhead { batches, emptied })
    }

    /// The next batch or the end; a thread that stopped without saying
    /// why (a panic) is an error.
    pub fn next(&self) -> Ahead {
        self.batches.recv().unwrap_or_else(|_| {
            Ahead::Failed(io::Error::other("the Perfetto decoding thread stopped"))
        })
    }

    /// Gives an applied batch back for reuse.
    pub fn give_back(&self, packets: Vec<DecodedPacket>) {
        // The thread may have finished; then the batch is dropped here.
        let _ = self.emptied.send(packets);
    }
}

/// The decoding thread: frames and decodes every packet of `reader` and
/// sends them in batches, then how the input ended. It stops early when
/// the dispatch hangs up (an error or a cancellation there).
fn decode_all<R: BufRead>(
    reader: R,
    sender: SyncSender<Ahead>,
    returned: Receiver<Vec<DecodedPacket>>,
) {
    let mut reader = PacketReader::new(reader);
    let mut spares = Spares::default();
    let mut batch = Vec::new();
    let mut len = 0;
    let mut bytes = 0;
    loop {
        let next = reader.next_packet();
        if !matches!(next, Ok(Next::Packet)) {
            // The packets before the end or the error go first.
            if len > 0 {
                let last = Batch {
                    packets: batch,
                    len,
                    offset: reader.offset(),
                };
                if sender.send(Ahead::Batch(last)).is_err() {
                    return;
                }
            }
            let _ = sender.send(match next {
                Ok(how) => Ahead::End(Ending {
                    how,
                    offset: reader.offset(),
                    skipped_fields: reader.skipped_fields,
                }),
                Err(e) => Ahead::Failed(e),
            });
            return;
        }
        if len == 0 {
            batch = returned.try_recv().unwrap_or_default();
        }
        if len == batch.len() {
            batch.push(DecodedPacket::default());
        }
        decode_into(&reader.packet, &mut batch[len], &mut spares);
        len += 1;
        bytes += reader.packet.len();
        if len == BATCH_PACKETS || bytes >= BATCH_BYTES {
            let full = Batch {
                packets: std::mem::take(&mut batch),
                len,
                offset: reader.offset(),
            };
            if sender.send(Ahead::Batch(full)).is_err() {
                return;
            }
            (len, bytes) = (0, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `Trace` of `n` packets stamped 0..n, each with a track event.
    fn trace(n: u64) -> Vec<u8> {
        let mut out = Vec::new();
        for ts in 0..n {
            let packet = TracePacket {
                timestamp: Some(ts),
                track_event: Some(Box::default()),
                ..Default::default()
            };
            let bytes = prost::Message::encode_to_vec(&packet);
            out.push(0x0a);
            crate::varint::put_u64(&mut out, bytes.len() as u64);
            out.extend_from_slice(&bytes);
        }
        out
    }

    /// Every packet's stamp in the order batches bring them, and the end.
    fn drain(input: &[u8]) -> (Vec<u64>, Result<Ending, io::Error>) {
        std::thread::scope(|scope| {
            let ahead = DecodeAhead::start(scope, input).unwrap();
            let mut stamps = Vec::new();
            loop {
                match ahead.next() {
                    Ahead::Batch(batch) => {
                        assert!(batch.len <= BATCH_PACKETS);
                        for p in &batch.packets[..batch.len] {
                            assert!(p.malformed.is_none());
                            assert_eq!(p.fields(), &[proto::TRACK_EVENT_FIELD]);
                            stamps.push(p.packet.timestamp.unwrap());
                        }
                        ahead.give_back(batch.packets);
                    }
                    Ahead::End(ending) => return (stamps, Ok(ending)),
                    Ahead::Failed(e) => return (stamps, Err(e)),
                }
            }
        })
    }

    #[test]
    fn batches_bring_every_packet_in_input_order_then_the_end() {
        let bytes = trace(2_000);
        let (stamps, ending) = drain(&bytes);
        assert_eq!(stamps, (0..2_000).collect::<Vec<_>>());
        let ending = ending.unwrap();
        assert_eq!(ending.how, Next::End);
        assert_eq!(ending.offset, bytes.len() as u64);

        // Cut inside the last packet: the others, then a truncation.
        let (stamps, ending) = drain(&bytes[..bytes.len() - 1]);
        assert_eq!(stamps.len(), 1_999);
        assert_eq!(ending.unwrap().how, Next::Truncated);
    }

    #[test]
    fn an_input_error_comes_back_after_the_packets_before_it() {
        struct Failing(std::io::Cursor<Vec<u8>>);
        impl io::Read for Failing {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                match self.0.read(buf)? {
                    0 => Err(io::Error::other("the disk went away")),
                    n => Ok(n),
                }
            }
        }
        let input = io::BufReader::new(Failing(std::io::Cursor::new(trace(600))));
        let (stamps, ending) = std::thread::scope(|scope| {
            let ahead = DecodeAhead::start(scope, input).unwrap();
            let mut stamps = 0;
            loop {
                match ahead.next() {
                    Ahead::Batch(batch) => stamps += batch.len,
                    Ahead::End(_) => return (stamps, None),
                    Ahead::Failed(e) => return (stamps, Some(e)),
                }
            }
        });
        assert_eq!(stamps, 600);
        assert_eq!(ending.unwrap().to_string(), "the disk went away");
    }

    #[test]
    fn a_dispatch_that_stops_early_stops_the_thread() {
        let bytes = trace(20_000);
        // The scope only ends once the thread has: hanging up must end it.
        std::thread::scope(|scope| {
            let ahead = DecodeAhead::start(scope, bytes.as_slice()).unwrap();
            assert!(matches!(ahead.next(), Ahead::Batch(_)));
        });
    }

    #[test]
    fn malformed_packets_are_marked_and_boxes_are_reused() {
        let mut spares = Spares::default();
        let mut out = DecodedPacket::default();
        let good = prost::Message::encode_to_vec(&TracePacket {
            timestamp: Some(5),
            track_event: Some(Box::default()),
            ..Default::default()
        });
        decode_into(&good, &mut out, &mut spares);
        assert!(out.malformed.is_none() && out.packet.track_event.is_some());
        let first = out
            .packet
            .track_event
            .as_deref()
            .map(|e| e as *const TrackEvent);
        // The next packet with a track event decodes into the same box.
        decode_into(&good, &mut out, &mut spares);
        let second = out
            .packet
            .track_event
            .as_deref()
            .map(|e| e as *const TrackEvent);
        assert_eq!(first, second);
        // A cut length: prost refuses it and the field walk does too.
        decode_into(&good[..good.len() - 1], &mut out, &mut spares);
        assert!(matches!(out.malformed, Some(Malformed::Decode(_))));
        // No track event now: the box waits among the spares.
        decode_into(&[0x40, 0x07], &mut out, &mut spares);
        assert!(out.malformed.is_none() && out.packet.track_event.is_none());
        assert!(!spares.events.is_empty());
    }
}
