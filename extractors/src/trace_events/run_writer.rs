//! Spill runs written on a thread of their own, so the thread reading the
//! input (decoding protobuf, processing JSON or SQLite rows) does not stop
//! to sort, encode and write each run ([`super::external`], pass 1).
//!
//! [`RunWriter::hand_over`] moves the store's rows to the writer and keeps
//! the open begins; the writer sorts them by [`nesting_key_of`], collects
//! the phase slices, writes the run and the flow endpoints, then gives the
//! emptied columns back for a later hand-over. The hand-over waits while
//! the previous run is still being written, so at most two stores' columns
//! exist at once: the one being written and the one filling. The runs come
//! out byte for byte as when they were written in place (the same sort,
//! the same encoding); `external_tests` and `perfetto::spill_tests` compare
//! the tables with the in-memory path's.

use std::cmp::Reverse;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

use super::builder::TraceBuilder;
use super::flow_records::{FLOW_BYTES, encode_flow};
use super::ids::NONE;
use super::record::EventRecord;
use super::runs::{RunFile, nesting_key_of};
use super::spill_phases::{PhaseCollector, step_name_flags};
use super::store::{EventStore, FlowPoint};
use crate::sorted_runs::open_unlinked;

/// What the written runs leave for nesting and output.
pub struct Written {
    pub runs: RunFile,
    pub flows: BufWriter<File>,
    pub flow_count: u64,
    pub phases: PhaseCollector,
    /// Some device activity has no correlation id (flows must fill it).
    pub needs_flow_fill: bool,
    pub spilled_events: u64,
}

/// One run: every row of `store` but `kept`.
struct Job {
    store: EventStore,
    kept: Vec<usize>,
    flows: Vec<FlowPoint>,
    /// Step flags of the names interned since the last job.
    step_names: Vec<bool>,
}

/// Emptied columns and flow list, given back for a later hand-over.
struct Spare {
    store: EventStore,
    flows: Vec<FlowPoint>,
}

enum State {
    Running {
        jobs: SyncSender<Job>,
        thread: JoinHandle<io::Result<Written>>,
    },
    /// Joined: later runs (the last ones) are written in place.
    Done(Box<Written>),
    /// The writer failed and its error was returned.
    Failed,
}

/// The spill runs of one extraction and the thread that writes them.
pub struct RunWriter {
    state: State,
    spares: Receiver<Spare>,
    /// Names interned before this id have been sent with a job.
    names_sent: usize,
    /// Capacity the emptied columns keep (rows of the runs after the first).
    chunk: usize,
}

impl RunWriter {
    /// Opens the run and flow files in `dir` and starts the writer.
    pub fn start(dir: &Path, phases: PhaseCollector, chunk: usize) -> io::Result<Self> {
        let written = Written {
            runs: RunFile::create(dir, "events-by-track")?,
            flows: BufWriter::with_capacity(1 << 20, open_unlinked(dir, "flows")?),
            flow_count: 0,
            phases,
            needs_flow_fill: false,
            spilled_events: 0,
        };
        let (jobs, job_rx) = sync_channel::<Job>(0);
        let (spare_tx, spares) = channel::<Spare>();
        let thread = std::thread::Builder::new()
            .name("flameox-runs".into())
            .spawn(move || {
                let _phase = crate::phase_cpu::enter(crate::phase_cpu::Phase::Spill);
                write_runs(written, job_rx, spare_tx, chunk)
            })?;
        Ok(RunWriter {
            state: State::Running { jobs, thread },
            spares,
            names_sent: 0,
            chunk,
        })
    }

