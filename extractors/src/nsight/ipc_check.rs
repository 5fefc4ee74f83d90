//! Checks an Arrow IPC table file's framing before arrow-ipc reads it.
//!
//! arrow-ipc trusts the lengths a file declares: a negative `bodyLength`
//! in a file footer's block panics (`to_usize().unwrap()`), a huge one in a
//! stream message is allocated (zeroed) before the read that would fail,
//! and a buffer that lies outside its message's body panics when it is
//! sliced. So every block of a file's footer, every message of a stream,
//! and every buffer of their record batches is checked to lie inside the
//! member first: one pass over the metadata, bodies skipped. A file that
//! fails is refused with a parse error naming what is wrong, as any other
//! corrupt member.

use arrow::ipc::{RecordBatch, root_as_footer, root_as_message};

/// `ARROW1` at both ends of an IPC file.
const MAGIC: &[u8; 6] = b"ARROW1";
/// A stream message's length prefix may start with this marker.
const CONTINUATION: [u8; 4] = [0xFF; 4];
/// Most messages a stream may hold before it is refused as not a table.
const MAX_MESSAGES: u64 = 1 << 24;

/// Reads `len` bytes at `pos` of the member.
pub type ReadAt<'a> = dyn Fn(u64, &mut [u8]) -> std::io::Result<usize> + 'a;

