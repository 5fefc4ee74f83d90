//! How an import reports progress and learns it was cancelled: the one
//! interface the import, its deadline, captures and experiments share.

/// Progress and cancellation for long imports.
pub trait ImportProgress: Sync {
    /// Entering a named phase (`validating_artifact`, `extracting`, `publishing`, `completed`).
    fn phase(&self, _phase: &str) {}
    /// Input bytes processed of the total.
    fn bytes(&self, _done: u64, _total: u64) {}
    /// Countable work items finished of the total (an experiment's trials).
    fn steps(&self, _done: u64, _total: u64) {}
    fn cancelled(&self) -> bool {
        false
    }
    /// A workload process tree started with leader (and group) `pid`.
    fn process_started(&self, _pid: i32) {}
}

/// Reports nothing, never cancels.
pub struct Quiet;
impl ImportProgress for Quiet {}

/// A process runner's supervision by a progress reporter: the reporter's
/// cancel stops the process tree, and its start is reported.
pub struct ProgressSupervision<'a>(pub &'a dyn ImportProgress);
impl crate::execution::Supervision for ProgressSupervision<'_> {
    fn cancelled(&self) -> bool {
        self.0.cancelled()
    }
    fn started(&self, pid: i32) {
        self.0.process_started(pid);
    }
}
