//! Unit tests of `records.rs` on bytes built by the test capture writer.

use super::*;
use crate::memray::test_capture::CaptureWriter;

fn decode_all(bytes: &[u8], native: bool) -> Result<Vec<WireRecord>, MemrayError> {
    let mut input = CaptureBytes::new(bytes, false);
    let mut decoder = RecordDecoder::new(native);
    let mut out = Vec::new();
    while let Some(r) = decoder.next(&mut input)? {
        out.push(r);
    }
    Ok(out)
}

#[test]
fn pointer_cache_deltas_and_flags_follow_the_writer() {
    let mut w = CaptureWriter::records_only(true);
    w.alloc(1, 0x7f00_0000_1000, 64, Allocator::Malloc, 3);
    w.alloc(1, 0x7f00_0000_2000, 32, Allocator::Calloc, 2);
    w.alloc(1, 0x7f00_0000_1000, 0, Allocator::Free, 0); // cache hit, slot 1
    w.alloc(1, 0x7f00_0000_3000, 4096, Allocator::Mmap, 9);
    w.alloc(1, 0x7f00_0000_3000, 4096, Allocator::Munmap, 9);
    w.push(1, 7, 20, true);
    w.pop(1, 17); // two pop records: 16 + 1
    w.trailer();
    let records = decode_all(&w.bytes, true).unwrap();
    let allocs: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            WireRecord::Allocation {
                address,
                size,
                allocator,
                native_frame_id,
            } => Some((*address, *size, *allocator, *native_frame_id)),
            _ => None,
        })
        .collect();
    assert_eq!(
        allocs,
        vec![
            (0x7f00_0000_1000, 64, Allocator::Malloc, 3),
            (0x7f00_0000_2000, 32, Allocator::Calloc, 2),
            (0x7f00_0000_1000, 0, Allocator::Free, 0),
            (0x7f00_0000_3000, 4096, Allocator::Mmap, 9),
            (0x7f00_0000_3000, 4096, Allocator::Munmap, 9),
        ]
    );
    assert!(records.contains(&WireRecord::FramePush {
        code_object_id: 7,
        instruction_offset: 20,
        is_entry_frame: true
    }));
    assert!(records.contains(&WireRecord::FramePop { count: 16 }));
    assert!(records.contains(&WireRecord::FramePop { count: 1 }));
    assert_eq!(records.last(), Some(&WireRecord::Trailer));
}

#[test]
fn code_objects_images_and_unknown_types() {
    let mut w = CaptureWriter::records_only(false);
    w.code_object(5, "f", "a.py", 10, &[1, 2, 3]);
    w.code_object(6, "g", "a.py", 4, &[]);
    w.map_start();
    w.image("/lib/x.so", 0x1000, &[(0, 0x20), (0x2000, 0x10)]);
    let records = decode_all(&w.bytes, false).unwrap();
    match &records[1] {
        WireRecord::CodeObject(c) => assert_eq!((c.first_line, c.linetable.len()), (4, 0)),
        other => panic!("{other:?}"),
    }
    match &records[3] {
        WireRecord::Image(i) => {
            assert_eq!(i.load_address, 0x1000);
            assert_eq!(
                i.segments[1],
                Segment {
                    vaddr: 0x2000,
                    memsz: 0x10
                }
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        decode_all(&[3], false),
        Err(MemrayError::Corrupt { .. })
    ));
    // allocator id 0 in the type byte, then an unknown id byte
    assert!(matches!(
        decode_all(&[0x80 | 0x78, 0x00, 99], false),
        Err(MemrayError::Corrupt { .. })
    ));
    let mut padded = vec![TRAILER + 1, 0, 0]; // memory record 0,0
    padded.extend([0u8; 5]);
    assert_eq!(
        decode_all(&padded, false).unwrap().last(),
        Some(&WireRecord::Padding { zero_bytes: 5 })
    );
}
