//! The decoded XSpace: planes, lines, events and stats with every id
//! resolved to the metadata it names, borrowing names, strings and byte
//! payloads from the input bytes.
//!
//! Ids stay as written (`metadata_id`) beside the resolved index into the
//! plane's metadata tables (`None` when no metadata carries that id), so a
//! consumer can count what did not resolve. Event starts are computed as
//! the XPlane schema defines them: `line.timestamp_ns + offset_ps`, kept
//! to the picosecond ([`PsTime`]). Lines hold the stats of all their events
//! in one vector ([`Line::stats_of`]), so an event costs no allocation.

use std::borrow::Cow;

pub use super::notes::{Note, Notes};

/// A decoded `XSpace`.
#[derive(Debug, Default)]
pub struct Space<'a> {
    pub planes: Vec<Plane<'a>>,
    /// `XSpace.errors`: errors the profiler met while generating planes.
    pub errors: Vec<Cow<'a, str>>,
    /// `XSpace.warnings`.
    pub warnings: Vec<Cow<'a, str>>,
    /// `XSpace.hostnames`: the hosts the planes come from.
    pub hostnames: Vec<Cow<'a, str>>,
    /// Damage met while decoding (what was skipped, where).
    pub notes: Notes,
}

/// A decoded `XPlane`.
#[derive(Debug, Default)]
pub struct Plane<'a> {
    pub id: i64,
    pub name: Cow<'a, str>,
    pub lines: Vec<Line<'a>>,
    /// `XPlane.event_metadata`, sorted by id, one per id (a repeated key
    /// keeps the last entry written, as for any protobuf map).
    pub event_metadata: Vec<EventMetadata<'a>>,
    /// `XPlane.stat_metadata`, sorted by id, one per id.
    pub stat_metadata: Vec<StatMetadata<'a>>,
    /// Stats of the plane itself (device capabilities, versions, …).
    pub stats: Vec<Stat<'a>>,
}

/// A decoded `XLine`: one timeline.
#[derive(Debug, Default)]
pub struct Line<'a> {
    pub id: i64,
    pub display_id: i64,
    pub name: Cow<'a, str>,
    pub display_name: Cow<'a, str>,
    /// Where the events' offsets count from. The schema says Unix-epoch
    /// nanoseconds; jax's exports write them relative to the profile start
    /// (the `Task Environment` plane's `profile_start_time` is the epoch).
    pub timestamp_ns: i64,
    pub duration_ps: i64,
    pub events: Vec<Event>,
    /// The stats of every event on this line, in event order.
    pub event_stats: Vec<Stat<'a>>,
}

/// A decoded `XEvent`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Event {
    pub metadata_id: i64,
    /// Index into [`Plane::event_metadata`].
    pub metadata: Option<u32>,
    pub timing: EventTiming,
    pub duration_ps: i64,
    /// First index of this event's stats in [`Line::event_stats`].
    pub stats_start: u32,
    pub stats_len: u32,
}

/// When an event happened, or how often (aggregated events).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventTiming {
    /// `offset_ps` from the line's timestamp; `start` is `None` only when
    /// the sum leaves the range of [`PsTime`].
    At {
        offset_ps: i64,
        start: Option<PsTime>,
    },
    /// `num_occurrences`: an aggregated event without a start.
    Aggregated { num_occurrences: i64 },
}

/// A time in nanoseconds with the picoseconds below them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PsTime {
    pub ns: i64,
    /// `0..1000`.
    pub sub_ns_ps: u16,
}

impl PsTime {
    /// `ns` nanoseconds plus `ps` picoseconds (either may be negative);
    /// `None` outside the `i64` nanosecond range.
    pub fn new(ns: i64, ps: i64) -> Option<PsTime> {
        Self::from_ps(i128::from(ns) * 1000 + i128::from(ps))
    }

    /// A time given in picoseconds.
    pub fn from_ps(total_ps: i128) -> Option<PsTime> {
        let ns = i64::try_from(total_ps.div_euclid(1000)).ok()?;
        let sub_ns_ps = u16::try_from(total_ps.rem_euclid(1000)).ok()?;
        Some(PsTime { ns, sub_ns_ps })
    }

    /// The time in picoseconds.
    pub fn as_ps(self) -> i128 {
        i128::from(self.ns) * 1000 + i128::from(self.sub_ns_ps)
    }

    /// This time plus `ps` picoseconds.
    pub fn plus_ps(self, ps: i64) -> Option<PsTime> {
        Self::from_ps(self.as_ps() + i128::from(ps))
    }
}

