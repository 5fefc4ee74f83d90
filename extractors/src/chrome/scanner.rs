//! The byte-level scanner that walks a Chrome trace document in a stream.
//!
//! Parsing the whole document with serde would hold every event in memory
//! at once (and recurse on deep nesting). Instead this scanner walks the top
//! level by hand: a bare array of events, or an object whose `traceEvents`
//! array is streamed element by element while the other (small) top-level
//! values are captured for the run's metadata. Each element's bytes are
//! copied into a reused buffer by tracking only string/escape state and
//! bracket depth — iteratively, so 100,000-deep nesting costs a counter, not
//! a stack frame. Raw control characters inside strings are escaped while
//! copying, which is what lets serde accept them afterwards.

use std::io::{self, BufRead};

use super::event_index::{EventIndex, Indexer, Malformed};
use crate::api::ExtractError;
use crate::input::CorruptCompressedStream;
use crate::sniff::escape_head;

/// Largest single event copied; bigger elements are skipped as malformed.
pub const MAX_EVENT_BYTES: usize = 64 << 20;
/// Largest top-level metadata value kept.
pub const MAX_METADATA_BYTES: usize = 1 << 20;
/// Top-level keys kept as metadata; later ones are only counted (real
/// traces have a dozen; a damaged one can have millions).
pub const MAX_METADATA_KEYS: usize = 64;

/// The index of an element that is not a complete object (never read).
const NOT_INDEXED: Malformed = Malformed {
    what: "not indexed",
    at: 0,
};

/// Where the scanner is in the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    NotStarted,
    BareArray,
    ObjectEvents,
    Finished,
}

/// The outcome of reading one array element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// One complete element is in the buffer.
    Element {
        is_object: bool,
        /// Raw control characters escaped inside strings.
        control_chars: u32,
        /// The element was larger than [`MAX_EVENT_BYTES`] (buffer incomplete).
        too_big: bool,
    },
    /// The events array closed normally.
    End,
    /// The input ended (or its compressed stream broke) inside the array.
    Truncated,
}

/// A captured value: complete or cut off by the end of input.
struct Capture {
    complete: bool,
    control_chars: u32,
    overflowed: bool,
}

/// Streams the elements of a Chrome trace's events array.
pub struct Scanner<R> {
    reader: R,
    offset: u64,
    shape: Shape,
    /// Set when the compressed stream broke: the message explains the stop.
    pub corrupt: Option<String>,
    /// Top-level values other than `traceEvents`: (key, raw bytes or None if too big, size).
    pub metadata: Vec<(String, Option<Vec<u8>>, usize)>,
    /// Top-level keys past [`MAX_METADATA_KEYS`], scanned and dropped.
    pub metadata_dropped: u64,
    /// Something other than JSON followed the document.
    pub trailing_data: bool,
}

fn fill<'r, R: BufRead>(
    reader: &'r mut R,
    corrupt: &mut Option<String>,
) -> Result<&'r [u8], ExtractError> {
    loop {
        // Two calls so the borrow of the successful result is not tied to
        // the retry path.
        match reader.fill_buf() {
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let broken = e
                    .get_ref()
                    .and_then(|i| i.downcast_ref::<CorruptCompressedStream>())
                    .map(|c| c.to_string());
                match broken {
                    Some(message) => {
                        *corrupt = Some(message);
                        return Ok(&[]);
                    }
                    None => return Err(e.into()),
                }
            }
        }
    }
    Ok(reader.fill_buf()?)
}

impl<R: BufRead> Scanner<R> {
    pub fn new(reader: R) -> Self {
        Scanner {
            reader,
            offset: 0,
            shape: Shape::NotStarted,
            corrupt: None,
            metadata: Vec::new(),
            metadata_dropped: 0,
            trailing_data: false,
        }
    }

