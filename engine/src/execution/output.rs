//! Bounded capture of a child's stdout or stderr. A reader thread keeps the
//! first `limit` bytes and keeps draining (and counting) the rest, so a
//! chatty workload never blocks on a full pipe and never grows flameox's
//! memory. The buffer is shared, so the supervisor can take what was read
//! even if a process that escaped the group still holds the pipe open.

use std::io::Read;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Default bound per stream: 1 MiB.
pub const DEFAULT_OUTPUT_LIMIT: usize = 1 << 20;

/// What was captured from one stream.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapturedOutput {
    /// The first `limit` bytes.
    #[serde(skip)]
    pub bytes: Vec<u8>,
    /// Everything the process wrote, kept or not.
    pub total_bytes: u64,
    pub truncated: bool,
    /// False when the pipe was still open when capture stopped waiting.
    pub complete: bool,
}

/// A running reader of one stream.
pub struct OutputReader {
    shared: Arc<Mutex<CapturedOutput>>,
    done: mpsc::Receiver<()>,
}

impl OutputReader {
    /// Starts draining `stream` on a thread, keeping at most `limit` bytes.
    pub fn start(mut stream: impl Read + Send + 'static, limit: usize) -> OutputReader {
        let shared = Arc::new(Mutex::new(CapturedOutput::default()));
        let (tx, done) = mpsc::channel();
        let buffer = shared.clone();
        std::thread::spawn(move || {
            let mut chunk = vec![0u8; 64 * 1024];
            loop {
                match stream.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => {
                        let Ok(mut out) = buffer.lock() else { break };
                        out.total_bytes += n as u64;
                        let room = limit.saturating_sub(out.bytes.len());
                        out.bytes.extend_from_slice(&chunk[..n.min(room)]);
                        if n > room {
                            out.truncated = true;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            if let Ok(mut out) = buffer.lock() {
                out.complete = true;
            }
            let _ = tx.send(());
        });
        OutputReader { shared, done }
    }

    /// Waits up to `wait` for the stream to close, then returns what was read.
    pub fn finish(self, wait: Duration) -> CapturedOutput {
        let _ = self.done.recv_timeout(wait);
        self.shared
            .lock()
            .map(|out| out.clone())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_first_bytes_and_counts_the_rest() {
        let data = vec![b'x'; 300_000];
        let out =
            OutputReader::start(std::io::Cursor::new(data), 100_000).finish(Duration::from_secs(5));
        assert_eq!(out.bytes.len(), 100_000);
        assert_eq!(out.total_bytes, 300_000);
        assert!(out.truncated && out.complete);
    }
}