fn read_exact(read: &ReadAt<'_>, pos: u64, buf: &mut [u8]) -> Result<(), String> {
    let mut done = 0;
    while done < buf.len() {
        match read(pos + done as u64, &mut buf[done..]) {
            Ok(0) => return Err(format!("ends at byte {}", pos + done as u64)),
            Ok(n) => done += n,
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(())
}

/// Checks one message's metadata: its body lies within `room` bytes and
/// every buffer of its record batch (or dictionary batch) within its body.
/// Returns the body's length.
fn check_message(meta: &[u8], room: u64) -> Result<u64, String> {
    let message = root_as_message(meta).map_err(|e| format!("a message is not valid: {e}"))?;
    let body = u64::try_from(message.bodyLength()).map_err(|_| "a negative body length")?;
    if body > room {
        return Err(format!("a body of {body} bytes where {room} remain"));
    }
    let batch: Option<RecordBatch<'_>> = message
        .header_as_record_batch()
        .or_else(|| message.header_as_dictionary_batch().and_then(|d| d.data()));
    if let Some(batch) = batch {
        u64::try_from(batch.length()).map_err(|_| "a negative row count")?;
        for buffer in batch.buffers().into_iter().flatten() {
            let offset = u64::try_from(buffer.offset()).map_err(|_| "a negative buffer offset")?;
            let length = u64::try_from(buffer.length()).map_err(|_| "a negative buffer length")?;
            if offset.saturating_add(length) > body {
                return Err(format!(
                    "a buffer of {length} bytes at {offset} passes the end of a {body}-byte body"
                ));
            }
        }
        for node in batch.nodes().into_iter().flatten() {
            if node.length() < 0 || node.null_count() < 0 {
                return Err("a negative field length".into());
            }
        }
    }
    Ok(body)
}

/// Reads a message's metadata prefix at `pos`: its length (after an
/// optional continuation marker) and where the metadata starts.
fn metadata_at(read: &ReadAt<'_>, pos: u64) -> Result<(u64, u64), String> {
    let mut prefix = [0u8; 4];
    read_exact(read, pos, &mut prefix)?;
    let mut at = pos + 4;
    if prefix == CONTINUATION {
        read_exact(read, at, &mut prefix)?;
        at += 4;
    }
    let len = u64::try_from(i32::from_le_bytes(prefix)).map_err(|_| "a negative message length")?;
    Ok((len, at))
}

/// Checks an IPC file (`ARROW1` … footer … `ARROW1`) of `len` bytes.
pub fn check_file(read: &ReadAt<'_>, len: u64) -> Result<(), String> {
    if len < 16 {
        return Err(format!("{len} bytes is too short for an Arrow IPC file"));
    }
    let mut tail = [0u8; 10];
    read_exact(read, len - 10, &mut tail)?;
    if &tail[4..] != MAGIC {
        return Err("no ARROW1 magic at the end".into());
    }
    let footer_len = i32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
    let footer_len = u64::try_from(footer_len).map_err(|_| "a negative footer length")?;
    if footer_len > len - 10 {
        return Err(format!(
            "a footer of {footer_len} bytes in a {len}-byte file"
        ));
    }
    let mut footer = vec![0u8; footer_len as usize];
    read_exact(read, len - 10 - footer_len, &mut footer)?;
    let footer = root_as_footer(&footer).map_err(|e| format!("the footer is not valid: {e}"))?;
    let blocks = footer
        .recordBatches()
        .into_iter()
        .flatten()
        .chain(footer.dictionaries().into_iter().flatten());
    for block in blocks {
        let offset = u64::try_from(block.offset()).map_err(|_| "a block at a negative offset")?;
        let meta =
            u64::try_from(block.metaDataLength()).map_err(|_| "a negative metadata length")?;
        let body = u64::try_from(block.bodyLength()).map_err(|_| "a negative body length")?;
        let end = offset.saturating_add(meta).saturating_add(body);
        if end > len {
            return Err(format!(
                "a block of {meta} + {body} bytes at {offset} passes the end of the {len}-byte file"
            ));
        }
        // The message the block points at, as arrow-ipc will read it.
        let (meta_len, meta_at) = metadata_at(read, offset)?;
        if meta_at.saturating_add(meta_len) > offset.saturating_add(meta) {
            return Err(format!(
                "a message of {meta_len} bytes overruns its block at {offset}"
            ));
        }
        let mut message = vec![0u8; meta_len as usize];
        read_exact(read, meta_at, &mut message)?;
        check_message(&message, body)?;
    }
    Ok(())
}

/// Checks an IPC stream of `len` bytes message by message.
pub fn check_stream(read: &ReadAt<'_>, len: u64) -> Result<(), String> {
    let mut pos = 0u64;
    let mut messages = 0u64;
    while pos < len {
        let (meta_len, at) = metadata_at(read, pos)?;
        if meta_len == 0 {
            return Ok(());
        }
        if at.saturating_add(meta_len) > len {
            return Err(format!(
                "a message of {meta_len} bytes at {at} passes the end"
            ));
        }
        let mut meta = vec![0u8; meta_len as usize];
        read_exact(read, at, &mut meta)?;
        pos = at + meta_len;
        pos += check_message(&meta, len - pos)?;
        messages += 1;
        if messages > MAX_MESSAGES {
            return Err(format!("more than {MAX_MESSAGES} messages"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int64Array;
    use arrow::datatypes::{DataType, Field, Schema};
    use arrow::ipc::writer::{FileWriter, StreamWriter};
    use arrow::record_batch::RecordBatch;
    use std::sync::Arc;

    fn batch() -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new(
            "start",
            DataType::Int64,
            false,
        )]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(vec![1, 2, 3]))]).unwrap()
    }

    fn reader(bytes: &[u8]) -> impl Fn(u64, &mut [u8]) -> std::io::Result<usize> + '_ {
        move |pos, buf| {
            let from = (pos as usize).min(bytes.len());
            let n = buf.len().min(bytes.len() - from);
            buf[..n].copy_from_slice(&bytes[from..from + n]);
            Ok(n)
        }
    }

    #[test]
    fn well_formed_files_and_streams_pass_and_lying_lengths_fail() {
        let b = batch();
        let mut file = Vec::new();
        let mut w = FileWriter::try_new(&mut file, &b.schema()).unwrap();
        w.write(&b).unwrap();
        w.finish().unwrap();
        drop(w);
        let mut stream = Vec::new();
        let mut w = StreamWriter::try_new(&mut stream, &b.schema()).unwrap();
        w.write(&b).unwrap();
        w.finish().unwrap();
        drop(w);
        assert_eq!(check_file(&reader(&file), file.len() as u64), Ok(()));
        assert_eq!(check_stream(&reader(&stream), stream.len() as u64), Ok(()));
        // Every single-byte change and every truncation ends with an answer
        // (the check never panics), and what it lets through arrow-ipc
        // reads to the end, a panic of arrow's own fenced by the guard.
        let read_all = |bytes: &[u8], is_file: bool| {
            let cursor = std::io::Cursor::new(bytes.to_vec());
            let _ = crate::decoder_guard::guard("a damaged IPC file", || {
                if is_file {
                    if let Ok(r) = arrow::ipc::reader::FileReader::try_new(cursor, None) {
                        r.for_each(drop);
                    }
                } else if let Ok(r) = arrow::ipc::reader::StreamReader::try_new(cursor, None) {
                    r.for_each(drop);
                }
            });
        };
        for (data, is_file) in [(&file, true), (&stream, false)] {
            let check = |bytes: &[u8]| {
                let read = reader(bytes);
                if is_file {
                    check_file(&read, bytes.len() as u64)
                } else {
                    check_stream(&read, bytes.len() as u64)
                }
            };
            let mut refused = 0;
            for at in 0..data.len() {
                for value in [0x00, 0x80, 0xFF] {
                    let mut bad = data.to_vec();
                    bad[at] = value;
                    match check(&bad) {
                        Ok(()) => read_all(&bad, is_file),
                        Err(_) => refused += 1,
                    }
                }
                if check(&data[..at]).is_ok() {
                    read_all(&data[..at], is_file);
                }
            }
            assert!(refused > 0, "no damage was refused");
        }
    }
}
