//! `perf_event_attr`: what each recorded event is and, through its
//! `sample_type`, how its samples are laid out. Attrs come from the file's
//! attrs section (with their id arrays), from `HEADER_ATTR` records in pipe
//! mode, and inside the `HEADER_EVENT_DESC` feature. Any attr size is read:
//! fields past the recorded size are zero, fields past ours are ignored.

use std::collections::HashMap;
use std::sync::Arc;

use super::bytes::{ByteReader, Endian};

pub const PERF_TYPE_HARDWARE: u32 = 0;
pub const PERF_TYPE_SOFTWARE: u32 = 1;
pub const PERF_TYPE_TRACEPOINT: u32 = 2;

pub const SAMPLE_IP: u64 = 1 << 0;
pub const SAMPLE_TID: u64 = 1 << 1;
pub const SAMPLE_TIME: u64 = 1 << 2;
pub const SAMPLE_ADDR: u64 = 1 << 3;
pub const SAMPLE_READ: u64 = 1 << 4;
pub const SAMPLE_CALLCHAIN: u64 = 1 << 5;
pub const SAMPLE_ID: u64 = 1 << 6;
pub const SAMPLE_CPU: u64 = 1 << 7;
pub const SAMPLE_PERIOD: u64 = 1 << 8;
pub const SAMPLE_STREAM_ID: u64 = 1 << 9;
pub const SAMPLE_RAW: u64 = 1 << 10;
pub const SAMPLE_BRANCH_STACK: u64 = 1 << 11;
pub const SAMPLE_REGS_USER: u64 = 1 << 12;
pub const SAMPLE_STACK_USER: u64 = 1 << 13;
pub const SAMPLE_WEIGHT: u64 = 1 << 14;
pub const SAMPLE_DATA_SRC: u64 = 1 << 15;
pub const SAMPLE_IDENTIFIER: u64 = 1 << 16;
pub const SAMPLE_TRANSACTION: u64 = 1 << 17;
pub const SAMPLE_REGS_INTR: u64 = 1 << 18;
pub const SAMPLE_PHYS_ADDR: u64 = 1 << 19;
pub const SAMPLE_AUX: u64 = 1 << 20;
pub const SAMPLE_CGROUP: u64 = 1 << 21;
pub const SAMPLE_DATA_PAGE_SIZE: u64 = 1 << 22;
pub const SAMPLE_CODE_PAGE_SIZE: u64 = 1 << 23;
pub const SAMPLE_WEIGHT_STRUCT: u64 = 1 << 24;
/// Every `sample_type` bit this decoder knows how to walk past.
pub const SAMPLE_KNOWN: u64 = (1 << 25) - 1;

pub const FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
pub const FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
pub const FORMAT_ID: u64 = 1 << 2;
pub const FORMAT_GROUP: u64 = 1 << 3;
pub const FORMAT_LOST: u64 = 1 << 4;

/// `branch_sample_type` bits that change the sample layout.
pub const BRANCH_HW_INDEX: u64 = 1 << 17;
pub const BRANCH_COUNTERS: u64 = 1 << 19;

/// The size of the first published `perf_event_attr`.
pub const ATTR_SIZE_VER0: u32 = 64;

/// The parts of a `perf_event_attr` that decoding needs or that name the
/// event; the rest of the attr is not kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventAttr {
    /// `PERF_TYPE_*` (2 = tracepoint: `config` is the tracepoint id).
    pub kind: u32,
    /// The attr size as recorded (0 in some old files means VER0).
    pub size: u32,
    pub config: u64,
    /// `sample_period`, or `sample_freq` when [`EventAttr::freq`].
    pub sample_period_or_freq: u64,
    pub sample_type: u64,
    pub read_format: u64,
    /// The flag bitfield (`disabled` is bit 0), in little-endian bit order
    /// whatever the file's byte order.
    pub flags: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub clockid: i32,
    pub sample_regs_intr: u64,
}

