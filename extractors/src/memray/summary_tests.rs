//! Unit tests of `summary.rs`: the one-pass peak snapshot is checked
//! against a plain two-pass replay (memray's method: find the peak record,
//! then replay up to it) on pseudo-random event sequences, and against
//! hand-worked cases.

use std::collections::HashMap;

use super::*;
use crate::memray::events::{AllocationEvent, Allocator, DeallocationEvent};

fn alloc(tid: u64, address: u64, size: u64, allocator: Allocator, site: usize) -> MemrayEvent {
    MemrayEvent::Allocation(AllocationEvent {
        tid,
        address,
        size,
        allocator,
        python_stack: site,
        native_stack: None,
        image_generation: 0,
        not_before_ns: 0,
    })
}

fn free(address: u64, size: u64, allocator: Allocator) -> MemrayEvent {
    MemrayEvent::Deallocation(DeallocationEvent {
        tid: 1,
        address,
        size,
        allocator,
        not_before_ns: 0,
    })
}

/// memray's two passes, naively: (peak, live-at-peak by site, live-at-end by site).
type Groups = HashMap<usize, (u64, u64)>;
fn two_pass(events: &[MemrayEvent]) -> (u64, Groups, Groups) {
    #[derive(Default)]
    struct State {
        simple: HashMap<u64, (u64, usize)>,
        ranges: Vec<(u64, u64, usize)>,
    }
    fn apply(s: &mut State, e: &MemrayEvent) -> (u64, i64) {
        match e {
            MemrayEvent::Allocation(a) if a.allocator == Allocator::Mmap => {
                if a.size > 0 {
                    s.ranges
                        .push((a.address, a.address + a.size, a.python_stack));
                }
                (a.size, 0)
            }
            MemrayEvent::Allocation(a) => {
                s.simple.insert(a.address, (a.size, a.python_stack));
                (a.size, 0)
            }
            MemrayEvent::Deallocation(d) if d.allocator == Allocator::Munmap => {
                let (lo, hi) = (d.address, d.address + d.size);
                let mut freed = 0;
                let mut kept = Vec::new();
                for &(b, e, site) in &s.ranges {
                    let (cb, ce) = (b.max(lo), e.min(hi));
                    if ce <= cb || d.size == 0 {
                        kept.push((b, e, site));
                        continue;
                    }
                    freed += ce - cb;
                    if b < cb {
                        kept.push((b, cb, site));
                    }
                    if ce < e {
                        kept.push((ce, e, site));
                    }
                }
                s.ranges = kept;
                (0, freed as i64)
            }
            MemrayEvent::Deallocation(d) => {
                let freed = s.simple.remove(&d.address).map_or(0, |(size, _)| size);
                (0, freed as i64)
            }
            _ => (0, 0),
        }
    }
    fn groups(s: &State) -> Groups {
        let mut g = Groups::new();
        for &(size, site) in s.simple.values() {
            let e = g.entry(site).or_default();
            *e = (e.0 + size, e.1 + 1);
        }
        for &(b, e, site) in &s.ranges {
            let x = g.entry(site).or_default();
            *x = (x.0 + (e - b), x.1 + 1);
        }
        g
    }
    // Pass 1: the peak and its record index (the last one reaching it).
    let mut s = State::default();
    let (mut current, mut peak, mut peak_at) = (0u64, 0u64, 0usize);
    for (i, e) in events.iter().enumerate() {
        let (added, freed) = apply(&mut s, e);
        current = current + added - freed as u64;
        if current >= peak {
            (peak, peak_at) = (current, i);
        }
    }
    let at_end = groups(&s);
    // Pass 2: replay up to the peak.
    let mut s = State::default();
    for e in &events[..=peak_at.min(events.len().saturating_sub(1))] {
        apply(&mut s, e);
    }
    (peak, groups(&s), at_end)
}

fn groups_of(table: &SiteTable) -> Groups {
    table
        .top_stacks
        .iter()
        .map(|s| (s.python_stack, (s.bytes, s.count)))
        .collect()
}

