//! CPU time of an import split by phase, for the import profile
//! (`benches/import_profile.sh`, `docs/performance.md` "CPU per byte").
//!
//! Each thread of an import says which phase its work belongs to with
//! [`enter`]; the guard charges the thread's CPU time (its own clock, not
//! the wall) to that phase, and a phase entered inside another pauses the
//! outer one, so nothing is counted twice. Phases change a few times per
//! batch of thousands of events, never per event. Off unless
//! [`enable`] was called (the engine does when `FLAMEOX_PHASE_CPU` names a
//! file): then each switch costs one `clock_gettime`.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Where an import's CPU time goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Reading and decoding the input: inflating, scanning, parsing,
    /// interpreting events into the builder.
    Decode = 0,
    /// Sorting, nesting, self time, flows, phases, stack reductions and
    /// building the output batches.
    Nest = 1,
    /// Writing, merging and reading back spill runs.
    Spill = 2,
    /// Parquet encoding and compression.
    Write = 3,
    /// Copying the input into the artifact store with its sha256.
    Hash = 4,
}

impl Phase {
    pub const ALL: [Phase; 5] = [
        Phase::Decode,
        Phase::Nest,
        Phase::Spill,
        Phase::Write,
        Phase::Hash,
    ];

    /// The phase's name in the profile file.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Decode => "decode",
            Phase::Nest => "nest",
            Phase::Spill => "spill",
            Phase::Write => "write",
            Phase::Hash => "hash",
        }
    }
}

static ENABLED: AtomicBool = AtomicBool::new(false);
static CPU_NS: [AtomicU64; 5] = [const { AtomicU64::new(0) }; 5];

thread_local! {
    /// The phase this thread is in and its CPU clock when it entered.
    static CURRENT: Cell<Option<(Phase, u64)>> = const { Cell::new(None) };
    /// What this thread alone charged to each phase.
    static THREAD_NS: Cell<[u64; 5]> = const { Cell::new([0; 5]) };
}

/// Starts counting (for the rest of the process).
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// CPU nanoseconds charged to each phase so far, in [`Phase::ALL`] order.
pub fn totals() -> [(Phase, u64); 5] {
    Phase::ALL.map(|p| (p, CPU_NS[p as usize].load(Ordering::Relaxed)))
}

/// What the calling thread alone charged to each phase, in [`Phase::ALL`]
/// order.
pub fn this_thread() -> [u64; 5] {
    THREAD_NS.with(Cell::get)
}

/// This thread's CPU time in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// Charges the time since the current phase was (re)entered to it and
/// restarts its clock at `now`.
fn charge(now: u64) {
    CURRENT.with(|c| {
        if let Some((phase, since)) = c.get() {
            let spent = now.saturating_sub(since);
            CPU_NS[phase as usize].fetch_add(spent, Ordering::Relaxed);
            THREAD_NS.with(|t| {
                let mut mine = t.get();
                mine[phase as usize] += spent;
                t.set(mine);
            });
            c.set(Some((phase, now)));
        }
    });
}

/// Charges this thread's CPU time to `phase` until the guard drops; the
/// phase it interrupts resumes then.
#[must_use = "the phase ends when the guard drops"]
pub fn enter(phase: Phase) -> PhaseGuard {
    if !ENABLED.load(Ordering::Relaxed) {
        return PhaseGuard {
            previous: None,
            active: false,
        };
    }
    let now = thread_cpu_ns();
    charge(now);
    let previous = CURRENT
        .with(|c| c.replace(Some((phase, now))))
        .map(|(p, _)| p);
    PhaseGuard {
        previous,
        active: true,
    }
}

/// Ends its phase on drop ([`enter`]).
pub struct PhaseGuard {
    previous: Option<Phase>,
    active: bool,
}

impl Drop for PhaseGuard {
    fn drop(&mut self) {
        if !self.active {
            return;
        }
        let now = thread_cpu_ns();
        charge(now);
        CURRENT.with(|c| c.set(self.previous.map(|p| (p, now))));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spin(ms: u64) {
        let start = thread_cpu_ns();
        let mut x = 0u64;
        while thread_cpu_ns() - start < ms * 1_000_000 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    }

    /// A nested phase pauses its outer one: the outer phase gets only its
    /// own time, and both together are the thread's CPU time.
    #[test]
    fn nested_phases_split_the_time_without_counting_twice() {
        enable();
        let before = this_thread();
        let start = thread_cpu_ns();
        {
            let _decode = enter(Phase::Decode);
            spin(20);
            {
                let _spill = enter(Phase::Spill);
                spin(30);
            }
            spin(10);
        }
        let spent = thread_cpu_ns() - start;
        let after = this_thread();
        let delta = |p: Phase| after[p as usize] - before[p as usize];
        let (decode, spill) = (delta(Phase::Decode), delta(Phase::Spill));
        assert!(
            (29_000_000..40_000_000).contains(&decode),
            "decode {decode}"
        );
        assert!((29_000_000..40_000_000).contains(&spill), "spill {spill}");
        assert!(decode + spill <= spent, "{decode} + {spill} > {spent}");
    }
}
