//! An Nsight Systems SQLite export generator shaped like `nsys export
//! --type sqlite` of a PyTorch training process (table and column names as
//! in the real exports of `../shared/corpus/nsys/`, see [`db`]).
//!
//! Shape: one process; `threads` CPU threads, each driving one GPU
//! (`thread % gpus`) on its own `streams` streams (compute, NCCL, copy,
//! side streams). Each thread runs training steps, round-robin with the
//! others: an NVTX push/pop range `step N` (inline text) around registered
//! `data` / `forward` / `backward` / `optimizer` ranges; a pinned
//! host-to-device copy, `cudaLaunchKernel` calls whose kernels queue on the
//! streams behind earlier work (so the GPU idles when the CPU is slow: 5 %
//! of launches follow a long host gap), memsets, NCCL all-reduces on the
//! comm stream, and in 40 % of steps a `cudaGraphLaunch` whose node kernels
//! carry `graphId`/`graphNodeId` and the launch's correlation id; the step
//! ends with a loss copy to the host and `cudaStreamSynchronize` (a
//! `SYNCHRONIZATION` row). `globalTid = 1 << 48 | pid << 24 | tid` as nsys
//! serializes it. Rows are written in one transaction with a fixed page
//! size and no journal, so same seed and size → same file bytes
//! (`nsight::tests::nsight_same_seed_same_bytes_other_seed_other_bytes`).

pub mod db;
mod names;

use std::io;
use std::path::Path;

use flameox_extractors::nsight::{NVTX_DOMAIN_CREATE, NVTX_MARK, NVTX_PUSH_POP};
use rusqlite::{Connection, params};

use crate::rng::SeededRng;
use db::{DDL, ENUMS, Inserts, KernelRow, MemRow, NvtxRow, On};
use names::{KernelKind, Phase, Strings};

/// What to generate.
#[derive(Debug, Clone)]
pub struct NsightSpec {
    pub seed: u64,
    /// Stop after the step during which this many CUPTI + NVTX rows exist.
    pub events: u64,
    /// CPU threads launching work.
    pub threads: u64,
    /// Streams per thread.
    pub streams: u64,
    pub gpus: u64,
}

/// Rows written per table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NsightCounts {
    pub kernels: u64,
    /// Of `kernels`, those launched as CUDA graph nodes.
    pub graph_kernels: u64,
    pub graph_launches: u64,
    pub runtime: u64,
    pub memcpy: u64,
    pub memset: u64,
    pub sync: u64,
    /// Every `NVTX_EVENTS` row (ranges, marks, domain creation).
    pub nvtx_rows: u64,
    pub nvtx_ranges: u64,
    pub nvtx_marks: u64,
    pub steps: u64,
    pub strings: u64,
    pub bytes: u64,
}

impl NsightCounts {
    /// CUPTI + NVTX rows: what the extractor counts as input events.
    pub fn events(&self) -> u64 {
        self.kernels + self.runtime + self.memcpy + self.memset + self.sync + self.nvtx_rows
    }
}

const PID: i64 = 24_680;
const DOMAIN: i64 = 1;
const COPY_HTOD: i64 = 1;
const COPY_DTOH: i64 = 2;
const MEM_PAGEABLE: i64 = 0;
const MEM_PINNED: i64 = 1;
const MEM_DEVICE: i64 = 2;

fn global_pid() -> i64 {
    1 << 48 | PID << 24
}

/// One CPU thread and the GPU streams it drives.
struct Host {
    global_tid: i64,
    on: On,
    streams: Vec<i64>,
    /// When each stream's queued work ends.
    stream_end: Vec<i64>,
    clock: i64,
    graph_id: i64,
}

impl Host {
    fn on(&self, stream: usize) -> On {
        On {
            stream: self.streams[stream],
            ..self.on
        }
    }
}

struct Gen<'c> {
    rng: SeededRng,
    rows: Inserts<'c>,
    s: Strings,
    counts: NsightCounts,
    correlation: i64,
    grid_id: i64,
    streams: usize,
}

/// Writes the export to `path` (replacing any file there).
pub fn write_nsight(spec: &NsightSpec, path: &Path) -> io::Result<NsightCounts> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let conn = Connection::open(path).map_err(io::Error::other)?;
    let mut counts = write_tables(spec, &conn).map_err(io::Error::other)?;
    conn.close().map_err(|(_, e)| io::Error::other(e))?;
    counts.bytes = std::fs::metadata(path)?.len();
    Ok(counts)
}

