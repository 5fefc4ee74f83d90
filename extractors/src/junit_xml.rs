//! JUnit XML test reports (`pytest --junitxml`, and the many runners that
//! write the same shape): `<testsuites>` / `<testsuite name time
//! timestamp>` holding `<testcase classname name time file line>` with an
//! optional `<failure>`, `<error>` or `<skipped>` child.
//!
//! A report records each test's duration, not when it started. Tests are
//! laid end to end in report order inside their suite (pytest runs them in
//! that order, one at a time), suites one after another, and the
//! `synthetic_start_times` limitation says so. The report is rewritten as
//! a Chrome trace — a slice per suite on its own track, a slice per test
//! inside it, category = outcome (`passed`, `failed`, `error`, `skipped`),
//! args = classname, file, line, outcome and the failure's type and message
//! — and read by the Chrome extractor, so `trace_events`, hotspots (the
//! slowest tests by their own time), `compare_hotspots` between two runs
//! and trace windows answer over it with no code of their own.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::BufRead;

use quick_xml::events::{BytesStart, Event};
use serde_json::{Value, json};

use crate::api::{
    BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary, Limitation,
};
use crate::format_kind::FormatKind;

pub const JUNIT_EXTRACTOR_NAME: &str = "junit_xml";
/// Bumped whenever the rows produced for the same input change.
pub const JUNIT_EXTRACTOR_VERSION: &str = "1";
/// Tests one report may hold (a report is read whole, then rewritten).
pub const MAX_TESTS: usize = 1_000_000;
/// Characters of a failure message kept in the test's args.
const MESSAGE_CHARS: usize = 2000;

pub static FORMAT: crate::format_descriptor::Format = crate::format_descriptor::Format {
    kind: FormatKind::JunitXml,
    aliases: &["junit", "junitxml", "pytest_junit", "pytest"],
    description: "JUnit XML test report (pytest --junitxml and others): one slice per test, category = outcome",
    sniff: Some(sniff),
    reading: crate::format_descriptor::Reading::Stream(
        crate::format_descriptor::Extractor {
            name: JUNIT_EXTRACTOR_NAME,
            version: JUNIT_EXTRACTOR_VERSION,
        },
        extract_junit_xml,
    ),
    measurements: false,
};

/// An XML head whose first element is `<testsuites` or `<testsuite`.
fn sniff(head: &crate::sniff::Head<'_>) -> Option<crate::sniff::Sniffed> {
    let text = String::from_utf8_lossy(&head.bytes[..head.bytes.len().min(4096)]);
    let mut rest = text.trim_start_matches('\u{feff}').trim_start();
    // Skip the declaration and comments before the first element.
    while let Some(tail) = rest
        .strip_prefix("<?")
        .or_else(|| rest.strip_prefix("<!--"))
    {
        let close = if rest.starts_with("<?") { "?>" } else { "-->" };
        rest = tail.split_once(close)?.1.trim_start();
    }
    (rest.starts_with("<testsuites") || rest.starts_with("<testsuite"))
        .then(|| {
            crate::sniff::Sniffed::certain(None, "XML whose root is <testsuites> or <testsuite>")
        })
        .flatten()
}

/// One test as the report states it.
struct TestCase {
    name: String,
    seconds: f64,
    outcome: &'static str,
    args: BTreeMap<String, Value>,
}

/// One suite and its tests.
struct Suite {
    name: String,
    seconds: Option<f64>,
    timestamp: Option<String>,
    tests: Vec<TestCase>,
}

fn attributes(e: &BytesStart<'_>) -> BTreeMap<String, String> {
    e.attributes()
        .flatten()
        .map(|a| {
            let key = String::from_utf8_lossy(a.key.as_ref()).into_owned();
            let value = a
                .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .unwrap_or_else(|_| Cow::Owned(String::from_utf8_lossy(&a.value).into_owned()))
                .into_owned();
            (key, value)
        })
        .collect()
}

