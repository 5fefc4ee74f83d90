//! The header at the start of a memray capture (memray's `HeaderRecord`,
//! written by `RecordWriter::writeHeaderCommon`): magic, format version,
//! the traced interpreter's version, whether native stacks were recorded,
//! which of the two file layouts follows, the run's statistics (rewritten
//! when tracking ends), the command line, pid, main thread and, from
//! version 13, the interpreter's module search paths.
//!
//! Versions read: 12 (memray 1.19.x) and 13 (memray 1.20). They share the
//! record layout; 13 appends the search paths. Version 11 and older
//! (memray ≤ 1.18) name Python frames differently and are refused with
//! [`MemrayError::UnsupportedVersion`].

use std::io::BufRead;

use crate::memray::error::MemrayError;
use crate::memray::wire::CaptureBytes;

/// `MAGIC` in memray's records.cpp: `"memray"` and its NUL.
pub const MEMRAY_MAGIC: [u8; 7] = *b"memray\0";
/// Header versions this decoder reads.
pub const SUPPORTED_VERSIONS: &[i32] = &[12, 13];
/// The most search-path entries accepted per list.
const MAX_PATH_ENTRIES: usize = 4096;

/// Which record stream follows the header (memray's `FileFormat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureLayout {
    /// Every allocation and deallocation, in order (`memray run`'s default).
    AllAllocations,
    /// Per-location totals at the high-water mark and at exit
    /// (`memray run --aggregate`).
    AggregatedAllocations,
}

/// The allocator CPython was configured with (`PythonAllocatorType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PythonAllocator {
    Pymalloc,
    PymallocDebug,
    Malloc,
    Other,
    Mimalloc,
    MimallocDebug,
    /// A value memray does not define.
    Unknown(u8),
}

impl PythonAllocator {
    fn from_byte(b: u8) -> Self {
        match b {
            1 => PythonAllocator::Pymalloc,
            2 => PythonAllocator::PymallocDebug,
            3 => PythonAllocator::Malloc,
            4 => PythonAllocator::Other,
            5 => PythonAllocator::Mimalloc,
            6 => PythonAllocator::MimallocDebug,
            other => PythonAllocator::Unknown(other),
        }
    }
}

/// The decoded header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemrayHeader {
    pub version: i32,
    /// `PY_VERSION_HEX` of the traced interpreter (0x030b07f0 = 3.11.7).
    pub python_version: u32,
    pub native_traces: bool,
    pub layout: CaptureLayout,
    /// Allocation records written (frees included), as counted by the
    /// writer; 0 when the process died before the header was rewritten.
    pub n_allocations: u64,
    /// Unused by current writers (always 0).
    pub n_frames: u64,
    /// Wall-clock start and end of tracking, milliseconds since the epoch.
    pub start_time_ms: i64,
    pub end_time_ms: i64,
    pub command_line: String,
    pub pid: i32,
    /// memray's own thread number of the main thread (not an OS tid).
    pub main_tid: u64,
    /// Outermost Python frames of the main thread that belong to memray's
    /// launcher, which memray's reports drop.
    pub skipped_frames_on_main_tid: u64,
    pub python_allocator: PythonAllocator,
    pub trace_python_allocators: bool,
    pub track_object_lifetimes: bool,
    /// Version 13 only (empty before): `sysconfig`'s stdlib directory,
    /// the site-packages directories and `sys.path`.
    pub libdest: String,
    pub site_packages: Vec<String>,
    pub sys_path: Vec<String>,
}

/// Reads the header from the start of the decoded stream.
pub fn read_header<R: BufRead>(input: &mut CaptureBytes<R>) -> Result<MemrayHeader, MemrayError> {
    let magic: [u8; 7] = input.array("the magic")?;
    if magic != MEMRAY_MAGIC {
        return Err(MemrayError::NotMemray);
    }
    let version = input.i32_le("the header version")?;
    if !SUPPORTED_VERSIONS.contains(&version) {
        return Err(MemrayError::UnsupportedVersion {
            found: version,
            supported: SUPPORTED_VERSIONS,
        });
    }
    let python_version = u32::from_le_bytes(input.array("the Python version")?);
    let native_traces = input.bool("the native-traces flag")?;
    let layout = match input.u8("the file format")? {
        0 => CaptureLayout::AllAllocations,
        1 => CaptureLayout::AggregatedAllocations,
        other => {
            return Err(MemrayError::corrupt(
                input.offset().saturating_sub(1),
                format!("file format {other} is neither 0 (all allocations) nor 1 (aggregated)"),
            ));
        }
    };
    let n_allocations = input.u64_le("the allocation count")?;
    let n_frames = input.u64_le("the frame count")?;
    let start_time_ms = input.i64_le("the start time")?;
    let end_time_ms = input.i64_le("the end time")?;
    let command_line = input.cstring("the command line")?;
    let pid = input.i32_le("the pid")?;
    let main_tid = input.u64_le("the main thread id")?;
    let skipped_frames_on_main_tid = input.u64_le("the skipped-frame count")?;
    let python_allocator = PythonAllocator::from_byte(input.u8("the Python allocator")?);
    let trace_python_allocators = input.bool("the trace-python-allocators flag")?;
    let track_object_lifetimes = input.bool("the track-object-lifetimes flag")?;
    let (libdest, site_packages, sys_path) = if version >= 13 {
        let libdest = input.cstring("the stdlib path")?;
        let site_packages = read_path_list(input, "the site-packages list")?;
        let sys_path = read_path_list(input, "sys.path")?;
        (libdest, site_packages, sys_path)
    } else {
        (String::new(), Vec::new(), Vec::new())
    };
    Ok(MemrayHeader {
        version,
        python_version,
        native_traces,
        layout,
        n_allocations,
        n_frames,
        start_time_ms,
        end_time_ms,
        command_line,
        pid,
        main_tid,
        skipped_frames_on_main_tid,
        python_allocator,
        trace_python_allocators,
        track_object_lifetimes,
        libdest,
        site_packages,
        sys_path,
    })
}

