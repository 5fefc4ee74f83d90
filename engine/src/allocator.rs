//! Process-wide allocator settings, applied once at start-up by the binary.
//!
//! An import runs six threads (scanner, main, Parquet writer and its
//! helper, reductions, store copier); glibc gives each its own malloc
//! arena, and memory freed in one arena is not reused by the others, so
//! peak RSS carries the slack of all of them. Two arenas measured 20–30 MB
//! lower peak RSS on 216–520 MB Kineto imports at the same wall time
//! (`docs/performance.md`, "Bounded-memory events").

/// Arenas glibc may create (the main one included).
pub const MALLOC_ARENAS: i32 = 2;

/// Caps glibc's malloc arenas at [`MALLOC_ARENAS`]. Call before any thread
/// starts; a no-op elsewhere than glibc. Returns whether it took effect.
pub fn limit_malloc_arenas() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only changes allocator parameters; M_ARENA_MAX
        // with a positive count is a documented, always-valid setting.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, MALLOC_ARENAS) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn glibc_accepts_the_arena_cap() {
        assert_eq!(
            super::limit_malloc_arenas(),
            cfg!(all(target_os = "linux", target_env = "gnu"))
        );
    }
}
