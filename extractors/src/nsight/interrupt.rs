//! Stopping SQLite in the middle of a statement.
//!
//! The table readers poll cancellation between rows, but one step of a
//! query over a corrupt export can run for a very long time without
//! yielding a row (interior pages that list the same child page again and
//! again are walked once per listing). A watchdog thread polls the
//! observer while the export is read and interrupts every connection of
//! the extraction when it asks to stop (Ctrl-C, an MCP cancel, or the
//! import's deadline), so the import ends with `ExtractError::Cancelled`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rusqlite::{Connection, InterruptHandle};

use crate::api::ExtractObserver;

/// How often the watchdog asks the observer.
const POLL: Duration = Duration::from_millis(20);

/// The connections of one extraction, and whether it was told to stop.
#[derive(Default)]
pub struct SqliteInterrupts {
    handles: Mutex<Vec<InterruptHandle>>,
    stopped: AtomicBool,
}

impl SqliteInterrupts {
    /// Adds a connection (interrupted at once if the extraction stopped).
    pub fn register(&self, conn: &Connection) {
        let handle = conn.get_interrupt_handle();
        if self.stopped() {
            handle.interrupt();
        }
        if let Ok(mut handles) = self.handles.lock() {
            handles.push(handle);
        }
    }

    /// Interrupts every registered connection's running statement.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        if let Ok(handles) = self.handles.lock() {
            for h in handles.iter() {
                h.interrupt();
            }
        }
    }

    pub fn stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// Runs `work` with a watchdog that calls [`Self::stop`] (again and
    /// again, for connections opened later) once `observer` is cancelled.
    pub fn watch<T>(&self, observer: &dyn ExtractObserver, work: impl FnOnce() -> T) -> T {
        /// Ends the watchdog however `work` ends (a panic included: the
        /// scope would otherwise wait for the watchdog forever).
        struct Done<'a>(&'a AtomicBool);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let done = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let watchdog = std::thread::Builder::new()
                .name("nsight-watchdog".into())
                .spawn_scoped(scope, || {
                    while !done.load(Ordering::SeqCst) {
                        if observer.cancelled() {
                            self.stop();
                        }
                        std::thread::park_timeout(POLL);
                    }
                });
            let finished = Done(&done);
            let result = work();
            drop(finished);
            if let Ok(handle) = watchdog {
                handle.thread().unpark();
            }
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    struct Flag(AtomicBool);
    impl ExtractObserver for Flag {
        fn cancelled(&self) -> bool {
            self.0.load(Ordering::SeqCst)
        }
    }

    #[test]
    fn a_cancel_interrupts_a_statement_that_yields_no_row() {
        let conn = Connection::open_in_memory().unwrap();
        let interrupts = SqliteInterrupts::default();
        interrupts.register(&conn);
        let observer = Flag(AtomicBool::new(false));
        let started = std::time::Instant::now();
        let result = interrupts.watch(&observer, || {
            std::thread::scope(|s| {
                s.spawn(|| {
                    std::thread::sleep(Duration::from_millis(100));
                    observer.0.store(true, Ordering::SeqCst);
                });
                // Never yields a row, never ends by itself.
                conn.query_row(
                    "WITH RECURSIVE r(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM r) \
                     SELECT n FROM r WHERE n < 0",
                    [],
                    |row| row.get::<_, i64>(0),
                )
            })
        });
        assert!(result.is_err(), "{result:?}");
        assert!(interrupts.stopped());
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
