//! Process-wide allocator settings, applied once at start-up by the binary.
//!
//! An import runs six threads (scanner, main, Parquet writer and its
//! helper, reductions, store copier); glibc gives each its own malloc
//! arena, and memory freed in one arena is not reused by the others, so
//! peak RSS carries the slack of all of them. Two arenas measured 20–30 MB
//! lower peak RSS on 216–520 MB Kineto imports at the same wall time
//! (`docs/performance.md`, "Bounded-memory events").
//!
//! glibc also raises its mmap threshold each time a large block is freed
//! (up to 32 MiB), after which large blocks — Arrow buffers, batch
//! columns, sort and merge buffers — come from the arena and stay in RSS as
//! holes once freed. A fixed 2 MiB threshold gives every such block its own
//! mapping, returned whole when freed: peak RSS 265 → 217 MB on a 2 M-event
//! Nsight export and 163–169 → 137 MB on a 216 MB Kineto trace
//! (`docs/performance.md`, "Bounded-memory events").

/// Arenas glibc may create (the main one included).
pub const MALLOC_ARENAS: i32 = 2;

/// Blocks at least this large get their own mapping.
pub const MMAP_THRESHOLD_BYTES: i32 = 2 << 20;

/// Caps glibc's malloc arenas at [`MALLOC_ARENAS`] and fixes its mmap
/// threshold at [`MMAP_THRESHOLD_BYTES`]. Call before any thread starts; a
/// no-op elsewhere than glibc. Returns whether both took effect.
pub fn tune_malloc() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only changes allocator parameters; M_ARENA_MAX
        // with a positive count and M_MMAP_THRESHOLD within glibc's limit
        // (32 MiB on 64-bit) are documented, always-valid settings.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, MALLOC_ARENAS) == 1
                && libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn glibc_accepts_the_arena_cap_and_the_mmap_threshold() {
        assert_eq!(
            super::tune_malloc(),
            cfg!(all(target_os = "linux", target_env = "gnu"))
        );
    }
}
