//! Unit tests of `reader.rs` on synthetic captures: event order, Python
//! stacks from push/pop records, native stacks and images, both file
//! layouts, compression, unfinished captures, and damaged bytes.

use super::*;
use crate::memray::events::Allocator;
use crate::memray::header::sample_header;
use crate::memray::test_capture::CaptureWriter;

fn read_all(bytes: &[u8]) -> (Vec<MemrayEvent>, Option<MemrayError>, DecodeNotes) {
    let mut reader = match MemrayReader::open(bytes) {
        Ok(r) => r,
        Err(e) => return (Vec::new(), Some(e), DecodeNotes::default()),
    };
    let mut events = Vec::new();
    let mut error = None;
    for item in reader.by_ref() {
        match item {
            Ok(e) => events.push(e),
            Err(e) => error = Some(e),
        }
    }
    let notes = reader.notes().clone();
    (events, error, notes)
}

/// main() → work() on thread 1 allocating twice, a named worker thread,
/// an RSS sample, a free, an mmap/munmap pair.
fn small_capture() -> CaptureWriter {
    let mut w = CaptureWriter::all_allocations(true);
    w.map_start();
    w.image(
        "/usr/bin/python3",
        0x40_0000,
        &[(0, 0x1000), (0x1000, 0x2000)],
    );
    w.image("/lib/libc.so.6", 0x7f00_0000_0000, &[(0, 0x10_0000)]);
    w.code_object(1, "main", "/app/m.py", 1, &[]);
    w.code_object(2, "work", "/app/m.py", 10, &[]);
    w.native_frame(0x40_1234, 0); // node 1: python, outermost
    w.native_frame(0x7f00_0000_0500, 1); // node 2: libc malloc
    w.push(1, 1, 0, true);
    w.push(1, 2, 0, false);
    w.alloc(1, 0x5555_0000, 100, Allocator::Malloc, 2);
    w.memory(50_000_000, 10);
    w.alloc(1, 0x5555_1000, 50, Allocator::PymallocMalloc, 2);
    w.pop(1, 1);
    w.alloc(1, 0x5555_0000, 0, Allocator::Free, 0);
    w.thread_name(2, "worker");
    w.alloc(2, 0x6000_0000, 8192, Allocator::Mmap, 1);
    w.alloc(2, 0x6000_0000, 4096, Allocator::Munmap, 0);
    w.trailer();
    w
}

