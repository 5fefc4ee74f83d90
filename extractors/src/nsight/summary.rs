//! The Nsight extraction summary's coverage, limitations and metadata:
//! which tables and columns the export had, and what was read from them.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{
    ACTIVITY_TABLES, DRIVER_TABLE, GRAPH_TRACE_TABLE, KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE,
    NVTX_TABLE, RUNTIME_TABLE, SYNC_TABLE,
};
use crate::api::LimitationLog;

/// What the export's schema said, for the summary.
pub(super) struct ExportFacts<'a> {
    /// Per read table: whether the export has it.
    pub present: &'a BTreeMap<&'static str, bool>,
    /// Whether the kernel table has `correlationId`, `streamId`, `gridX`.
    pub kernel_cols: Option<(bool, bool, bool)>,
    /// Tables with rows that this extractor does not read.
    pub not_extracted: &'a [String],
}

impl ExportFacts<'_> {
    fn has(&self, table: &str) -> bool {
        self.present.get(table).copied().unwrap_or(false)
    }
}

/// The `coverage` flags of the summary: a table's flag is true only when
/// the export had it *and* rows were read from it (an empty `OSRT_API`
/// table is no OS-runtime evidence).
pub(super) fn coverage(
    facts: &ExportFacts,
    rows_read: &BTreeMap<String, u64>,
    thread_names: bool,
    device_names: bool,
    has_phases: bool,
) -> BTreeMap<String, bool> {
    let has = |t: &str| facts.has(t) && rows_read.get(t).is_some_and(|n| *n > 0);
    let mut coverage = BTreeMap::new();
    coverage.insert("kernels".to_string(), has(KERNEL_TABLE));
    coverage.insert("runtime_api".to_string(), has(RUNTIME_TABLE));
    coverage.insert("driver_api".to_string(), has(DRIVER_TABLE));
    coverage.insert("memcpy".to_string(), has(MEMCPY_TABLE));
    coverage.insert("memset".to_string(), has(MEMSET_TABLE));
    coverage.insert("synchronization".to_string(), has(SYNC_TABLE));
    coverage.insert("graph_trace".to_string(), has(GRAPH_TRACE_TABLE));
    coverage.insert("nvtx".to_string(), has(NVTX_TABLE));
    let (corr_col, stream_col, grid_col) = facts.kernel_cols.unwrap_or((false, false, false));
    coverage.insert(
        "correlation_ids".to_string(),
        corr_col && (has(RUNTIME_TABLE) || has(DRIVER_TABLE)),
    );
    coverage.insert("stream_identity".to_string(), stream_col);
    coverage.insert("launch_geometry".to_string(), grid_col);
    coverage.insert("thread_names".to_string(), thread_names);
    coverage.insert("device_names".to_string(), device_names);
    coverage.insert("phase_annotations".to_string(), has_phases);
    coverage
}

/// Limitations for the tables the export lacks or that are not read.
pub(super) fn note_missing_tables(facts: &ExportFacts, log: &mut LimitationLog) {
    let has = |t: &str| facts.has(t);
    if !has(KERNEL_TABLE) {
        log.note("missing_kernel_table", || {
            format!("the export has no {KERNEL_TABLE} table: no kernels (was CUDA tracing on?)")
        });
    }
    if !has(RUNTIME_TABLE) && !has(DRIVER_TABLE) {
        log.note("missing_api_tables", || {
            format!(
                "the export has neither {RUNTIME_TABLE} nor {DRIVER_TABLE}: kernels cannot be tied to the calls that launched them"
            )
        });
    }
    let optional_missing: Vec<&str> = ACTIVITY_TABLES[2..]
        .iter()
        .copied()
        .filter(|t| !has(t))
        .collect();
    log.note_n(
        "missing_optional_tables",
        optional_missing.len() as u64,
        || {
            format!(
                "tables absent from the export: {}",
                optional_missing.join(", ")
            )
        },
    );
    let not_extracted = facts.not_extracted;
    log.note_n("tables_not_extracted", not_extracted.len() as u64, || {
        format!(
            "tables with rows that this extractor does not read: {}",
            not_extracted.join(", ")
        )
    });
}

/// The `metadata` of the summary.
pub(super) fn metadata(
    facts: &ExportFacts,
    fingerprint: &str,
    rows_read: &BTreeMap<String, u64>,
    correlated: usize,
    gpus: &[Value],
    device_names: &BTreeMap<i64, String>,
    export: &BTreeMap<String, String>,
) -> BTreeMap<String, Value> {
    let mut metadata = BTreeMap::new();
    metadata.insert("schema_fingerprint".to_string(), json!(fingerprint));
    metadata.insert("tables_read".to_string(), json!(rows_read));
    metadata.insert(
        "tables_not_extracted".to_string(),
        json!(facts.not_extracted),
    );
    metadata.insert("correlated_kernels".to_string(), json!(correlated));
    if !gpus.is_empty() {
        metadata.insert("gpus".to_string(), json!(gpus));
    }
    if !device_names.is_empty() {
        metadata.insert("cuda_devices".to_string(), json!(device_names));
    }
    for (key, name) in [
        ("nsys_version", "EXPORT_PRODUCT_VERSION"),
        ("export_schema_version", "EXPORT_SCHEMA_VERSION"),
    ] {
        if let Some(v) = export.get(name) {
            metadata.insert(key.to_string(), json!(v));
        }
    }
    metadata
}

/// Kernels whose correlation id matches a runtime or driver call.
pub(super) fn correlated_kernels(mut launches: Vec<i64>, kernels: &[i64]) -> usize {
    launches.sort_unstable();
    launches.dedup();
    kernels
        .iter()
        .filter(|c| launches.binary_search(c).is_ok())
        .count()
}
