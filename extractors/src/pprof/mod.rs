//! pprof `profile.proto` (gzipped or plain): what Go's `runtime/pprof`,
//! `net/http/pprof`, gperftools, async-profiler's pprof output and many
//! continuous profilers write.
//!
//! A profile is one protobuf message whose string table, functions and
//! locations may come after the samples that use them, so it is decoded
//! whole (bounded by [`MAX_PROFILE_BYTES`]); samples then stream into a
//! [`StackAggregator`] with one metric per sample type (see [`metrics`]).
//! Locations are expanded into frames with their inlined calls (see
//! [`symbols`]). pprof samples carry no timestamps: `samples.ts_ns` is null
//! and the time span is the profile's `time_nanos` + `duration_nanos`.

pub mod decode_cost;
mod format;
pub mod metrics;
pub mod proto;
pub mod symbols;

use std::collections::BTreeMap;
use std::io::BufRead;

use prost::Message;

use crate::api::{
    BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary, LimitationLog,
};
use crate::format_kind::FormatKind;
use crate::stack_profile::{StackProfileEnd, finish_stack_profile};
use crate::stacks::StackAggregator;
use metrics::{CountSource, MetricPlan};
use proto::Profile;
use symbols::Symbols;

pub use format::{FORMAT, named_like_pprof};

pub const PPROF_EXTRACTOR_NAME: &str = "pprof";
/// Bumped whenever the rows produced for the same input change.
pub const PPROF_EXTRACTOR_VERSION: &str = "1";

/// Largest (decompressed) profile decoded; bigger inputs are refused with
/// [`ExtractError::TooLarge`]. Decoding needs the bytes plus the decoded
/// messages (a few times the size) in memory at once.
pub const MAX_PROFILE_BYTES: u64 = 2 << 30;
const POLL_EVERY: usize = 4096;
/// The frame of a sample with no locations.
pub const NO_FRAMES: &str = "[no frames]";
/// Comments kept in the summary metadata, and bytes kept of each.
const MAX_COMMENTS: usize = 16;
const MAX_COMMENT_BYTES: usize = 256;

/// Reads the whole input, refusing more than `limit` bytes. Errors carry
/// the decompressed offset where reading stopped.
fn read_whole<R: BufRead>(
    reader: &mut R,
    limit: u64,
    observer: &dyn ExtractObserver,
) -> Result<Vec<u8>, ExtractError> {
    let mut buf = Vec::new();
    loop {
        let chunk = match reader.fill_buf() {
            Ok(chunk) => chunk,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(match ExtractError::from(e) {
                    ExtractError::Parse { message, .. } => ExtractError::Parse {
                        message,
                        offset: Some(buf.len() as u64),
                    },
                    other => other,
                });
            }
        };
        if chunk.is_empty() {
            return Ok(buf);
        }
        let n = chunk.len();
        if buf.len() as u64 + n as u64 > limit {
            return Err(ExtractError::TooLarge {
                message: format!(
                    "the pprof profile is larger than {limit} bytes (decompressed); it is decoded whole, so it is refused"
                ),
            });
        }
        buf.extend_from_slice(chunk);
        reader.consume(n);
        observer.bytes_read(buf.len() as u64);
        if observer.cancelled() {
            return Err(ExtractError::Cancelled);
        }
    }
}

/// Decodes a profile, refusing input that is not one (or that would take
/// too much memory decoded: [`decode_cost`]).
pub fn decode_profile(bytes: &[u8]) -> Result<Profile, ExtractError> {
    decode_cost::check_decode_cost(bytes)?;
    let profile = Profile::decode(bytes).map_err(|e| ExtractError::Parse {
        message: format!("not a pprof profile (protobuf decoding failed: {e})"),
        offset: None,
    })?;
    if profile.sample_type.is_empty() || profile.string_table.is_empty() {
        return Err(ExtractError::Parse {
            message: format!(
                "not a pprof profile: {} bytes decode to no sample types or no string table",
                bytes.len()
            ),
            offset: Some(0),
        });
    }
    Ok(profile)
}

