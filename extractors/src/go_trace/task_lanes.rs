//! User tasks (`trace.NewTask` … `End`) as `user_annotation` slices.
//! A task is no goroutine's: it may begin on one and end on another, and
//! tasks of a server overlap. They are held until the trace ends (one
//! entry per task) and laid out on lanes as OTLP spans are
//! ([`crate::otlp::lanes`]): a child task shares its parent's lane when it
//! nests in it, concurrent tasks take the lowest free lane, so the lanes
//! (async tracks `user tasks <n>` of the Go program) are as many as the
//! peak concurrency and tasks nest exactly as their parent ids say.

use super::evidence_sink::{EvidenceSink, Row};
use crate::FastHashMap;
use crate::otlp::lanes::{Interval, assign_lanes, layout_order};
use crate::trace_events::kinds::EventKind;
use crate::trace_events::tracks::{Ident, TrackKind};

/// Parent chains are followed this far for a task's depth (a cycle of ids
/// in a damaged trace ends there).
const MOST_DEPTH: u32 = 64;

/// One task, ended (or closed at the trace's end).
pub(super) struct PendingTask {
    pub(super) task: u64,
    /// The parent task's id (0: none).
    pub(super) parent: Option<u64>,
    pub(super) start_ns: u64,
    pub(super) end_ns: u64,
    pub(super) name: String,
    pub(super) args: Option<String>,
}

/// Each task's depth along its parent chain (cut at [`MOST_DEPTH`]).
fn depths(parent: &[Option<usize>]) -> Vec<u32> {
    parent
        .iter()
        .map(|&first| {
            let mut depth = 0;
            let mut at = first;
            while let Some(p) = at {
                if depth >= MOST_DEPTH {
                    break;
                }
                depth += 1;
                at = parent.get(p).copied().flatten();
            }
            depth
        })
        .collect()
}

impl EvidenceSink<'_> {
    /// Lays the held tasks out on lanes and adds them as rows; returns the
    /// number of lanes.
    pub(super) fn lay_out_tasks(&mut self) -> u32 {
        let tasks = std::mem::take(&mut self.tasks);
        if tasks.is_empty() {
            return 0;
        }
        let by_id: FastHashMap<u64, usize> =
            tasks.iter().enumerate().map(|(i, t)| (t.task, i)).collect();
        let parent: Vec<Option<usize>> = tasks
            .iter()
            .enumerate()
            .map(|(i, t)| {
                t.parent
                    .filter(|&p| p != 0)
                    .and_then(|p| by_id.get(&p).copied())
                    .filter(|&p| p != i)
            })
            .collect();
        let depth = depths(&parent);
        let clamp = |ns: u64| i64::try_from(ns).unwrap_or(i64::MAX);
        let intervals: Vec<Interval> = tasks
            .iter()
            .enumerate()
            .map(|(i, t)| Interval {
                start: clamp(t.start_ns),
                end: clamp(t.end_ns),
                parent: parent.get(i).copied().flatten(),
                depth: depth.get(i).copied().unwrap_or(0),
            })
            .collect();
        let order = layout_order(&intervals);
        let (lane_of, lanes) = assign_lanes(&intervals, &order);
        let mut tracks: Vec<u32> = Vec::new();
        for lane in 0..lanes {
            let name = self.trace.strings.intern(&format!("user tasks {lane}"));
            tracks.push(self.trace.tracks.add_named(
                TrackKind::Async,
                self.process,
                Ident::None,
                name,
            ));
        }
        let category = self.cats.task;
        for &i in &order {
            let (Some(t), Some(&track)) = (
                tasks.get(i),
                lane_of.get(i).and_then(|&l| tracks.get(l as usize)),
            ) else {
                continue;
            };
            let name = if t.name.is_empty() {
                "(unnamed task)"
            } else {
                t.name.as_str()
            };
            self.push(Row {
                start_ns: t.start_ns,
                end_ns: Some(t.end_ns),
                name,
                category,
                kind: EventKind::UserAnnotation,
                track,
                args: t.args.clone(),
                goroutine: None,
            });
        }
        lanes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depths_follow_parents_and_stop_on_cycles() {
        assert_eq!(depths(&[None, Some(0), Some(1)]), vec![0, 1, 2]);
        assert_eq!(depths(&[Some(1), Some(0)]), vec![MOST_DEPTH, MOST_DEPTH]);
    }
}
