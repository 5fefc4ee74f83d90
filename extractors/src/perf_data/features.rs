//! The feature sections perf writes after the records (or sends as
//! `HEADER_FEATURE` records in pipe mode): host, kernel and perf versions,
//! command line, event names, the build ids of the mapped files, the
//! tracing data (tracepoint formats) and the clock. Unknown or damaged
//! sections are skipped with a note; they never stop the records.

use super::attrs::EventAttr;
use super::bytes::{ByteReader, Endian, c_string, to_usize};

pub const HEADER_TRACING_DATA: u32 = 1;
pub const HEADER_BUILD_ID: u32 = 2;
pub const HEADER_HOSTNAME: u32 = 3;
pub const HEADER_OSRELEASE: u32 = 4;
pub const HEADER_VERSION: u32 = 5;
pub const HEADER_ARCH: u32 = 6;
pub const HEADER_NRCPUS: u32 = 7;
pub const HEADER_CPUDESC: u32 = 8;
pub const HEADER_CPUID: u32 = 9;
pub const HEADER_TOTAL_MEM: u32 = 10;
pub const HEADER_CMDLINE: u32 = 11;
pub const HEADER_EVENT_DESC: u32 = 12;
pub const HEADER_SAMPLE_TIME: u32 = 21;
pub const HEADER_CLOCKID: u32 = 23;
pub const HEADER_COMPRESSED: u32 = 27;
pub const HEADER_CLOCK_DATA: u32 = 29;

/// `PERF_RECORD_MISC_BUILD_ID_SIZE`: the build id's length is recorded.
const MISC_BUILD_ID_SIZE: u16 = 1 << 15;
const MISC_CPUMODE_MASK: u16 = 7;
const MISC_KERNEL: u16 = 1;
const MISC_GUEST_KERNEL: u16 = 4;

/// A file's ELF build id as perf recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildIdEntry {
    /// -1 for the kernel and its modules.
    pub pid: i32,
    pub build_id: Vec<u8>,
    pub filename: String,
    /// Recorded for the (host or guest) kernel or a kernel module.
    pub kernel: bool,
}

/// `HEADER_CLOCK_DATA`: a wall-clock reading and the event clock's reading
/// at the same moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockData {
    pub clockid: u32,
    pub wall_clock_ns: u64,
    pub clockid_time_ns: u64,
}

/// What the feature sections say about the recording.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PerfMeta {
    pub hostname: Option<String>,
    pub os_release: Option<String>,
    pub perf_version: Option<String>,
    pub arch: Option<String>,
    pub nr_cpus_available: Option<u32>,
    pub nr_cpus_online: Option<u32>,
    pub cpu_desc: Option<String>,
    pub cpuid: Option<String>,
    pub total_mem_kib: Option<u64>,
    /// `perf record`'s argv.
    pub cmdline: Vec<String>,
    /// `(name, ids)` per event from `HEADER_EVENT_DESC`.
    pub event_names: Vec<(String, Vec<u64>)>,
    pub build_ids: Vec<BuildIdEntry>,
    /// The raw `HEADER_TRACING_DATA` bytes (tracepoint formats, …).
    pub tracing_data: Option<Vec<u8>>,
    /// Times of the first and last sample (ns, event clock).
    pub sample_time: Option<(u64, u64)>,
    /// The event clock's resolution in ns (`HEADER_CLOCKID`).
    pub clockid_res_ns: Option<u64>,
    pub clock_data: Option<ClockData>,
    /// Records in the data section are zstd-compressed (`HEADER_COMPRESSED`).
    pub compressed: bool,
    /// Feature bits present (file mode: from the bitmap).
    pub features_present: Vec<u32>,
}

/// `perf_header_string`: a u32 length then that many bytes (NUL-padded).
fn header_string(r: &mut ByteReader<'_>) -> Option<String> {
    let len = r.u32()?;
    Some(c_string(r.bytes(len as usize)?))
}

fn string_list(r: &mut ByteReader<'_>) -> Option<Vec<String>> {
    let nr = r.u32()?;
    // Each string takes at least its 4-byte length.
    if (nr as usize) > r.remaining() / 4 {
        return None;
    }
    (0..nr).map(|_| header_string(r)).collect()
}

/// Reads a `HEADER_BUILD_ID` section: build-id entries, each with an
/// 8-byte record header. Returns the entries read and whether the whole
/// section parsed (a damaged entry ends the list).
pub fn parse_build_ids(bytes: &[u8], endian: Endian) -> (Vec<BuildIdEntry>, bool) {
    let mut out = Vec::new();
    let mut r = ByteReader::new(bytes, endian);
    let next = |r: &mut ByteReader<'_>| -> Option<BuildIdEntry> {
        let _type = r.u32()?;
        let misc = r.u16()?;
        let size = r.u16()? as usize;
        let body = r.bytes(size.checked_sub(8)?)?;
        parse_build_id_body(misc, body, endian)
    };
    while r.remaining() > 0 {
        match next(&mut r) {
            Some(entry) => out.push(entry),
            None => return (out, false),
        }
    }
    (out, true)
}