impl Event {
    /// The start, for a non-aggregated event in range.
    pub fn start(&self) -> Option<PsTime> {
        match self.timing {
            EventTiming::At { start, .. } => start,
            EventTiming::Aggregated { .. } => None,
        }
    }

    /// The end: start plus duration.
    pub fn end(&self) -> Option<PsTime> {
        self.start()?.plus_ps(self.duration_ps)
    }

    /// Whether this is an aggregated event (`num_occurrences`).
    pub fn is_aggregated(&self) -> bool {
        matches!(self.timing, EventTiming::Aggregated { .. })
    }
}

/// A decoded `XEventMetadata`.
#[derive(Debug, Default)]
pub struct EventMetadata<'a> {
    /// The map key (the id events refer to).
    pub id: i64,
    pub name: Cow<'a, str>,
    pub display_name: Cow<'a, str>,
    /// The opaque serialized `metadata` bytes.
    pub metadata: &'a [u8],
    /// Stats every event with this metadata shares.
    pub stats: Vec<Stat<'a>>,
    pub child_ids: Vec<i64>,
}

/// A decoded `XStatMetadata`.
#[derive(Debug, Default)]
pub struct StatMetadata<'a> {
    pub id: i64,
    pub name: Cow<'a, str>,
    pub description: Cow<'a, str>,
}

/// A decoded `XStat`.
#[derive(Debug, Clone, PartialEq)]
pub struct Stat<'a> {
    pub metadata_id: i64,
    /// Index into [`Plane::stat_metadata`] (the stat's name).
    pub metadata: Option<u32>,
    pub value: StatValue<'a>,
}

/// `XStat.value`.
#[derive(Debug, Clone, PartialEq)]
pub enum StatValue<'a> {
    Double(f64),
    Uint64(u64),
    Int64(i64),
    Str(Cow<'a, str>),
    Bytes(&'a [u8]),
    /// `ref_value`: the text is the name of the stat metadata with id
    /// `id` (`target` indexes [`Plane::stat_metadata`]).
    Ref {
        id: u64,
        target: Option<u32>,
    },
    /// No value field was written.
    Unset,
}

/// A stat's value with a reference resolved to its text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueRef<'p> {
    Double(f64),
    Uint64(u64),
    Int64(i64),
    Text(&'p str),
    Bytes(&'p [u8]),
    /// A reference to stat metadata that is not in the plane.
    DanglingRef(u64),
    Unset,
}

impl<'p> ValueRef<'p> {
    /// An integer value, also from text that is a decimal integer.
    pub fn as_i128(self) -> Option<i128> {
        match self {
            ValueRef::Uint64(v) => Some(i128::from(v)),
            ValueRef::Int64(v) => Some(i128::from(v)),
            ValueRef::Text(t) => t.trim().parse().ok(),
            _ => None,
        }
    }

    /// A non-negative integer value that fits `u64`.
    pub fn as_u64(self) -> Option<u64> {
        self.as_i128().and_then(|v| u64::try_from(v).ok())
    }

    /// An integer value that fits `i64`.
    pub fn as_i64(self) -> Option<i64> {
        self.as_i128().and_then(|v| i64::try_from(v).ok())
    }

    /// A text value.
    pub fn as_text(self) -> Option<&'p str> {
        match self {
            ValueRef::Text(t) => Some(t),
            _ => None,
        }
    }
}

impl<'a> Space<'a> {
    /// The first plane named `name` (`/host:CPU`, `/device:GPU:0`, …).
    pub fn plane(&self, name: &str) -> Option<&Plane<'a>> {
        self.planes.iter().find(|p| p.name == name)
    }
}