/// NUL-terminated strings up to an empty one.
fn read_path_list<R: BufRead>(
    input: &mut CaptureBytes<R>,
    what: &'static str,
) -> Result<Vec<String>, MemrayError> {
    let mut paths = Vec::new();
    loop {
        let entry = input.cstring(what)?;
        if entry.is_empty() {
            return Ok(paths);
        }
        if paths.len() >= MAX_PATH_ENTRIES {
            return Err(MemrayError::corrupt(
                input.offset(),
                format!("{what} has more than {MAX_PATH_ENTRIES} entries"),
            ));
        }
        paths.push(entry);
    }
}

/// Test helper: the bytes of a header, as memray writes them.
#[cfg(test)]
pub(crate) fn encode_header(h: &MemrayHeader) -> Vec<u8> {
    let mut out = MEMRAY_MAGIC.to_vec();
    out.extend(h.version.to_le_bytes());
    out.extend(h.python_version.to_le_bytes());
    out.push(u8::from(h.native_traces));
    out.push(match h.layout {
        CaptureLayout::AllAllocations => 0,
        CaptureLayout::AggregatedAllocations => 1,
    });
    out.extend(h.n_allocations.to_le_bytes());
    out.extend(h.n_frames.to_le_bytes());
    out.extend(h.start_time_ms.to_le_bytes());
    out.extend(h.end_time_ms.to_le_bytes());
    let cstr = |out: &mut Vec<u8>, s: &str| {
        out.extend(s.as_bytes());
        out.push(0);
    };
    cstr(&mut out, &h.command_line);
    out.extend(h.pid.to_le_bytes());
    out.extend(h.main_tid.to_le_bytes());
    out.extend(h.skipped_frames_on_main_tid.to_le_bytes());
    out.push(match h.python_allocator {
        PythonAllocator::Pymalloc => 1,
        PythonAllocator::PymallocDebug => 2,
        PythonAllocator::Malloc => 3,
        PythonAllocator::Other => 4,
        PythonAllocator::Mimalloc => 5,
        PythonAllocator::MimallocDebug => 6,
        PythonAllocator::Unknown(b) => b,
    });
    out.push(u8::from(h.trace_python_allocators));
    out.push(u8::from(h.track_object_lifetimes));
    if h.version >= 13 {
        cstr(&mut out, &h.libdest);
        for list in [&h.site_packages, &h.sys_path] {
            for p in list {
                cstr(&mut out, p);
            }
            cstr(&mut out, "");
        }
    }
    out
}

/// Test helper: a plausible version-13 header.
#[cfg(test)]
pub(crate) fn sample_header(native_traces: bool, layout: CaptureLayout) -> MemrayHeader {
    MemrayHeader {
        version: 13,
        python_version: 0x030b07f0,
        native_traces,
        layout,
        n_allocations: 0,
        n_frames: 0,
        start_time_ms: 1_700_000_000_000,
        end_time_ms: 1_700_000_000_500,
        command_line: "memray run x.py".into(),
        pid: 42,
        main_tid: 1,
        skipped_frames_on_main_tid: 0,
        python_allocator: PythonAllocator::Pymalloc,
        trace_python_allocators: false,
        track_object_lifetimes: false,
        libdest: "/usr/lib/python3.11".into(),
        site_packages: vec!["/venv/site-packages".into()],
        sys_path: vec!["/a".into(), "/b".into()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> Result<MemrayHeader, MemrayError> {
        read_header(&mut CaptureBytes::new(bytes, false))
    }

    #[test]
    fn round_trips_versions_12_and_13() {
        let h13 = sample_header(true, CaptureLayout::AllAllocations);
        assert_eq!(decode(&encode_header(&h13)).unwrap(), h13);
        let mut h12 = sample_header(false, CaptureLayout::AggregatedAllocations);
        h12.version = 12;
        h12.libdest.clear();
        h12.site_packages.clear();
        h12.sys_path.clear();
        let bytes = encode_header(&h12);
        assert_eq!(decode(&bytes).unwrap(), h12);
    }

    #[test]
    fn an_old_version_names_found_and_supported() {
        let mut h = sample_header(false, CaptureLayout::AllAllocations);
        h.version = 11;
        let err = decode(&encode_header(&h)).unwrap_err();
        assert!(matches!(
            err,
            MemrayError::UnsupportedVersion { found: 11, .. }
        ));
        let text = err.to_string();
        assert!(text.contains("11") && text.contains("[12, 13]"), "{text}");
    }

    #[test]
    fn every_truncation_is_an_error_and_bad_enums_are_corrupt() {
        let bytes = encode_header(&sample_header(true, CaptureLayout::AllAllocations));
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad_layout = bytes.clone();
        bad_layout[16] = 7;
        assert!(matches!(
            decode(&bad_layout),
            Err(MemrayError::Corrupt { .. })
        ));
        let mut bad_magic = bytes;
        bad_magic[0] = b'M';
        assert!(matches!(decode(&bad_magic), Err(MemrayError::NotMemray)));
    }
}