fn write_tables(spec: &NsightSpec, conn: &Connection) -> rusqlite::Result<NsightCounts> {
    // Same bytes every time: fixed page size, no journal or WAL, one
    // transaction, nothing time-dependent.
    conn.execute_batch(
        "PRAGMA page_size = 4096; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; BEGIN;",
    )?;
    conn.execute_batch(DDL)?;
    conn.execute_batch(ENUMS)?;
    let threads = spec.threads.max(1) as usize;
    let gpus = spec.gpus.max(1) as usize;
    let s = Strings::new(threads);
    {
        let mut insert = conn.prepare("INSERT INTO StringIds VALUES (?1, ?2)")?;
        for (id, value) in s.table.iter().enumerate() {
            insert.execute(params![id as i64, value])?;
        }
    }
    let mut hosts = describe_process(conn, &s, threads, gpus, spec.streams.max(1) as usize)?;
    let mut g = Gen {
        rng: SeededRng::new(spec.seed),
        rows: Inserts::new(conn)?,
        counts: NsightCounts {
            strings: s.table.len() as u64,
            ..Default::default()
        },
        s,
        correlation: 0,
        grid_id: 0,
        streams: spec.streams.max(1) as usize,
    };
    for h in &mut hosts {
        h.clock = 1_000_000_000 + g.rng.range(0, 50_000) as i64;
    }
    g.nvtx(&NvtxRow {
        start: hosts[0].clock - 500_000,
        end: None,
        event_type: NVTX_DOMAIN_CREATE,
        text: Some("train"),
        text_id: None,
        global_tid: hosts[0].global_tid,
        domain: DOMAIN,
        color: None,
    })?;
    let mut step = 0u64;
    while g.counts.events() < spec.events {
        for h in hosts.iter_mut() {
            g.step(h, step)?;
            if g.counts.events() >= spec.events {
                break;
            }
        }
        step += 1;
    }
    let counts = g.counts.clone();
    drop(g);
    conn.execute_batch("COMMIT;")?;
    Ok(counts)
}

/// Threads, process and GPU description rows; the launching threads.
fn describe_process(
    conn: &Connection,
    s: &Strings,
    threads: usize,
    gpus: usize,
    streams: usize,
) -> rusqlite::Result<Vec<Host>> {
    let gpid = global_pid();
    conn.execute(
        "INSERT INTO PROCESSES VALUES (?1, ?2, 'python3')",
        params![gpid, PID],
    )?;
    for gpu in 0..gpus as i64 {
        conn.execute(
            "INSERT INTO TARGET_INFO_GPU VALUES (?1, ?2, 'NVIDIA A100-SXM4-80GB', ?3, 1, 41943040,
             85899345920, 2039000000000, 1410000000, 108, ?4, 'GA100', ?2, 8, 0)",
            params![
                1i64 << 48,
                gpu,
                format!("0000:{:02x}:00.0", 7 + gpu),
                format!("2b1f5e0c-93a4-4d1e-8c6b-{:012x}", 0xA100 + gpu)
            ],
        )?;
        conn.execute(
            "INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (?1, ?1, ?2)",
            params![gpu, PID],
        )?;
    }
    let mut names = conn.prepare("INSERT INTO ThreadNames VALUES (?1, 20, ?2)")?;
    let mut hosts = Vec::with_capacity(threads);
    for (i, &name) in s.thread_names.iter().enumerate() {
        let global_tid = gpid | (PID + i as i64);
        names.execute(params![name, global_tid])?;
        if i >= threads {
            continue; // profiler and helper threads launch nothing
        }
        let device = (i % gpus) as i64;
        hosts.push(Host {
            global_tid,
            on: On {
                device,
                context: device + 1,
                stream: 0,
                global_pid: gpid,
            },
            streams: (0..streams as i64).map(|k| 7 + k * 8 + i as i64).collect(),
            stream_end: vec![0; streams],
            clock: 0,
            graph_id: 1 + i as i64,
        });
    }
    Ok(hosts)
}