impl EventAttr {
    /// Reads an attr from its bytes (`bytes` may be longer or shorter than
    /// today's 136; missing fields read as zero). `None` when fewer than the
    /// 8 bytes of `type` and `size` are there.
    pub fn parse(bytes: &[u8], endian: Endian) -> Option<EventAttr> {
        let mut head = ByteReader::new(bytes, endian);
        let kind = head.u32()?;
        let size = head.u32()?;
        let declared = if size == 0 { ATTR_SIZE_VER0 } else { size };
        let used = bytes
            .get(..(declared as usize).min(bytes.len()))
            .unwrap_or(bytes);
        let u64_at = |off: usize| -> u64 {
            used.get(off..off + 8)
                .and_then(|b| b.try_into().ok())
                .map_or(0, |b| endian.u64(b))
        };
        let u32_at = |off: usize| -> u32 {
            used.get(off..off + 4)
                .and_then(|b| b.try_into().ok())
                .map_or(0, |b| endian.u32(b))
        };
        let raw_flags = u64_at(40);
        // A big-endian compiler allocates bitfields from the top bit, so the
        // first flag (`disabled`) is bit 63 of the big-endian word.
        let flags = match endian {
            Endian::Little => raw_flags,
            Endian::Big => raw_flags.reverse_bits(),
        };
        Some(EventAttr {
            kind,
            size,
            config: u64_at(8),
            sample_period_or_freq: u64_at(16),
            sample_type: u64_at(24),
            read_format: u64_at(32),
            flags,
            branch_sample_type: u64_at(72),
            sample_regs_user: u64_at(80),
            sample_stack_user: u32_at(88),
            clockid: u32_at(92) as i32,
            sample_regs_intr: u64_at(96),
        })
    }

    fn flag(&self, bit: u32) -> bool {
        self.flags & (1 << bit) != 0
    }
    /// `sample_period_or_freq` is a frequency.
    pub fn freq(&self) -> bool {
        self.flag(10)
    }
    /// Non-sample records carry a `sample_id` trailer.
    pub fn sample_id_all(&self) -> bool {
        self.flag(18)
    }
    /// Timestamps are in `clockid`'s clock.
    pub fn use_clockid(&self) -> bool {
        self.flag(25)
    }
    pub fn has(&self, sample_bit: u64) -> bool {
        self.sample_type & sample_bit != 0
    }

    /// Bytes of the `sample_id` trailer of non-sample records (0 without
    /// `sample_id_all`).
    pub fn sample_id_trailer_size(&self) -> usize {
        if !self.sample_id_all() {
            return 0;
        }
        let bits = [
            SAMPLE_TID,
            SAMPLE_TIME,
            SAMPLE_ID,
            SAMPLE_STREAM_ID,
            SAMPLE_CPU,
            SAMPLE_IDENTIFIER,
        ];
        bits.iter().filter(|&&b| self.has(b)).count() * 8
    }

    /// The index (in u64 words from the start of a sample body) of the
    /// event id, if samples carry one.
    pub fn sample_id_word(&self) -> Option<usize> {
        if self.has(SAMPLE_IDENTIFIER) {
            return Some(0);
        }
        if !self.has(SAMPLE_ID) {
            return None;
        }
        let before = [SAMPLE_IP, SAMPLE_TID, SAMPLE_TIME, SAMPLE_ADDR];
        Some(before.iter().filter(|&&b| self.has(b)).count())
    }

    /// The index (in u64 words back from the end of a non-sample record)
    /// of the event id in its `sample_id` trailer, 1 being the last word.
    pub fn trailer_id_word_from_end(&self) -> Option<usize> {
        if !self.sample_id_all() {
            return None;
        }
        if self.has(SAMPLE_IDENTIFIER) {
            return Some(1);
        }
        if !self.has(SAMPLE_ID) {
            return None;
        }
        let after = [SAMPLE_STREAM_ID, SAMPLE_CPU];
        Some(1 + after.iter().filter(|&&b| self.has(b)).count())
    }
}

