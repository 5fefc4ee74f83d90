//! The import's CPU time per phase, written for the import profile
//! (`benches/import_profile.sh`) when `FLAMEOX_PHASE_CPU` names a file.
//!
//! The phases are [`flameox_extractors::phase_cpu`]'s; the file is one JSON
//! object of CPU nanoseconds per phase (`{"decode": …, "nest": …}`),
//! rewritten at the end of each import of the process. Nothing is counted
//! unless the variable is set.

use flameox_extractors::phase_cpu;

/// The variable naming the file.
pub const PHASE_CPU_VARIABLE: &str = "FLAMEOX_PHASE_CPU";

/// Starts counting if the variable is set.
pub fn start() {
    if std::env::var_os(PHASE_CPU_VARIABLE).is_some() {
        phase_cpu::enable();
    }
}

/// Writes the totals so far to the named file (a failure to write is
/// reported on stderr: the import itself succeeded).
pub fn write() {
    let Some(path) = std::env::var_os(PHASE_CPU_VARIABLE) else {
        return;
    };
    let totals: serde_json::Map<String, serde_json::Value> = phase_cpu::totals()
        .iter()
        .map(|(phase, ns)| (phase.name().to_string(), serde_json::json!(ns)))
        .collect();
    let text = serde_json::Value::Object(totals).to_string();
    if let Err(e) = std::fs::write(&path, text) {
        eprintln!(
            "flameox: could not write the phase profile to {}: {e}",
            std::path::Path::new(&path).display()
        );
    }
}