impl Gen<'_> {
    fn nvtx(&mut self, row: &NvtxRow<'_>) -> rusqlite::Result<()> {
        self.counts.nvtx_rows += 1;
        match row.event_type {
            NVTX_PUSH_POP => self.counts.nvtx_ranges += 1,
            NVTX_MARK => self.counts.nvtx_marks += 1,
            _ => {}
        }
        self.rows.nvtx(row)
    }

    /// A registered-string push/pop range on `h`'s thread.
    fn range(&mut self, h: &Host, phase: Phase, start: i64) -> rusqlite::Result<()> {
        self.nvtx(&NvtxRow {
            start,
            end: Some(h.clock),
            event_type: NVTX_PUSH_POP,
            text: None,
            text_id: Some(self.s.phase(phase)),
            global_tid: h.global_tid,
            domain: DOMAIN,
            color: Some(phase.color()),
        })
    }

    /// A runtime API call starting after a host gap; returns (start, end,
    /// correlation id).
    fn api(
        &mut self,
        h: &mut Host,
        name: i64,
        dur: (u64, u64),
    ) -> rusqlite::Result<(i64, i64, i64)> {
        let gap = if self.rng.chance(5) {
            self.rng.range(50_000, 400_000)
        } else {
            self.rng.range(2_000, 25_000)
        };
        let start = h.clock + gap as i64;
        let end = start + self.rng.range(dur.0, dur.1) as i64;
        self.correlation += 1;
        self.rows
            .runtime(start, end, h.global_tid, self.correlation, name)?;
        self.counts.runtime += 1;
        h.clock = end;
        Ok((start, end, self.correlation))
    }

    /// When work submitted at `submitted` can start on `stream`.
    fn queue(&mut self, h: &Host, stream: usize, submitted: i64) -> i64 {
        (submitted + self.rng.range(3_000, 7_000) as i64)
            .max(h.stream_end[stream] + self.rng.range(500, 2_500) as i64)
    }

    fn kernel_row(
        &mut self,
        h: &mut Host,
        kind: &KernelKind,
        stream: usize,
        start: i64,
        correlation: i64,
        graph: Option<(i64, i64)>,
    ) -> rusqlite::Result<i64> {
        let dur = kind.base_ns * self.rng.range(80, 125) as i64 / 100;
        self.grid_id += 1;
        self.rows.kernel(&KernelRow {
            start,
            end: start + dur,
            on: h.on(stream),
            correlation,
            names: self.s.kernel(kind),
            registers: kind.registers,
            grid: kind.grid,
            block: kind.block,
            static_smem: kind.static_smem,
            dynamic_smem: kind.dynamic_smem,
            grid_id: self.grid_id,
            graph,
        })?;
        self.counts.kernels += 1;
        h.stream_end[stream] = start + dur;
        Ok(start + dur)
    }

    fn launch(&mut self, h: &mut Host, kind: &KernelKind, stream: usize) -> rusqlite::Result<()> {
        let (start, _, corr) = self.api(h, self.s.launch_kernel, (3_500, 9_000))?;
        let at = self.queue(h, stream, start);
        self.kernel_row(h, kind, stream, at, corr, None)?;
        Ok(())
    }

    fn graph_launch(&mut self, h: &mut Host) -> rusqlite::Result<()> {
        let (start, _, corr) = self.api(h, self.s.graph_launch, (8_000, 20_000))?;
        self.counts.graph_launches += 1;
        let mut at = self.queue(h, 0, start);
        let nodes = names::OPTIMIZER_GRAPH;
        for (node, kind) in nodes.iter().enumerate() {
            let node_id = h.graph_id * 1000 + node as i64;
            let end = self.kernel_row(h, kind, 0, at, corr, Some((h.graph_id, node_id)))?;
            self.counts.graph_kernels += 1;
            at = end + self.rng.range(800, 2_000) as i64;
        }
        Ok(())
    }

    /// An async copy (`kind` = copyKind) of `bytes` at `bytes_per_ns`.
    fn copy(
        &mut self,
        h: &mut Host,
        stream: usize,
        kind: i64,
        bytes: i64,
        bytes_per_ns: i64,
    ) -> rusqlite::Result<()> {
        let (start, _, corr) = self.api(h, self.s.memcpy_async, (4_000, 14_000))?;
        let at = self.queue(h, stream, start);
        let end = at + 1_500 + bytes / bytes_per_ns;
        let src_dst = if kind == COPY_HTOD {
            (MEM_PINNED, MEM_DEVICE)
        } else {
            (MEM_DEVICE, MEM_PAGEABLE)
        };
        self.rows.memcpy(&MemRow {
            start: at,
            end,
            on: h.on(stream),
            correlation: corr,
            bytes,
            kind,
            src_dst,
        })?;
        self.counts.memcpy += 1;
        h.stream_end[stream] = end;
        Ok(())
    }

    fn memset(&mut self, h: &mut Host, stream: usize) -> rusqlite::Result<()> {
        let (start, _, corr) = self.api(h, self.s.memset_async, (3_000, 8_000))?;
        let at = self.queue(h, stream, start);
        let bytes = (self.rng.range(1, 256) << 16) as i64;
        let end = at + 1_000 + bytes / 300;
        self.rows.memset(&MemRow {
            start: at,
            end,
            on: h.on(stream),
            correlation: corr,
            bytes,
            kind: MEM_DEVICE,
            src_dst: (MEM_DEVICE, MEM_DEVICE),
        })?;
        self.counts.memset += 1;
        h.stream_end[stream] = end;
        Ok(())
    }

    /// `cudaStreamSynchronize`: the host waits until the stream drains.
    fn sync(&mut self, h: &mut Host, stream: usize) -> rusqlite::Result<()> {
        let start = h.clock + self.rng.range(1_000, 6_000) as i64;
        let end = (start + 1_500).max(h.stream_end[stream] + self.rng.range(1_000, 3_000) as i64);
        self.correlation += 1;
        let corr = self.correlation;
        self.rows
            .runtime(start, end, h.global_tid, corr, self.s.stream_sync)?;
        self.counts.runtime += 1;
        self.rows.sync(start, end, h.on(stream), corr)?;
        self.counts.sync += 1;
        h.clock = end;
        Ok(())
    }

    fn pick<'k>(&mut self, kinds: &'k [KernelKind]) -> &'k KernelKind {
        &kinds[self.rng.range(0, kinds.len() as u64) as usize]
    }

    /// The stream of the next compute kernel: mostly the main one, 15 %
    /// a side stream when there are any.
    fn compute_stream(&mut self) -> usize {
        if self.streams > 3 && self.rng.chance(15) {
            self.rng.range(3, self.streams as u64) as usize
        } else {
            0
        }
    }

    /// One training step of `h`.
    fn step(&mut self, h: &mut Host, step: u64) -> rusqlite::Result<()> {
        // Data loading between steps; now and then a long stall.
        h.clock += if self.rng.chance(3) {
            self.rng.range(5_000_000, 20_000_000)
        } else {
            self.rng.range(100_000, 2_000_000)
        } as i64;
        let step_start = h.clock;
        let copy_stream = 2.min(self.streams - 1);
        let comm_stream = 1.min(self.streams - 1);

        let t = h.clock;
        let batch = (self.rng.range(1, 33) << 20) as i64;
        self.copy(h, copy_stream, COPY_HTOD, batch, 20)?;
        self.api(h, self.s.event_record, (2_000, 5_000))?;
        self.range(h, Phase::Data, t)?;

        let t = h.clock;
        for _ in 0..self.rng.range(8, 25) {
            let kind = self.pick(names::FORWARD);
            let stream = self.compute_stream();
            self.launch(h, kind, stream)?;
            if self.rng.chance(8) {
                self.memset(h, 0)?;
            }
        }
        self.range(h, Phase::Forward, t)?;

        let t = h.clock;
        for i in 0..self.rng.range(12, 37) {
            let kind = self.pick(names::BACKWARD);
            let stream = self.compute_stream();
            self.launch(h, kind, stream)?;
            if i % 6 == 5 {
                self.launch(h, &names::ALL_REDUCE, comm_stream)?;
            }
        }
        self.range(h, Phase::Backward, t)?;

        let t = h.clock;
        if self.rng.chance(40) {
            self.graph_launch(h)?;
        } else {
            for _ in 0..self.rng.range(3, 8) {
                let kind = self.pick(names::OPTIMIZER_GRAPH);
                self.launch(h, kind, 0)?;
            }
        }
        self.range(h, Phase::Optimizer, t)?;

        self.copy(h, 0, COPY_DTOH, 4, 4)?;
        self.sync(h, 0)?;
        if step % 25 == 24 {
            self.nvtx(&NvtxRow {
                start: h.clock,
                end: None,
                event_type: NVTX_MARK,
                text: None,
                text_id: Some(self.s.checkpoint),
                global_tid: h.global_tid,
                domain: DOMAIN,
                color: None,
            })?;
        }
        let text = format!("step {step}");
        self.nvtx(&NvtxRow {
            start: step_start,
            end: Some(h.clock),
            event_type: NVTX_PUSH_POP,
            text: Some(&text),
            text_id: None,
            global_tid: h.global_tid,
            domain: DOMAIN,
            color: Some(0xFF76_B900),
        })?;
        self.counts.steps += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
