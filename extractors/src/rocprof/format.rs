//! rocprofv3 in the format registry: its JSON document (an object whose
//! first key is `rocprofiler-sdk-tool`), one of its CSV tables (by the
//! header row), and its CSV output folder (found by the engine from the
//! folder's files, [`super::csv_tables::is_rocprof_csv_folder`]).

use crate::format_descriptor::{Extractor, Format, Reading, Refusal};
use crate::sniff::{Head, Sniffed};

use super::csv_output::{
    ROCPROF_CSV_EXTRACTOR_NAME, ROCPROF_CSV_EXTRACTOR_VERSION, extract_rocprof_csv,
    extract_rocprof_csv_dir,
};
use super::csv_tables::{Table, table_of_first_line};
use super::{ROCPROF_EXTRACTOR_NAME, ROCPROF_EXTRACTOR_VERSION, extract_rocprof_json};

pub static FORMAT: Format = Format {
    kind: crate::format_kind::FormatKind::RocprofJson,
    aliases: &["rocprofv3", "rocprofiler_sdk"],
    description: "AMD rocprofiler-sdk JSON (rocprofv3 --output-format json; the document its JSON tool writes) → kernel dispatches and memory copies on GPU streams, HIP/HSA/marker/RCCL API calls with correlation ids; not read: counters, PC samples, allocations",
    sniff: Some(sniff),
    reading: Reading::Stream(
        Extractor {
            name: ROCPROF_EXTRACTOR_NAME,
            version: ROCPROF_EXTRACTOR_VERSION,
        },
        extract_rocprof_json,
    ),
    measurements: false,
};

fn sniff(head: &Head<'_>) -> Option<Sniffed> {
    head.object()?
        .has("rocprofiler-sdk-tool")
        .then(|| Sniffed::certain(Some("rocprofv3"), "JSON object with `rocprofiler-sdk-tool`"))?
}

const CSV_EXTRACTOR: Extractor = Extractor {
    name: ROCPROF_CSV_EXTRACTOR_NAME,
    version: ROCPROF_CSV_EXTRACTOR_VERSION,
};

pub static CSV_FORMAT: Format = Format {
    kind: crate::format_kind::FormatKind::RocprofCsv,
    aliases: &[],
    description: "AMD rocprofv3 CSV table (its default output: <pid>_kernel_trace.csv, _memory_copy_trace.csv, _hip_api_trace.csv, _hsa_api_trace.csv, _marker_api_trace.csv) → that table's records; import the output folder to link kernels to their launches",
    sniff: Some(sniff_csv),
    reading: Reading::Stream(CSV_EXTRACTOR, extract_rocprof_csv),
    measurements: false,
};

fn sniff_csv(head: &Head<'_>) -> Option<Sniffed> {
    let text = std::str::from_utf8(head.bytes).ok().or_else(|| {
        let valid = std::str::from_utf8(head.bytes).err()?.valid_up_to();
        std::str::from_utf8(head.bytes.get(..valid)?).ok()
    })?;
    let first = text.lines().next()?;
    match table_of_first_line(first)? {
        Table::Agents => None,
        _ => Sniffed::certain(Some("rocprofv3"), "CSV header of a rocprofv3 trace table"),
    }
}

pub static CSV_DIR_FORMAT: Format = Format {
    kind: crate::format_kind::FormatKind::RocprofCsvDir,
    aliases: &[],
    description: "AMD rocprofv3 CSV output folder (rocprofv3 --sys-trace -d DIR; CSV is its default): kernel dispatches and memory copies on GPU streams, HIP/HSA/marker/RCCL calls on host threads, linked by correlation id; GPUs numbered from agent_info; imported as one folder artifact",
    sniff: None,
    reading: Reading::StoredFolder {
        extractor: CSV_EXTRACTOR,
        read: extract_rocprof_csv_dir,
        as_a_file: Refusal {
            argument: Some("kind"),
            message: "this kind names a rocprofv3 CSV output folder; pass the folder itself (one of its files imports as rocprofv3_csv)",
            remedies: &[],
        },
    },
    measurements: false,
};
