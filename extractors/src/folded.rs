//! Folded (collapsed) stacks: `root;child;leaf COUNT` per line — the input
//! of flamegraph.pl and inferno, and what `stackcollapse-*`, `py-spy record
//! --format raw` and many profilers write.
//!
//! Each line is one aggregated stack and its sample count; lines stream
//! through a [`StackAggregator`] (metric `cpu.samples`), so memory grows
//! with distinct frames and stacks, not with the input.
//!
//! Frame text conventions that are recognized:
//! - py-spy: `function (file.py:LINE)` → function, file, line (language
//!   python); a leading `thread (TID)` or `thread (TID): NAME` element is
//!   the sample's thread, not a frame.
//!   A line with only the thread element becomes one `[no frames]` frame.
//! - `stackcollapse-perf.pl --all` annotations `_[k]` (kernel), `_[j]`
//!   (JIT), `_[i]` (inlined), `_[w]` (waker) are cut from the name and kept
//!   as the frame's `module`.

use std::collections::BTreeMap;
use std::io::BufRead;

use crate::api::{
    BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary, LimitationLog,
};
use crate::format_kind::FormatKind;
use crate::stack_profile::{StackProfileEnd, finish_stack_profile};
use crate::stacks::{StackAggregator, ThreadInfo};

pub const FOLDED_EXTRACTOR_NAME: &str = "folded_stacks";
/// Bumped whenever the rows produced for the same input change.
pub const FOLDED_EXTRACTOR_VERSION: &str = "1";

pub static FORMAT: crate::format_descriptor::Format = crate::format_descriptor::Format {
    kind: FormatKind::FoldedStacks,
    aliases: &["folded", "collapsed"],
    description: "folded / collapsed stacks (flamegraph.pl, inferno, py-spy raw, stackcollapse-*)",
    sniff: Some(sniff),
    reading: crate::format_descriptor::Reading::Stream(
        crate::format_descriptor::Extractor {
            name: FOLDED_EXTRACTOR_NAME,
            version: FOLDED_EXTRACTOR_VERSION,
        },
        extract_folded_stacks,
    ),
    measurements: false,
};

/// `frame;frame 42` lines (the last line may be cut off by the head).
fn sniff(head: &crate::sniff::Head<'_>) -> Option<crate::sniff::Sniffed> {
    let text = std::str::from_utf8(trim_partial_utf8(head.bytes)).ok()?;
    let complete = match text.rfind('\n') {
        Some(i) => &text[..i],
        None if head.bytes.len() < crate::input::MAX_HEAD_BYTES => text,
        None => return None,
    };
    let mut lines = 0;
    for line in complete.lines().filter(|l| !l.trim().is_empty()).take(50) {
        let (stack, count) = line.trim_end().rsplit_once([' ', '\t'])?;
        if stack.trim().is_empty() || count.parse::<u64>().is_err() {
            return None;
        }
        lines += 1;
    }
    (lines > 0)
        .then(|| crate::sniff::Sniffed::certain(None, "text lines of `frame;frame count`"))
        .flatten()
}

/// Drops a UTF-8 sequence cut off at the end of the head.
fn trim_partial_utf8(head: &[u8]) -> &[u8] {
    match std::str::from_utf8(head) {
        Ok(_) => head,
        Err(e) if e.error_len().is_none() => &head[..e.valid_up_to()],
        Err(_) => head,
    }
}

/// Lines longer than this are skipped (`malformed_line`).
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
const POLL_EVERY: u64 = 4096;
/// The frame of a sample whose thread had no frames on its stack.
pub const NO_FRAMES: &str = "[no frames]";

/// One frame as written in a folded line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldedFrame<'a> {
    pub function: &'a str,
    pub file: Option<&'a str>,
    pub line: Option<i64>,
    pub module: Option<&'static str>,
    pub language: &'static str,
}

