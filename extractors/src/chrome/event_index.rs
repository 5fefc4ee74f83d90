//! One pass over a captured event: check it is well-formed JSON and note
//! where the fields flameox reads sit, `args` members included.
//!
//! This replaces a serde parse of the event followed by a second serde parse
//! of its `args`. It runs on the scanner thread, right after the event's
//! bytes were captured, so the processing thread receives byte spans and
//! only slices the text. Acceptance matches serde_json's for the same event
//! (`serde_json::from_str::<BTreeMap<String, &RawValue>>`): the grammar of
//! RFC 8259 with serde's whitespace, any nesting depth inside values, last
//! key wins, escaped keys unescaped (and rejected when serde would reject
//! them). `event_index::tests` checks that equivalence on the corpus and on
//! mutated events.

/// Fields of an event object flameox reads (the slot is the position).
pub const EVENT_FIELDS: [&str; 11] = [
    "ph", "name", "cat", "ts", "dur", "pid", "tid", "id", "id2", "args", "bp",
];
/// `args` members mapped to columns, by slot (aliases share a slot).
pub const ARGS_FIELDS: usize = 12;

/// Slots of [`EVENT_FIELDS`].
pub mod field {
    pub const PH: usize = 0;
    pub const NAME: usize = 1;
    pub const CAT: usize = 2;
    pub const TS: usize = 3;
    pub const DUR: usize = 4;
    pub const PID: usize = 5;
    pub const TID: usize = 6;
    pub const ID: usize = 7;
    pub const ID2: usize = 8;
    pub const ARGS: usize = 9;
    pub const BP: usize = 10;
}

/// Slots of the `args` members.
pub mod arg {
    pub const CORRELATION: usize = 0;
    pub const EXTERNAL_ID: usize = 1;
    pub const DEVICE: usize = 2;
    pub const CONTEXT: usize = 3;
    pub const STREAM: usize = 4;
    pub const BYTES: usize = 5;
    pub const GRAPH_ID: usize = 6;
    pub const GRAPH_NODE_ID: usize = 7;
    pub const NAME: usize = 8;
    pub const DEVICE_ID: usize = 9;
    pub const TOTAL_ALLOCATED: usize = 10;
    pub const TOTAL_RESERVED: usize = 11;
}

/// The slot of an event key.
pub fn event_field_slot(key: &[u8]) -> Option<usize> {
    Some(match key {
        b"ph" => field::PH,
        b"name" => field::NAME,
        b"cat" => field::CAT,
        b"ts" => field::TS,
        b"dur" => field::DUR,
        b"pid" => field::PID,
        b"tid" => field::TID,
        b"id" => field::ID,
        b"id2" => field::ID2,
        b"args" => field::ARGS,
        b"bp" => field::BP,
        _ => return None,
    })
}

/// The slot of an `args` key (the spellings producers use).
pub fn args_field_slot(key: &[u8]) -> Option<usize> {
    Some(match key {
        b"correlation" => arg::CORRELATION,
        b"External id" | b"external id" | b"External ID" => arg::EXTERNAL_ID,
        b"device" => arg::DEVICE,
        b"context" => arg::CONTEXT,
        b"stream" => arg::STREAM,
        b"Bytes" | b"bytes" => arg::BYTES,
        b"graph id" | b"graph_id" | b"graphId" => arg::GRAPH_ID,
        b"graph node id" | b"graph_node_id" | b"graphNodeId" => arg::GRAPH_NODE_ID,
        b"name" => arg::NAME,
        b"Device Id" => arg::DEVICE_ID,
        b"Total Allocated" => arg::TOTAL_ALLOCATED,
        b"Total Reserved" => arg::TOTAL_RESERVED,
        _ => return None,
    })
}

/// A value's bytes inside the event, `start..end`; absent when `end == 0`
/// (a value is never empty and never starts at byte 0, the `{`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    /// The value's text, if present.
    pub fn text(self, event: &str) -> Option<&str> {
        if self.end == 0 {
            return None;
        }
        event.get(self.start as usize..self.end as usize)
    }
}

/// Where an event's fields are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventIndex {
    pub fields: [Span; EVENT_FIELDS.len()],
    /// Members of the last `args` when it is an object.
    pub args: [Span; ARGS_FIELDS],
    /// Known event keys that appeared more than once (the last one is kept).
    pub duplicate_keys: u32,
    /// The same inside the kept `args`.
    pub args_duplicate_keys: u32,
}

/// Why an event is not well-formed JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed {
    pub what: &'static str,
    /// Byte offset inside the event.
    pub at: usize,
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {} of the event", self.what, self.at)
    }
}

type Step = Result<usize, Malformed>;

fn fail<T>(what: &'static str, at: usize) -> Result<T, Malformed> {
    Err(Malformed { what, at })
}

/// Bytes that stop a string scan: `"`, `\` and raw control characters.
const STRING_STOP: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

