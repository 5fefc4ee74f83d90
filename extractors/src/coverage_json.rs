//! coverage.py's JSON report (`coverage json`, format 3): per measured
//! source file a `summary` (covered and total statements, the percentage,
//! missing and excluded lines, and branches when branch coverage was on),
//! and the same over every file in `totals`.
//!
//! Each number becomes a `measurements` row: `coverage.percent_covered`
//! (unit `percent`), `coverage.covered_lines`, `coverage.num_statements`,
//! `coverage.missing_lines`, `coverage.excluded_lines` and, with branches,
//! `coverage.covered_branches` / `coverage.num_branches` (unit `count`).
//! A file's rows carry `{"path": …}` as their parameters, the totals none,
//! so `measurements query --name-prefix coverage.` answers "which paths
//! were covered and how much", and two runs compare per file. The executed
//! line numbers and per-function sections are not kept (a file's summary is
//! what a question about coverage asks first; the artifact keeps the rest).

use std::collections::BTreeMap;
use std::io::BufRead;

use serde::Deserialize;

use crate::api::{BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary};
use crate::benchmarks::{MeasurementWriter, Sample, SummaryHeader};
use crate::format_kind::FormatKind;
use crate::json_doc::read_document;

pub const COVERAGE_EXTRACTOR_NAME: &str = "coverage_json";

pub static FORMAT: crate::format_descriptor::Format = crate::format_descriptor::Format {
    kind: FormatKind::CoverageJson,
    aliases: &["coverage", "coverage.py"],
    description: "coverage.py JSON report (`coverage json`): statements and branches covered per file and in total → measurements",
    sniff: Some(|head| {
        let scan = head.object()?;
        (scan.has("meta")
            && (head.contains(b"\"branch_coverage\"") || head.contains(b"\"show_contexts\"")))
        .then(|| {
            crate::sniff::Sniffed::certain(
                Some("coverage.py"),
                "JSON object whose `meta` has coverage.py's `branch_coverage`",
            )
        })
        .flatten()
    }),
    reading: crate::format_descriptor::Reading::Stream(
        crate::format_descriptor::Extractor {
            name: COVERAGE_EXTRACTOR_NAME,
            version: crate::benchmarks::BENCHMARK_EXTRACTOR_VERSION,
        },
        extract_coverage_json,
    ),
    measurements: true,
};

#[derive(Deserialize)]
struct Report {
    #[serde(default)]
    meta: Meta,
    files: BTreeMap<String, FileReport>,
    totals: Summary,
}

#[derive(Deserialize, Default)]
struct Meta {
    version: Option<String>,
    format: Option<u32>,
    #[serde(default)]
    branch_coverage: bool,
}

#[derive(Deserialize)]
struct FileReport {
    summary: Summary,
}

#[derive(Deserialize)]
struct Summary {
    covered_lines: f64,
    num_statements: f64,
    percent_covered: f64,
    missing_lines: f64,
    #[serde(default)]
    excluded_lines: f64,
    num_branches: Option<f64>,
    covered_branches: Option<f64>,
}

fn push_summary(
    writer: &mut MeasurementWriter<'_>,
    summary: &Summary,
    parameters: &BTreeMap<String, String>,
) {
    let counts = [
        ("coverage.covered_lines", Some(summary.covered_lines)),
        ("coverage.num_statements", Some(summary.num_statements)),
        ("coverage.missing_lines", Some(summary.missing_lines)),
        ("coverage.excluded_lines", Some(summary.excluded_lines)),
        ("coverage.covered_branches", summary.covered_branches),
        ("coverage.num_branches", summary.num_branches),
    ];
    writer.push(Sample {
        name: "coverage.percent_covered",
        value: summary.percent_covered,
        unit: "percent",
        sample_index: 0,
        is_warmup: false,
        parameters,
    });
    for (name, value) in counts {
        if let Some(value) = value {
            writer.push(Sample {
                name,
                value,
                unit: "count",
                sample_index: 0,
                is_warmup: false,
                parameters,
            });
        }
    }
}

/// Extracts a coverage.py JSON report into `measurements`.
pub fn extract_coverage_json<R: BufRead>(
    reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let (report, input_bytes): (Report, u64) =
        read_document(reader, observer, "coverage.py JSON report")?;
    if report.meta.format.is_some_and(|f| f != 3) {
        return Err(ExtractError::Parse {
            message: format!(
                "coverage.py JSON format {} (this build reads format 3, coverage.py 5.0 and later)",
                report.meta.format.unwrap_or_default()
            ),
            offset: None,
        });
    }
    let mut writer = MeasurementWriter::new(options);
    for (path, file) in &report.files {
        let parameters = BTreeMap::from([("path".to_owned(), path.clone())]);
        push_summary(&mut writer, &file.summary, &parameters);
    }
    push_summary(&mut writer, &report.totals, &BTreeMap::new());
    let mut metadata = BTreeMap::new();
    metadata.insert("files".to_owned(), serde_json::json!(report.files.len()));
    metadata.insert(
        "branch_coverage".to_owned(),
        serde_json::json!(report.meta.branch_coverage),
    );
    if let Some(version) = &report.meta.version {
        metadata.insert("coverage_version".to_owned(), serde_json::json!(version));
    }
    writer.finish(
        sink,
        SummaryHeader {
            format: COVERAGE_EXTRACTOR_NAME,
            producer: "coverage.py".to_owned(),
            metadata,
            input_bytes,
        },
    )
}
