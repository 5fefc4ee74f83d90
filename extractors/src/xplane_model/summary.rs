//! Per-plane and per-line totals of a decoded XSpace: event counts by
//! class, time spans, and how many ids did not resolve. What a report or
//! a test shows about an XSpace before any table is built.

use std::collections::BTreeMap;

use super::classify::PlaneClassifier;
use super::kinds::{LineKind, PlaneKind};
use super::space::{Plane, PsTime, Space, StatValue};

/// Totals of a whole XSpace.
#[derive(Debug, Clone, PartialEq)]
pub struct SpaceSummary<'p> {
    pub planes: Vec<PlaneSummary<'p>>,
}

/// Totals of one plane.
#[derive(Debug, Clone, PartialEq)]
pub struct PlaneSummary<'p> {
    pub id: i64,
    pub name: &'p str,
    pub kind: PlaneKind,
    pub lines: Vec<LineSummary<'p>>,
    pub events: u64,
    pub event_metadata: usize,
    pub stat_metadata: usize,
    pub plane_stats: usize,
    /// Stats anywhere in the plane whose `metadata_id` has no metadata.
    pub unresolved_stats: u64,
    /// `ref_value` stats naming stat metadata that is not there.
    pub dangling_refs: u64,
}

/// Totals of one line.
#[derive(Debug, Clone, PartialEq)]
pub struct LineSummary<'p> {
    pub id: i64,
    pub name: &'p str,
    pub kind: LineKind,
    pub events: u64,
    /// Events with `num_occurrences` instead of a start.
    pub aggregated: u64,
    pub zero_duration: u64,
    /// Events whose `metadata_id` has no event metadata.
    pub unresolved_events: u64,
    /// Earliest start and latest end over the line's events.
    pub first_start: Option<PsTime>,
    pub last_end: Option<PsTime>,
    /// Events per [`super::classify::EventClass::label`].
    pub classes: BTreeMap<&'static str, u64>,
}

impl<'p> SpaceSummary<'p> {
    /// Summarises every plane.
    pub fn of(space: &'p Space<'_>) -> Self {
        SpaceSummary {
            planes: space.planes.iter().map(PlaneSummary::of).collect(),
        }
    }

    /// Events over all planes.
    pub fn events(&self) -> u64 {
        self.planes.iter().map(|p| p.events).sum()
    }
}

fn bump(counter: &mut u64) {
    *counter = counter.saturating_add(1);
}

impl<'p> PlaneSummary<'p> {
    /// Summarises one plane.
    pub fn of(plane: &'p Plane<'_>) -> Self {
        let classifier = PlaneClassifier::new(plane);
        let mut unresolved_stats = 0;
        let mut dangling_refs = 0;
        let all_stats = plane
            .stats
            .iter()
            .chain(plane.event_metadata.iter().flat_map(|m| &m.stats))
            .chain(plane.lines.iter().flat_map(|l| &l.event_stats));
        for stat in all_stats {
            if stat.metadata.is_none() {
                bump(&mut unresolved_stats);
            }
            if matches!(stat.value, StatValue::Ref { target: None, .. }) {
                bump(&mut dangling_refs);
            }
        }
        let lines: Vec<LineSummary<'p>> = plane
            .lines
            .iter()
            .map(|line| {
                let kind = classifier.line_kind(line);
                let mut s = LineSummary {
                    id: line.id,
                    name: &line.name,
                    kind,
                    events: 0,
                    aggregated: 0,
                    zero_duration: 0,
                    unresolved_events: 0,
                    first_start: None,
                    last_end: None,
                    classes: BTreeMap::new(),
                };
                for event in &line.events {
                    bump(&mut s.events);
                    if event.is_aggregated() {
                        bump(&mut s.aggregated);
                    }
                    if event.duration_ps == 0 {
                        bump(&mut s.zero_duration);
                    }
                    if event.metadata.is_none() {
                        bump(&mut s.unresolved_events);
                    }
                    if let Some(start) = event.start() {
                        s.first_start = Some(s.first_start.map_or(start, |t| t.min(start)));
                    }
                    if let Some(end) = event.end() {
                        s.last_end = Some(s.last_end.map_or(end, |t| t.max(end)));
                    }
                    let class = classifier.classify(line, kind, event).class;
                    bump(s.classes.entry(class.label()).or_default());
                }
                s
            })
            .collect();
        PlaneSummary {
            id: plane.id,
            name: &plane.name,
            kind: classifier.plane_kind(),
            events: lines.iter().map(|l| l.events).sum(),
            lines,
            event_metadata: plane.event_metadata.len(),
            stat_metadata: plane.stat_metadata.len(),
            plane_stats: plane.stats.len(),
            unresolved_stats,
            dangling_refs,
        }
    }

    /// Events per class label over all lines.
    pub fn classes(&self) -> BTreeMap<&'static str, u64> {
        let mut total = BTreeMap::new();
        for line in &self.lines {
            for (label, n) in &line.classes {
                let slot: &mut u64 = total.entry(*label).or_default();
                *slot = slot.saturating_add(*n);
            }
        }
        total
    }

    /// Earliest start and latest end over all lines.
    pub fn span(&self) -> (Option<PsTime>, Option<PsTime>) {
        let first = self.lines.iter().filter_map(|l| l.first_start).min();
        let last = self.lines.iter().filter_map(|l| l.last_end).max();
        (first, last)
    }
}