    /// Decompressed bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn peek(&mut self) -> Result<Option<u8>, ExtractError> {
        if self.corrupt.is_some() {
            return Ok(None);
        }
        let chunk = fill(&mut self.reader, &mut self.corrupt)?;
        Ok(chunk.first().copied())
    }

    fn bump(&mut self) {
        self.reader.consume(1);
        self.offset += 1;
    }

    fn skip_ws(&mut self) -> Result<Option<u8>, ExtractError> {
        loop {
            if self.corrupt.is_some() {
                return Ok(None);
            }
            let chunk = fill(&mut self.reader, &mut self.corrupt)?;
            if chunk.is_empty() {
                return Ok(None);
            }
            let n = chunk.iter().position(|b| !b.is_ascii_whitespace());
            let skip = n.unwrap_or(chunk.len());
            let first = n.map(|i| chunk[i]);
            self.reader.consume(skip);
            self.offset += skip as u64;
            if first.is_some() {
                return Ok(first);
            }
        }
    }

    fn parse_error(&mut self, what: &str) -> ExtractError {
        let shown = match fill(&mut self.reader, &mut self.corrupt) {
            Ok(chunk) => escape_head(chunk, 32),
            Err(_) => String::new(),
        };
        ExtractError::Parse {
            message: format!(
                "not a Chrome trace: {what} at byte {}, found `{shown}`",
                self.offset
            ),
            offset: Some(self.offset),
        }
    }

    /// Positions the scanner on the first element of the events array.
    pub fn start(&mut self) -> Result<(), ExtractError> {
        if self.peek()? == Some(0xEF) {
            // A UTF-8 byte-order mark.
            let chunk = fill(&mut self.reader, &mut self.corrupt)?;
            if chunk.starts_with(b"\xEF\xBB\xBF") {
                self.reader.consume(3);
                self.offset += 3;
            }
        }
        match self.skip_ws()? {
            None => Err(ExtractError::Parse {
                message: format!("empty input ({} bytes of whitespace)", self.offset),
                offset: Some(self.offset),
            }),
            Some(b'[') => {
                self.bump();
                self.shape = Shape::BareArray;
                Ok(())
            }
            Some(b'{') => {
                self.bump();
                if self.read_object_keys(true)? {
                    self.shape = Shape::ObjectEvents;
                    Ok(())
                } else {
                    Err(ExtractError::Parse {
                        message: format!(
                            "not a Chrome trace: a JSON object without a `traceEvents` array (read {} bytes; keys: {})",
                            self.offset,
                            self.metadata
                                .iter()
                                .map(|m| m.0.as_str())
                                .take(12)
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                        offset: Some(self.offset),
                    })
                }
            }
            Some(_) => Err(self.parse_error("expected `[` or `{`")),
        }
    }

    /// Reads `"key": value` pairs of the top-level object, keeping values as
    /// metadata. With `until_events`, returns `true` just after the `[` of
    /// `traceEvents`; otherwise returns `true` when the closing `}` is read.
    fn read_object_keys(&mut self, until_events: bool) -> Result<bool, ExtractError> {
        let mut buf = Vec::new();
        loop {
            match self.skip_ws()? {
                None => return Ok(false),
                Some(b'}') => {
                    self.bump();
                    return Ok(!until_events);
                }
                Some(b',') => {
                    self.bump();
                    continue;
                }
                Some(b'"') => {}
                Some(_) if until_events => return Err(self.parse_error("expected a key")),
                Some(_) => {
                    self.trailing_data = true;
                    return Ok(false);
                }
            }
            buf.clear();
            let key_capture = self.capture_value(&mut buf, 4096)?;
            if !key_capture.complete {
                return Ok(false);
            }
            let key = serde_json::from_slice::<String>(&buf)
                .unwrap_or_else(|_| String::from_utf8_lossy(&buf).into_owned());
            if self.skip_ws()? != Some(b':') {
                if until_events {
                    return Err(self.parse_error("expected `:` after a key"));
                }
                self.trailing_data = true;
                return Ok(false);
            }
            self.bump();
            let next = self.skip_ws()?;
            if key == "traceEvents" && until_events {
                return match next {
                    Some(b'[') => {
                        self.bump();
                        Ok(true)
                    }
                    None => Ok(false),
                    Some(_) => Err(self.parse_error("`traceEvents` is not an array")),
                };
            }
            if next.is_none() {
                return Ok(false);
            }
            buf.clear();
            let full = self.metadata.len() >= MAX_METADATA_KEYS;
            let value = self.capture_value(&mut buf, if full { 0 } else { MAX_METADATA_BYTES })?;
            if !value.complete {
                return Ok(false);
            }
            if full {
                self.metadata_dropped += 1;
                continue;
            }
            let size = buf.len();
            let kept = (!value.overflowed).then(|| buf.clone());
            self.metadata.push((key, kept, size));
        }
    }

    /// Appends the next element of the events array to `buf`.
    pub fn next_element(&mut self, buf: &mut Vec<u8>) -> Result<Step, ExtractError> {
        loop {
            match self.skip_ws()? {
                None => return Ok(Step::Truncated),
                Some(b']') => {
                    self.bump();
                    return Ok(Step::End);
                }
                Some(b',') => {
                    self.bump();
                    continue;
                }
                Some(first) => {
                    let c = self.capture_value(buf, MAX_EVENT_BYTES)?;
                    if !c.complete {
                        return Ok(Step::Truncated);
                    }
                    return Ok(Step::Element {
                        is_object: first == b'{',
                        control_chars: c.control_chars,
                        too_big: c.overflowed,
                    });
                }
            }
        }
    }

    /// Like [`Self::next_element`], and indexes an object element (the
    /// index is `Err` for any other element). The usual event lies whole in
    /// the read buffer: it is indexed there and copied with one `memcpy`,
    /// so its bytes are walked once. Otherwise (cut by the buffer's end,
    /// raw control characters to escape, malformed) it is captured as by
    /// `next_element` and the copy is indexed.
    pub fn next_indexed(
        &mut self,
        buf: &mut Vec<u8>,
        indexer: &mut Indexer,
    ) -> Result<(Step, Result<EventIndex, Malformed>), ExtractError> {
        let mut index = EventIndex::default();
        loop {
            match self.skip_ws()? {
                Some(b',') => self.bump(),
                Some(b'{') => {
                    let chunk = fill(&mut self.reader, &mut self.corrupt)?;
                    if let Ok(end) = indexer.index_prefix(chunk, &mut index) {
                        buf.extend_from_slice(&chunk[..end]);
                        self.reader.consume(end);
                        self.offset += end as u64;
                        let step = Step::Element {
                            is_object: true,
                            control_chars: 0,
                            too_big: false,
                        };
                        return Ok((step, Ok(index)));
                    }
                    break;
                }
                _ => break,
            }
        }
        let start = buf.len();
        let step = self.next_element(buf)?;
        let indexed = match step {
            Step::Element {
                is_object: true,
                too_big: false,
                ..
            } => indexer.index(&buf[start..], &mut index).map(|()| index),
            _ => Err(NOT_INDEXED),
        };
        Ok((step, indexed))
    }

    /// After the events array: reads the rest of the top-level object.
    /// Returns whether the document closed properly.
    pub fn finish(&mut self) -> Result<bool, ExtractError> {
        let complete = match self.shape {
            Shape::ObjectEvents => self.read_object_keys(false)?,
            _ => true,
        };
        if complete && self.skip_ws()?.is_some() {
            self.trailing_data = true;
        }
        self.shape = Shape::Finished;
        Ok(complete)
    }

    /// Appends the JSON value at the current position to `buf` (at most
    /// `limit` bytes of it; the rest is scanned and dropped).
    fn capture_value(&mut self, buf: &mut Vec<u8>, limit: usize) -> Result<Capture, ExtractError> {
        #[derive(PartialEq)]
        enum Mode {
            Container,
            Str,
            Bare,
        }
        let start = buf.len();
        let mode = match self.peek()? {
            None => {
                return Ok(Capture {
                    complete: false,
                    control_chars: 0,
                    overflowed: false,
                });
            }
            Some(b'{' | b'[') => Mode::Container,
            Some(b'"') => Mode::Str,
            Some(_) => Mode::Bare,
        };
        let mut depth: u64 = 0;
        let mut in_string = false;
        let mut escape = false;
        let mut control_chars = 0u32;
        let mut overflowed = false;
        // Bytes of this value consumed from earlier chunks.
        let mut consumed = 0usize;
        let push = |buf: &mut Vec<u8>, bytes: &[u8], overflowed: &mut bool| {
            if buf.len() - start + bytes.len() <= limit {
                buf.extend_from_slice(bytes);
            } else {
                *overflowed = true;
            }
        };
        loop {
            if self.corrupt.is_some() {
                return Ok(Capture {
                    complete: false,
                    control_chars,
                    overflowed,
                });
            }
            let chunk = fill(&mut self.reader, &mut self.corrupt)?;
            if chunk.is_empty() {
                return Ok(Capture {
                    complete: false,
                    control_chars,
                    overflowed,
                });
            }
            let mut i = 0;
            let mut seg = 0;
            let mut done = None;
            while i < chunk.len() {
                if in_string {
                    if escape {
                        escape = false;
                        i += 1;
                        continue;
                    }
                    match chunk[i..]
                        .iter()
                        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                    {
                        None => break,
                        Some(p) => i += p,
                    }
                    match chunk[i] {
                        b'\\' => escape = true,
                        b'"' => {
                            in_string = false;
                            if mode == Mode::Str {
                                done = Some(i + 1);
                                break;
                            }
                        }
                        control => {
                            push(buf, &chunk[seg..i], &mut overflowed);
                            let escaped = format!("\\u{control:04x}");
                            push(buf, escaped.as_bytes(), &mut overflowed);
                            seg = i + 1;
                            control_chars += 1;
                        }
                    }
                    i += 1;
                    continue;
                }
                let b = chunk[i];
                if mode == Mode::Bare {
                    // A stray closer where a value starts (`}` after a
                    // malformed event) is a one-byte value of its own:
                    // every capture consumes at least one byte, so the
                    // caller's loop always moves on.
                    let first = i == 0 && consumed == 0;
                    if (matches!(b, b',' | b']' | b'}') || b.is_ascii_whitespace()) && !first {
                        done = Some(i);
                        break;
                    }
                    i += 1;
                    continue;
                }
                match b {
                    b'"' => in_string = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            done = Some(i + 1);
                            break;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            let end = done.unwrap_or(chunk.len());
            push(buf, &chunk[seg..end], &mut overflowed);
            self.reader.consume(end);
            self.offset += end as u64;
            consumed += end;
            if done.is_some() {
                return Ok(Capture {
                    complete: true,
                    control_chars,
                    overflowed,
                });
            }
        }
    }
}