impl<'a> Plane<'a> {
    /// The metadata of an event.
    pub fn event_metadata_of(&self, event: &Event) -> Option<&EventMetadata<'a>> {
        self.event_metadata
            .get(usize::try_from(event.metadata?).ok()?)
    }

    /// An event's name (`""` when its metadata is missing).
    pub fn event_name(&self, event: &Event) -> &str {
        self.event_metadata_of(event).map_or("", |m| &m.name)
    }

    /// An event's display name, falling back to its name.
    pub fn event_display_name(&self, event: &Event) -> &str {
        match self.event_metadata_of(event) {
            Some(m) if !m.display_name.is_empty() => &m.display_name,
            Some(m) => &m.name,
            None => "",
        }
    }

    fn stat_metadata_at(&self, index: Option<u32>) -> Option<&StatMetadata<'a>> {
        self.stat_metadata.get(usize::try_from(index?).ok()?)
    }

    /// A stat's name.
    pub fn stat_name(&self, stat: &Stat<'_>) -> Option<&str> {
        self.stat_metadata_at(stat.metadata).map(|m| &*m.name)
    }

    /// A stat's value, a reference resolved to its text.
    pub fn stat_value<'p>(&'p self, stat: &'p Stat<'_>) -> ValueRef<'p> {
        match &stat.value {
            StatValue::Double(v) => ValueRef::Double(*v),
            StatValue::Uint64(v) => ValueRef::Uint64(*v),
            StatValue::Int64(v) => ValueRef::Int64(*v),
            StatValue::Str(s) => ValueRef::Text(s),
            StatValue::Bytes(b) => ValueRef::Bytes(b),
            StatValue::Ref { id, target } => match self.stat_metadata_at(*target) {
                Some(m) => ValueRef::Text(&m.name),
                None => ValueRef::DanglingRef(*id),
            },
            StatValue::Unset => ValueRef::Unset,
        }
    }

    /// The index of the stat metadata named `name`, if any.
    pub fn stat_metadata_named(&self, name: &str) -> Option<u32> {
        let at = self.stat_metadata.iter().position(|m| m.name == name)?;
        u32::try_from(at).ok()
    }

    /// The plane stat named `name`.
    pub fn plane_stat(&self, name: &str) -> Option<ValueRef<'_>> {
        let wanted = self.stat_metadata_named(name)?;
        let stat = self.stats.iter().find(|s| s.metadata == Some(wanted))?;
        Some(self.stat_value(stat))
    }

    /// How many events of all lines.
    pub fn event_count(&self) -> usize {
        self.lines.iter().map(|l| l.events.len()).sum()
    }
}

impl<'a> Line<'a> {
    /// The stats of one of this line's events.
    pub fn stats_of(&self, event: &Event) -> &[Stat<'a>] {
        let start = usize::try_from(event.stats_start).unwrap_or(usize::MAX);
        let len = usize::try_from(event.stats_len).unwrap_or(0);
        self.event_stats
            .get(start..start.saturating_add(len))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picosecond_times_keep_the_remainder_and_refuse_overflow() {
        let t = PsTime::new(6011, 3_787_001).unwrap();
        assert_eq!(
            t,
            PsTime {
                ns: 9798,
                sub_ns_ps: 1
            }
        );
        let before = PsTime::new(0, -1).unwrap();
        assert_eq!(
            before,
            PsTime {
                ns: -1,
                sub_ns_ps: 999
            }
        );
        assert_eq!(before.as_ps(), -1);
        assert_eq!(PsTime::new(i64::MAX, 1000), None);
        assert_eq!(PsTime::new(i64::MIN, -1000), None);
        assert_eq!(PsTime::new(i64::MAX, 999).unwrap().plus_ps(1), None);
        assert!(PsTime::new(1, 0) < PsTime::new(1, 1));
    }

    #[test]
    fn values_resolve_references_and_read_integers() {
        let plane = Plane {
            stat_metadata: vec![StatMetadata {
                id: 9,
                name: "jit_f".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let good = Stat {
            metadata_id: 9,
            metadata: Some(0),
            value: StatValue::Ref {
                id: 9,
                target: Some(0),
            },
        };
        assert_eq!(plane.stat_value(&good), ValueRef::Text("jit_f"));
        assert_eq!(plane.stat_name(&good), Some("jit_f"));
        let dangling = Stat {
            metadata_id: 1,
            metadata: None,
            value: StatValue::Ref {
                id: 4,
                target: None,
            },
        };
        assert_eq!(plane.stat_value(&dangling), ValueRef::DanglingRef(4));
        assert_eq!(plane.stat_name(&dangling), None);
        assert_eq!(ValueRef::Text(" 12 ").as_i64(), Some(12));
        assert_eq!(ValueRef::Int64(-1).as_u64(), None);
        assert_eq!(ValueRef::Uint64(u64::MAX).as_i64(), None);
        assert_eq!(ValueRef::Double(1.0).as_i128(), None);
    }

    #[test]
    fn stat_ranges_out_of_bounds_read_as_empty() {
        let line = Line::default();
        let event = Event {
            metadata_id: 0,
            metadata: None,
            timing: EventTiming::Aggregated { num_occurrences: 2 },
            duration_ps: 0,
            stats_start: u32::MAX,
            stats_len: u32::MAX,
        };
        assert!(line.stats_of(&event).is_empty());
        assert!(event.is_aggregated());
        assert_eq!(event.start(), None);
        assert_eq!(event.end(), None);
    }
}
