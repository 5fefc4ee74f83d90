//! Decoding an XSpace (`*.xplane.pb`) from its bytes into [`Space`].
//!
//! Why `&[u8]` and not a reader: protobuf length-delimited messages only
//! make sense with their bytes, a plane is most of the file, and a plane's
//! lines come before the metadata tables their events refer to (field 3
//! before fields 4 and 5), so nothing can be resolved until the whole plane
//! is read. Decoding in place instead keeps every name, string stat and
//! byte payload borrowed from the input: the model costs fixed-size
//! records per event and stat, nothing per character.
//!
//! Damage never panics. A file whose first field is not an XSpace field is
//! [`XSpaceError::NotXSpace`]; after that, damage (a cut file, flipped
//! bits, zeroed blocks) stops the walk of the message it is in, drops the
//! event or stat it cut, and leaves a [`Notes`] entry; everything decoded
//! before it is kept. Memory is bounded by the input (every record costs at
//! least two input bytes) and by [`Limits`]. The XSpace format carries no
//! version number, so there is no version to refuse.

use super::decode_events::{decode_line, note_wrong_type, push_stat, text};
use super::fields::{Field, FieldReader, FieldValue};
use super::space::{EventMetadata, Notes, Plane, Space, Stat, StatMetadata, StatValue};

/// Why bytes could not be read as an XSpace at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum XSpaceError {
    #[error("the input is empty; an XSpace holds at least one plane")]
    Empty,
    #[error("not an XSpace: {reason} (byte {offset})")]
    NotXSpace { offset: usize, reason: String },
}

/// Caps on what one decode stores; beyond them events and stats are
/// counted and skipped (with a note), and metadata is still read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_events: usize,
    pub max_stats: usize,
}

impl Default for Limits {
    /// About 1.5 GB of model at most: far above a real profile (a 1 MB
    /// XSpace holds ~40 000 events).
    fn default() -> Self {
        Limits {
            max_events: 16_000_000,
            max_stats: 16_000_000,
        }
    }
}

/// What is left of the [`Limits`], and the counts of what was skipped.
pub(super) struct Budget<'n> {
    pub notes: &'n mut Notes,
    events_left: usize,
    stats_left: usize,
    pub events_skipped: u64,
    pub stats_skipped: u64,
    pub times_out_of_range: u64,
}

impl<'n> Budget<'n> {
    pub fn new(limits: &Limits, notes: &'n mut Notes) -> Self {
        Budget {
            notes,
            events_left: limits.max_events,
            stats_left: limits.max_stats,
            events_skipped: 0,
            stats_skipped: 0,
            times_out_of_range: 0,
        }
    }

    /// Whether one more event may be stored.
    pub fn take_event(&mut self) -> bool {
        if let Some(left) = self.events_left.checked_sub(1) {
            self.events_left = left;
            true
        } else {
            self.events_skipped = self.events_skipped.saturating_add(1);
            false
        }
    }

    /// Whether one more stat may be stored.
    pub fn take_stat(&mut self) -> bool {
        if let Some(left) = self.stats_left.checked_sub(1) {
            self.stats_left = left;
            true
        } else {
            self.stats_skipped = self.stats_skipped.saturating_add(1);
            false
        }
    }
}

/// Decodes an XSpace with the default [`Limits`].
pub fn decode_space(bytes: &[u8]) -> Result<Space<'_>, XSpaceError> {
    decode_space_with(bytes, &Limits::default())
}

/// Decodes an XSpace.
pub fn decode_space_with<'a>(bytes: &'a [u8], limits: &Limits) -> Result<Space<'a>, XSpaceError> {
    if bytes.is_empty() {
        return Err(XSpaceError::Empty);
    }
    check_first_field(bytes)?;
    let mut space = Space::default();
    let mut notes = Notes::default();
    let mut budget = Budget::new(limits, &mut notes);
    for field in FieldReader::new(bytes, 0) {
        let field = match field {
            Ok(f) => f,
            Err(damage) => {
                let message = format!("XSpace: {}; rest of the file skipped", damage.describe());
                budget.notes.push(damage.offset(), message);
                break;
            }
        };
        if field.truncated {
            let what = if field.number == 1 { "plane" } else { "field" };
            let message =
                format!("the file ends inside an XSpace {what}: decoded as far as it goes");
            budget.notes.push(field.offset, message);
        }
        let value = field.value;
        let read = match field.number {
            1 => value.len_bytes().map(|b| {
                space
                    .planes
                    .push(decode_plane(b, field.offset, &mut budget))
            }),
            2 => value.len_bytes().map(|b| space.errors.push(text(b))),
            3 => value.len_bytes().map(|b| space.warnings.push(text(b))),
            4 => value.len_bytes().map(|b| space.hostnames.push(text(b))),
            _ => Some(()),
        };
        if read.is_none() {
            note_wrong_type(&mut budget, "XSpace", &field);
        }
    }
    finish_notes(&mut budget);
    space.notes = notes;
    Ok(space)
}