#[inline]
fn at(b: &[u8], pos: usize) -> u8 {
    b.get(pos).copied().unwrap_or(0)
}

/// Skips serde's whitespace (space, tab, newline, carriage return).
#[inline]
fn ws(b: &[u8], mut pos: usize) -> usize {
    while matches!(at(b, pos), b' ' | b'\n' | b'\t' | b'\r') {
        pos += 1;
    }
    pos
}

/// Scans a string whose opening quote is at `pos - 1`; returns the position
/// after the closing quote and whether it holds escapes.
#[inline]
fn string(b: &[u8], mut pos: usize) -> Result<(usize, bool), Malformed> {
    let mut escaped = false;
    loop {
        while pos < b.len() && !STRING_STOP[b[pos] as usize] {
            pos += 1;
        }
        match b.get(pos) {
            None => return fail("unterminated string", pos),
            Some(b'"') => return Ok((pos + 1, escaped)),
            Some(b'\\') => {
                escaped = true;
                match at(b, pos + 1) {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => pos += 2,
                    b'u' => {
                        let hex = b.get(pos + 2..pos + 6);
                        if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                            return fail("invalid \\u escape", pos);
                        }
                        pos += 6;
                    }
                    _ => return fail("invalid escape", pos),
                }
            }
            Some(_) => return fail("control character inside a string", pos),
        }
    }
}

/// Scans a number starting at `pos` (JSON grammar, as serde checks it).
fn number(b: &[u8], mut pos: usize) -> Step {
    if at(b, pos) == b'-' {
        pos += 1;
    }
    match at(b, pos) {
        b'0' => {
            pos += 1;
            if at(b, pos).is_ascii_digit() {
                return fail("invalid number (leading zero)", pos);
            }
        }
        b'1'..=b'9' => {
            while at(b, pos).is_ascii_digit() {
                pos += 1;
            }
        }
        _ => return fail("invalid number", pos),
    }
    if at(b, pos) == b'.' {
        pos += 1;
        if !at(b, pos).is_ascii_digit() {
            return fail("invalid number (no digit after `.`)", pos);
        }
        while at(b, pos).is_ascii_digit() {
            pos += 1;
        }
    }
    if matches!(at(b, pos), b'e' | b'E') {
        pos += 1;
        if matches!(at(b, pos), b'+' | b'-') {
            pos += 1;
        }
        if !at(b, pos).is_ascii_digit() {
            return fail("invalid number (no exponent digit)", pos);
        }
        while at(b, pos).is_ascii_digit() {
            pos += 1;
        }
    }
    Ok(pos)
}

fn literal(b: &[u8], pos: usize, word: &'static [u8]) -> Step {
    if b.get(pos..pos + word.len()) == Some(word) {
        Ok(pos + word.len())
    } else {
        fail("invalid literal", pos)
    }
}

/// A key's slot, unescaping it first when it holds escapes (and failing
/// where serde's key parse fails, e.g. on a lone surrogate).
fn key_slot(
    b: &[u8],
    start: usize,
    end: usize,
    escaped: bool,
    slot_of: fn(&[u8]) -> Option<usize>,
) -> Result<Option<usize>, ()> {
    if !escaped {
        return Ok(slot_of(&b[start + 1..end - 1]));
    }
    match serde_json::from_slice::<String>(&b[start..end]) {
        Ok(key) => Ok(slot_of(key.as_bytes())),
        Err(_) => Err(()),
    }
}

/// Reusable state of the indexer (the container stack for skipped values).
#[derive(Default)]
pub struct Indexer {
    stack: Vec<u8>,
}

impl Indexer {
    /// Indexes one event (the bytes of an array element that starts with
    /// `{`). On error, `out` holds partial spans and must not be used.
    pub fn index(&mut self, b: &[u8], out: &mut EventIndex) -> Result<(), Malformed> {
        let end = self.index_prefix(b, out)?;
        if ws(b, end) != b.len() {
            return fail("trailing characters after the event", end);
        }
        Ok(())
    }

    /// Indexes the object at the start of `b` and returns where it ends;
    /// the bytes after it are not looked at. An object cut off by the end
    /// of `b` is an error like any other.
    pub fn index_prefix(&mut self, b: &[u8], out: &mut EventIndex) -> Result<usize, Malformed> {
        *out = EventIndex::default();
        let pos = ws(b, 0);
        if at(b, pos) != b'{' {
            return fail("an event is not an object", pos);
        }
        self.members(b, pos, event_field_slot, |indexer, slot, start| {
            let slot = slot.or_else(|()| fail("invalid key escape", start))?;
            if slot == Some(field::ARGS) {
                out.args = Default::default();
                out.args_duplicate_keys = 0;
            }
            let end = if slot == Some(field::ARGS) && at(b, start) == b'{' {
                indexer.args_object(b, start, out)?
            } else {
                indexer.skip_value(b, start)?
            };
            if let Some(slot) = slot {
                record(&mut out.fields, &mut out.duplicate_keys, slot, start, end);
            }
            Ok(end)
        })
    }

