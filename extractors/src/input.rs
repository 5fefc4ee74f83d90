//! Opening an input file as one buffered byte stream.
//!
//! Every extractor reads bytes, never files: this module is where a path
//! becomes a `BufRead`. It exists so gzip handling and the decompression-bomb
//! guard live in one place. The decompressed size is capped at
//! `max(min_decompressed_cap_bytes, max_ratio × compressed_len)`; a stream that
//! goes past the cap fails on the read that crosses it, so a bomb fails fast
//! instead of filling memory or disk.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use flate2::read::MultiGzDecoder;

use crate::api::ExtractError;
pub use crate::input_errors::{CorruptCompressedStream, DecompressedTooLarge};

/// Size of the buffer handed to extractors.
const STREAM_BUFFER_BYTES: usize = 1 << 20;
/// Largest head [`read_head`] returns.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Limits applied while decompressing an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputLimits {
    /// Largest allowed decompressed/compressed ratio.
    pub max_ratio: u64,
    /// Decompressed size always allowed, whatever the ratio.
    pub min_decompressed_cap_bytes: u64,
}

impl Default for InputLimits {
    fn default() -> Self {
        InputLimits {
            max_ratio: 500,
            min_decompressed_cap_bytes: 1 << 30,
        }
    }
}

impl InputLimits {
    /// The decompressed-size cap for an input of `compressed_len` bytes.
    pub fn cap_for(&self, compressed_len: u64) -> u64 {
        self.min_decompressed_cap_bytes
            .max(self.max_ratio.saturating_mul(compressed_len))
    }
}

/// Counts bytes read from the file (compressed bytes for gzip input).
struct CountingReader<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Gunzips and enforces the decompressed-size cap.
struct CappedGzip<R: BufRead> {
    decoder: MultiGzDecoder<R>,
    produced: u64,
    cap: u64,
    compressed_len: u64,
}

impl<R: BufRead> Read for CappedGzip<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = match self.decoder.read(buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Err(e),
            Err(e) => {
                return Err(io::Error::other(CorruptCompressedStream {
                    detail: e.to_string(),
                }));
            }
        };
        self.produced = self.produced.saturating_add(n as u64);
        if self.produced > self.cap {
            return Err(io::Error::other(DecompressedTooLarge {
                cap_bytes: self.cap,
                compressed_bytes: self.compressed_len,
            }));
        }
        Ok(n)
    }
}

/// A buffered, transparently decompressed input.
pub struct InputStream {
    inner: BufReader<Box<dyn Read + Send>>,
    compressed_read: Arc<AtomicU64>,
    gzip: bool,
    file_len: u64,
}

impl InputStream {
    /// Bytes read from the file so far (compressed bytes for gzip input).
    pub fn compressed_bytes_read(&self) -> u64 {
        self.compressed_read.load(Ordering::Relaxed)
    }

    /// A shared counter of file bytes read, for progress reporting from
    /// another place (e.g. an observer) while an extractor owns the stream.
    pub fn progress_counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.compressed_read)
    }

    /// Whether the file is gzip-compressed.
    pub fn is_gzip(&self) -> bool {
        self.gzip
    }

    /// Size of the file on disk.
    pub fn file_len(&self) -> u64 {
        self.file_len
    }
}

impl Read for InputStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf)
    }
}

impl BufRead for InputStream {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, amt: usize) {
        self.inner.consume(amt)
    }
}

/// Opens `path`, gunzipping it when it starts with the gzip magic `1f 8b`.
pub fn open_input(path: &Path, limits: &InputLimits) -> Result<InputStream, ExtractError> {
    let file = File::open(path)?;
    let file_len = file.metadata()?.len();
    open_input_from(Box::new(file), file_len, limits)
}

/// Like [`open_input`], over a stream of the file's `file_len` bytes (e.g.
/// the blocks the artifact store is copying).
pub fn open_input_from(
    mut file: Box<dyn Read + Send>,
    file_len: u64,
    limits: &InputLimits,
) -> Result<InputStream, ExtractError> {
    let mut magic = [0u8; 2];
    let mut got = 0;
    while got < 2 {
        let n = file.read(&mut magic[got..])?;
        if n == 0 {
            break;
        }
        got += n;
    }
    let gzip = got == 2 && magic == [0x1f, 0x8b];
    let count = Arc::new(AtomicU64::new(0));
    let prefix = io::Cursor::new(magic[..got].to_vec());
    let raw = CountingReader {
        inner: prefix.chain(file),
        count: Arc::clone(&count),
    };
    let source: Box<dyn Read + Send> = if gzip {
        Box::new(CappedGzip {
            decoder: MultiGzDecoder::new(BufReader::with_capacity(256 * 1024, raw)),
            produced: 0,
            cap: limits.cap_for(file_len),
            compressed_len: file_len,
        })
    } else {
        Box::new(raw)
    };
    Ok(InputStream {
        inner: BufReader::with_capacity(STREAM_BUFFER_BYTES, source),
        compressed_read: count,
        gzip,
        file_len,
    })
}

/// The first `n` (at most [`MAX_HEAD_BYTES`]) decompressed bytes of `path`;
/// fewer when the input is shorter. A corrupt gzip tail is not an error here.
pub fn read_head(path: &Path, limits: &InputLimits, n: usize) -> Result<Vec<u8>, ExtractError> {
    let n = n.min(MAX_HEAD_BYTES);
    let mut stream = open_input(path, limits)?;
    let mut head = vec![0u8; n];
    let mut got = 0;
    while got < n {
        match stream.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let corrupt = e
                    .get_ref()
                    .is_some_and(|inner| inner.is::<CorruptCompressedStream>());
                if corrupt && got > 0 {
                    break;
                }
                return Err(e.into());
            }
        }
    }
    head.truncate(got);
    Ok(head)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::GzEncoder;
    use std::io::Write;

    fn temp_file(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("flameox-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn plain_and_gzip_read_the_same_bytes() {
        let text = b"{\"traceEvents\":[]}".repeat(100);
        let plain = temp_file("plain.json", &text);
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(&text).unwrap();
        let gz = temp_file("gz.json.gz", &enc.finish().unwrap());
        for path in [plain, gz] {
            let mut s = open_input(&path, &InputLimits::default()).unwrap();
            let mut out = Vec::new();
            s.read_to_end(&mut out).unwrap();
            assert_eq!(out, text);
            assert_eq!(
                s.compressed_bytes_read(),
                std::fs::metadata(&path).unwrap().len()
            );
            assert_eq!(
                read_head(&path, &InputLimits::default(), 10).unwrap(),
                &text[..10]
            );
        }
    }

    #[test]
    fn gzip_bomb_fails_fast_with_too_large() {
        let mut enc = GzEncoder::new(Vec::new(), Compression::best());
        let zeros = vec![b' '; 1 << 20];
        for _ in 0..64 {
            enc.write_all(&zeros).unwrap();
        }
        let path = temp_file("bomb.gz", &enc.finish().unwrap());
        let limits = InputLimits {
            max_ratio: 10,
            min_decompressed_cap_bytes: 1 << 20,
        };
        let mut s = open_input(&path, &limits).unwrap();
        let mut out = Vec::new();
        let err = s.read_to_end(&mut out).unwrap_err();
        assert!(out.len() as u64 <= (2 << 20), "stopped near the cap");
        match ExtractError::from(err) {
            ExtractError::TooLarge { message } => {
                assert!(message.contains("decompressed size exceeds"), "{message}")
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}