#[test]
fn decodes_a_small_capture_with_stacks_and_images() {
    let w = small_capture();
    for bytes in [w.bytes.clone(), w.lz4()] {
        let mut reader = MemrayReader::open(&bytes[..]).unwrap();
        let events: Vec<_> = reader.by_ref().collect::<Result<_, _>>().unwrap();
        let allocs: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                MemrayEvent::Allocation(a) => Some(a.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(allocs.len(), 3);
        assert_eq!(reader.notes().allocation_records, 5);
        assert!(reader.notes().ended_with_trailer);
        let t = reader.stacks();
        let first = &allocs[0];
        assert_eq!(first.not_before_ns, 1_700_000_000_000 * 1_000_000);
        assert_eq!(allocs[1].not_before_ns, 1_700_000_000_010 * 1_000_000);
        let names: Vec<_> = t
            .python_stack(first.python_stack)
            .iter()
            .map(|f| f.function)
            .collect();
        assert_eq!(names, ["work", "main"]);
        let native = t.native_stack(first.native_stack.unwrap(), first.image_generation);
        assert_eq!(native.len(), 2);
        assert_eq!(native[0].image, Some("/lib/libc.so.6"));
        assert_eq!(native[0].image_address, 0x500);
        assert_eq!(native[1].image, Some("/usr/bin/python3"));
        assert_eq!(native[1].image_address, 0x1234);
        // After the pop the worker-thread mmap has no Python frame.
        assert_eq!(allocs[2].python_stack, 0);
        assert_eq!(allocs[2].tid, 2);
        assert_eq!(t.thread_name(2), Some("worker"));
        assert!(events.contains(&MemrayEvent::ThreadName {
            tid: 2,
            name: "worker".into()
        }));
        assert!(events.contains(&MemrayEvent::MemorySample {
            ms_since_epoch: 1_700_000_000_010,
            rss_bytes: 50_000_000,
            heap_bytes: None
        }));
        assert!(events.contains(&MemrayEvent::NewImageGeneration { generation: 1 }));
        let munmap = events.iter().find_map(|e| match e {
            MemrayEvent::Deallocation(d) if d.allocator == Allocator::Munmap => Some(d.size),
            _ => None,
        });
        assert_eq!(munmap, Some(4096));
    }
}

#[test]
fn unfinished_padded_and_inconsistent_captures_are_noted() {
    let mut w = CaptureWriter::all_allocations(false);
    w.alloc(1, 0x1000, 10, Allocator::Malloc, 0);
    w.pop(1, 3);
    let (events, error, notes) = read_all(&w.bytes);
    assert!(error.is_none());
    assert_eq!(events.len(), 2); // context switch + allocation
    assert!(!notes.ended_with_trailer);
    assert_eq!(notes.pops_past_stack_bottom, 3);
    let mut padded = w.bytes.clone();
    padded.extend([0u8; 100]);
    let (_, error, notes) = read_all(&padded);
    assert!(error.is_none());
    assert_eq!(notes.zero_padding_bytes, 100);
    let header = sample_header(false, CaptureLayout::AllAllocations);
    let described = notes.describe(&header).join("; ");
    assert!(described.contains("no end marker"), "{described}");
}

#[test]
fn records_before_a_context_switch_are_corrupt() {
    let mut w = CaptureWriter::all_allocations(false);
    w.bytes.extend([0x80 | (15 << 3) | 6, 0x02, 0x10]); // malloc, no thread yet
    let (events, error, _) = read_all(&w.bytes);
    assert!(events.is_empty());
    assert!(matches!(error, Some(MemrayError::Corrupt { .. })));
}

#[test]
fn unsupported_versions_and_foreign_files_fail_distinctly() {
    let mut h = sample_header(false, CaptureLayout::AllAllocations);
    h.version = 10;
    let mut w = CaptureWriter::with_header(&h);
    w.trailer();
    let (_, error, _) = read_all(&w.lz4());
    let error = error.unwrap();
    assert!(matches!(
        error,
        MemrayError::UnsupportedVersion { found: 10, .. }
    ));
    let (_, error, _) = read_all(b"\x7fELF....");
    assert!(matches!(error, Some(MemrayError::NotMemray)));
}

#[test]
fn aggregated_captures_give_sites_snapshots_and_names() {
    let mut w =
        CaptureWriter::with_header(&sample_header(true, CaptureLayout::AggregatedAllocations));
    w.agg_snapshot(1_700_000_000_100, 9_000_000, 4096);
    w.agg_thread(1, "MainThread");
    w.map_start();
    w.image("/bin/python", 0x1000, &[(0, 0x1000)]);
    w.code_object(3, "fill", "/app/f.py", 7, &[]);
    w.native_frame(0x1100, 0);
    w.agg_frame(0, 3, 0, true);
    w.agg_trace(0, 0);
    w.agg_allocation(1, Allocator::Malloc, 1, 1, 1, (2, 4096), (1, 1024));
    w.agg_trailer();
    let compressed = w.lz4();
    let mut reader = MemrayReader::open(&compressed[..]).unwrap();
    let events: Vec<_> = reader.by_ref().collect::<Result<_, _>>().unwrap();
    let site = events.iter().find_map(|e| match e {
        MemrayEvent::Aggregated(s) => Some(s.clone()),
        _ => None,
    });
    let site = site.unwrap();
    assert_eq!((site.bytes_at_peak, site.bytes_leaked), (4096, 1024));
    let stack = reader.stacks().python_stack(site.python_stack);
    assert_eq!((stack[0].function, stack[0].line), ("fill", 7));
    let native = reader.stacks().native_stack(1, site.image_generation);
    assert_eq!(native[0].image, Some("/bin/python"));
    assert_eq!(reader.stacks().thread_name(1), Some("MainThread"));
    assert!(events.contains(&MemrayEvent::MemorySample {
        ms_since_epoch: 1_700_000_000_100,
        rss_bytes: 9_000_000,
        heap_bytes: Some(4096)
    }));
    // A stack node naming a frame that was never defined is corrupt.
    let mut bad =
        CaptureWriter::with_header(&sample_header(false, CaptureLayout::AggregatedAllocations));
    bad.agg_trace(5, 0);
    let (_, error, _) = read_all(&bad.bytes);
    assert!(matches!(error, Some(MemrayError::Corrupt { .. })));
}

#[test]
fn every_truncation_and_byte_flip_is_handled_without_panic() {
    let w = small_capture();
    for bytes in [w.bytes.clone(), w.lz4()] {
        for cut in 0..bytes.len() {
            let (_, _, _) = read_all(&bytes[..cut]);
        }
        for at in 0..bytes.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut damaged = bytes.clone();
                damaged[at] ^= flip;
                let (_, _, _) = read_all(&damaged);
            }
            let mut zeroed = bytes.clone();
            zeroed[at..].iter_mut().take(16).for_each(|b| *b = 0);
            let (_, _, _) = read_all(&zeroed);
        }
    }
}
