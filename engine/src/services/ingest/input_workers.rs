//! Runs an import's inputs (one Kineto file per rank, several paths) on a
//! few threads at once, so a multi-rank job is extracted at the speed of
//! the machine's cores instead of one file after another, while the run is
//! still published as one commit by the caller.
//!
//! Each worker takes the next input in order, stores and extracts it, and
//! stops taking inputs once any input failed (the others see the stop as a
//! cancel). Progress adds every input's bytes to one tally, reported in
//! increasing order. The import's event budget is shared: each of `n`
//! workers holds `1/n` of `import.events_in_memory` (the rest spills).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use super::import_progress::ImportProgress;

/// Most inputs extracted at once when `import.parallel_inputs` is 0.
const MOST_AUTOMATIC_WORKERS: usize = 8;

/// Workers for `inputs` inputs: `configured`, or one per core (at most
/// [`MOST_AUTOMATIC_WORKERS`]) when it is 0; never more than the inputs.
pub fn worker_count(configured: u64, inputs: usize) -> usize {
    let wanted = match usize::try_from(configured) {
        Ok(0) | Err(_) => std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MOST_AUTOMATIC_WORKERS),
        Ok(n) => n,
    };
    wanted.clamp(1, inputs.max(1))
}

/// Runs `work` for every index below `count` on up to `workers` threads
/// (this one included) and returns the results in index order. Once a
/// result is `failed`, `stop` is set and no further index is started
/// (those stay `None`); work in flight sees `stop` and ends early.
pub fn each_input<R: Send>(
    count: usize,
    workers: usize,
    stop: &AtomicBool,
    work: impl Fn(usize) -> R + Sync,
    failed: impl Fn(&R) -> bool + Sync,
) -> Vec<Option<R>> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..count).map(|_| None).collect());
    let worker = || {
        while !stop.load(Ordering::SeqCst) {
            let index = next.fetch_add(1, Ordering::SeqCst);
            if index >= count {
                break;
            }
            let result = work(index);
            if failed(&result) {
                stop.store(true, Ordering::SeqCst);
            }
            if let Some(slot) = results
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_mut(index)
            {
                *slot = Some(result);
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..workers.min(count) {
            // A thread that cannot start leaves its share to the others.
            let _ = std::thread::Builder::new()
                .name("flameox-import-input".into())
                .spawn_scoped(scope, worker);
        }
        worker();
    });
    results.into_inner().unwrap_or_else(PoisonError::into_inner)
}

/// Input bytes done across all inputs of one import, reported to the
/// import's progress in increasing order.
pub struct ByteTally<'a> {
    progress: &'a dyn ImportProgress,
    done: Mutex<u64>,
    total: u64,
}

impl<'a> ByteTally<'a> {
    pub fn new(progress: &'a dyn ImportProgress, total: u64) -> Self {
        ByteTally {
            progress,
            done: Mutex::new(0),
            total,
        }
    }

    fn add(&self, bytes: u64) {
        let mut done = self.done.lock().unwrap_or_else(PoisonError::into_inner);
        *done = done.saturating_add(bytes).min(self.total);
        self.progress.bytes(*done, self.total);
    }
}

/// One input's share of a [`ByteTally`]: how far its extractor has read.
pub struct InputBytes<'a> {
    tally: &'a ByteTally<'a>,
    size: u64,
    reported: AtomicU64,
}

impl<'a> InputBytes<'a> {
    pub fn new(tally: &'a ByteTally<'a>, size: u64) -> Self {
        InputBytes {
            tally,
            size,
            reported: AtomicU64::new(0),
        }
    }

    /// The input has been read up to byte `read` (never counts back).
    pub fn read_to(&self, read: u64) {
        let read = read.min(self.size);
        let before = self.reported.fetch_max(read, Ordering::SeqCst);
        if read > before {
            self.tally.add(read - before);
        }
    }

    /// The input is done: all of its bytes count.
    pub fn finished(&self) {
        self.read_to(self.size);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[derive(Default)]
    struct Recorded(Mutex<Vec<u64>>);
    impl ImportProgress for Recorded {
        fn bytes(&self, done: u64, _total: u64) {
            self.0.lock().unwrap().push(done);
        }
    }

    #[test]
    fn every_input_runs_once_and_results_keep_their_order() {
        let stop = AtomicBool::new(false);
        let calls = AtomicU64::new(0);
        let results = each_input(
            50,
            4,
            &stop,
            |i| {
                calls.fetch_add(1, Ordering::SeqCst);
                i * 2
            },
            |_| false,
        );
        assert_eq!(calls.load(Ordering::SeqCst), 50);
        let values: Vec<usize> = results.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(values, (0..50).map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn a_failure_stops_new_inputs() {
        let stop = AtomicBool::new(false);
        let results = each_input(100, 1, &stop, |i| i, |&i| i == 3);
        assert!(stop.load(Ordering::SeqCst));
        assert_eq!(results.iter().filter(|r| r.is_some()).count(), 4);
        assert!(results[4..].iter().all(Option::is_none));
    }

    #[test]
    fn workers_run_at_once_and_never_exceed_the_inputs() {
        assert_eq!(worker_count(3, 10), 3);
        assert_eq!(worker_count(16, 2), 2);
        assert_eq!(worker_count(5, 0), 1);
        assert!(worker_count(0, 100) >= 1 && worker_count(0, 100) <= MOST_AUTOMATIC_WORKERS);
        // Two inputs that each wait for the other to start finish only if
        // they run at the same time.
        let stop = AtomicBool::new(false);
        let started = AtomicU64::new(0);
        let results = each_input(
            2,
            2,
            &stop,
            |_| {
                started.fetch_add(1, Ordering::SeqCst);
                let waited = std::time::Instant::now();
                while started.load(Ordering::SeqCst) < 2 {
                    if waited.elapsed() > std::time::Duration::from_secs(10) {
                        return false;
                    }
                    std::thread::yield_now();
                }
                true
            },
            |_| false,
        );
        assert!(results.iter().all(|r| *r == Some(true)));
    }

    #[test]
    fn progress_adds_inputs_and_only_grows() {
        let progress = Recorded::default();
        let tally = ByteTally::new(&progress, 300);
        let a = InputBytes::new(&tally, 100);
        let b = InputBytes::new(&tally, 200);
        a.read_to(40);
        b.read_to(150);
        a.read_to(30); // a late, smaller report counts nothing
        a.read_to(500); // clamped to the input's size
        b.finished();
        b.finished();
        let seen = progress.0.lock().unwrap().clone();
        assert_eq!(seen, vec![40, 190, 250, 300]);
    }
}
