//! Nsight Systems in the format registry: the SQLite export (read by path),
//! the parquetdir / arrowdir export folders (found by their files, never
//! from one file's head), and what is recognized only to be refused — the
//! `.nsys-rep` report and a SQLite database without Nsight tables.

use crate::format_descriptor::{Extractor, Format, Reading, Refusal};
use crate::format_kind::FormatKind;
use crate::sniff::Sniffed;

use super::{
    NSIGHT_EXPORT_DIR_EXTRACTOR_NAME, NSIGHT_EXTRACTOR_NAME, NSIGHT_EXTRACTOR_VERSION,
    extract_nsight_export_dir, extract_nsight_sqlite,
};

const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";
const EXPORT_COMMAND: &str = "nsys export --type sqlite --output report.sqlite report.nsys-rep";

/// The detection of the first 64 KiB only; the engine reads the schema of
/// a plain `sqlite` match ([`super::sqlite_is_nsys_export`]).
pub static SQLITE_EXPORT: Format = Format {
    kind: FormatKind::NsightSqlite,
    aliases: &["nsys_sqlite", "nsight_sqlite", "nsight_systems"],
    description: "Nsight Systems SQLite export (nsys export --type sqlite): CUDA kernels, runtime/driver API, memcpy/memset, synchronization, graph trace, NVTX ranges, OS runtime calls, CPU samples",
    sniff: Some(|head| {
        (head.bytes.starts_with(SQLITE_MAGIC)
            && (head.contains(b"CUPTI_ACTIVITY_KIND") || head.contains(b"TARGET_INFO")))
        .then(|| Sniffed::certain(Some("nsys"), "SQLite header with Nsight Systems tables"))
        .flatten()
    }),
    reading: Reading::StoredFile(
        Extractor {
            name: NSIGHT_EXTRACTOR_NAME,
            version: NSIGHT_EXTRACTOR_VERSION,
        },
        extract_nsight_sqlite,
    ),
    measurements: false,
};

pub static OTHER_SQLITE: Format = Format {
    kind: FormatKind::Sqlite,
    aliases: &[],
    description: "a SQLite database that is not an Nsight Systems export: recognized, not read",
    sniff: Some(|head| {
        head.bytes
            .starts_with(SQLITE_MAGIC)
            .then(|| Sniffed::certain(None, "SQLite header without Nsight tables"))
            .flatten()
    }),
    reading: Reading::Refused(Refusal {
        argument: None,
        message: "a SQLite database without Nsight Systems tables (StringIds plus a CUPTI_, \
                  NVTX_, OSRT_ or TARGET_INFO_ table); flameox reads SQLite only as an nsys export",
        remedies: &[EXPORT_COMMAND],
    }),
    measurements: false,
};

pub static REPORT: Format = Format {
    kind: FormatKind::NsightReport,
    aliases: &["nsys-rep", "nsight_report"],
    description: "export first: nsys export --type sqlite (or --type parquetdir)",
    sniff: Some(|head| {
        head.bytes
            .starts_with(b"NVIDIA Tegra Profiler Report")
            .then(|| Sniffed::certain(Some("nsys"), "Nsight Systems report magic"))
            .flatten()
    }),
    reading: Reading::Refused(Refusal {
        argument: None,
        message: "an .nsys-rep report is a proprietary container; export it to SQLite first",
        remedies: &[EXPORT_COMMAND, "then: flameox import report.sqlite"],
    }),
    measurements: false,
};

const AS_A_FILE: Refusal = Refusal {
    argument: Some("kind"),
    message: "this kind names an nsys export folder; pass the export folder itself",
    remedies: &[],
};

const EXPORT_DIR: Extractor = Extractor {
    name: NSIGHT_EXPORT_DIR_EXTRACTOR_NAME,
    version: NSIGHT_EXTRACTOR_VERSION,
};

pub static PARQUET_DIR: Format = Format {
    kind: FormatKind::NsightParquetDir,
    aliases: &[],
    description: "Nsight Systems export folder (nsys export --type parquetdir): the SQLite export's tables as <TABLE>.parquet files; imported as one folder artifact",
    sniff: None,
    reading: Reading::StoredFolder {
        extractor: EXPORT_DIR,
        read: |archive, options, sink, observer| {
            extract_nsight_export_dir(
                archive,
                FormatKind::NsightParquetDir,
                options,
                sink,
                observer,
            )
        },
        as_a_file: AS_A_FILE,
    },
    measurements: false,
};

pub static ARROW_DIR: Format = Format {
    kind: FormatKind::NsightArrowDir,
    aliases: &[],
    description: "Nsight Systems export folder (nsys export --type arrowdir): the SQLite export's tables as <TABLE>.arrow (Arrow IPC file or stream) files; imported as one folder artifact",
    sniff: None,
    reading: Reading::StoredFolder {
        extractor: EXPORT_DIR,
        read: |archive, options, sink, observer| {
            extract_nsight_export_dir(archive, FormatKind::NsightArrowDir, options, sink, observer)
        },
        as_a_file: AS_A_FILE,
    },
    measurements: false,
};