    /// Sends every row of `p`'s store but `kept` (sorted) and every flow
    /// endpoint to be written as one run. The kept rows stay, renumbered
    /// from 0 in order (`kept[k]` is now row `k`); the caller renumbers
    /// what points at them.
    pub fn hand_over(&mut self, p: &mut TraceBuilder, kept: &[usize]) -> io::Result<()> {
        let spare = self.spares.try_recv().unwrap_or_else(|_| Spare {
            store: EventStore::default(),
            flows: Vec::new(),
        });
        let job = Job {
            store: p.store.split_off_keeping(kept, spare.store),
            kept: kept.to_vec(),
            flows: std::mem::replace(&mut p.flows, spare.flows),
            step_names: step_name_flags(&p.strings, self.names_sent),
        };
        self.names_sent = p.strings.len();
        match &mut self.state {
            State::Running { jobs, .. } => {
                if jobs.send(job).is_err() {
                    // The writer stopped: its error says why.
                    self.finish()?;
                    return Err(stopped());
                }
                Ok(())
            }
            State::Done(written) => write_job(written, job, self.chunk).map(drop),
            State::Failed => Err(stopped()),
        }
    }

    /// Waits for every run handed over so far to be written.
    pub fn finish(&mut self) -> io::Result<&mut Written> {
        if let State::Running { .. } = self.state {
            let State::Running { jobs, thread } = std::mem::replace(&mut self.state, State::Failed)
            else {
                return Err(stopped());
            };
            drop(jobs);
            let written = thread
                .join()
                .map_err(|_| io::Error::other("the spill run writer panicked"))??;
            self.state = State::Done(Box::new(written));
        }
        match &mut self.state {
            State::Done(written) => Ok(written),
            _ => Err(stopped()),
        }
    }

    /// [`Self::finish`], giving up the writer.
    pub fn into_written(mut self) -> io::Result<Written> {
        self.finish()?;
        match self.state {
            State::Done(written) => Ok(*written),
            _ => Err(stopped()),
        }
    }
}

fn stopped() -> io::Error {
    io::Error::other("the spill run writer stopped after an earlier failure")
}

/// The writer thread: each job in turn, its columns given back.
fn write_runs(
    mut written: Written,
    jobs: Receiver<Job>,
    spares: Sender<Spare>,
    chunk: usize,
) -> io::Result<Written> {
    for job in jobs {
        let spare = write_job(&mut written, job, chunk)?;
        // The reader may have finished already; then the columns go.
        let _ = spares.send(spare);
    }
    Ok(written)
}

/// Writes one job's rows as a run sorted by [`nesting_key_of`] and its
/// flows, and empties its columns.
fn write_job(w: &mut Written, job: Job, chunk: usize) -> io::Result<Spare> {
    let Job {
        mut store,
        kept,
        mut flows,
        step_names,
    } = job;
    w.phases.learn_step_names(&step_names);
    let s = &store;
    let mut is_kept = vec![false; s.len()];
    for &k in &kept {
        is_kept[k] = true;
    }
    // Sorted by key, not by a comparator reading the columns at two
    // random rows per comparison.
    let mut rows: Vec<(u32, i64, Reverse<i64>, u64, u32)> = (0..s.len())
        .filter(|&i| !is_kept[i])
        .map(|i| {
            let key = nesting_key_of(s, i);
            (key.0, key.1, key.2, key.3, i as u32)
        })
        .collect();
    rows.sort_unstable();
    for &(.., i) in &rows {
        let i = i as usize;
        if s.device_activity[i] && s.device.correlation(i) == NONE {
            w.needs_flow_fill = true;
        }
        w.phases.observe(s, i);
    }
    w.runs.write_run(
        rows.iter()
            .map(|&(.., i)| EventRecord::from_store(s, i as usize)),
    )?;
    w.spilled_events += rows.len() as u64;
    let mut encoded = [0u8; FLOW_BYTES];
    for f in &flows {
        encode_flow(f, &mut encoded);
        w.flows.write_all(&encoded)?;
        w.flow_count += 1;
    }
    store.clear_rows(chunk);
    flows.clear();
    // The first run's flows may have grown the list to millions.
    flows.shrink_to(chunk);
    Ok(Spare { store, flows })
}
