//! The scanner and the event indexer on their own thread.
//!
//! Finding where each event starts and ends — and, for gzip input,
//! inflating the stream and reading the file — then checking each event's
//! JSON and locating its fields ([`super::event_index`]) is about half of a
//! Chrome import's CPU time. It runs here on a second core and hands whole
//! events with their field spans, in batches, to the processing thread
//! through a small bounded channel. Events keep their order, so the
//! evidence is identical to a single-threaded pass.

use std::io::BufRead;
use std::sync::mpsc::{Receiver, SyncSender};

use super::event_index::{EventIndex, Indexer, Malformed};
use super::scanner::{Scanner, Step};
use crate::api::ExtractError;

/// Batches in flight between the threads.
pub const BATCHES_IN_FLIGHT: usize = 4;
/// A batch is sent once it holds this many bytes …
const BATCH_BYTES: usize = 256 * 1024;
/// … or this many events.
const BATCH_EVENTS: usize = 2048;

/// Consecutive events of the array, back to back in one buffer.
#[derive(Default)]
pub struct ScannedBatch {
    pub bytes: Vec<u8>,
    pub elements: Vec<ScannedElement>,
    /// Decompressed bytes consumed once this batch was read.
    pub offset: u64,
}

/// One array element of a batch: `bytes[previous end .. end]`.
#[derive(Debug, Clone, Copy)]
pub struct ScannedElement {
    pub end: usize,
    pub is_object: bool,
    /// Raw control characters escaped inside strings.
    pub control_chars: u32,
    /// Larger than the event limit (its bytes are incomplete).
    pub too_big: bool,
    /// Where its fields are, or why it is not well-formed JSON (indexed
    /// only for complete objects; the bytes may still hold invalid UTF-8).
    pub index: Result<EventIndex, Malformed>,
}

/// How the scan ended, with the scanner (offset, metadata, corruption).
pub struct ScanOutcome<R> {
    pub scanner: Scanner<R>,
    pub truncated: bool,
    /// The document closed properly after the events array.
    pub closed: bool,
}

/// Scans every element into batches sent on `full`, reusing the buffers
/// that come back on `empty`. Stops early, without error, when the
/// receiving side hangs up (the extraction was cancelled or failed).
pub fn scan_batches<R: BufRead>(
    mut scanner: Scanner<R>,
    full: SyncSender<ScannedBatch>,
    empty: Receiver<ScannedBatch>,
) -> Result<ScanOutcome<R>, ExtractError> {
    let mut indexer = Indexer::default();
    loop {
        let mut batch = empty.try_recv().unwrap_or_default();
        batch.bytes.clear();
        batch.elements.clear();
        let ended = loop {
            match scanner.next_indexed(&mut batch.bytes, &mut indexer)? {
                (
                    Step::Element {
                        is_object,
                        control_chars,
                        too_big,
                    },
                    index,
                ) => {
                    batch.elements.push(ScannedElement {
                        end: batch.bytes.len(),
                        is_object,
                        control_chars,
                        too_big,
                        index,
                    });
                    if batch.bytes.len() >= BATCH_BYTES || batch.elements.len() >= BATCH_EVENTS {
                        break None;
                    }
                }
                (Step::End, _) => break Some(false),
                (Step::Truncated, _) => break Some(true),
            }
        };
        batch.offset = scanner.offset();
        if !batch.elements.is_empty() && full.send(batch).is_err() {
            return Ok(ScanOutcome {
                scanner,
                truncated: true,
                closed: false,
            });
        }
        if let Some(truncated) = ended {
            let closed = if truncated { false } else { scanner.finish()? };
            return Ok(ScanOutcome {
                scanner,
                truncated,
                closed,
            });
        }
    }
}