/// Splits `stack COUNT` at the last run of whitespace.
pub fn split_line(line: &str) -> Option<(&str, i64)> {
    let line = line.trim_end();
    let (stack, count) = line.rsplit_once(|c: char| c.is_ascii_whitespace())?;
    let count: i64 = count.parse().ok()?;
    let stack = stack.trim_end();
    (count >= 0 && !stack.is_empty()).then_some((stack, count))
}

/// The thread a py-spy `thread (TID)` / `thread (TID): NAME` element names.
pub fn thread_element(element: &str) -> Option<ThreadInfo> {
    let rest = element.strip_prefix("thread (")?;
    let (tid, tail) = rest.split_once(')')?;
    let tid: i64 = tid.trim().parse().ok()?;
    let name = tail.strip_prefix(':').map(|n| n.trim().to_owned());
    if !(tail.is_empty() || name.is_some()) {
        return None;
    }
    Some(ThreadInfo {
        pid: None,
        tid: Some(tid),
        thread_name: name.filter(|n| !n.is_empty()),
        process_name: None,
    })
}

/// Reads one frame element.
pub fn parse_frame(element: &str) -> FoldedFrame<'_> {
    for (suffix, module) in [
        ("_[k]", "kernel"),
        ("_[j]", "jit"),
        ("_[i]", "inlined"),
        ("_[w]", "waker"),
    ] {
        if let Some(function) = element.strip_suffix(suffix) {
            return FoldedFrame {
                function,
                file: None,
                line: None,
                module: Some(module),
                language: if module == "kernel" {
                    "native"
                } else {
                    "unknown"
                },
            };
        }
    }
    // py-spy: `name (path:line)`.
    if let Some(open) = element.rfind(" (")
        && let Some(inner) = element[open + 2..].strip_suffix(')')
        && let Some((file, line)) = inner.rsplit_once(':')
        && let Ok(line) = line.parse::<i64>()
    {
        return FoldedFrame {
            function: &element[..open],
            file: Some(file),
            line: Some(line),
            module: None,
            language: "python",
        };
    }
    FoldedFrame {
        function: element,
        file: None,
        line: None,
        module: None,
        language: "unknown",
    }
}

