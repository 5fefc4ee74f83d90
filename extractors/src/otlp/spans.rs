//! OTLP spans → trace events: collected per process while the requests
//! stream in (a trace's spans may arrive in any request), then laid out on
//! lanes ([`super::lanes`]) and pushed into the shared trace builder in
//! layout order, so event ids follow nesting order.

use serde_json::{Map, Value, json};

use super::lanes::{Interval, assign_lanes, layout_order};
use super::model::{self, Span};
use crate::FastHashMap;
use crate::api::ARGS_TRUNCATED_MARKER;
use crate::trace_events::args_arena::bound_args;
use crate::trace_events::builder::TraceBuilder;
use crate::trace_events::device_columns::DeviceFields;
use crate::trace_events::kinds::EventKind;
use crate::trace_events::store::NewEvent;
use crate::trace_events::tracks::Ident;

/// Parent chains longer than this are cut (a cycle of parent ids).
const MOST_DEPTH: u32 = 10_000;

/// One span, read.
struct Pending {
    trace: u128,
    span: u64,
    parent: Option<u64>,
    start: i64,
    end: i64,
    name: u32,
    kind: u32,
    args: String,
}

/// The spans of every process, in first-appearance order.
pub struct SpanCollector {
    max_args_bytes: usize,
    processes: Vec<(u32, Vec<Pending>)>,
    index: FastHashMap<u32, usize>,
}

/// What the layout produced.
pub struct LaidOut {
    pub spans: u64,
    pub lanes: u64,
}

fn id128(hex: &str) -> Option<u128> {
    u128::from_str_radix(hex, 16).ok()
}

impl SpanCollector {
    pub fn new(max_args_bytes: usize) -> Self {
        SpanCollector {
            max_args_bytes,
            processes: Vec::new(),
            index: FastHashMap::default(),
        }
    }

    /// Reads one span of `process` (an interned label).
    pub fn add(&mut self, trace: &mut TraceBuilder, process: u32, scope: &str, span: Span) {
        let (Some(start), Some(end)) = (span.start_time_unix_nano, span.end_time_unix_nano) else {
            trace.log.note("span_without_times", || {
                format!("span `{}` has no start or end time; skipped", span.name)
            });
            return;
        };
        if end < start {
            trace.log.note("span_ends_before_start", || {
                format!("span `{}` ends before it starts; skipped", span.name)
            });
            return;
        }
        let trace_hex = model::id_hex(&span.trace_id);
        let span_hex = model::id_hex(&span.span_id);
        let (Some(trace_id), Some(span_id)) = (
            trace_hex.as_deref().and_then(id128),
            span_hex.as_deref().and_then(id128),
        ) else {
            trace.log.note("span_without_ids", || {
                format!(
                    "span `{}` has no readable trace or span id; skipped",
                    span.name
                )
            });
            return;
        };
        let parent_hex = model::id_hex(&span.parent_span_id);
        let kind = model::span_kind(&span.kind);
        let mut args = Map::new();
        args.insert("trace_id".into(), json!(trace_hex));
        args.insert("span_id".into(), json!(span_hex));
        if let Some(p) = &parent_hex {
            args.insert("parent_span_id".into(), json!(p));
        }
        if !scope.is_empty() {
            args.insert("scope".into(), json!(scope));
        }
        if let Some(status) = &span.status
            && model::is_error(status)
        {
            args.insert("status".into(), json!("error"));
            if !status.message.is_empty() {
                args.insert("status_message".into(), json!(status.message));
            }
        }
        if !span.events.is_empty() {
            args.insert("span_events".into(), json!(span.events.len()));
        }
        let attributes: Map<String, Value> = span
            .attributes
            .iter()
            .map(|kv| (kv.key.clone(), model::any_value(&kv.value)))
            .collect();
        if !attributes.is_empty() {
            args.insert("attributes".into(), Value::Object(attributes));
        }
        let text = Value::Object(args).to_string();
        let pending = Pending {
            trace: trace_id,
            span: span_id as u64,
            parent: parent_hex.as_deref().and_then(id128).map(|p| p as u64),
            start,
            end,
            name: trace.strings.intern(&span.name),
            kind: trace.strings.intern(kind),
            args: bound_args(&text, self.max_args_bytes, ARGS_TRUNCATED_MARKER).into_owned(),
        };
        let slot = *self.index.entry(process).or_insert_with(|| {
            self.processes.push((process, Vec::new()));
            self.processes.len() - 1
        });
        self.processes[slot].1.push(pending);
    }