/// One build-id entry after its 8-byte record header.
pub fn parse_build_id_body(misc: u16, body: &[u8], endian: Endian) -> Option<BuildIdEntry> {
    let mut r = ByteReader::new(body, endian);
    let pid = r.i32()?;
    let raw = r.bytes(24)?;
    let len = if misc & MISC_BUILD_ID_SIZE != 0 {
        (*raw.get(20)? as usize).min(20)
    } else {
        20
    };
    let cpumode = misc & MISC_CPUMODE_MASK;
    Some(BuildIdEntry {
        pid,
        build_id: raw.get(..len)?.to_vec(),
        filename: c_string(r.rest()),
        kernel: cpumode == MISC_KERNEL || cpumode == MISC_GUEST_KERNEL,
    })
}

/// `HEADER_EVENT_DESC`: per event its attr, name and ids.
fn parse_event_desc(bytes: &[u8], endian: Endian) -> Option<Vec<(String, Vec<u64>)>> {
    let mut r = ByteReader::new(bytes, endian);
    let nr = r.u32()?;
    let attr_size = r.u32()? as usize;
    if attr_size < 8 || (nr as usize) > r.remaining() / attr_size.saturating_add(8) {
        return None;
    }
    let mut out = Vec::with_capacity(nr as usize);
    for _ in 0..nr {
        let _attr = EventAttr::parse(r.bytes(attr_size)?, endian)?;
        let nr_ids = r.u32()? as usize;
        let name = header_string(&mut r)?;
        if nr_ids > r.remaining() / 8 {
            return None;
        }
        let ids = (0..nr_ids).map(|_| r.u64()).collect::<Option<Vec<_>>>()?;
        out.push((name, ids));
    }
    Some(out)
}

impl PerfMeta {
    /// Takes one feature section's bytes. Returns `false` when the section
    /// does not parse (a build-id list keeps the entries before the damage).
    pub fn apply_feature(&mut self, feature: u32, bytes: &[u8], endian: Endian) -> bool {
        let mut r = ByteReader::new(bytes, endian);
        let ok = match feature {
            HEADER_TRACING_DATA => {
                self.tracing_data = Some(bytes.to_vec());
                true
            }
            HEADER_BUILD_ID => {
                let (ids, complete) = parse_build_ids(bytes, endian);
                self.build_ids.extend(ids);
                complete
            }
            HEADER_HOSTNAME => set(&mut self.hostname, header_string(&mut r)),
            HEADER_OSRELEASE => set(&mut self.os_release, header_string(&mut r)),
            HEADER_VERSION => set(&mut self.perf_version, header_string(&mut r)),
            HEADER_ARCH => set(&mut self.arch, header_string(&mut r)),
            HEADER_CPUDESC => set(&mut self.cpu_desc, header_string(&mut r)),
            HEADER_CPUID => set(&mut self.cpuid, header_string(&mut r)),
            HEADER_NRCPUS => match (r.u32(), r.u32()) {
                (Some(avail), Some(online)) => {
                    self.nr_cpus_available = Some(avail);
                    self.nr_cpus_online = Some(online);
                    true
                }
                _ => false,
            },
            HEADER_TOTAL_MEM => set(&mut self.total_mem_kib, r.u64()),
            HEADER_CMDLINE => string_list(&mut r)
                .map(|argv| self.cmdline = argv)
                .is_some(),
            HEADER_EVENT_DESC => parse_event_desc(bytes, endian)
                .map(|names| self.event_names = names)
                .is_some(),
            HEADER_SAMPLE_TIME => set(&mut self.sample_time, r.u64().zip(r.u64())),
            HEADER_CLOCKID => set(&mut self.clockid_res_ns, r.u64()),
            HEADER_CLOCK_DATA => {
                let data = (|| {
                    let _version = r.u32()?;
                    Some(ClockData {
                        clockid: r.u32()?,
                        wall_clock_ns: r.u64()?,
                        clockid_time_ns: r.u64()?,
                    })
                })();
                set(&mut self.clock_data, data)
            }
            HEADER_COMPRESSED => {
                self.compressed = true;
                true
            }
            // Topology, caches, PMU mappings, BPF info, …: not needed.
            _ => true,
        };
        if ok && !self.features_present.contains(&feature) {
            self.features_present.push(feature);
        }
        ok
    }

    /// The recorded build id of `filename` (the kernel is `[kernel.kallsyms]`).
    pub fn build_id_of(&self, filename: &str) -> Option<&[u8]> {
        self.build_ids
            .iter()
            .find(|b| b.filename == filename)
            .map(|b| b.build_id.as_slice())
    }
}

fn set<T>(slot: &mut Option<T>, value: Option<T>) -> bool {
    match value {
        Some(v) => {
            *slot = Some(v);
            true
        }
        None => false,
    }
}

