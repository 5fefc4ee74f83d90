//! The corpus's coverage.py report (`misc/coverage_workload.json`,
//! coverage 7.17.5 with branch coverage): every file's summary and the
//! totals come out as measurements equal to the report's own numbers,
//! branches included, each file's rows naming its path.

mod common;

use std::collections::BTreeMap;

use common::{MemorySink, corpus, options};
use flameox_extractors::EvidenceTable;
use flameox_extractors::api::NoObserver;
use flameox_extractors::coverage_json::extract_coverage_json;
use serde_json::Value;

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn the_corpus_report_lands_as_its_own_numbers() {
    let bytes = std::fs::read(corpus("misc/coverage_workload.json")).expect("corpus file");
    let report: Value = serde_json::from_slice(&bytes).expect("json");
    let mut sink = MemorySink::default();
    let summary =
        extract_coverage_json(&bytes[..], &options(), &mut sink, &NoObserver).expect("extract");
    assert_eq!(summary.format, "coverage_json");
    assert_eq!(summary.producer, "coverage.py");
    let names = sink.strs(EvidenceTable::Measurements, "name");
    let values = sink.f64s(EvidenceTable::Measurements, "value");
    let params = sink.strs(EvidenceTable::Measurements, "parameters_json");
    let got: BTreeMap<(String, Option<String>), f64> = names
        .into_iter()
        .zip(params)
        .zip(values)
        .map(|((n, p), v)| ((n.unwrap_or_default(), p), v))
        .collect();
    let files = report["files"].as_object().expect("files");
    let mut expected = BTreeMap::new();
    let mut put = |summary: &Value, path: Option<String>| {
        for key in [
            "percent_covered",
            "covered_lines",
            "num_statements",
            "missing_lines",
            "excluded_lines",
            "covered_branches",
            "num_branches",
        ] {
            let value = summary[key].as_f64().expect("a number the report states");
            expected.insert((format!("coverage.{key}"), path.clone()), value);
        }
    };
    for (path, file) in files {
        put(
            &file["summary"],
            Some(serde_json::json!({ "path": path }).to_string()),
        );
    }
    put(&report["totals"], None);
    assert_eq!(got, expected);
    assert!(
        summary.metadata["branch_coverage"]
            .as_bool()
            .unwrap_or(false)
    );
}