/// The column of the default sample type: the one whose type is named by
/// `default_sample_type`, else the last (pprof's rule).
fn default_column(profile: &Profile, symbols: &Symbols, log: &mut LimitationLog) -> usize {
    let last = profile.sample_type.len().saturating_sub(1);
    if profile.default_sample_type == 0 {
        return last;
    }
    let wanted = symbols.string(profile.default_sample_type, log).to_owned();
    match profile
        .sample_type
        .iter()
        .position(|t| symbols.string(t.r#type, log) == wanted)
    {
        Some(i) => i,
        None => {
            log.note("default_sample_type_not_found", || {
                format!("default_sample_type `{wanted}` names no sample type; the last one is the default")
            });
            last
        }
    }
}

/// Extracts a pprof profile into `frames`, `stack_nodes`, `samples`,
/// `frame_totals` and `call_edges`, one metric per sample type.
pub fn extract_pprof<R: BufRead>(
    mut reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let bytes = read_whole(&mut reader, MAX_PROFILE_BYTES, observer)?;
    let input_bytes = bytes.len() as u64;
    let profile = decode_profile(&bytes)?;
    drop(bytes);

    let mut log = LimitationLog::default();
    let mut symbols = Symbols::new(&profile, &mut log);
    if !symbols.string(0, &mut log).is_empty() {
        log.note("string_table_zero_not_empty", || {
            "string_table[0] is not \"\"; indices are read as written".to_owned()
        });
    }
    let producer = options.producer.clone().unwrap_or_else(|| {
        if symbols.looks_like_go(&mut log) {
            "go".to_owned()
        } else {
            "pprof".to_owned()
        }
    });
    symbols.go = producer.eq_ignore_ascii_case("go");
    if profile.drop_frames != 0 || profile.keep_frames != 0 {
        log.note("drop_frames_not_applied", || {
            "drop_frames / keep_frames regexps are not applied; every frame is kept".to_owned()
        });
    }

    let types: Vec<(String, String)> = profile
        .sample_type
        .iter()
        .map(|t| {
            (
                symbols.string(t.r#type, &mut log).to_owned(),
                symbols.string(t.unit, &mut log).to_owned(),
            )
        })
        .collect();
    let default = default_column(&profile, &symbols, &mut log);
    let plans = metrics::plan(&types, default);
    let mut agg = StackAggregator::new();
    let ids: Vec<_> = plans.iter().map(|p| agg.metric(p.spec.clone())).collect();
    let mut totals = vec![0i64; plans.len()];

    let mut threads_seen = false;
    let mut no_frames = None;
    for (n, sample) in profile.sample.iter().enumerate() {
        if n % POLL_EVERY == 0 && observer.cancelled() {
            return Err(ExtractError::Cancelled);
        }
        let mut parent = None;
        for &location in sample.location_id.iter().rev() {
            for &frame in symbols.frames(location, &mut agg, &mut log) {
                parent = Some(agg.stack(parent, frame));
            }
        }
        let leaf = match parent {
            Some(leaf) => leaf,
            None => {
                log.note("sample_without_locations", || {
                    format!("a sample has no locations; its values go to one `{NO_FRAMES}` frame")
                });
                *no_frames.get_or_insert_with(|| {
                    let frame = agg.frame(NO_FRAMES, None, None, None, "unknown", false);
                    agg.stack(None, frame)
                })
            }
        };
        let thread = symbols.thread(&sample.label, &mut log);
        threads_seen |= thread.is_some();
        let thread = agg.thread(thread.unwrap_or_default());
        if sample.value.len() != types.len() {
            log.note("value_count_mismatch", || {
                format!(
                    "a sample has {} values for {} sample types; missing values read as 0, extra ones ignored",
                    sample.value.len(),
                    types.len()
                )
            });
        }
        let value = |i: usize| sample.value.get(i).copied().unwrap_or(0);
        for ((plan, &id), total) in plans.iter().zip(&ids).zip(totals.iter_mut()) {
            let weight = value(plan.column);
            let count = match plan.count {
                CountSource::Itself => weight,
                CountSource::Column(j) => value(j),
                CountSource::OnePerRecord => 1,
            };
            if weight == 0 && count == 0 {
                continue;
            }
            *total = total.saturating_add(weight);
            agg.add_metric_sample(id, leaf, thread, None, weight, count);
        }
    }
    observer.bytes_read(input_bytes);

    let metadata = summary_metadata(&profile, &symbols, &plans, &totals, &mut log);
    let time_span_ns = (profile.time_nanos > 0).then(|| {
        (
            profile.time_nanos,
            profile
                .time_nanos
                .saturating_add(profile.duration_nanos.max(0)),
        )
    });
    finish_stack_profile(
        agg,
        options,
        sink,
        StackProfileEnd {
            extractor: PPROF_EXTRACTOR_NAME,
            extractor_version: PPROF_EXTRACTOR_VERSION,
            format: FormatKind::Pprof,
            producer,
            time_span_ns,
            thread_identity: threads_seen,
            timestamps: false,
            symbolized_frames: symbols.unsymbolized_locations == 0,
            more_coverage: vec![("inlined_frames", symbols.inlined_locations > 0)],
            metadata,
            log,
            input_bytes,
            input_events: profile.sample.len() as u64,
        },
    )
}

/// Sample types and their metrics, totals, the default metric, period,
/// duration, comments and label keys: what `pprof -top` prints in its header.
fn summary_metadata(
    profile: &Profile,
    symbols: &Symbols,
    plans: &[MetricPlan],
    totals: &[i64],
    log: &mut LimitationLog,
) -> BTreeMap<String, serde_json::Value> {
    use serde_json::json;
    let mut metadata = BTreeMap::new();
    let mut by_column: Vec<&MetricPlan> = plans.iter().collect();
    by_column.sort_by_key(|p| p.column);
    let sample_types: Vec<_> = by_column
        .iter()
        .map(|p| {
            json!({
                "type": p.pprof_type,
                "unit": p.pprof_unit,
                "metric": p.spec.metric,
                "weight_unit": p.spec.weight_unit,
            })
        })
        .collect();
    metadata.insert("sample_types".to_owned(), json!(sample_types));
    let totals: serde_json::Map<_, _> = plans
        .iter()
        .zip(totals)
        .map(|(p, t)| (p.spec.metric.clone(), json!(t)))
        .collect();
    metadata.insert("totals".to_owned(), json!(totals));
    if let Some(first) = plans.first() {
        metadata.insert("default_metric".to_owned(), json!(first.spec.metric));
    }
    if let Some(pt) = &profile.period_type {
        let kind = format!(
            "{}/{}",
            symbols.string(pt.r#type, log),
            symbols.string(pt.unit, log)
        );
        metadata.insert("period_type".to_owned(), json!(kind));
    }
    metadata.insert("period".to_owned(), json!(profile.period));
    metadata.insert("duration_ns".to_owned(), json!(profile.duration_nanos));
    let comments: Vec<String> = profile
        .comment
        .iter()
        .take(MAX_COMMENTS)
        .map(|&c| {
            let text = symbols.string(c, log);
            let mut end = text.len().min(MAX_COMMENT_BYTES);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text[..end].to_owned()
        })
        .collect();
    if !comments.is_empty() {
        metadata.insert("comments".to_owned(), json!(comments));
    }
    if !symbols.label_keys.is_empty() {
        metadata.insert("label_keys".to_owned(), json!(symbols.label_keys));
    }
    metadata.insert(
        "unsymbolized_locations".to_owned(),
        json!(symbols.unsymbolized_locations),
    );
    metadata
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::NoObserver;

    #[test]
    fn read_whole_refuses_past_the_limit() {
        let data = [7u8; 100];
        let got = read_whole(&mut &data[..], 100, &NoObserver).unwrap();
        assert_eq!(got.len(), 100);
        match read_whole(&mut &data[..], 99, &NoObserver) {
            Err(ExtractError::TooLarge { message }) => assert!(message.contains("99"), "{message}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn empty_and_non_profiles_are_parse_errors() {
        for bad in [&b""[..], b"hello world", b"\x0a\x02\x08\x01"] {
            assert!(
                matches!(decode_profile(bad), Err(ExtractError::Parse { .. })),
                "{bad:?}"
            );
        }
    }
}
