//! criterion.rs output: one benchmark's measurement folder (the
//! `target/criterion/<group>/<bench>/new/` folder holding `benchmark.json`
//! and `sample.json`) or a whole `target/criterion` tree.
//!
//! Folders are found on disk by [`criterion_members`] and stored as ONE
//! ustar artifact (like nsys export folders) holding only the measurement
//! files: `benchmark.json` + `sample.json` of the given folder, or of every
//! `…/new/` folder of a tree (`base/`, `change/`, saved baselines, the HTML
//! `report/`, `estimates.json` and `tukey.json` are derived or older data
//! and are left out). [`extract_criterion_dir`] reads that archive.
//!
//! `sample.json` has, per sample, `iters[i]` iterations that took
//! `times[i]` (total, in the measurement's unit: ns for criterion's
//! default wall-clock measurement). Each sample becomes one
//! `criterion.<full_id>` row of `times[i] / iters[i]` ns (time per
//! iteration), `sample_index = i`. criterion does not record its warm-up,
//! so no row is a warmup.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use serde::Deserialize;

use super::{MeasurementWriter, Sample, SummaryHeader};
use crate::api::{BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary};
use crate::ustar::{self, Member};

pub const CRITERION_EXTRACTOR_NAME: &str = "criterion_dir";

const BENCHMARK_FILE: &str = "benchmark.json";
const SAMPLE_FILE: &str = "sample.json";
/// How deep a tree is searched for `new/` folders (criterion nests at most
/// `<group>/<function>/<value>/new`).
const MAX_DEPTH: usize = 8;
/// Folders visited before the search gives up (a wrong folder, not a tree).
const MAX_FOLDERS: usize = 100_000;
/// Largest measurement file read (criterion writes a few KiB).
const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

fn is_file(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file())
}

/// The measurement files of a criterion folder, as `/`-separated paths
/// relative to `dir`, sorted: `["benchmark.json", "sample.json"]` for one
/// benchmark's folder, or every `…/new/benchmark.json` + `sample.json`
/// pair of a tree. `None` when `dir` is not criterion output. Symbolic
/// links are never followed.
pub fn criterion_members(dir: &Path) -> io::Result<Option<Vec<String>>> {
    if is_file(&dir.join(BENCHMARK_FILE)) && is_file(&dir.join(SAMPLE_FILE)) {
        return Ok(Some(vec![BENCHMARK_FILE.into(), SAMPLE_FILE.into()]));
    }
    let mut members = Vec::new();
    let mut pending = vec![(dir.to_path_buf(), String::new(), 0usize)];
    let mut visited = 0usize;
    while let Some((path, relative, depth)) = pending.pop() {
        visited += 1;
        if visited > MAX_FOLDERS {
            return Ok(None);
        }
        for entry in fs::read_dir(&path)? {
            let entry = entry?;
            if !entry.file_type()?.is_dir() {
                continue;
            }
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            let child = if relative.is_empty() {
                name.clone()
            } else {
                format!("{relative}/{name}")
            };
            let child_path = entry.path();
            if name == "new"
                && is_file(&child_path.join(BENCHMARK_FILE))
                && is_file(&child_path.join(SAMPLE_FILE))
            {
                members.push(format!("{child}/{BENCHMARK_FILE}"));
                members.push(format!("{child}/{SAMPLE_FILE}"));
            } else if depth + 1 < MAX_DEPTH {
                pending.push((child_path, child, depth + 1));
            }
        }
    }
    if members.is_empty() {
        return Ok(None);
    }
    members.sort();
    Ok(Some(members))
}

#[derive(Deserialize)]
struct BenchmarkId {
    full_id: String,
}

#[derive(Deserialize)]
struct Samples {
    iters: Vec<f64>,
    times: Vec<f64>,
}

fn parse_error(message: String) -> ExtractError {
    ExtractError::Parse {
        message,
        offset: None,
    }
}

fn read_member<T: serde::de::DeserializeOwned>(
    archive: &mut File,
    member: &Member,
) -> Result<T, ExtractError> {
    if member.len > MAX_FILE_BYTES {
        return Err(ExtractError::TooLarge {
            message: format!(
                "{} is larger than {MAX_FILE_BYTES} bytes; criterion writes a few KiB",
                member.name
            ),
        });
    }
    archive.seek(SeekFrom::Start(member.offset))?;
    let mut bytes = Vec::with_capacity(member.len as usize);
    archive.take(member.len).read_to_end(&mut bytes)?;
    serde_json::from_slice(&bytes)
        .map_err(|e| parse_error(format!("{} is not criterion JSON: {e}", member.name)))
}

/// Extracts a stored criterion folder (the ustar archive of
/// [`criterion_members`]) into `measurements`.
pub fn extract_criterion_dir(
    archive_path: &Path,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let mut archive = File::open(archive_path)?;
    let members = ustar::index(&mut archive)
        .map_err(|e| parse_error(format!("the stored criterion folder is unreadable: {e}")))?;
    let by_name: BTreeMap<&str, &Member> = members.iter().map(|m| (m.name.as_str(), m)).collect();
    let mut writer = MeasurementWriter::new(options);
    let no_parameters = BTreeMap::new();
    let mut input_bytes = 0u64;
    let mut benchmarks = 0u64;
    for member in &members {
        let Some(folder) = member.name.strip_suffix(BENCHMARK_FILE) else {
            continue;
        };
        if !(folder.is_empty() || folder.ends_with('/')) {
            continue;
        }
        if observer.cancelled() {
            return Err(ExtractError::Cancelled);
        }
        let sample_name = format!("{folder}{SAMPLE_FILE}");
        let Some(sample_member) = by_name.get(sample_name.as_str()) else {
            writer.log.note("missing_sample_file", || {
                format!("{} has no {SAMPLE_FILE} beside it; skipped", member.name)
            });
            continue;
        };
        let id: BenchmarkId = read_member(&mut archive, member)?;
        let samples: Samples = read_member(&mut archive, sample_member)?;
        input_bytes += member.len + sample_member.len;
        if samples.iters.len() != samples.times.len() {
            return Err(parse_error(format!(
                "{sample_name}: {} iteration counts but {} times",
                samples.iters.len(),
                samples.times.len()
            )));
        }
        benchmarks += 1;
        let name = format!("criterion.{}", id.full_id);
        for (index, (iters, total)) in samples.iters.iter().zip(&samples.times).enumerate() {
            if *iters <= 0.0 {
                writer.log.note("invalid_value", || {
                    format!("{name} sample {index} has {iters} iterations; skipped")
                });
                continue;
            }
            writer.push(Sample {
                name: &name,
                value: total / iters,
                unit: "ns",
                sample_index: index as i64,
                is_warmup: false,
                parameters: &no_parameters,
            });
        }
        observer.bytes_read(input_bytes);
    }
    let mut metadata = BTreeMap::new();
    metadata.insert("criterion_benchmarks".to_owned(), benchmarks.into());
    writer.finish(
        sink,
        SummaryHeader {
            format: CRITERION_EXTRACTOR_NAME,
            producer: "criterion".to_owned(),
            metadata,
            input_bytes,
        },
    )
}