    /// Lays every process's spans out on lanes and pushes them as events.
    pub fn lay_out(self, trace: &mut TraceBuilder) -> LaidOut {
        let mut out = LaidOut { spans: 0, lanes: 0 };
        let mut lane_names: Vec<u32> = Vec::new();
        for (process, spans) in self.processes {
            let by_id: FastHashMap<(u128, u64), usize> = spans
                .iter()
                .enumerate()
                .map(|(i, s)| ((s.trace, s.span), i))
                .collect();
            let parent: Vec<Option<usize>> = spans
                .iter()
                .map(|s| s.parent.and_then(|p| by_id.get(&(s.trace, p)).copied()))
                .collect();
            let missing = spans
                .iter()
                .zip(&parent)
                .filter(|(s, p)| s.parent.is_some() && p.is_none())
                .count() as u64;
            trace.log.note_n("parent_not_in_input", missing, || {
                "a span's parent is not in this input (another process or a lost export); it is a root here, its parent_span_id kept in args".to_owned()
            });
            let depth = depths(&parent);
            let intervals: Vec<Interval> = spans
                .iter()
                .enumerate()
                .map(|(i, s)| Interval {
                    start: s.start,
                    end: s.end,
                    parent: parent[i],
                    depth: depth[i],
                })
                .collect();
            let order = layout_order(&intervals);
            let (lane_of, lanes) = assign_lanes(&intervals, &order);
            while lane_names.len() < lanes as usize {
                let name = format!("lane {}", lane_names.len());
                lane_names.push(trace.strings.intern(&name));
            }
            let pid = Ident::Label(process);
            for &i in &order {
                let s = &spans[i];
                let track = trace
                    .tracks
                    .thread(pid, Ident::Label(lane_names[lane_of[i] as usize]));
                let event_id = trace.store.len() as u64;
                trace.store.push(
                    NewEvent {
                        event_id,
                        ts: s.start,
                        dur: s.end - s.start,
                        name: s.name,
                        cat: s.kind,
                        kind: EventKind::CpuSlice,
                        track,
                        device_activity: false,
                        fields: DeviceFields::ABSENT,
                    },
                    false,
                    Some(&s.args),
                );
            }
            out.spans += spans.len() as u64;
            out.lanes += u64::from(lanes);
        }
        out
    }
}

/// Every span's depth along its parent chain, each span walked once
/// (a chain longer than [`MOST_DEPTH`] — a cycle of parent ids — is cut
/// there and its top taken as a root).
fn depths(parent: &[Option<usize>]) -> Vec<u32> {
    const UNKNOWN: u32 = u32::MAX;
    let mut depth = vec![UNKNOWN; parent.len()];
    let mut path = Vec::new();
    for i in 0..parent.len() {
        path.clear();
        let mut at = Some(i);
        while let Some(k) = at {
            if depth[k] != UNKNOWN {
                break;
            }
            path.push(k);
            at = match parent[k] {
                Some(p) if path.len() < MOST_DEPTH as usize => Some(p),
                _ => None,
            };
        }
        let top = at.map_or(0, |k| depth[k] + 1);
        for (d, &k) in (top..).zip(path.iter().rev()) {
            depth[k] = d;
        }
    }
    depth
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depths_follow_parents_and_cut_cycles() {
        assert_eq!(depths(&[None, Some(0), Some(1), Some(0)]), vec![0, 1, 2, 1]);
        // A cycle ends; every span gets a depth.
        let d = depths(&[Some(1), Some(0)]);
        assert!(d.iter().all(|&x| x < MOST_DEPTH));
    }
}