    /// Reads the `args` object at `pos`, noting its known members.
    fn args_object(&mut self, b: &[u8], pos: usize, out: &mut EventIndex) -> Step {
        // serde reads `args` members with a key parse that can fail where
        // the event's own (skipping) parse does not; the args are then
        // treated as empty, the event is kept.
        let mut keys_valid = true;
        let end = self.members(b, pos, args_field_slot, |indexer, slot, start| {
            let end = indexer.skip_value(b, start)?;
            match slot {
                Ok(Some(slot)) => record(
                    &mut out.args,
                    &mut out.args_duplicate_keys,
                    slot,
                    start,
                    end,
                ),
                Ok(None) => {}
                Err(()) => keys_valid = false,
            }
            Ok(end)
        })?;
        if !keys_valid {
            out.args = Default::default();
            out.args_duplicate_keys = 0;
        }
        Ok(end)
    }

    /// Walks the members of the object whose `{` is at `pos`. Each key is
    /// matched with `slot_of` (`Err` when serde could not unescape it) and
    /// `value(self, slot, start)` reads the value at `start` and returns
    /// where it ends. Returns the position after the `}`.
    fn members(
        &mut self,
        b: &[u8],
        pos: usize,
        slot_of: fn(&[u8]) -> Option<usize>,
        mut value: impl FnMut(&mut Self, Result<Option<usize>, ()>, usize) -> Step,
    ) -> Step {
        let mut pos = ws(b, pos + 1);
        if at(b, pos) == b'}' {
            return Ok(pos + 1);
        }
        loop {
            if at(b, pos) != b'"' {
                return fail("expected a key", pos);
            }
            let (key_end, escaped) = string(b, pos + 1)?;
            let slot = key_slot(b, pos, key_end, escaped, slot_of);
            pos = ws(b, key_end);
            if at(b, pos) != b':' {
                return fail("expected `:` after a key", pos);
            }
            pos = ws(b, value(self, slot, ws(b, pos + 1))?);
            match at(b, pos) {
                b',' => pos = ws(b, pos + 1),
                b'}' => return Ok(pos + 1),
                _ => return fail("expected `,` or `}` after a member", pos),
            }
        }
    }

    /// Skips one value of any depth at `pos` (no recursion: the container
    /// kinds are on a reused stack).
    fn skip_value(&mut self, b: &[u8], mut pos: usize) -> Step {
        self.stack.clear();
        loop {
            pos = ws(b, pos);
            match at(b, pos) {
                b'"' => pos = string(b, pos + 1)?.0,
                b'{' => {
                    pos = ws(b, pos + 1);
                    if at(b, pos) == b'}' {
                        pos += 1;
                    } else {
                        self.stack.push(b'{');
                        pos = member_key(b, pos)?;
                        continue;
                    }
                }
                b'[' => {
                    pos = ws(b, pos + 1);
                    if at(b, pos) == b']' {
                        pos += 1;
                    } else {
                        self.stack.push(b'[');
                        continue;
                    }
                }
                b't' => pos = literal(b, pos, b"true")?,
                b'f' => pos = literal(b, pos, b"false")?,
                b'n' => pos = literal(b, pos, b"null")?,
                b'-' | b'0'..=b'9' => pos = number(b, pos)?,
                _ => return fail("expected a value", pos),
            }
            // A value ended: close the containers it completes.
            loop {
                let Some(&open) = self.stack.last() else {
                    return Ok(pos);
                };
                pos = ws(b, pos);
                match (open, at(b, pos)) {
                    (_, b',') => {
                        pos += 1;
                        if open == b'{' {
                            pos = member_key(b, ws(b, pos))?;
                        }
                        break;
                    }
                    (b'[', b']') | (b'{', b'}') => {
                        pos += 1;
                        self.stack.pop();
                    }
                    _ => return fail("expected `,` or a closing bracket", pos),
                }
            }
        }
    }
}

/// Notes a known member's value (the last one wins; repeats are counted).
fn record(spans: &mut [Span], duplicates: &mut u32, slot: usize, start: usize, end: usize) {
    if spans[slot].end != 0 {
        *duplicates += 1;
    }
    spans[slot] = Span {
        start: start as u32,
        end: end as u32,
    };
}

/// Reads `"key":` of a skipped object; returns the position after `:`.
fn member_key(b: &[u8], pos: usize) -> Step {
    if at(b, pos) != b'"' {
        return fail("expected a key", pos);
    }
    let pos = ws(b, string(b, pos + 1)?.0);
    if at(b, pos) != b':' {
        return fail("expected `:` after a key", pos);
    }
    Ok(pos + 1)
}

#[cfg(test)]
#[path = "event_index_tests.rs"]
mod tests;