/// One recorded event: its attr, the ids the kernel gave its instances
/// (one per CPU/thread) and its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventInfo {
    pub attr: EventAttr,
    pub ids: Vec<u64>,
    /// From `HEADER_EVENT_DESC` (or an `EVENT_UPDATE` record in pipe mode),
    /// or the tracepoint's `system:name` from the tracing data; otherwise
    /// `"<type>:<config>"`.
    pub name: Arc<str>,
}

/// Events kept per file; attrs past this are ignored (perf records a few).
pub const MAX_EVENTS: usize = 4096;

/// The recorded events and how to find which one a record belongs to.
#[derive(Debug, Clone, Default)]
pub struct EventTable {
    pub events: Vec<EventInfo>,
    by_id: HashMap<u64, usize>,
}

impl EventTable {
    /// Adds an event; `None` (and nothing added) past [`MAX_EVENTS`].
    pub fn push(&mut self, attr: EventAttr, ids: Vec<u64>) -> Option<usize> {
        let index = self.events.len();
        if index >= MAX_EVENTS {
            return None;
        }
        for &id in &ids {
            self.by_id.entry(id).or_insert(index);
        }
        let name = Arc::from(default_name(&attr));
        self.events.push(EventInfo { attr, ids, name });
        Some(index)
    }

    pub fn index_of_id(&self, id: u64) -> Option<usize> {
        self.by_id.get(&id).copied()
    }

    /// Names events from `HEADER_EVENT_DESC` entries, matched by id (or by
    /// position when the table has no ids).
    pub fn apply_names(&mut self, descs: &[(String, Vec<u64>)]) {
        for (pos, (name, ids)) in descs.iter().enumerate() {
            let index = ids
                .iter()
                .find_map(|id| self.index_of_id(*id))
                .or_else(|| (self.events.len() == descs.len()).then_some(pos));
            if let Some(ev) = index.and_then(|i| self.events.get_mut(i))
                && *ev.name != **name
            {
                ev.name = Arc::from(name.as_str());
            }
        }
    }

    /// Names the event with instance id `id` (pipe-mode `EVENT_UPDATE`).
    pub fn set_name_of_id(&mut self, id: u64, name: &str) {
        if let Some(ev) = self.index_of_id(id).and_then(|i| self.events.get_mut(i)) {
            ev.name = Arc::from(name);
        }
    }

    /// The event a sample body belongs to.
    pub fn event_of_sample(&self, body: &[u8], endian: Endian) -> Option<usize> {
        let first = &self.events.first()?.attr;
        if self.events.len() == 1 {
            return Some(0);
        }
        let word = first.sample_id_word()?;
        let mut r = ByteReader::new(body, endian);
        r.skip(word.checked_mul(8)?)?;
        self.index_of_id(r.u64()?)
    }

    /// The event a non-sample record's `sample_id` trailer belongs to.
    pub fn event_of_trailer(&self, body: &[u8], endian: Endian) -> Option<usize> {
        let first = &self.events.first()?.attr;
        if self.events.len() == 1 {
            return Some(0);
        }
        let back = first.trailer_id_word_from_end()?;
        let start = body.len().checked_sub(back.checked_mul(8)?)?;
        let mut r = ByteReader::new(body.get(start..)?, endian);
        self.index_of_id(r.u64()?)
    }
}