#[test]
fn one_pass_matches_memrays_two_passes_on_random_sequences() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rand = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for _round in 0..300 {
        let mut events = Vec::new();
        for _ in 0..(1 + rand(60)) {
            let addr = 0x1000 * (1 + rand(12));
            let site = rand(5) as usize;
            events.push(match rand(6) {
                0 | 1 => alloc(1, addr, 1 + rand(5000), Allocator::Malloc, site),
                2 => free(addr, 0, Allocator::Free),
                3 => alloc(2, addr, 0x1000 * rand(4), Allocator::Mmap, site),
                4 => free(addr + 0x400 * rand(4), 0x400 * rand(8), Allocator::Munmap),
                _ => free(addr, 0, Allocator::PymallocFree),
            });
        }
        let mut fold = MemoryFold::new();
        events.iter().for_each(|e| fold.add(e));
        let tables = StackTables::new(0, 1, 0);
        let summary = fold.finish(&tables, usize::MAX);
        let (peak, at_peak, at_end) = two_pass(&events);
        assert_eq!(summary.peak_heap_bytes, peak, "{events:?}");
        assert_eq!(groups_of(&summary.at_peak), at_peak, "{events:?}");
        assert_eq!(groups_of(&summary.at_end), at_end, "{events:?}");
    }
}

#[test]
fn hand_worked_peak_leaks_and_samples() {
    let events = [
        alloc(1, 0x10, 100, Allocator::Malloc, 1),
        alloc(1, 0x20, 300, Allocator::Calloc, 2),
        MemrayEvent::MemorySample {
            ms_since_epoch: 5,
            rss_bytes: 1 << 20,
            heap_bytes: None,
        },
        free(0x20, 0, Allocator::Free),
        free(0x999, 0, Allocator::Free), // unknown address: ignored
        alloc(1, 0x30, 50, Allocator::Realloc, 3),
    ];
    let mut fold = MemoryFold::new();
    events.iter().for_each(|e| fold.add(e));
    assert_eq!(fold.current_heap_bytes(), 150);
    let s = fold.finish(&StackTables::new(0, 1, 0), 10);
    assert_eq!(s.allocation_records, 5);
    let totals = s.totals.unwrap();
    assert_eq!(
        (
            totals.allocations,
            totals.allocated_bytes,
            totals.deallocations
        ),
        (3, 450, 2)
    );
    assert_eq!((s.peak_heap_bytes, s.peak_record_index), (400, Some(1)));
    assert_eq!(
        s.at_peak.total,
        ByteCount {
            bytes: 400,
            count: 2
        }
    );
    assert_eq!(
        s.at_end.total,
        ByteCount {
            bytes: 150,
            count: 2
        }
    );
    assert_eq!(s.at_end.top_stacks[0].python_stack, 1);
    assert_eq!(s.memory_over_time[0].heap_bytes, 400);
    // No Python frames known: everything is the "no frame" site.
    assert_eq!(s.at_end.top_python_frames.len(), 1);
    assert_eq!(s.at_end.top_python_frames[0].frame, None);
}

#[test]
fn aggregated_sites_sum_into_peak_and_leaks() {
    use crate::memray::events::AggregatedSite;
    let site = |stack, peak: (u64, u64), leaked: (u64, u64)| {
        MemrayEvent::Aggregated(AggregatedSite {
            tid: 1,
            allocator: Allocator::Malloc,
            python_stack: stack,
            native_stack: None,
            image_generation: 0,
            allocations_at_peak: peak.0,
            bytes_at_peak: peak.1,
            allocations_leaked: leaked.0,
            bytes_leaked: leaked.1,
        })
    };
    let mut fold = MemoryFold::new();
    for e in [site(1, (2, 200), (1, 10)), site(2, (0, 0), (3, 30))] {
        fold.add(&e);
    }
    let s = fold.finish(&StackTables::new(0, 1, 0), 10);
    assert_eq!(s.peak_heap_bytes, 200);
    assert!(s.totals.is_none() && s.allocated.is_none());
    assert_eq!(s.at_peak.stack_sites, 1);
    assert_eq!(
        s.at_end.total,
        ByteCount {
            bytes: 40,
            count: 4
        }
    );
}