fn seconds(text: Option<&String>) -> Option<f64> {
    text.and_then(|t| t.trim().replace(',', "").parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
}

fn parse_error(message: String) -> ExtractError {
    ExtractError::Parse {
        message,
        offset: None,
    }
}

/// Reads the report's suites and tests.
fn read_suites<R: BufRead>(
    reader: R,
    observer: &dyn ExtractObserver,
) -> Result<(Vec<Suite>, Option<String>, u64), ExtractError> {
    let mut xml = quick_xml::Reader::from_reader(reader);
    let mut buf = Vec::new();
    let mut suites: Vec<Suite> = Vec::new();
    let mut root_name = None;
    let mut current: Option<TestCase> = None;
    let mut tests = 0usize;
    let mut saw_root = false;
    loop {
        let position = xml.buffer_position();
        if tests.is_multiple_of(4096) {
            observer.bytes_read(position);
            if observer.cancelled() {
                return Err(ExtractError::Cancelled);
            }
        }
        let event = xml
            .read_event_into(&mut buf)
            .map_err(|e| parse_error(format!("not well-formed XML at byte {position}: {e}")))?;
        let (start, empty) = match &event {
            Event::Start(e) => (Some(e), false),
            Event::Empty(e) => (Some(e), true),
            Event::End(e) if e.local_name().as_ref() == b"testcase" => {
                if let (Some(case), Some(suite)) = (current.take(), suites.last_mut()) {
                    suite.tests.push(case);
                }
                (None, false)
            }
            Event::Eof => break,
            _ => (None, false),
        };
        if let Some(e) = start {
            let attrs = attributes(e);
            match e.local_name().as_ref() {
                b"testsuites" => {
                    saw_root = true;
                    root_name = attrs.get("name").cloned();
                }
                b"testsuite" => {
                    saw_root = true;
                    suites.push(Suite {
                        name: attrs
                            .get("name")
                            .cloned()
                            .unwrap_or_else(|| format!("suite {}", suites.len() + 1)),
                        seconds: seconds(attrs.get("time")),
                        timestamp: attrs.get("timestamp").cloned(),
                        tests: Vec::new(),
                    });
                }
                b"testcase" => {
                    tests += 1;
                    if tests > MAX_TESTS {
                        return Err(parse_error(format!(
                            "more than {MAX_TESTS} test cases in one report"
                        )));
                    }
                    if suites.is_empty() {
                        suites.push(Suite {
                            name: "tests".into(),
                            seconds: None,
                            timestamp: None,
                            tests: Vec::new(),
                        });
                    }
                    let classname = attrs.get("classname").cloned().unwrap_or_default();
                    let name = attrs.get("name").cloned().unwrap_or_default();
                    let mut args = BTreeMap::new();
                    for key in ["classname", "file", "line"] {
                        if let Some(v) = attrs.get(key) {
                            args.insert(key.to_owned(), json!(v));
                        }
                    }
                    let case = TestCase {
                        name: if classname.is_empty() {
                            name
                        } else {
                            format!("{classname}::{name}")
                        },
                        seconds: seconds(attrs.get("time")).unwrap_or(0.0),
                        outcome: "passed",
                        args,
                    };
                    if empty {
                        if let Some(suite) = suites.last_mut() {
                            suite.tests.push(case);
                        }
                    } else {
                        current = Some(case);
                    }
                }
                tag @ (b"failure" | b"error" | b"skipped") => {
                    if let Some(case) = current.as_mut() {
                        case.outcome = match tag {
                            b"failure" => "failed",
                            b"error" => "error",
                            _ => "skipped",
                        };
                        for key in ["type", "message"] {
                            if let Some(v) = attrs.get(key) {
                                let kept: String = v.chars().take(MESSAGE_CHARS).collect();
                                args_insert(&mut case.args, key, kept);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        buf.clear();
    }
    observer.bytes_read(xml.buffer_position());
    if !saw_root {
        return Err(parse_error(
            "no <testsuites> or <testsuite> element: not a JUnit XML report".into(),
        ));
    }
    Ok((suites, root_name, xml.buffer_position()))
}

fn args_insert(args: &mut BTreeMap<String, Value>, key: &str, value: String) {
    args.insert(key.to_owned(), json!(value));
}

/// The suites as a Chrome trace: suites and tests laid end to end (µs).
fn chrome_trace(suites: &[Suite]) -> Vec<u8> {
    let mut events = Vec::new();
    let mut start_us = 0.0f64;
    for (index, suite) in suites.iter().enumerate() {
        let tid = index as i64 + 1;
        events.push(
            json!({ "ph": "M", "name": "thread_name", "pid": 1, "tid": tid,
                            "args": { "name": suite.name } }),
        );
        let tests_us: f64 = suite.tests.iter().map(|t| t.seconds * 1e6).sum();
        let suite_us = suite.seconds.map_or(tests_us, |s| (s * 1e6).max(tests_us));
        let mut suite_args = json!({ "tests": suite.tests.len() });
        if let Some(ts) = &suite.timestamp {
            suite_args["timestamp"] = json!(ts);
        }
        events.push(
            json!({ "ph": "X", "name": suite.name, "cat": "testsuite", "pid": 1,
                            "tid": tid, "ts": start_us, "dur": suite_us, "args": suite_args }),
        );
        let mut at = start_us;
        for test in &suite.tests {
            let mut args = test.args.clone();
            args.insert("outcome".into(), json!(test.outcome));
            let dur = test.seconds * 1e6;
            events.push(
                json!({ "ph": "X", "name": test.name, "cat": test.outcome, "pid": 1,
                                "tid": tid, "ts": at, "dur": dur, "args": args }),
            );
            at += dur;
        }
        start_us += suite_us;
    }
    serde_json::to_vec(&json!({ "traceEvents": events })).unwrap_or_default()
}

/// Extracts a JUnit XML report into `trace_events` (through the Chrome
/// extractor).
pub fn extract_junit_xml<R: BufRead>(
    reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let (suites, root_name, input_bytes) = read_suites(reader, observer)?;
    let tests: usize = suites.iter().map(|s| s.tests.len()).sum();
    if tests == 0 {
        return Err(parse_error(
            "the JUnit XML report holds no <testcase>".into(),
        ));
    }
    let mut outcomes: BTreeMap<&str, u64> = BTreeMap::new();
    for t in suites.iter().flat_map(|s| &s.tests) {
        *outcomes.entry(t.outcome).or_insert(0) += 1;
    }
    let trace = chrome_trace(&suites);
    let mut summary =
        crate::chrome::extract_chrome_json(&trace[..], options, sink, &crate::api::NoObserver)?;
    let pytest = root_name
        .as_deref()
        .is_some_and(|n| n.starts_with("pytest"))
        || suites.iter().any(|s| s.name == "pytest");
    summary.extractor = JUNIT_EXTRACTOR_NAME.into();
    summary.extractor_version = JUNIT_EXTRACTOR_VERSION.into();
    summary.format = FormatKind::JunitXml.name().into();
    summary.producer = options
        .producer
        .clone()
        .unwrap_or_else(|| if pytest { "pytest" } else { "junit" }.to_owned());
    summary.input_bytes = input_bytes;
    summary.input_events = tests as u64;
    summary.metadata.insert("tests".into(), json!(tests));
    summary.metadata.insert("outcomes".into(), json!(outcomes));
    summary.limitations.push(Limitation {
        code: "synthetic_start_times".into(),
        count: tests as u64,
        message: "JUnit XML records each test's duration, not its start: tests are laid end to end in report order within their suite".into(),
    });
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suites_tests_and_outcomes_are_read() {
        let xml = r#"<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" time="0.5" timestamp="2026-12-04T23:42:00"><testcase classname="t.a" name="ok" time="0.1"/><testcase classname="t.a" name="bad" time="0.2"><failure message="assert 1 == 2 &amp; more">trace</failure></testcase><testcase classname="t.a" name="skip" time="0"><skipped message="no"/></testcase></testsuite></testsuites>"#;
        let (suites, root, _) = read_suites(xml.as_bytes(), &crate::api::NoObserver).unwrap();
        assert_eq!(root.as_deref(), Some("pytest tests"));
        let outcomes: Vec<(&str, &str)> = suites[0]
            .tests
            .iter()
            .map(|t| (t.name.as_str(), t.outcome))
            .collect();
        assert_eq!(
            outcomes,
            [
                ("t.a::ok", "passed"),
                ("t.a::bad", "failed"),
                ("t.a::skip", "skipped")
            ]
        );
        assert_eq!(suites[0].tests[1].args["message"], "assert 1 == 2 & more");
        assert!(read_suites(&b"<html/>"[..], &crate::api::NoObserver).is_err());
        assert!(read_suites(&b"<testsuite><testcase"[..], &crate::api::NoObserver).is_err());
    }
}
