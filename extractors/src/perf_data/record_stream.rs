//! Framing of the data section: a stream of records, each an 8-byte
//! `perf_event_header` (`type`, `misc`, `size`) and `size - 8` bytes of
//! body, read one at a time from any `Read` so a large data section is
//! never held in memory. Two perf-tool records carry a payload after
//! their `size` bytes (pipe-mode tracing data, AUX-area trace data); the
//! caller reads or skips it with [`RecordStream::read_payload`] /
//! [`RecordStream::skip_payload`].

use std::io::Read;

use super::bytes::Endian;
use super::error::PerfDataError;

/// `perf_event_header`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    /// `PERF_RECORD_*`.
    pub kind: u32,
    pub misc: u16,
    /// Bytes of the record including this header.
    pub size: u16,
}

/// Reads records from `reader`, up to `limit` bytes (file mode: the data
/// section's size) or to the end of input (pipe mode).
pub struct RecordStream<R: Read> {
    reader: R,
    endian: Endian,
    limit: Option<u64>,
    /// Offset in the file of the next unread byte.
    offset: u64,
    body: Vec<u8>,
}

impl<R: Read> RecordStream<R> {
    /// `offset` is where `reader` is in the file (for error messages and
    /// record offsets).
    pub fn new(reader: R, endian: Endian, offset: u64, limit: Option<u64>) -> Self {
        RecordStream {
            reader,
            endian,
            limit,
            offset,
            body: Vec::with_capacity(512),
        }
    }

    pub fn endian(&self) -> Endian {
        self.endian
    }

