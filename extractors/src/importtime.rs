//! `python -X importtime` output (what CPython writes to stderr):
//!
//! ```text
//! import time: self [us] | cumulative | imported package
//! import time:       129 |        129 |   _io
//! import time:       264 |        705 | _frozen_importlib_external
//! import time:       311 |        311 |     json.decoder
//! import time:       402 |        713 |   json
//! ```
//!
//! Each line is printed when a module finishes importing, so a module's
//! imports come before it, two spaces deeper. The lines are read back into
//! the import tree and written as a stack profile whose metric is
//! `import.self_ns` (a module's own import time, in nanoseconds): hotspots
//! are the slowest modules by their own time, inclusive time is the
//! cumulative column, callers say who imported a module, and two runs
//! compare with `compare_hotspots`. Modules imported more than once in one
//! output (several interpreters, `-X importtime` of subprocesses written to
//! one file) are kept as separate stacks under their own parents.

use std::collections::BTreeMap;
use std::io::BufRead;

use crate::api::{
    BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary, LimitationLog,
};
use crate::format_kind::FormatKind;
use crate::stack_profile::{StackProfileEnd, finish_stack_profile};
use crate::stacks::{ReductionSpec, StackAggregator, ThreadInfo};

pub const IMPORTTIME_EXTRACTOR_NAME: &str = "python_importtime";
/// Bumped whenever the rows produced for the same input change.
pub const IMPORTTIME_EXTRACTOR_VERSION: &str = "1";
/// The metric the profile is written under.
pub const IMPORT_METRIC: &str = "import.self_ns";

const PREFIX: &str = "import time:";
/// Deeper nesting than this is not a real import chain; such lines are skipped.
const MAX_DEPTH: usize = 512;
/// Lines longer than this are skipped (`malformed_line`).
const MAX_LINE_BYTES: usize = 64 * 1024;

pub static FORMAT: crate::format_descriptor::Format = crate::format_descriptor::Format {
    kind: FormatKind::PythonImportTime,
    aliases: &["importtime", "python_startup"],
    description: "`python -X importtime` output (module import tree with self and cumulative µs)",
    sniff: Some(sniff),
    reading: crate::format_descriptor::Reading::Stream(
        crate::format_descriptor::Extractor {
            name: IMPORTTIME_EXTRACTOR_NAME,
            version: IMPORTTIME_EXTRACTOR_VERSION,
        },
        extract_importtime,
    ),
    measurements: false,
};

/// The header line or an `import time:` line first.
fn sniff(head: &crate::sniff::Head<'_>) -> Option<crate::sniff::Sniffed> {
    let text = String::from_utf8_lossy(&head.bytes[..head.bytes.len().min(4096)]);
    let first = text.lines().find(|l| !l.trim().is_empty())?;
    let header = first.starts_with("import time: self [us]");
    (header || parse_line(first).is_some())
        .then(|| crate::sniff::Sniffed::certain(Some("cpython"), "`import time:` lines"))
        .flatten()
}

/// One parsed line: own and cumulative µs, depth (1 = imported from the
/// top) and module name.
#[derive(Debug, Clone, PartialEq)]
struct ImportLine<'a> {
    self_us: i64,
    cumulative_us: i64,
    depth: usize,
    module: &'a str,
}

fn parse_line(line: &str) -> Option<ImportLine<'_>> {
    let rest = line.strip_prefix(PREFIX)?;
    let mut parts = rest.splitn(3, '|');
    let self_us: i64 = parts.next()?.trim().parse().ok()?;
    let cumulative_us: i64 = parts.next()?.trim().parse().ok()?;
    let tail = parts.next()?;
    // One space after the bar, then two per level.
    let indented = tail.strip_prefix(' ').unwrap_or(tail);
    let spaces = indented.len() - indented.trim_start_matches(' ').len();
    let module = indented.trim();
    if module.is_empty() || self_us < 0 || cumulative_us < self_us {
        return None;
    }
    Some(ImportLine {
        self_us,
        cumulative_us,
        depth: spaces / 2 + 1,
        module,
    })
}

/// A finished module waiting for the module that imported it.
struct Pending {
    module: String,
    self_us: i64,
    children: Vec<Pending>,
}

