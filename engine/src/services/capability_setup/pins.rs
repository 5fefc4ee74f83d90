//! The adapters capability setup can install into the managed runtime, each
//! pinned to one distribution version and verified by its version probe.
//!
//! Only adapters that run as their own program are here: py-spy attaches
//! to any interpreter. viztracer runs inside the workload's own
//! interpreter, so it is a workload dependency (declare it in
//! `requirements.python_distributions`, then prepare_workload_dependencies);
//! perf and nsys are host tools no package index provides.

/// One installable adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ManagedAdapter {
    pub adapter: &'static str,
    pub distribution: &'static str,
    pub version: &'static str,
    /// The program it installs into the runtime's `bin/`.
    pub program: &'static str,
}

impl ManagedAdapter {
    /// `distribution==version`, as the installer is asked.
    pub fn requirement(&self) -> String {
        format!("{}=={}", self.distribution, self.version)
    }
}

/// Every managed adapter.
pub const MANAGED_ADAPTERS: [ManagedAdapter; 1] = [ManagedAdapter {
    adapter: "py-spy",
    distribution: "py-spy",
    version: "0.4.3",
    program: "py-spy",
}];

/// The managed adapter of this name.
pub fn managed(adapter: &str) -> Option<&'static ManagedAdapter> {
    MANAGED_ADAPTERS.iter().find(|m| m.adapter == adapter)
}
