//! What a memray capture says happened, in the capture's order, as plain
//! values the rest of flameox can fold without knowing memray's wire
//! format: allocations and frees with their thread and stack ids, RSS
//! samples, thread names, thread switches, Python object lifetimes and,
//! for `--aggregate` captures, per-location totals. Stack ids resolve to
//! frames through [`crate::memray::stacks::StackTables`].

/// Which hooked function produced an allocation record (memray's
/// `hooks::Allocator`, same numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Allocator {
    PymallocFree = 1,
    PymallocMalloc = 2,
    PymallocCalloc = 3,
    PymallocRealloc = 4,
    /// Also `free_sized`, `free_aligned_sized`, and the free half of a
    /// `realloc` that moved.
    Free = 5,
    Malloc = 6,
    Realloc = 7,
    Calloc = 8,
    PosixMemalign = 9,
    AlignedAlloc = 10,
    Memalign = 11,
    Valloc = 12,
    Pvalloc = 13,
    Mmap = 14,
    Munmap = 15,
}

/// How an allocator record changes the heap (memray's `AllocatorKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocatorKind {
    /// Owns `size` bytes at `address` until a simple free of `address`.
    SimpleAllocator,
    /// Frees whatever a simple allocator put at `address` (no size).
    SimpleDeallocator,
    /// Maps `[address, address + size)`.
    RangedAllocator,
    /// Unmaps `[address, address + size)`, possibly part of a mapping.
    RangedDeallocator,
}

impl Allocator {
    /// The allocator with memray's id `id`, if there is one.
    pub fn from_id(id: u8) -> Option<Self> {
        use Allocator::*;
        Some(match id {
            1 => PymallocFree,
            2 => PymallocMalloc,
            3 => PymallocCalloc,
            4 => PymallocRealloc,
            5 => Free,
            6 => Malloc,
            7 => Realloc,
            8 => Calloc,
            9 => PosixMemalign,
            10 => AlignedAlloc,
            11 => Memalign,
            12 => Valloc,
            13 => Pvalloc,
            14 => Mmap,
            15 => Munmap,
            _ => return None,
        })
    }

    pub fn kind(self) -> AllocatorKind {
        use Allocator::*;
        match self {
            PymallocFree | Free => AllocatorKind::SimpleDeallocator,
            Mmap => AllocatorKind::RangedAllocator,
            Munmap => AllocatorKind::RangedDeallocator,
            _ => AllocatorKind::SimpleAllocator,
        }
    }

    pub fn is_deallocator(self) -> bool {
        matches!(
            self.kind(),
            AllocatorKind::SimpleDeallocator | AllocatorKind::RangedDeallocator
        )
    }

    /// memray's name for it (`malloc`, `pymalloc_free`, …).
    pub fn name(self) -> &'static str {
        use Allocator::*;
        match self {
            PymallocFree => "pymalloc_free",
            PymallocMalloc => "pymalloc_malloc",
            PymallocCalloc => "pymalloc_calloc",
            PymallocRealloc => "pymalloc_realloc",
            Free => "free",
            Malloc => "malloc",
            Realloc => "realloc",
            Calloc => "calloc",
            PosixMemalign => "posix_memalign",
            AlignedAlloc => "aligned_alloc",
            Memalign => "memalign",
            Valloc => "valloc",
            Pvalloc => "pvalloc",
            Mmap => "mmap",
            Munmap => "munmap",
        }
    }
}

/// An allocating call (malloc, calloc, realloc's new block, mmap, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocationEvent {
    /// memray's thread number (1 = first thread seen, not an OS tid).
    pub tid: u64,
    pub address: u64,
    pub size: u64,
    pub allocator: Allocator,
    /// Python stack id (0: no Python frame was running).
    pub python_stack: usize,
    /// Native stack id, for `--native` captures (None: none recorded).
    pub native_stack: Option<u64>,
    /// Which set of loaded images native addresses map through
    /// (0: before any was recorded).
    pub image_generation: usize,
    /// Allocation records carry no time: this is the time of the latest
    /// RSS sample before it (or tracking start), ns since the epoch. A
    /// lower bound with memray's sampling granularity (~10 ms).
    pub not_before_ns: u64,
}

/// A freeing call (free, pymalloc free, munmap).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeallocationEvent {
    pub tid: u64,
    pub address: u64,
    /// munmap's length; 0 for free (memray does not record it).
    pub size: u64,
    pub allocator: Allocator,
    /// See [`AllocationEvent::not_before_ns`].
    pub not_before_ns: u64,
}

/// One location's totals from an `--aggregate` capture (memray's
/// `AggregatedAllocation`): what it held at the high-water mark and what
/// was still allocated when tracking stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AggregatedSite {
    pub tid: u64,
    pub allocator: Allocator,
    pub python_stack: usize,
    pub native_stack: Option<u64>,
    pub image_generation: usize,
    pub allocations_at_peak: u64,
    pub bytes_at_peak: u64,
    pub allocations_leaked: u64,
    pub bytes_leaked: u64,
}

/// One decoded event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemrayEvent {
    Allocation(AllocationEvent),
    Deallocation(DeallocationEvent),
    /// Resident set size sampled by memray's background thread. `heap_bytes`
    /// is recorded only in aggregated captures; for the others it is what
    /// the fold in [`crate::memray::summary`] computes.
    MemorySample {
        ms_since_epoch: u64,
        rss_bytes: u64,
        heap_bytes: Option<u64>,
    },
    /// A thread named itself (`threading` or `pthread_setname_np`).
    ThreadName {
        tid: u64,
        name: String,
    },
    /// The following records are about thread `tid`.
    ContextSwitch {
        tid: u64,
    },
    /// A new list of loaded images (after dlopen/dlclose) starts and
    /// applies from here on; its images are read into the stack tables
    /// (`StackTables::images(generation)`) as they follow.
    NewImageGeneration {
        generation: usize,
    },
    /// A Python object was created or destroyed (Python ≥ 3.13.3 with
    /// object-lifetime tracking; aggregated captures list the survivors).
    Object {
        tid: u64,
        address: u64,
        created: bool,
        python_stack: usize,
        native_stack: Option<u64>,
    },
    Aggregated(AggregatedSite),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_kinds_match_memray() {
        for id in 1..=15u8 {
            let a = Allocator::from_id(id).unwrap();
            assert_eq!(a as u8, id);
        }
        assert_eq!(Allocator::from_id(0), None);
        assert_eq!(Allocator::from_id(16), None);
        assert_eq!(Allocator::Realloc.kind(), AllocatorKind::SimpleAllocator);
        assert_eq!(
            Allocator::PymallocFree.kind(),
            AllocatorKind::SimpleDeallocator
        );
        assert!(Allocator::Munmap.is_deallocator());
        assert!(!Allocator::Mmap.is_deallocator());
        assert_eq!(Allocator::PosixMemalign.name(), "posix_memalign");
    }
}