/// The first field must be one of XSpace's (planes, errors, warnings,
/// hostnames: all length-delimited).
fn check_first_field(bytes: &[u8]) -> Result<(), XSpaceError> {
    let not = |offset: usize, reason: String| XSpaceError::NotXSpace { offset, reason };
    match FieldReader::new(bytes, 0).next() {
        Some(Ok(Field {
            number: 1..=4,
            value: FieldValue::Len(_),
            ..
        })) => Ok(()),
        Some(Ok(field)) => Err(not(
            0,
            format!(
                "its first protobuf field, number {}, is not one of XSpace's length-delimited fields",
                field.number
            ),
        )),
        Some(Err(damage)) => Err(not(damage.offset(), damage.describe())),
        None => Err(XSpaceError::Empty),
    }
}

/// Summary notes for everything the budget counted.
fn finish_notes(budget: &mut Budget<'_>) {
    if budget.events_skipped > 0 {
        let message = format!(
            "event limit reached: {} events skipped",
            budget.events_skipped
        );
        budget.notes.push(0, message);
    }
    if budget.stats_skipped > 0 {
        let message = format!("stat limit reached: {} stats skipped", budget.stats_skipped);
        budget.notes.push(0, message);
    }
    if budget.times_out_of_range > 0 {
        let message = format!(
            "{} event starts outside the i64 nanosecond range (start left unknown)",
            budget.times_out_of_range
        );
        budget.notes.push(0, message);
    }
}

/// Decodes one `XPlane` and resolves its ids.
fn decode_plane<'a>(bytes: &'a [u8], base: usize, budget: &mut Budget<'_>) -> Plane<'a> {
    let mut plane = Plane::default();
    for field in FieldReader::new(bytes, base) {
        let field = match field {
            Ok(f) => f,
            Err(damage) => {
                let message = format!("XPlane: {}; rest of the plane skipped", damage.describe());
                budget.notes.push(damage.offset(), message);
                break;
            }
        };
        let value = field.value;
        let read = match field.number {
            1 => value.varint().map(|v| plane.id = v as i64),
            2 => value.len_bytes().map(|b| plane.name = text(b)),
            3 => value
                .len_bytes()
                .map(|b| plane.lines.push(decode_line(b, field.offset, budget))),
            4 | 5 if field.truncated => {
                let message = "XPlane metadata entry cut short; dropped";
                budget.notes.push(field.offset, message);
                Some(())
            }
            4 => value.len_bytes().map(|b| {
                plane
                    .event_metadata
                    .extend(decode_event_metadata(b, field.offset, budget));
            }),
            5 => value.len_bytes().map(|b| {
                plane
                    .stat_metadata
                    .extend(decode_stat_metadata(b, field.offset, budget));
            }),
            6 => {
                push_stat(&field, &mut plane.stats, budget);
                Some(())
            }
            _ => Some(()),
        };
        if read.is_none() {
            note_wrong_type(budget, "XPlane", &field);
        }
    }
    resolve_plane(&mut plane);
    plane
}

/// A map entry's key and value payload; `None` (noted) when damaged.
fn map_entry<'a>(
    bytes: &'a [u8],
    base: usize,
    budget: &mut Budget<'_>,
) -> Option<(i64, &'a [u8], usize)> {
    let (mut key, mut value, mut value_at) = (0i64, &[][..], base);
    for field in FieldReader::new(bytes, base) {
        match field {
            Ok(f) if f.truncated => {
                budget
                    .notes
                    .push(f.offset, "XPlane metadata entry cut short; dropped");
                return None;
            }
            Ok(f) => match (f.number, f.value) {
                (1, FieldValue::Varint(v)) => key = v as i64,
                (2, FieldValue::Len(b)) => (value, value_at) = (b, f.offset),
                (1 | 2, _) => note_wrong_type(budget, "metadata entry", &f),
                _ => {}
            },
            Err(damage) => {
                let message = format!("XPlane metadata entry: {}; dropped", damage.describe());
                budget.notes.push(damage.offset(), message);
                return None;
            }
        }
    }
    Some((key, value, value_at))
}

