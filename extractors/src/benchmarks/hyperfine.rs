//! hyperfine `--export-json FILE`: `results[]`, one per benchmarked
//! command, each with the wall time of every timed run in `times`
//! (seconds), `exit_codes` (null when a signal ended the run) and, for
//! `--parameter-scan` / `--parameter-list`, `parameters`.
//!
//! Every time becomes a `hyperfine.<command>` row in `ns` (the command as
//! exported: its `--command-name` when one was given, else the command
//! line with parameters substituted); every exit code a
//! `hyperfine.<command>.exit_code` row (unit `exit_code`) with the same
//! `sample_index`, so a failed run stays next to its time. hyperfine does
//! not export warmup runs, so no row is a warmup. `parameters` go to
//! `parameters_json`. The summary statistics (`mean`, `median`, `user`,
//! `system`, …) are derived from `times` or per-command means and are not
//! kept.

use std::collections::BTreeMap;
use std::io::BufRead;

use serde::Deserialize;
use serde_json::Value;

use super::{MeasurementWriter, Sample, SummaryHeader, scalar_text};
use crate::api::{BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary};
use crate::json_doc::read_document;

pub const HYPERFINE_EXTRACTOR_NAME: &str = "hyperfine_json";

#[derive(Deserialize)]
struct Export {
    results: Vec<CommandResult>,
}

#[derive(Deserialize)]
struct CommandResult {
    command: String,
    times: Option<Vec<f64>>,
    exit_codes: Option<Vec<Option<i64>>>,
    #[serde(default)]
    parameters: BTreeMap<String, Value>,
}

/// Extracts a hyperfine JSON export into `measurements`.
pub fn extract_hyperfine<R: BufRead>(
    reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let (export, input_bytes): (Export, u64) =
        read_document(reader, observer, "hyperfine JSON export")?;
    let mut writer = MeasurementWriter::new(options);
    for result in &export.results {
        let Some(times) = &result.times else {
            return Err(ExtractError::Parse {
                message: format!(
                    "hyperfine result {:?} has no per-run `times` (exported by hyperfine before 1.6?)",
                    result.command
                ),
                offset: None,
            });
        };
        let parameters: BTreeMap<String, String> = result
            .parameters
            .iter()
            .filter_map(|(k, v)| scalar_text(v).map(|text| (k.clone(), text)))
            .collect();
        let name = format!("hyperfine.{}", result.command);
        for (index, seconds) in times.iter().enumerate() {
            writer.push(Sample {
                name: &name,
                value: seconds * 1e9,
                unit: "ns",
                sample_index: index as i64,
                is_warmup: false,
                parameters: &parameters,
            });
        }
        let exit_name = format!("{name}.exit_code");
        for (index, code) in result.exit_codes.iter().flatten().enumerate() {
            match code {
                Some(code) => {
                    if *code != 0 {
                        writer.log.note("nonzero_exit_code", || {
                            format!("{}: run {index} exited with {code}", result.command)
                        });
                    }
                    writer.push(Sample {
                        name: &exit_name,
                        value: *code as f64,
                        unit: "exit_code",
                        sample_index: index as i64,
                        is_warmup: false,
                        parameters: &parameters,
                    });
                }
                None => writer.log.note("terminated_by_signal", || {
                    format!(
                        "{}: run {index} has no exit code (ended by a signal)",
                        result.command
                    )
                }),
            }
        }
    }
    writer.finish(
        sink,
        SummaryHeader {
            format: HYPERFINE_EXTRACTOR_NAME,
            producer: "hyperfine".to_owned(),
            metadata: BTreeMap::new(),
            input_bytes,
        },
    )
}
