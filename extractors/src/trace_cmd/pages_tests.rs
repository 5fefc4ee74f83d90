//! Ring-buffer pages built by hand: every event type, both byte orders,
//! lost-event flags and damaged lengths. `PageBuilder` is shared with the
//! file-level tests.

use super::*;

/// Writes one page's events in the kernel's layout.
pub(crate) struct PageBuilder {
    pub endian: Endian,
    pub long: usize,
    pub data: Vec<u8>,
}

impl PageBuilder {
    pub fn new(endian: Endian, long: usize) -> Self {
        PageBuilder {
            endian,
            long,
            data: Vec::new(),
        }
    }
    fn u32(&mut self, v: u32) {
        let b = if self.endian.is_big() {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.data.extend(b);
    }
    pub fn header(&mut self, type_len: u32, delta: u32) {
        let word = if self.endian.is_big() {
            (type_len << 27) | delta
        } else {
            (delta << 5) | type_len
        };
        self.u32(word);
    }
    /// A record; payloads are padded to 4 bytes. Long ones use type 0.
    pub fn record(&mut self, delta: u32, payload: &[u8]) {
        let padded = payload.len().div_ceil(4) * 4;
        if padded <= 112 && padded > 0 {
            self.header((padded / 4) as u32, delta);
        } else {
            self.header(0, delta);
            self.u32(padded as u32 + 4);
        }
        self.data.extend_from_slice(payload);
        self.data
            .resize(self.data.len() + padded - payload.len(), 0);
    }
    pub fn time_extend(&mut self, delta: u64) {
        self.header(30, (delta & ((1 << 27) - 1)) as u32);
        self.u32((delta >> 27) as u32);
    }
    pub fn time_stamp(&mut self, ts: u64) {
        self.header(31, (ts & ((1 << 27) - 1)) as u32);
        self.u32((ts >> 27) as u32);
    }
    /// Padding of `4 + len` bytes: `len` counts the length word itself.
    pub fn padding(&mut self, delta: u32, len: u32) {
        self.header(29, delta);
        self.u32(len);
        self.data
            .resize(self.data.len() + (len as usize).saturating_sub(4), 0);
    }
    /// The page: timestamp, commit word (with `flags` in its top bits),
    /// data, then a stored missed count when given, zero-filled to `size`.
    pub fn page(&self, ts: u64, flags: u64, missed: Option<u64>, size: usize) -> Vec<u8> {
        let big = self.endian.is_big();
        let mut p = Vec::new();
        p.extend(if big {
            ts.to_be_bytes()
        } else {
            ts.to_le_bytes()
        });
        let commit = self.data.len() as u64 | flags;
        let long = |v: u64| -> Vec<u8> {
            match (self.long, big) {
                (4, true) => (v as u32).to_be_bytes().to_vec(),
                (4, false) => (v as u32).to_le_bytes().to_vec(),
                (_, true) => v.to_be_bytes().to_vec(),
                (_, false) => v.to_le_bytes().to_vec(),
            }
        };
        p.extend(long(commit));
        p.extend_from_slice(&self.data);
        if let Some(n) = missed {
            p.extend(long(n));
        }
        p.resize(size.max(p.len()), 0);
        p
    }
}

/// A page's header, its records (ts, payload) and the error that ended it.
type Walk = (PageHeader, Vec<(u64, Vec<u8>)>, Option<PageError>);

fn records(page: &[u8], endian: Endian, long: u8) -> Walk {
    let layout = PageHeaderLayout::for_long_size(long);
    let header = match read_page_header(page, &layout, endian) {
        Ok(h) => h,
        Err(e) => panic!("{e}"),
    };
    let mut cursor = RecordCursor::new(&header);
    let mut out = Vec::new();
    loop {
        match next_record(page, &mut cursor, endian) {
            Ok(Some(r)) => out.push((r.ts, page[r.start..r.start + r.len].to_vec())),
            Ok(None) => return (header, out, None),
            Err(e) => return (header, out, Some(e)),
        }
    }
}

#[test]
fn every_event_type_moves_the_clock_in_both_byte_orders() {
    for (endian, long) in [
        (Endian::Little, 8u8),
        (Endian::Big, 8),
        (Endian::Little, 4),
        (Endian::Big, 4),
    ] {
        let mut b = PageBuilder::new(endian, long as usize);
        b.record(10, b"abcd");
        b.time_extend(1 << 30);
        b.record(5, &[7u8; 200]);
        b.padding(3, 8);
        b.time_stamp(0x0123_4567_89ab);
        b.record(1, b"xy");
        b.padding(0, 0);
        let page = b.page(1000, 0, None, 4096);
        let (h, recs, err) = records(&page, endian, long);
        assert_eq!(err, None);
        assert_eq!(h.missed, Missed::None);
        let got: Vec<_> = recs.iter().map(|(ts, p)| (*ts, p.len())).collect();
        assert_eq!(
            got,
            [
                (1010, 4),
                (1010 + (1 << 30) + 5, 200),
                (0x0123_4567_89ab + 1, 4)
            ],
            "{endian:?} {long}"
        );
        assert_eq!(recs[0].1, b"abcd");
        assert_eq!(&recs[2].1[..2], b"xy");
    }
}

#[test]
fn lost_events_are_read_from_the_commit_flags() {
    let mut b = PageBuilder::new(Endian::Little, 8);
    b.record(1, b"abcd");
    let stored = b.page(0, MISSED_EVENTS | MISSED_STORED, Some(42), 4096);
    assert_eq!(
        records(&stored, Endian::Little, 8).0.missed,
        Missed::Count(42)
    );
    let unknown = b.page(0, MISSED_EVENTS, None, 4096);
    assert_eq!(
        records(&unknown, Endian::Little, 8).0.missed,
        Missed::Unknown
    );
}

#[test]
fn damaged_pages_are_errors_not_panics() {
    let layout = PageHeaderLayout::for_long_size(8);
    assert_eq!(
        read_page_header(&[0u8; 10], &layout, Endian::Little),
        Err(PageError::ShortHeader { len: 10 })
    );
    let mut b = PageBuilder::new(Endian::Little, 8);
    b.record(1, b"abcd");
    let mut page = b.page(0, 0, None, 64);
    page[8] = 200; // commit past the page
    assert!(matches!(
        read_page_header(&page, &layout, Endian::Little),
        Err(PageError::CommitPastEnd { .. })
    ));

    let mut b = PageBuilder::new(Endian::Little, 8);
    b.header(0, 1);
    b.data.extend(2u32.to_le_bytes()); // type-0 length below 4
    let (_, recs, err) = records(&b.page(0, 0, None, 64), Endian::Little, 8);
    assert!(recs.is_empty());
    assert_eq!(err, Some(PageError::BadLength { at: 16, length: 2 }));

    let mut b = PageBuilder::new(Endian::Little, 8);
    b.record(1, b"abcd");
    b.header(20, 1); // 80 bytes announced, none written
    let (_, recs, err) = records(&b.page(0, 0, None, 256), Endian::Little, 8);
    assert_eq!(recs.len(), 1);
    assert_eq!(err, Some(PageError::RecordPastEnd { at: 24 }));

    // Random garbage after a valid header never panics nor loops.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..2000 {
        let mut page = vec![0u8; 128];
        for byte in page.iter_mut().skip(8) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            *byte = seed as u8;
        }
        page[8..16].copy_from_slice(&(seed % 140).to_le_bytes());
        if let Ok(h) = read_page_header(&page, &layout, Endian::Little) {
            let mut c = RecordCursor::new(&h);
            let mut steps = 0;
            while let Ok(Some(_)) = next_record(&page, &mut c, Endian::Little) {
                steps += 1;
                assert!(steps <= 32, "more records than 4-byte slots");
            }
        }
    }
}
