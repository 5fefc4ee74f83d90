//! Named spans: every share an answer gives is of a span that says which
//! it is, so "47 % of the trace" and "47 % of the device's active time"
//! cannot be confused.

use serde::{Deserialize, Serialize};

/// Which span a share is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanName {
    /// The artifact's (or run's) first event start to its last event end.
    Trace,
    /// A device's first activity start to its last activity end.
    DeviceActive,
    /// The first profiler step's start to the last step's end.
    Steps,
    /// A phase's host span.
    Phase,
    /// The window the caller asked for.
    Window,
}

impl SpanName {
    /// The span in words ("of the trace").
    pub fn words(self) -> &'static str {
        match self {
            SpanName::Trace => "the trace",
            SpanName::DeviceActive => "the device's active span",
            SpanName::Steps => "the profiler steps",
            SpanName::Phase => "the phase",
            SpanName::Window => "the window",
        }
    }
}

/// A span with its name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedSpan {
    pub name: SpanName,
    /// Which steps, phase or window (e.g. `ProfilerStep#3..ProfilerStep#7`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub start_ns: i64,
    pub end_ns: i64,
    pub dur_ns: i64,
}

impl NamedSpan {
    /// `[start, end)` named; an end before the start makes an empty span.
    pub fn new(name: SpanName, label: Option<String>, start_ns: i64, end_ns: i64) -> NamedSpan {
        let end_ns = end_ns.max(start_ns);
        NamedSpan {
            name,
            label,
            start_ns,
            end_ns,
            dur_ns: end_ns - start_ns,
        }
    }
}