/// Extracts folded stacks into `frames`, `stack_nodes`, `samples`,
/// `frame_totals` and `call_edges` (metric `cpu.samples`).
pub fn extract_folded_stacks<R: BufRead>(
    mut reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let mut agg = StackAggregator::new();
    let mut log = LimitationLog::default();
    let mut raw = Vec::new();
    let mut offset: u64 = 0;
    let mut line_no: u64 = 0;
    let mut stacks_read: u64 = 0;
    let mut samples_total: i64 = 0;
    let mut threads_seen = false;
    let mut python_frames = false;
    loop {
        raw.clear();
        let n = read_bounded_line(&mut reader, &mut raw)?;
        if n == 0 {
            break;
        }
        offset += n as u64;
        line_no += 1;
        if line_no.is_multiple_of(POLL_EVERY) {
            observer.bytes_read(offset);
            if observer.cancelled() {
                return Err(ExtractError::Cancelled);
            }
        }
        if raw.len() > MAX_LINE_BYTES {
            log.note("malformed_line", || {
                format!("line {line_no} is longer than {MAX_LINE_BYTES} bytes; skipped")
            });
            continue;
        }
        let text = match std::str::from_utf8(&raw) {
            Ok(t) => std::borrow::Cow::Borrowed(t),
            Err(_) => {
                log.note("invalid_utf8_replaced", || {
                    format!("line {line_no} has invalid UTF-8; replaced with U+FFFD")
                });
                String::from_utf8_lossy(&raw).into_owned().into()
            }
        };
        let trimmed = text.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let Some((stack, count)) = split_line(trimmed) else {
            log.note("malformed_line", || {
                format!("line {line_no} is not `frame;frame;… COUNT`; skipped")
            });
            continue;
        };
        let mut elements = stack.split(';').peekable();
        let mut thread = ThreadInfo::default();
        if let Some(info) = elements.peek().and_then(|first| thread_element(first)) {
            thread = info;
            threads_seen = true;
            elements.next();
        }
        let mut parent = None;
        for element in elements {
            if element.is_empty() {
                log.note("empty_frame", || {
                    format!("line {line_no} has an empty frame between `;`; skipped")
                });
                continue;
            }
            let f = parse_frame(element);
            python_frames |= f.language == "python";
            let frame = agg.frame(f.function, f.file, f.line, f.module, f.language, true);
            parent = Some(agg.stack(parent, frame));
        }
        let leaf = match parent {
            Some(leaf) => leaf,
            // py-spy writes `thread (TID) N` for samples of a thread with no
            // Python frame on its stack; keep them so totals add up.
            None if threads_seen => {
                let frame = agg.frame(NO_FRAMES, None, None, None, "unknown", false);
                agg.stack(None, frame)
            }
            None => {
                log.note("malformed_line", || {
                    format!("line {line_no} has no frames; skipped")
                });
                continue;
            }
        };
        let thread = agg.thread(thread);
        agg.add_sample(leaf, thread, None, count, count);
        stacks_read += 1;
        samples_total = samples_total.saturating_add(count);
    }
    observer.bytes_read(offset);
    if stacks_read == 0 {
        return Err(ExtractError::Parse {
            message: format!(
                "no `frame;frame;… COUNT` line in {offset} bytes ({} malformed)",
                log.count("malformed_line")
            ),
            offset: Some(0),
        });
    }

    let producer = options.producer.clone().unwrap_or_else(|| {
        if threads_seen || python_frames {
            "py-spy".to_owned()
        } else {
            "folded".to_owned()
        }
    });
    let mut metadata = BTreeMap::new();
    metadata.insert("total_samples".to_owned(), serde_json::json!(samples_total));
    finish_stack_profile(
        agg,
        options,
        sink,
        StackProfileEnd {
            extractor: FOLDED_EXTRACTOR_NAME,
            extractor_version: FOLDED_EXTRACTOR_VERSION,
            format: FormatKind::FoldedStacks,
            producer,
            time_span_ns: None,
            thread_identity: threads_seen,
            timestamps: false,
            symbolized_frames: true,
            more_coverage: Vec::new(),
            metadata,
            log,
            input_bytes: offset,
            input_events: stacks_read,
        },
    )
}

/// Reads up to and including `\n`, keeping at most `MAX_LINE_BYTES + 1`
/// bytes of it (so one endless line cannot exhaust memory). Returns the
/// bytes consumed.
pub(crate) fn read_bounded_line<R: BufRead>(
    reader: &mut R,
    out: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let mut consumed = 0;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(consumed);
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        let room = (MAX_LINE_BYTES + 1).saturating_sub(out.len());
        out.extend_from_slice(&available[..take.min(room)]);
        reader.consume(take);
        consumed += take;
        if done {
            return Ok(consumed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_frames_and_threads() {
        assert_eq!(split_line("a;b;c 42"), Some(("a;b;c", 42)));
        assert_eq!(split_line("a b;c\t7\r"), Some(("a b;c", 7)));
        assert_eq!(split_line("a;b;c"), None);
        assert_eq!(split_line("a;b x"), None);
        assert_eq!(split_line("a;b -1"), None);
        let f = parse_frame("parse_work (workload.py:10)");
        assert_eq!(
            (f.function, f.file, f.line),
            ("parse_work", Some("workload.py"), Some(10))
        );
        let f = parse_frame("_find_and_load (<frozen importlib._bootstrap>:1176)");
        assert_eq!(f.file, Some("<frozen importlib._bootstrap>"));
        let f = parse_frame("check_events_[k]");
        assert_eq!((f.function, f.module), ("check_events", Some("kernel")));
        assert_eq!(
            parse_frame("oopDesc* f<false>").function,
            "oopDesc* f<false>"
        );
        let t = thread_element("thread (23098): MainThread").unwrap();
        assert_eq!(
            (t.tid, t.thread_name.as_deref()),
            (Some(23098), Some("MainThread"))
        );
        assert_eq!(thread_element("thread (23101)").unwrap().tid, Some(23101));
        assert!(thread_element("threadpool (1)").is_none());
    }
}
