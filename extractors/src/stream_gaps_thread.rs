//! The accelerator reductions on their own thread.
//!
//! The [`StreamGapsReducer`] used to run inline in the sink chain on the
//! extractor's thread, where it was ~8 % of a Kineto import's critical
//! path (the emit loop waits for it on every `trace_events` batch).
//! [`ThreadedReducingSink`] hands each batch (an `Arc` clone) to a reducer
//! thread instead and writes the rows it produces into the same sink from
//! the calling thread, so the sink stays single-threaded and the reducer's
//! output stays in its own order. At most [`BATCHES_IN_FLIGHT`] batches wait
//! for the reducer, so memory stays bounded.

use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

use arrow::record_batch::RecordBatch;

use crate::api::{BatchSink, SinkError};
use crate::schema::EvidenceTable;
use crate::stream_gaps::{ReducedRows, StreamGapsReducer};

/// `trace_events` batches queued for the reducer thread.
pub const BATCHES_IN_FLIGHT: usize = 2;

/// Rows the reducer thread produced, on their way to the real sink.
type Produced = (EvidenceTable, RecordBatch);

/// A sink that feeds `trace_events` to a reducer thread on their way to the
/// real sink. Call [`ThreadedReducingSink::finish`] once the extractor is
/// done.
pub struct ThreadedReducingSink<'s> {
    inner: &'s mut dyn BatchSink,
    to_reducer: Option<SyncSender<RecordBatch>>,
    produced: Receiver<Produced>,
    thread: Option<JoinHandle<Result<ReducedRows, SinkError>>>,
}

/// The reducer thread's sink: rows go back to the calling thread.
struct SendBack(Sender<Produced>);

impl BatchSink for SendBack {
    fn write_batch(&mut self, table: EvidenceTable, batch: RecordBatch) -> Result<(), SinkError> {
        self.0
            .send((table, batch))
            .map_err(|_| "the reduction's output was dropped".into())
    }
}

impl<'s> ThreadedReducingSink<'s> {
    pub fn start(
        inner: &'s mut dyn BatchSink,
        mut reducer: StreamGapsReducer,
    ) -> Result<Self, SinkError> {
        let (to_reducer, batches) = sync_channel::<RecordBatch>(BATCHES_IN_FLIGHT);
        let (send_back, produced) = channel();
        let thread = std::thread::Builder::new()
            .name("flameox-reduce".into())
            .spawn(move || {
                let _phase = crate::phase_cpu::enter(crate::phase_cpu::Phase::Nest);
                let mut out = SendBack(send_back);
                for batch in batches {
                    reducer.observe(&batch, &mut out)?;
                }
                reducer.finish(&mut out)
            })?;
        Ok(ThreadedReducingSink {
            inner,
            to_reducer: Some(to_reducer),
            produced,
            thread: Some(thread),
        })
    }

    /// Writes what the reducer produced so far.
    fn drain(&mut self) -> Result<(), SinkError> {
        while let Ok((table, batch)) = self.produced.try_recv() {
            self.inner.write_batch(table, batch)?;
        }
        Ok(())
    }

    /// Waits for the reducer thread (its error, if it failed).
    fn join(&mut self) -> Result<ReducedRows, SinkError> {
        self.to_reducer = None;
        match self.thread.take() {
            Some(thread) => thread
                .join()
                .map_err(|_| SinkError::from("the reduction thread panicked"))?,
            None => Err("the reduction thread already ended".into()),
        }
    }

    /// Ends the input, waits for the reducer and writes its last rows.
    pub fn finish(mut self) -> Result<ReducedRows, SinkError> {
        let reduced = self.join();
        self.drain()?;
        reduced
    }
}

impl BatchSink for ThreadedReducingSink<'_> {
    fn write_batch(&mut self, table: EvidenceTable, batch: RecordBatch) -> Result<(), SinkError> {
        self.drain()?;
        if table == EvidenceTable::TraceEvents {
            let sent = self
                .to_reducer
                .as_ref()
                .is_some_and(|tx| tx.send(batch.clone()).is_ok());
            if !sent {
                // The reducer stopped: its error is the one to report.
                self.join()?;
                return Err("the reduction thread ended early".into());
            }
        }
        self.inner.write_batch(table, batch)
    }
}

impl Drop for ThreadedReducingSink<'_> {
    fn drop(&mut self) {
        // Closing the channel lets the thread end; an abandoned extraction
        // does not need its rows.
        self.to_reducer = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream_gaps::tests::Collect;
    use crate::{ExtractOptions, NoObserver, extract_chrome_json};

    /// Launches on two threads and kernels on two streams with gaps, so
    /// the reducer writes gap and latency rows.
    fn trace() -> String {
        let mut events = Vec::new();
        for i in 0..40 {
            let stream = 7 + i % 2;
            let ts = i * 50;
            events.push(format!(
                r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":{},"ts":{ts},"dur":5,"args":{{"correlation":{i}}}}}"#,
                1 + i % 2
            ));
            events.push(format!(
                r#"{{"ph":"X","cat":"kernel","name":"k{}","pid":0,"tid":{stream},"ts":{},"dur":{},"args":{{"device":0,"stream":{stream},"correlation":{i}}}}}"#,
                i % 3,
                ts + 20 + (i % 5) * 7,
                10 + i % 4
            ));
        }
        format!(r#"{{"traceEvents":[{}]}}"#, events.join(","))
    }

    /// Every table's rows, in order, as debug text.
    fn rows(collected: &Collect, table: EvidenceTable) -> Vec<String> {
        collected
            .0
            .iter()
            .filter(|(t, _)| *t == table)
            .flat_map(|(_, b)| {
                (0..b.num_rows()).map(move |i| {
                    b.columns()
                        .iter()
                        .map(|c| format!("{:?}", c.slice(i, 1)))
                        .collect::<Vec<_>>()
                        .join("|")
                })
            })
            .collect()
    }

    #[test]
    fn the_threaded_reducer_writes_what_the_inline_one_writes() {
        let doc = trace();
        let mut options = ExtractOptions::new("run", "sha256:a");
        // One row per batch: many hand-overs and reducer flushes.
        options.batch_rows = 1;
        // Reference: the reducer called inline on each batch as it passes.
        let mut extracted = Collect::default();
        extract_chrome_json(doc.as_bytes(), &options, &mut extracted, &NoObserver).unwrap();
        let mut inline_out = Collect::default();
        let mut inline = StreamGapsReducer::new("run", "sha256:a", 1);
        for (table, batch) in extracted.0 {
            if table == EvidenceTable::TraceEvents {
                inline.observe(&batch, &mut inline_out).unwrap();
            }
            inline_out.0.push((table, batch));
        }
        let inline_rows = inline.finish(&mut inline_out).unwrap();

        let mut threaded_out = Collect::default();
        let reducer = StreamGapsReducer::new("run", "sha256:a", 1);
        let mut threaded = ThreadedReducingSink::start(&mut threaded_out, reducer).unwrap();
        extract_chrome_json(doc.as_bytes(), &options, &mut threaded, &NoObserver).unwrap();
        let threaded_rows = threaded.finish().unwrap();

        assert_eq!(inline_rows, threaded_rows);
        assert!(threaded_rows.complete);
        assert!(threaded_rows.stream_gaps > 10, "{threaded_rows:?}");
        assert!(threaded_rows.launch_latency > 0, "{threaded_rows:?}");
        for table in EvidenceTable::ALL {
            assert_eq!(
                rows(&inline_out, table),
                rows(&threaded_out, table),
                "{}",
                table.name()
            );
        }
    }
}
