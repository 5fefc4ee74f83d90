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