    /// Offset in the file of the next unread byte.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The body (after the 8-byte header) of the record last returned.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// Reads up to `buf.len()` bytes, never past the limit; returns how
    /// many (fewer only at the end of input or of the section).
    fn fill(&mut self, buf: &mut [u8]) -> Result<usize, PerfDataError> {
        let cap = match self.limit {
            Some(l) => usize::try_from(l).unwrap_or(usize::MAX).min(buf.len()),
            None => buf.len(),
        };
        let mut got = 0;
        while got < cap {
            let Some(dest) = buf.get_mut(got..cap) else {
                break;
            };
            match self.reader.read(dest) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.offset = self.offset.saturating_add(got as u64);
        if let Some(limit) = self.limit.as_mut() {
            *limit = limit.saturating_sub(got as u64);
        }
        Ok(got)
    }

    /// The next record's header (its body is then in [`Self::body`]), or
    /// `None` at the end of the section / input. The returned offset is
    /// where the record starts.
    pub fn next_record(&mut self) -> Result<Option<(RecordHeader, u64)>, PerfDataError> {
        let start = self.offset;
        if self.limit == Some(0) {
            return Ok(None);
        }
        if let Some(limit) = self.limit
            && limit < 8
        {
            return Err(PerfDataError::Truncated {
                what: "record header",
                offset: start,
                needed: 8,
                available: limit,
            });
        }
        let mut head = [0u8; 8];
        let got = self.fill(&mut head)?;
        if got == 0 {
            return Ok(None);
        }
        if got < 8 {
            return Err(PerfDataError::Truncated {
                what: "record header",
                offset: start,
                needed: 8,
                available: got as u64,
            });
        }
        let [t0, t1, t2, t3, m0, m1, s0, s1] = head;
        let header = RecordHeader {
            kind: self.endian.u32([t0, t1, t2, t3]),
            misc: self.endian.u16([m0, m1]),
            size: self.endian.u16([s0, s1]),
        };
        let body_len = usize::from(header.size).checked_sub(8).ok_or_else(|| {
            PerfDataError::Malformed(format!(
                "record at offset {start} (type {}) has size {} (< 8)",
                header.kind, header.size
            ))
        })?;
        self.body.resize(body_len, 0);
        let mut body = std::mem::take(&mut self.body);
        let got = self.fill(&mut body);
        self.body = body;
        let got = got?;
        if got < body_len {
            return Err(PerfDataError::Truncated {
                what: "record body",
                offset: start,
                needed: u64::from(header.size),
                available: 8 + got as u64,
            });
        }
        Ok(Some((header, start)))
    }

    /// Reads `len` payload bytes that follow the last record. Memory grows
    /// only as bytes actually arrive.
    pub fn read_payload(&mut self, len: u64) -> Result<Vec<u8>, PerfDataError> {
        let start = self.offset;
        let want = self.limit.map_or(len, |l| len.min(l));
        let mut out = Vec::new();
        let got = (&mut self.reader).take(want).read_to_end(&mut out)? as u64;
        self.offset = self.offset.saturating_add(got);
        if let Some(limit) = self.limit.as_mut() {
            *limit = limit.saturating_sub(got);
        }
        if got < len {
            return Err(PerfDataError::Truncated {
                what: "record payload",
                offset: start,
                needed: len,
                available: got,
            });
        }
        Ok(out)
    }

    /// Skips `len` payload bytes that follow the last record.
    pub fn skip_payload(&mut self, len: u64) -> Result<(), PerfDataError> {
        let start = self.offset;
        let want = self.limit.map_or(len, |l| len.min(l));
        let got = std::io::copy(&mut (&mut self.reader).take(want), &mut std::io::sink())?;
        self.offset = self.offset.saturating_add(got);
        if let Some(limit) = self.limit.as_mut() {
            *limit = limit.saturating_sub(got);
        }
        if got < len {
            return Err(PerfDataError::Truncated {
                what: "record payload",
                offset: start,
                needed: len,
                available: got,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(kind: u32, body: &[u8]) -> Vec<u8> {
        let mut v = kind.to_le_bytes().to_vec();
        v.extend(0u16.to_le_bytes());
        v.extend(((body.len() + 8) as u16).to_le_bytes());
        v.extend(body);
        v
    }

    #[test]
    fn frames_records_and_payloads() {
        let mut data = rec(9, &[1; 16]);
        data.extend(rec(66, &[4, 0, 0, 0, 0, 0, 0, 0]));
        data.extend([7u8; 4]);
        data.extend(rec(68, &[]));
        let mut s = RecordStream::new(&data[..], Endian::Little, 100, None);
        let (h, off) = s.next_record().ok().flatten().unwrap_or((
            RecordHeader {
                kind: 0,
                misc: 0,
                size: 0,
            },
            0,
        ));
        assert_eq!((h.kind, h.size, off), (9, 24, 100));
        assert_eq!(s.body(), &[1; 16]);
        let (h, _) = s.next_record().ok().flatten().unwrap_or((
            RecordHeader {
                kind: 0,
                misc: 0,
                size: 0,
            },
            0,
        ));
        assert_eq!(h.kind, 66);
        assert_eq!(s.read_payload(4).ok(), Some(vec![7; 4]));
        let (h, off) = s.next_record().ok().flatten().unwrap_or((
            RecordHeader {
                kind: 0,
                misc: 0,
                size: 0,
            },
            0,
        ));
        assert_eq!((h.kind, off), (68, 100 + 24 + 16 + 4));
        assert!(matches!(s.next_record(), Ok(None)));
    }

    #[test]
    fn damage_is_an_error_not_a_panic() {
        let small = rec(9, &[]);
        let mut bad = small.clone();
        bad[6] = 4; // size 4 < 8
        let mut s = RecordStream::new(&bad[..], Endian::Little, 0, None);
        assert!(matches!(s.next_record(), Err(PerfDataError::Malformed(_))));
        let long = rec(9, &[0; 32]);
        let mut s = RecordStream::new(&long[..20], Endian::Little, 0, None);
        assert!(matches!(
            s.next_record(),
            Err(PerfDataError::Truncated { .. })
        ));
        let mut s = RecordStream::new(&long[..], Endian::Little, 0, Some(12));
        assert!(matches!(
            s.next_record(),
            Err(PerfDataError::Truncated { .. })
        ));
        let mut s = RecordStream::new(&long[..], Endian::Little, 0, Some(4));
        assert!(matches!(
            s.next_record(),
            Err(PerfDataError::Truncated { .. })
        ));
        let mut s = RecordStream::new(&small[..], Endian::Little, 0, None);
        assert!(matches!(s.next_record(), Ok(Some(_))));
        assert!(matches!(
            s.read_payload(u64::MAX),
            Err(PerfDataError::Truncated { .. })
        ));
    }
}