/// Extracts an import-time listing as a stack profile (metric
/// `import.self_ns`).
pub fn extract_importtime<R: BufRead>(
    mut reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let mut log = LimitationLog::default();
    // pending[d]: modules finished at depth d whose importer has not
    // finished yet.
    let mut pending: Vec<Vec<Pending>> = vec![Vec::new()];
    let mut raw = Vec::new();
    let (mut offset, mut line_no, mut modules) = (0u64, 0u64, 0u64);
    let mut total_us: i64 = 0;
    loop {
        raw.clear();
        // At most 16 MiB of one line is held (the folded reader's bound).
        let n = crate::folded::read_bounded_line(&mut reader, &mut raw)?;
        if n == 0 {
            break;
        }
        offset += n as u64;
        line_no += 1;
        if line_no.is_multiple_of(4096) {
            observer.bytes_read(offset);
            if observer.cancelled() {
                return Err(ExtractError::Cancelled);
            }
        }
        let text = String::from_utf8_lossy(&raw);
        let line = text.trim_end();
        if line.is_empty() || line.starts_with("import time: self [us]") {
            continue;
        }
        let parsed = (raw.len() <= MAX_LINE_BYTES)
            .then(|| parse_line(line))
            .flatten();
        let Some(parsed) = parsed.filter(|p| p.depth <= MAX_DEPTH) else {
            // Interleaved program output is common (stderr is shared).
            log.note("malformed_line", || {
                format!("line {line_no} is not an `import time:` line; skipped")
            });
            continue;
        };
        modules += 1;
        if parsed.depth == 1 {
            total_us = total_us.saturating_add(parsed.cumulative_us);
        }
        if pending.len() <= parsed.depth + 1 {
            pending.resize_with(parsed.depth + 2, Vec::new);
        }
        let children = std::mem::take(&mut pending[parsed.depth + 1]);
        pending[parsed.depth].push(Pending {
            module: parsed.module.to_owned(),
            self_us: parsed.self_us,
            children,
        });
    }
    observer.bytes_read(offset);
    if modules == 0 {
        return Err(ExtractError::Parse {
            message: format!("no `import time:` line in {offset} bytes"),
            offset: Some(0),
        });
    }
    // Modules whose importer never printed (a cut-off listing) stay roots.
    let orphans: usize = pending.iter().skip(2).map(Vec::len).sum();
    if orphans > 0 {
        log.note("unfinished_importer", || {
            format!("{orphans} module(s) nested under an import that never finished (cut-off output); kept as roots")
        });
    }
    let mut agg = StackAggregator::new();
    let metric = agg.metric(ReductionSpec {
        metric: IMPORT_METRIC.into(),
        weight_unit: "ns".into(),
        unit: "ns".into(),
    });
    let thread = agg.thread(ThreadInfo::default());
    let mut stack: Vec<(Option<u32>, Pending)> =
        pending.into_iter().flatten().map(|p| (None, p)).collect();
    while let Some((parent, node)) = stack.pop() {
        let frame = agg.frame(&node.module, None, None, None, "python", true);
        let id = agg.stack(parent, frame);
        agg.add_metric_sample(
            metric,
            id,
            thread,
            None,
            node.self_us.saturating_mul(1000),
            1,
        );
        stack.extend(node.children.into_iter().map(|c| (Some(id), c)));
    }
    let mut metadata = BTreeMap::new();
    metadata.insert("modules".to_owned(), serde_json::json!(modules));
    metadata.insert("total_import_us".to_owned(), serde_json::json!(total_us));
    finish_stack_profile(
        agg,
        options,
        sink,
        StackProfileEnd {
            extractor: IMPORTTIME_EXTRACTOR_NAME,
            extractor_version: IMPORTTIME_EXTRACTOR_VERSION,
            format: FormatKind::PythonImportTime,
            producer: options
                .producer
                .clone()
                .unwrap_or_else(|| "cpython".to_owned()),
            time_span_ns: None,
            thread_identity: false,
            timestamps: false,
            symbolized_frames: true,
            more_coverage: Vec::new(),
            metadata,
            log,
            input_bytes: offset,
            input_events: modules,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_their_depth_and_times() {
        let l = parse_line("import time:       311 |        311 |     json.decoder").unwrap();
        assert_eq!(
            (l.self_us, l.cumulative_us, l.depth, l.module),
            (311, 311, 3, "json.decoder")
        );
        let top =
            parse_line("import time:       264 |        705 | _frozen_importlib_external").unwrap();
        assert_eq!(top.depth, 1);
        assert!(parse_line("import time: self [us] | cumulative | imported package").is_none());
        assert!(
            parse_line("import time:  10 |  5 | x").is_none(),
            "cumulative below self"
        );
        assert!(parse_line("hello").is_none());
    }
}