fn default_name(attr: &EventAttr) -> String {
    match attr.kind {
        PERF_TYPE_HARDWARE => format!("hardware:{}", attr.config),
        PERF_TYPE_SOFTWARE => format!("software:{}", attr.config),
        PERF_TYPE_TRACEPOINT => format!("tracepoint:{}", attr.config),
        kind => format!("{kind}:{:#x}", attr.config),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr_bytes(endian: Endian, sample_type: u64, flags_le: u64) -> Vec<u8> {
        let mut b = vec![0u8; 128];
        let put32 = |b: &mut Vec<u8>, off: usize, v: u32| {
            let bytes = match endian {
                Endian::Little => v.to_le_bytes(),
                Endian::Big => v.to_be_bytes(),
            };
            b[off..off + 4].copy_from_slice(&bytes);
        };
        let put64 = |b: &mut Vec<u8>, off: usize, v: u64| {
            let bytes = match endian {
                Endian::Little => v.to_le_bytes(),
                Endian::Big => v.to_be_bytes(),
            };
            b[off..off + 8].copy_from_slice(&bytes);
        };
        put32(&mut b, 0, 2);
        put32(&mut b, 4, 128);
        put64(&mut b, 8, 0x174);
        put64(&mut b, 24, sample_type);
        let raw_flags = match endian {
            Endian::Little => flags_le,
            Endian::Big => flags_le.reverse_bits(),
        };
        put64(&mut b, 40, raw_flags);
        b
    }

    #[test]
    fn attr_reads_the_same_in_both_byte_orders() {
        let st = SAMPLE_IDENTIFIER | SAMPLE_TID | SAMPLE_TIME | SAMPLE_CPU | SAMPLE_RAW;
        let flags = (1 << 18) | (1 << 10) | 1;
        let le = EventAttr::parse(&attr_bytes(Endian::Little, st, flags), Endian::Little);
        let be = EventAttr::parse(&attr_bytes(Endian::Big, st, flags), Endian::Big);
        assert_eq!(le, be);
        let a = le.unwrap_or_default();
        assert_eq!(a.kind, PERF_TYPE_TRACEPOINT);
        assert_eq!(a.config, 0x174);
        assert!(a.sample_id_all() && a.freq() && !a.use_clockid());
        assert_eq!(a.sample_id_trailer_size(), 32);
        assert_eq!(a.sample_id_word(), Some(0));
        assert_eq!(a.trailer_id_word_from_end(), Some(1));
    }

    #[test]
    fn short_and_tiny_attrs() {
        let st = SAMPLE_IP | SAMPLE_TID | SAMPLE_ID | SAMPLE_CPU;
        let mut b = attr_bytes(Endian::Little, st, 1 << 18);
        b[4..8].copy_from_slice(&64u32.to_le_bytes());
        let a = EventAttr::parse(&b[..64], Endian::Little).unwrap_or_default();
        assert_eq!(a.sample_type, st);
        assert_eq!(a.branch_sample_type, 0);
        assert_eq!(a.sample_id_word(), Some(2));
        assert_eq!(a.trailer_id_word_from_end(), Some(2));
        assert_eq!(EventAttr::parse(&b[..7], Endian::Little), None);
    }

    #[test]
    fn events_are_found_by_id() {
        let st = SAMPLE_IDENTIFIER | SAMPLE_IP;
        let a = EventAttr::parse(&attr_bytes(Endian::Little, st, 1 << 18), Endian::Little)
            .unwrap_or_default();
        let mut t = EventTable::default();
        assert_eq!(t.push(a.clone(), vec![10, 11]), Some(0));
        assert_eq!(t.push(a.clone(), vec![12]), Some(1));
        for _ in 2..MAX_EVENTS {
            t.push(a.clone(), Vec::new());
        }
        assert_eq!(t.push(a, vec![13]), None);
        assert_eq!(t.index_of_id(13), None);
        t.apply_names(&[("b".into(), vec![12]), ("a".into(), vec![10, 11])]);
        assert_eq!(&*t.events[0].name, "a");
        assert_eq!(&*t.events[1].name, "b");
        t.set_name_of_id(11, "c");
        assert_eq!(&*t.events[0].name, "c");
        let body = 12u64.to_le_bytes();
        assert_eq!(t.event_of_sample(&body, Endian::Little), Some(1));
        let trailer = [0u8, 0, 0, 0, 0, 0, 0, 0, 11, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(t.event_of_trailer(&trailer, Endian::Little), Some(0));
        assert_eq!(t.event_of_sample(&[1, 2], Endian::Little), None);
    }
}
