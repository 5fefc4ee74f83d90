//! Tests on the real capture `misc/memray_workload_native.bin` (memray
//! 1.20.0, `memray run --native`, lz4): every number is checked twice —
//! against an independent replay written here (plain maps, no shared
//! code with the fold) and against memray 1.20.0's own Python API.
//!
//! The memray numbers come from (memray 1.20.0 in a venv, Python 3.11.7):
//! ```python
//! import memray, collections
//! r = memray.FileReader("misc/memray_workload_native.bin")
//! m = r.metadata                      # total_allocations, peak_memory, pid, …
//! recs = list(r.get_allocation_records())
//! collections.Counter(int(x.allocator) for x in recs)        # by allocator
//! collections.Counter(x.tid for x in recs)                   # by thread
//! sorted({(x.tid, x.thread_name) for x in recs})
//! sum(x.size for x in recs if int(x.allocator) not in (1, 5, 15))
//! for it in (r.get_high_watermark_allocation_records(), r.get_leaked_allocation_records()):
//!     g = list(it); len(g), sum(x.size for x in g), sum(x.n_allocations for x in g)
//!     leaf = collections.Counter()
//!     for x in g: st = x.stack_trace(); leaf[st[0] if st else None] += x.size
//!     leaf.most_common(3), len(leaf)
//!     max(g, key=lambda x: x.size).stack_trace()
//! s = list(r.get_memory_snapshots()); len(s), s[-1]
//! ```

use std::collections::HashMap;
use std::path::PathBuf;

use super::*;
use crate::memray::events::Allocator;
use crate::memray::header::CaptureLayout;

fn corpus_file() -> PathBuf {
    PathBuf::from(env!("FLAMEOX_CORPUS_DIR")).join("misc/memray_workload_native.bin")
}

/// The capture's decoded (decompressed) bytes, via lz4_flex directly.
fn decompressed(compressed: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut decoder = lz4_flex::frame::FrameDecoder::new(compressed);
    std::io::Read::read_to_end(&mut decoder, &mut out).unwrap();
    out
}

/// A replay that shares nothing with `MemoryFold`: live blocks, mapped
/// ranges as a list, peak after every allocation record.
#[derive(Default)]
struct Replay {
    blocks: HashMap<u64, u64>,
    ranges: Vec<(u64, u64)>,
    current: u64,
    peak: u64,
    records: u64,
    allocated_bytes: u64,
    by_allocator: HashMap<u8, u64>,
    by_thread: HashMap<u64, u64>,
}

impl Replay {
    fn add(&mut self, event: &MemrayEvent) {
        let (tid, allocator) = match event {
            MemrayEvent::Allocation(a) => {
                self.allocated_bytes += a.size;
                self.current += a.size;
                if a.allocator == Allocator::Mmap {
                    self.ranges.push((a.address, a.address + a.size));
                } else {
                    self.blocks.insert(a.address, a.size);
                }
                (a.tid, a.allocator)
            }
            MemrayEvent::Deallocation(d) => {
                if d.allocator == Allocator::Munmap {
                    let (lo, hi) = (d.address, d.address + d.size);
                    let mut kept = Vec::new();
                    for &(b, e) in &self.ranges {
                        let (cb, ce) = (b.max(lo), e.min(hi));
                        if ce <= cb {
                            kept.push((b, e));
                            continue;
                        }
                        self.current -= ce - cb;
                        kept.extend([(b, cb), (ce, e)].into_iter().filter(|(x, y)| x < y));
                    }
                    self.ranges = kept;
                } else if let Some(size) = self.blocks.remove(&d.address) {
                    self.current -= size;
                }
                (d.tid, d.allocator)
            }
            _ => return,
        };
        self.records += 1;
        self.peak = self.peak.max(self.current);
        *self.by_allocator.entry(allocator as u8).or_default() += 1;
        *self.by_thread.entry(tid).or_default() += 1;
    }

    fn live(&self) -> (u64, u64) {
        let bytes =
            self.blocks.values().sum::<u64>() + self.ranges.iter().map(|(b, e)| e - b).sum::<u64>();
        (bytes, (self.blocks.len() + self.ranges.len()) as u64)
    }
}

