//! The benchmark result formats in the format registry, each recognized by
//! its top-level keys (as far as the head shows them) and marker strings.
//! Their rows are measurements ([`crate::format_descriptor::Format::measurements`]).

use crate::format_descriptor::{Extractor, Format, Reading, Refusal};
use crate::sniff::{Head, Sniffed};

use super::BENCHMARK_EXTRACTOR_VERSION;
use super::criterion::{CRITERION_EXTRACTOR_NAME, extract_criterion_dir};
use super::gbench::{GBENCH_EXTRACTOR_NAME, extract_gbench};
use super::hyperfine::{HYPERFINE_EXTRACTOR_NAME, extract_hyperfine};
use super::pyperf::{PYPERF_EXTRACTOR_NAME, extract_pyperf};
use crate::format_kind::FormatKind;

const fn extractor(name: &'static str) -> Extractor {
    Extractor {
        name,
        version: BENCHMARK_EXTRACTOR_VERSION,
    }
}

pub static GBENCH: Format = Format {
    kind: FormatKind::GoogleBenchmarkJson,
    aliases: &["gbench", "google_benchmark", "google-benchmark"],
    description: "Google Benchmark JSON: real_time and cpu_time per repetition (aggregates skipped) → measurements (ns)",
    sniff: Some(|head| {
        let scan = head.object()?;
        (scan.has("context")
            && (scan.has("benchmarks") || head.contains(b"\"library_build_type\"")))
        .then(|| {
            Sniffed::certain(
                Some("google-benchmark"),
                "JSON object with Google Benchmark `context` and `benchmarks`",
            )
        })
        .flatten()
    }),
    reading: Reading::Stream(extractor(GBENCH_EXTRACTOR_NAME), extract_gbench),
    measurements: true,
};

pub static PYPERF: Format = Format {
    kind: FormatKind::PyperfJson,
    aliases: &["pyperf"],
    description: "pyperf JSON results (format 1.0): values and marked warmups per benchmark → measurements (ns)",
    sniff: Some(|head| {
        let scan = head.object()?;
        (scan.has("benchmarks") && (scan.has("version") || head.contains(b"\"runs\"")))
            .then(|| {
                Sniffed::certain(
                    Some("pyperf"),
                    "JSON object with pyperf `benchmarks` of `runs`",
                )
            })
            .flatten()
    }),
    reading: Reading::Stream(extractor(PYPERF_EXTRACTOR_NAME), extract_pyperf),
    measurements: true,
};

pub static HYPERFINE: Format = Format {
    kind: FormatKind::HyperfineJson,
    aliases: &["hyperfine"],
    description: "hyperfine --export-json: per-run times and exit codes per command, parameters → measurements (ns)",
    sniff: Some(|head| {
        let scan = head.object()?;
        (scan.has("results") && head.contains(b"\"command\"") && head.contains(b"\"times\""))
            .then(|| {
                Sniffed::certain(
                    Some("hyperfine"),
                    "JSON object with hyperfine `results` (`command`, `times`)",
                )
            })
            .flatten()
    }),
    reading: Reading::Stream(extractor(HYPERFINE_EXTRACTOR_NAME), extract_hyperfine),
    measurements: true,
};

pub static CRITERION: Format = Format {
    kind: FormatKind::CriterionDir,
    aliases: &["criterion"],
    description: "criterion output folder (one benchmark's new/ folder or target/criterion): time per iteration per sample → measurements (ns); imported as one folder artifact",
    sniff: Some(sniff_criterion_file),
    reading: Reading::StoredFolder {
        extractor: extractor(CRITERION_EXTRACTOR_NAME),
        read: extract_criterion_dir,
        as_a_file: Refusal {
            argument: Some("path"),
            message: "this is one file of a criterion benchmark folder; import the folder",
            remedies: &[
                "flameox import target/criterion/<group>/<bench>/new   (one benchmark)",
                "flameox import target/criterion   (every benchmark)",
            ],
        },
    },
    measurements: true,
};

/// One file of a criterion folder, recognized only to say so.
fn sniff_criterion_file(head: &Head<'_>) -> Option<Sniffed> {
    let scan = head.object()?;
    let benchmark = scan.has("group_id") && scan.has("full_id");
    let sample = scan.has("sampling_mode") && scan.has("iters") && scan.has("times");
    (benchmark || sample)
        .then(|| {
            Sniffed::certain(
                Some("criterion"),
                "one file of a criterion benchmark folder (benchmark.json / sample.json)",
            )
        })
        .flatten()
}