/// The feature sections' index after the data section: one
/// `(offset, size)` per set feature bit, in bit order.
pub fn feature_index_len(nr_features: usize) -> Option<u64> {
    u64::try_from(nr_features).ok()?.checked_mul(16)
}

/// Reads a feature section's `(offset, size)` entries.
pub fn parse_feature_index(bytes: &[u8], endian: Endian, count: usize) -> Vec<(u64, u64)> {
    let mut r = ByteReader::new(bytes, endian);
    (0..count)
        .map_while(|_| Some((r.u64()?, r.u64()?)))
        .collect()
}

/// `usize` of a section size that must fit in memory.
pub fn section_len(size: u64) -> Option<usize> {
    to_usize(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hs(s: &str) -> Vec<u8> {
        let mut padded = s.as_bytes().to_vec();
        padded.push(0);
        padded.resize(padded.len().div_ceil(8) * 8, 0);
        let mut out = (padded.len() as u32).to_le_bytes().to_vec();
        out.extend(padded);
        out
    }

    #[test]
    fn strings_lists_and_numbers() {
        let mut m = PerfMeta::default();
        assert!(m.apply_feature(HEADER_HOSTNAME, &hs("vm"), Endian::Little));
        let mut argv = 2u32.to_le_bytes().to_vec();
        argv.extend(hs("perf"));
        argv.extend(hs("record"));
        assert!(m.apply_feature(HEADER_CMDLINE, &argv, Endian::Little));
        let mut nr = 4u32.to_le_bytes().to_vec();
        nr.extend(2u32.to_le_bytes());
        assert!(m.apply_feature(HEADER_NRCPUS, &nr, Endian::Little));
        assert_eq!(m.hostname.as_deref(), Some("vm"));
        assert_eq!(m.cmdline, vec!["perf", "record"]);
        assert_eq!((m.nr_cpus_available, m.nr_cpus_online), (Some(4), Some(2)));
        // A list claiming more strings than bytes is refused, not allocated.
        let huge = u32::MAX.to_le_bytes();
        assert!(!m.apply_feature(HEADER_CMDLINE, &huge, Endian::Little));
        assert!(!m.apply_feature(HEADER_SAMPLE_TIME, &[1, 2, 3], Endian::Little));
    }

    #[test]
    fn clock_and_sample_time_in_big_endian() {
        let mut m = PerfMeta::default();
        let mut cd = 1u32.to_be_bytes().to_vec();
        cd.extend(1u32.to_be_bytes());
        cd.extend(1_700_000_000_000_000_000u64.to_be_bytes());
        cd.extend(5_000u64.to_be_bytes());
        assert!(m.apply_feature(HEADER_CLOCK_DATA, &cd, Endian::Big));
        let mut st = 10u64.to_be_bytes().to_vec();
        st.extend(20u64.to_be_bytes());
        assert!(m.apply_feature(HEADER_SAMPLE_TIME, &st, Endian::Big));
        assert!(m.apply_feature(HEADER_CLOCKID, &1u64.to_be_bytes(), Endian::Big));
        assert_eq!(
            m.clock_data,
            Some(ClockData {
                clockid: 1,
                wall_clock_ns: 1_700_000_000_000_000_000,
                clockid_time_ns: 5_000
            })
        );
        assert_eq!((m.sample_time, m.clockid_res_ns), (Some((10, 20)), Some(1)));
        assert!(!m.apply_feature(HEADER_CLOCK_DATA, &cd[..20], Endian::Big));
        assert_eq!(
            m.features_present,
            vec![HEADER_CLOCK_DATA, HEADER_SAMPLE_TIME, HEADER_CLOCKID]
        );
    }

    #[test]
    fn build_ids_with_and_without_recorded_size() {
        let mut sec = Vec::new();
        for (misc, size_byte, name) in [
            (1u16 | (1 << 15), 8u8, "[kernel.kallsyms]"),
            (2, 0, "/bin/x"),
        ] {
            let mut body = (-1i32).to_le_bytes().to_vec();
            let mut id = [0xabu8; 24];
            id[20] = size_byte;
            body.extend(id);
            body.extend(name.as_bytes());
            body.resize(body.len().div_ceil(8) * 8 + 8, 0);
            sec.extend(67u32.to_le_bytes());
            sec.extend(misc.to_le_bytes());
            sec.extend(((body.len() + 8) as u16).to_le_bytes());
            sec.extend(body);
        }
        let (ids, complete) = parse_build_ids(&sec, Endian::Little);
        assert!(complete);
        assert_eq!(ids.len(), 2);
        assert_eq!(ids[0].build_id.len(), 8);
        assert!(ids[0].kernel);
        assert_eq!(ids[1].build_id.len(), 20);
        assert_eq!(ids[1].filename, "/bin/x");
        assert!(!ids[1].kernel);
        let (partial, complete) = parse_build_ids(&sec[..sec.len() - 1], Endian::Little);
        assert_eq!((partial.len(), complete), (1, false));
    }
}
