//! The non-sample records that give samples their context: memory maps
//! (`MMAP`, `MMAP2` with inode or build id), thread names (`COMM`, with the
//! exec flag), `FORK`/`EXIT`, lost-event counts and throttling, and the
//! `sample_id` trailer (`pid`/`tid`/time/CPU) that `sample_id_all` appends
//! to each of them. Bodies are given without their 8-byte header.

use super::attrs::{
    EventAttr, SAMPLE_CPU, SAMPLE_ID, SAMPLE_IDENTIFIER, SAMPLE_STREAM_ID, SAMPLE_TID, SAMPLE_TIME,
};
use super::bytes::{ByteReader, Endian, c_string};

pub const RECORD_MMAP: u32 = 1;
pub const RECORD_LOST: u32 = 2;
pub const RECORD_COMM: u32 = 3;
pub const RECORD_EXIT: u32 = 4;
pub const RECORD_THROTTLE: u32 = 5;
pub const RECORD_UNTHROTTLE: u32 = 6;
pub const RECORD_FORK: u32 = 7;
pub const RECORD_SAMPLE: u32 = 9;
pub const RECORD_MMAP2: u32 = 10;
pub const RECORD_LOST_SAMPLES: u32 = 13;
// Records the perf tool writes (64 and up).
pub const RECORD_HEADER_ATTR: u32 = 64;
pub const RECORD_HEADER_EVENT_TYPE: u32 = 65;
pub const RECORD_HEADER_TRACING_DATA: u32 = 66;
pub const RECORD_HEADER_BUILD_ID: u32 = 67;
pub const RECORD_FINISHED_ROUND: u32 = 68;
pub const RECORD_ID_INDEX: u32 = 69;
pub const RECORD_AUXTRACE: u32 = 71;
pub const RECORD_EVENT_UPDATE: u32 = 78;
pub const RECORD_HEADER_FEATURE: u32 = 80;
pub const RECORD_COMPRESSED: u32 = 81;
pub const RECORD_COMPRESSED2: u32 = 83;

pub const MISC_CPUMODE_MASK: u16 = 7;
pub const MISC_KERNEL: u16 = 1;
pub const MISC_USER: u16 = 2;
pub const MISC_GUEST_KERNEL: u16 = 4;
/// `COMM`: the name change comes from an exec. `MMAP*`: a data mapping.
pub const MISC_COMM_EXEC: u16 = 1 << 13;
pub const MISC_MMAP_DATA: u16 = 1 << 13;
/// `MMAP2`: the record carries a build id instead of device and inode.
pub const MISC_MMAP_BUILD_ID: u16 = 1 << 14;

/// The `sample_id` trailer of a non-sample record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SampleId {
    pub pid: Option<i32>,
    pub tid: Option<i32>,
    pub time: Option<u64>,
    pub id: Option<u64>,
    pub cpu: Option<u32>,
}

/// Reads the trailer at the end of `body`, laid out by `attr`.
pub fn parse_sample_id(body: &[u8], attr: &EventAttr, endian: Endian) -> Option<SampleId> {
    let size = attr.sample_id_trailer_size();
    let start = body.len().checked_sub(size)?;
    let mut r = ByteReader::new(body.get(start..)?, endian);
    let mut out = SampleId::default();
    if attr.has(SAMPLE_TID) {
        out.pid = Some(r.i32()?);
        out.tid = Some(r.i32()?);
    }
    if attr.has(SAMPLE_TIME) {
        out.time = Some(r.u64()?);
    }
    if attr.has(SAMPLE_ID) {
        out.id = Some(r.u64()?);
    }
    if attr.has(SAMPLE_STREAM_ID) {
        r.u64()?;
    }
    if attr.has(SAMPLE_CPU) {
        out.cpu = Some(r.u32()?);
        r.u32()?;
    }
    if attr.has(SAMPLE_IDENTIFIER) {
        out.id = Some(r.u64()?);
    }
    Some(out)
}

/// `MMAP` / `MMAP2`: a file (or anonymous region) mapped at `start`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MmapRecord {
    /// -1 for the kernel and its modules.
    pub pid: i32,
    pub tid: i32,
    pub start: u64,
    pub len: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    pub filename: String,
    /// From an `MMAP2` with `PERF_RECORD_MISC_MMAP_BUILD_ID`.
    pub build_id: Option<Vec<u8>>,
    /// `PROT_*` from `MMAP2` (4 = exec).
    pub prot: Option<u32>,
    /// A data (non-exec) mapping (`PERF_RECORD_MISC_MMAP_DATA`).
    pub data: bool,
    /// The cpumode bits of the record's `misc` (1 = kernel).
    pub cpumode: u16,
}

/// Reads `MMAP` (`mmap2 == false`) or `MMAP2`; `trailer` bytes at the end
/// are the `sample_id`.
pub fn parse_mmap(
    body: &[u8],
    misc: u16,
    mmap2: bool,
    trailer: usize,
    endian: Endian,
) -> Option<MmapRecord> {
    let end = body.len().checked_sub(trailer)?;
    let mut r = ByteReader::new(body.get(..end)?, endian);
    let pid = r.i32()?;
    let tid = r.i32()?;
    let start = r.u64()?;
    let len = r.u64()?;
    let pgoff = r.u64()?;
    let mut build_id = None;
    let mut prot = None;
    if mmap2 {
        let ids = r.bytes(24)?;
        if misc & MISC_MMAP_BUILD_ID != 0 {
            let size = usize::from(*ids.first()?).min(20);
            build_id = Some(ids.get(4..4 + size)?.to_vec());
        }
        prot = Some(r.u32()?);
        let _flags = r.u32()?;
    }
    Some(MmapRecord {
        pid,
        tid,
        start,
        len,
        pgoff,
        filename: c_string(r.rest()),
        build_id,
        prot,
        data: misc & MISC_MMAP_DATA != 0,
        cpumode: misc & MISC_CPUMODE_MASK,
    })
}

