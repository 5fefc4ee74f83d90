//! Framing of a Perfetto `Trace`: the file is the repeated field 1
//! (`TracePacket`) of one message, so packets are read one at a time from a
//! buffered reader — tag, length, bytes — and never the whole file.
//!
//! Other top-level fields are skipped by wire type. A stream that ends
//! inside a packet is reported as truncated (the packets before it are
//! kept); bytes that are not protobuf framing are reported as corrupt.

use std::io::{self, BufRead, Read};

/// A packet larger than this is refused as corrupt (Perfetto's own packets
/// are at most a few MiB; a bigger length is almost always garbage).
pub const MAX_PACKET_BYTES: u64 = 256 << 20;

/// What the next read produced.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// A packet's bytes are in the reader's buffer.
    Packet,
    /// Clean end of input.
    End,
    /// The input stops inside a field.
    Truncated,
    /// The bytes are not a `Trace`'s framing.
    Corrupt(String),
}

/// Reads `TracePacket` payloads from a `Trace`.
pub struct PacketReader<R> {
    reader: R,
    offset: u64,
    pub packet: Vec<u8>,
    /// Top-level fields other than packets that were skipped.
    pub skipped_fields: u64,
}

/// A varint read: the value, or why there is none.
enum Varint {
    Value(u64),
    Eof { clean: bool },
    Invalid,
}

impl<R: BufRead> PacketReader<R> {
    pub fn new(reader: R) -> Self {
        PacketReader {
            reader,
            offset: 0,
            packet: Vec::new(),
            skipped_fields: 0,
        }
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn varint(&mut self) -> io::Result<Varint> {
        let mut value: u64 = 0;
        for i in 0..10 {
            let byte = {
                let buf = self.reader.fill_buf()?;
                match buf.first() {
                    Some(&b) => b,
                    None => return Ok(Varint::Eof { clean: i == 0 }),
                }
            };
            self.reader.consume(1);
            self.offset += 1;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                return Ok(Varint::Value(value));
            }
        }
        Ok(Varint::Invalid)
    }

    /// Skips `n` bytes; false when the input ends first.
    fn skip(&mut self, n: u64) -> io::Result<bool> {
        let copied = io::copy(&mut (&mut self.reader).take(n), &mut io::sink())?;
        self.offset += copied;
        Ok(copied == n)
    }

    /// Reads the next packet into [`PacketReader::packet`].
    pub fn next_packet(&mut self) -> io::Result<Next> {
        loop {
            let at = self.offset;
            let key = match self.varint()? {
                Varint::Value(k) => k,
                Varint::Eof { clean: true } => return Ok(Next::End),
                Varint::Eof { clean: false } => return Ok(Next::Truncated),
                Varint::Invalid => return Ok(Next::Corrupt(format!("bad varint at byte {at}"))),
            };
            let (field, wire) = (key >> 3, key & 7);
            if field == 0 {
                return Ok(Next::Corrupt(format!("field number 0 at byte {at}")));
            }
            match wire {
                0 => match self.varint()? {
                    Varint::Value(_) => {}
                    Varint::Eof { .. } => return Ok(Next::Truncated),
                    Varint::Invalid => {
                        return Ok(Next::Corrupt(format!("bad varint at byte {at}")));
                    }
                },
                1 | 5 => {
                    if !self.skip(if wire == 1 { 8 } else { 4 })? {
                        return Ok(Next::Truncated);
                    }
                }
                2 => {
                    let len = match self.varint()? {
                        Varint::Value(l) => l,
                        Varint::Eof { .. } => return Ok(Next::Truncated),
                        Varint::Invalid => {
                            return Ok(Next::Corrupt(format!("bad length at byte {at}")));
                        }
                    };
                    if len > MAX_PACKET_BYTES {
                        return Ok(Next::Corrupt(format!(
                            "a field of {len} bytes at byte {at} (more than {MAX_PACKET_BYTES})"
                        )));
                    }
                    if field != 1 {
                        self.skipped_fields += 1;
                        if !self.skip(len)? {
                            return Ok(Next::Truncated);
                        }
                        continue;
                    }
                    self.packet.clear();
                    // Most packets lie whole in the buffer: one copy, not
                    // `read_to_end`'s probing reads.
                    let buffered = self.reader.fill_buf()?;
                    if let Some(whole) = usize::try_from(len).ok().and_then(|n| buffered.get(..n)) {
                        self.packet.extend_from_slice(whole);
                        let n = whole.len();
                        self.reader.consume(n);
                        self.offset += len;
                        return Ok(Next::Packet);
                    }
                    let read = (&mut self.reader).take(len).read_to_end(&mut self.packet)?;
                    self.offset += read as u64;
                    if read as u64 != len {
                        return Ok(Next::Truncated);
                    }
                    return Ok(Next::Packet);
                }
                _ => {
                    return Ok(Next::Corrupt(format!(
                        "wire type {wire} of field {field} at byte {at}"
                    )));
                }
            }
            if field == 1 {
                return Ok(Next::Corrupt(format!(
                    "field 1 at byte {at} is not length-delimited"
                )));
            }
            self.skipped_fields += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(payload: &[u8]) -> Vec<u8> {
        let mut out = vec![0x0a, payload.len() as u8];
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn packets_are_framed_and_other_fields_skipped() {
        let mut bytes = packet(&[0x40, 0x05]);
        bytes.extend_from_slice(&[0x10, 0x01]); // field 2 varint
        bytes.extend(packet(&[0x40, 0x06]));
        let mut r = PacketReader::new(bytes.as_slice());
        assert_eq!(r.next_packet().ok(), Some(Next::Packet));
        assert_eq!(r.packet, vec![0x40, 0x05]);
        assert_eq!(r.next_packet().ok(), Some(Next::Packet));
        assert_eq!(r.packet, vec![0x40, 0x06]);
        assert_eq!(r.next_packet().ok(), Some(Next::End));
        assert_eq!(r.skipped_fields, 1);
    }

    #[test]
    fn truncation_and_garbage_are_told_apart() {
        let bytes = packet(&[0x40, 0x05, 0x48]);
        let mut r = PacketReader::new(&bytes[..4]);
        assert_eq!(r.next_packet().ok(), Some(Next::Truncated));
        let mut r = PacketReader::new(&b"{\"traceEvents\": []}"[..]);
        assert!(matches!(r.next_packet(), Ok(Next::Corrupt(_))));
    }
}