/// Decodes an `event_metadata` map entry; `None` (noted) when damaged.
fn decode_event_metadata<'a>(
    bytes: &'a [u8],
    base: usize,
    budget: &mut Budget<'_>,
) -> Option<EventMetadata<'a>> {
    let (key, value, value_at) = map_entry(bytes, base, budget)?;
    let mut metadata = EventMetadata {
        id: key,
        ..Default::default()
    };
    for field in FieldReader::new(value, value_at) {
        let field = match field {
            Ok(f) if !f.truncated => f,
            Ok(f) => {
                budget
                    .notes
                    .push(f.offset, "XEventMetadata cut short; dropped");
                return None;
            }
            Err(damage) => {
                let message = format!("XEventMetadata: {}; dropped", damage.describe());
                budget.notes.push(damage.offset(), message);
                return None;
            }
        };
        let value = field.value;
        let read = match field.number {
            2 => value.len_bytes().map(|b| metadata.name = text(b)),
            4 => value.len_bytes().map(|b| metadata.display_name = text(b)),
            3 => value.len_bytes().map(|b| metadata.metadata = b),
            5 => {
                push_stat(&field, &mut metadata.stats, budget);
                Some(())
            }
            6 => child_ids(value, &mut metadata.child_ids),
            _ => Some(()),
        };
        if read.is_none() {
            note_wrong_type(budget, "XEventMetadata", &field);
        }
    }
    Some(metadata)
}

/// `child_id`: one varint, or a packed run of them.
fn child_ids(value: FieldValue<'_>, out: &mut Vec<i64>) -> Option<()> {
    match value {
        FieldValue::Varint(v) => out.push(v as i64),
        FieldValue::Len(mut packed) => {
            while !packed.is_empty() {
                out.push(crate::varint::get_u64(&mut packed)? as i64);
            }
        }
        _ => return None,
    }
    Some(())
}

/// Decodes a `stat_metadata` map entry; `None` (noted) when damaged.
fn decode_stat_metadata<'a>(
    bytes: &'a [u8],
    base: usize,
    budget: &mut Budget<'_>,
) -> Option<StatMetadata<'a>> {
    let (key, value, value_at) = map_entry(bytes, base, budget)?;
    let mut metadata = StatMetadata {
        id: key,
        ..Default::default()
    };
    for field in FieldReader::new(value, value_at) {
        let field = match field {
            Ok(f) if !f.truncated => f,
            Ok(f) => {
                budget
                    .notes
                    .push(f.offset, "XStatMetadata cut short; dropped");
                return None;
            }
            Err(damage) => {
                let message = format!("XStatMetadata: {}; dropped", damage.describe());
                budget.notes.push(damage.offset(), message);
                return None;
            }
        };
        let read = match field.number {
            2 => field.value.len_bytes().map(|b| metadata.name = text(b)),
            3 => field
                .value
                .len_bytes()
                .map(|b| metadata.description = text(b)),
            _ => Some(()),
        };
        if read.is_none() {
            note_wrong_type(budget, "XStatMetadata", &field);
        }
    }
    Some(metadata)
}

/// Sorts by id keeping, for a repeated id, the entry written last.
fn sort_last_wins<T>(items: &mut Vec<T>, id: impl Fn(&T) -> i64) {
    items.reverse();
    items.sort_by_key(&id);
    items.dedup_by(|later, kept| id(later) == id(kept));
}

/// The index of `id` in a table sorted by id.
fn index_of<T>(sorted: &[T], id: i64, key: impl Fn(&T) -> i64) -> Option<u32> {
    let at = sorted.binary_search_by_key(&id, key).ok()?;
    u32::try_from(at).ok()
}

/// Sorts the metadata tables and points every event and stat at its entry.
fn resolve_plane(plane: &mut Plane<'_>) {
    sort_last_wins(&mut plane.event_metadata, |m| m.id);
    sort_last_wins(&mut plane.stat_metadata, |m| m.id);
    let names = &plane.stat_metadata;
    let resolve = |stats: &mut [Stat<'_>]| {
        for stat in stats {
            stat.metadata = index_of(names, stat.metadata_id, |m| m.id);
            if let StatValue::Ref { id, target } = &mut stat.value {
                *target = i64::try_from(*id)
                    .ok()
                    .and_then(|id| index_of(names, id, |m| m.id));
            }
        }
    };
    resolve(&mut plane.stats);
    for metadata in &mut plane.event_metadata {
        resolve(&mut metadata.stats);
    }
    for line in &mut plane.lines {
        resolve(&mut line.event_stats);
        for event in &mut line.events {
            event.metadata = index_of(&plane.event_metadata, event.metadata_id, |m| m.id);
        }
    }
}