/// `COMM`: thread `tid` of process `pid` is now called `comm`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommRecord {
    pub pid: i32,
    pub tid: i32,
    pub comm: String,
    /// The name comes from an exec (not a `prctl`/thread rename).
    pub exec: bool,
}

pub fn parse_comm(body: &[u8], misc: u16, trailer: usize, endian: Endian) -> Option<CommRecord> {
    let end = body.len().checked_sub(trailer)?;
    let mut r = ByteReader::new(body.get(..end)?, endian);
    Some(CommRecord {
        pid: r.i32()?,
        tid: r.i32()?,
        comm: c_string(r.rest()),
        exec: misc & MISC_COMM_EXEC != 0,
    })
}

/// `FORK` / `EXIT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskRecord {
    pub pid: i32,
    pub ppid: i32,
    pub tid: i32,
    pub ptid: i32,
    pub time: u64,
}

pub fn parse_task(body: &[u8], endian: Endian) -> Option<TaskRecord> {
    let mut r = ByteReader::new(body, endian);
    Some(TaskRecord {
        pid: r.i32()?,
        ppid: r.i32()?,
        tid: r.i32()?,
        ptid: r.i32()?,
        time: r.u64()?,
    })
}

/// `LOST` (`id`, `lost`), `LOST_SAMPLES` (`lost`) or `THROTTLE` /
/// `UNTHROTTLE` (`time`, `id`): the leading u64 words of the body.
pub fn leading_words<const N: usize>(body: &[u8], endian: Endian) -> Option<[u64; N]> {
    let mut r = ByteReader::new(body, endian);
    let mut out = [0u64; N];
    for w in out.iter_mut() {
        *w = r.u64()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(sample_type: u64) -> EventAttr {
        EventAttr {
            sample_type,
            flags: 1 << 18,
            ..EventAttr::default()
        }
    }

    #[test]
    fn mmap2_with_build_id_and_trailer() {
        let mut b = Vec::new();
        b.extend(7i32.to_le_bytes());
        b.extend(8i32.to_le_bytes());
        b.extend(0x1000u64.to_le_bytes());
        b.extend(0x2000u64.to_le_bytes());
        b.extend(0x3000u64.to_le_bytes());
        let mut ids = [0u8; 24];
        ids[0] = 3;
        ids[4..7].copy_from_slice(&[0xaa, 0xbb, 0xcc]);
        b.extend(ids);
        b.extend(5u32.to_le_bytes());
        b.extend(2u32.to_le_bytes());
        b.extend(b"/bin/true\0\0\0\0\0\0\0");
        // trailer: TID, TIME
        b.extend(7i32.to_le_bytes());
        b.extend(8i32.to_le_bytes());
        b.extend(99u64.to_le_bytes());
        let a = attr(SAMPLE_TID | SAMPLE_TIME);
        let m = parse_mmap(&b, MISC_MMAP_BUILD_ID | MISC_USER, true, 16, Endian::Little);
        let m = m.unwrap_or_else(|| panic!("mmap2 did not parse"));
        assert_eq!(m.filename, "/bin/true");
        assert_eq!(m.build_id.as_deref(), Some(&[0xaa, 0xbb, 0xcc][..]));
        assert_eq!(
            (m.start, m.len, m.pgoff, m.prot),
            (0x1000, 0x2000, 0x3000, Some(5))
        );
        let id = parse_sample_id(&b, &a, Endian::Little).unwrap_or_default();
        assert_eq!((id.pid, id.tid, id.time), (Some(7), Some(8), Some(99)));
        assert!(parse_mmap(&b[..20], 0, true, 0, Endian::Little).is_none());
        assert!(parse_mmap(&b, 0, true, 1000, Endian::Little).is_none());
    }

    #[test]
    fn comm_and_trailer_with_identifier() {
        let mut b = Vec::new();
        b.extend(5i32.to_be_bytes());
        b.extend(6i32.to_be_bytes());
        b.extend(b"bash\0\0\0\0");
        b.extend(3u32.to_be_bytes());
        b.extend(0u32.to_be_bytes());
        b.extend(42u64.to_be_bytes());
        let a = attr(SAMPLE_CPU | SAMPLE_IDENTIFIER);
        let c = parse_comm(&b, MISC_COMM_EXEC, a.sample_id_trailer_size(), Endian::Big);
        assert_eq!(
            c.as_ref().map(|c| (c.comm.as_str(), c.exec)),
            Some(("bash", true))
        );
        let id = parse_sample_id(&b, &a, Endian::Big).unwrap_or_default();
        assert_eq!((id.cpu, id.id), (Some(3), Some(42)));
        assert_eq!(
            leading_words::<2>(&b, Endian::Big).map(|w| w[0] >> 32),
            Some(5)
        );
        assert_eq!(leading_words::<9>(&b, Endian::Big), None);
    }
}