fn frame(f: &FrameSite) -> (String, String, i32) {
    let l = f.frame.clone().unwrap();
    (l.function, l.filename, l.line)
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn corpus_capture_matches_an_independent_replay_and_memrays_api() {
    let compressed = std::fs::read(corpus_file()).unwrap();
    let mut reader = MemrayReader::open(&compressed[..]).unwrap();
    assert!(reader.is_compressed());
    let h = reader.header().clone();
    assert_eq!(
        (h.version, h.python_version, h.native_traces),
        (13, 0x030b_0ff0, true)
    );
    assert_eq!(h.layout, CaptureLayout::AllAllocations);
    assert_eq!(
        (h.pid, h.main_tid, h.skipped_frames_on_main_tid),
        (23888, 1, 4)
    );
    assert_eq!(
        (h.start_time_ms, h.end_time_ms),
        (1_796_034_130_313, 1_796_034_130_759)
    );
    assert!(
        h.command_line
            .ends_with("memray run --native -o /tmp/gen/memray_workload.bin /tmp/py/workload.py 1")
    );
    assert_eq!(h.sys_path.len(), 5);

    let mut replay = Replay::default();
    let mut fold = MemoryFold::new();
    while let Some(event) = reader.next_event().unwrap() {
        replay.add(&event);
        fold.add(&event);
    }
    assert!(reader.notes().ended_with_trailer);
    assert!(
        reader.notes().describe(&h).is_empty(),
        "{:?}",
        reader.notes()
    );
    let s = fold.finish(reader.stacks(), 5);

    // Independent: the writer's own count in the header, and the replay.
    assert_eq!(s.allocation_records, h.n_allocations);
    assert_eq!(s.allocation_records, replay.records);
    assert_eq!(s.peak_heap_bytes, replay.peak);
    let (live_bytes, live_count) = replay.live();
    assert_eq!(
        (s.at_end.total.bytes, s.at_end.total.count),
        (live_bytes, live_count)
    );
    assert_eq!(s.totals.unwrap().allocated_bytes, replay.allocated_bytes);
    assert_eq!(s.at_peak.total.bytes, s.peak_heap_bytes);

    // memray 1.20.0's API on the same file (see the module comment).
    assert_eq!(s.allocation_records, 84_564);
    assert_eq!(s.peak_heap_bytes, 3_939_835);
    let mut by_allocator: Vec<_> = replay.by_allocator.into_iter().collect();
    by_allocator.sort();
    assert_eq!(
        by_allocator,
        [
            (5, 42_253),
            (6, 41_872),
            (7, 366),
            (8, 61),
            (14, 6),
            (15, 6)
        ]
    );
    let mut by_thread: Vec<_> = replay.by_thread.into_iter().collect();
    by_thread.sort();
    assert_eq!(by_thread, [(1, 84_446), (2, 47), (3, 36), (4, 35)]);
    assert_eq!(s.totals.unwrap().allocated_bytes, 54_640_934);
    let t = reader.stacks();
    let names: Vec<_> = (1..=4)
        .map(|tid| t.thread_name(tid).unwrap_or(""))
        .collect();
    assert_eq!(names, ["", "worker-0", "worker-1", "worker-2"]);
    let view = |v: &SiteTable| {
        (
            v.stack_sites,
            v.total.bytes,
            v.total.count,
            v.python_frame_sites,
        )
    };
    assert_eq!(view(&s.at_peak), (48, 3_939_835, 74, 34));
    assert_eq!(view(&s.at_end), (49, 3_210_228, 61, 42));
    let workload = "/tmp/py/workload.py".to_string();
    let encoder = "/root/.pyenv/versions/3.11.7/lib/python3.11/json/encoder.py".to_string();
    let leaks = &s.at_end.top_python_frames;
    assert_eq!(frame(&leaks[0]), ("<listcomp>".into(), workload.clone(), 7));
    assert_eq!(leaks[0].bytes, 2_097_152);
    assert_eq!(
        frame(&leaks[1]),
        ("iterencode".into(), encoder.clone(), 258)
    );
    assert_eq!(leaks[1].bytes, 1_048_576);
    assert_eq!(leaks[2].bytes, 14_482);
    let peak = &s.at_peak.top_python_frames;
    assert_eq!(
        (frame(&peak[0]).0.as_str(), peak[0].bytes),
        ("<listcomp>", 2_123_136)
    );
    assert_eq!(
        (frame(&peak[1]).0.as_str(), peak[1].bytes),
        ("iterencode", 1_723_309)
    );
    assert_eq!((peak[2].frame.clone(), peak[2].bytes), (None, 49_248));
    let top = &s.at_end.top_stacks[0];
    assert_eq!((top.bytes, top.count), (1_048_576, 1));
    let stack: Vec<_> = t
        .python_stack_reported(top.python_stack, top.tid)
        .iter()
        .map(|f| (f.function, f.line))
        .collect();
    assert_eq!(
        stack,
        [
            ("<listcomp>", 7),
            ("parse_work", 7),
            ("main", 29),
            ("<module>", 34),
            ("_run_code", 88),
            ("_run_module_code", 98),
            ("run_path", 291),
            ("_run_tracker", 83),
        ]
    );
    // Native frames map into the images the capture lists.
    let native = t.native_stack(top.native_stack.unwrap(), top.image_generation);
    assert!(!native.is_empty());
    assert!(native.iter().all(|f| f.image.is_some()), "{native:?}");
    assert_eq!(s.memory_over_time.len(), 41);
    let last = s.memory_over_time.last().unwrap();
    assert_eq!(
        (last.ms_since_epoch, last.rss_bytes, last.heap_bytes),
        (1_796_034_130_734, 51_040_256, 3_439_076)
    );
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn corpus_capture_reads_the_same_uncompressed_and_padded() {
    let compressed = std::fs::read(corpus_file()).unwrap();
    let mut plain = decompressed(&compressed);
    assert!(plain.starts_with(b"memray\0"));
    plain.extend([0u8; 4096]); // like a file the writer grew in chunks
    let a = leaks_and_peak(&mut MemrayReader::open(&compressed[..]).unwrap(), 3);
    let mut reader = MemrayReader::open(&plain[..]).unwrap();
    assert!(!reader.is_compressed());
    let b = leaks_and_peak(&mut reader, 3);
    assert!(a.stopped_by.is_none() && b.stopped_by.is_none());
    assert_eq!(
        (a.peak_heap_bytes, a.at_end.total),
        (b.peak_heap_bytes, b.at_end.total)
    );
    assert_eq!(a.at_peak, b.at_peak);
    assert_eq!(a.allocation_records, b.allocation_records);
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn corpus_capture_truncated_flipped_and_zeroed_never_panics() {
    let compressed = std::fs::read(corpus_file()).unwrap();
    let plain = decompressed(&compressed);
    for bytes in [&compressed, &plain] {
        // 40 cuts spread over the file, and the last few bytes one by one.
        let step = bytes.len() / 40;
        let cuts = (0..bytes.len())
            .step_by(step)
            .chain(bytes.len() - 4..bytes.len());
        for cut in cuts {
            let Ok(mut r) = MemrayReader::open(&bytes[..cut]) else {
                continue;
            };
            let mut events = 0u64;
            while let Ok(Some(_)) = r.next_event() {
                events += 1;
            }
            assert!(events <= 84_564 * 2, "cut at {cut}");
        }
        // 16 damaged copies: a byte inverted, a bit flipped, 64 bytes zeroed.
        for (i, at) in (0..bytes.len()).step_by(bytes.len() / 16).enumerate() {
            let mut damaged = bytes.to_vec();
            match i % 3 {
                0 => damaged[at] ^= 0xff,
                1 => damaged[at] ^= 0x10,
                _ => damaged[at..].iter_mut().take(64).for_each(|b| *b = 0),
            }
            if let Ok(mut r) = MemrayReader::open(&damaged[..]) {
                let s = leaks_and_peak(&mut r, 3);
                assert!(s.allocation_records <= 84_564 * 2, "damage at {at}");
            }
        }
    }
}
